"""Fixtures for the integration and end-to-end tests: a Redis server, a Postgres database and
an S3 server of the tests' own, so that nothing of the user's is read, flushed or dropped.

- Redis: a `redis-server` (the PATH's, else the one `make redis-bin` put in the venv: see
  `binary` in crawlapp/adapters/redis/local.py) on a free loopback port (no persistence),
  started the first time a test needs it and stopped at the end of the session.
  `TEST_REDIS_URL` (a server, e.g. `redis://127.0.0.1:6379`) and/or `TEST_REDIS_DB` (default
  9) point the tests at a server of the user's instead, and `TEST_BLOOM_REDIS_URL` (a
  database) the Bloom filter tests; each such database is emptied before every test, so the
  tests refuse one that holds keys unless `TEST_REDIS_FLUSH=1`, and empty it again at the
  end.
- Redis Cluster: 3 masters and 3 replicas on free loopback ports (RedisClusterServers),
  started the first time a test asks for `redis_cluster` and stopped at the end of the
  session; skipped, with the reason, only when redis-server or redis-cli is neither on the
  PATH nor in the venv: a cluster that fails to form fails the tests.
- Postgres: a database of the tests' own (`crawlapp_test_<pid>_<random>`), created on the
  server of `TEST_DATABASE_URL` (default `postgresql://postgres@127.0.0.1:5432/postgres`; the
  database it names is only connected to, for CREATE and DROP DATABASE) and dropped at the end.
  Without a reachable server the Postgres tests are skipped with the reason.
- S3: moto's server on a free loopback port.
- RabbitMQ: a virtual host of the test's own on the local server (127.0.0.1:5672), made with
  rabbitmqctl and deleted afterwards; skipped, with the reason, where none can be made.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlapp.adapters.redis.local import (
    NotEmpty,
    RedisClusterServers,
    RedisServer,
    binary,
    refuse_unless_empty,
)
from tests.skip_summary import pytest_terminal_summary  # noqa: F401 - the hook, registered here

PG_SERVER = os.environ.get("TEST_DATABASE_URL",
                           "postgresql://postgres@127.0.0.1:5432/postgres")
EXTERNAL_REDIS = "TEST_REDIS_URL" in os.environ or "TEST_REDIS_DB" in os.environ
REDIS_BASE = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379").rstrip("/")
TEST_REDIS_DB = int(os.environ.get("TEST_REDIS_DB", "9"))
ALLOW_FLUSH = os.environ.get("TEST_REDIS_FLUSH") == "1"
OWN_TEST_DB, OWN_BLOOM_DB = 0, 1  # the databases used on our own redis-server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Redis:
    """The session's Redis: our own server, or the user's databases once checked empty."""

    server: RedisServer | None = None
    error: str | None = None
    checked: set[str] = set()  # noqa: RUF012 - one per session

    @classmethod
    def base(cls) -> str:
        if cls.error:
            raise RuntimeError(cls.error)
        if cls.server is None:
            server = RedisServer()
            try:
                server.start()
            except RuntimeError as exc:
                cls.error = f"{exc} (TEST_REDIS_URL)"
                raise RuntimeError(cls.error) from None
            cls.server = server
            atexit.register(cls.stop)
        return cls.server.url

    @classmethod
    def external(cls, url: str, variable: str) -> str:
        """`url`, a database of the user's, refused if it holds keys (first use only)."""
        if url not in cls.checked:
            try:
                refuse_unless_empty(url, variable, "TEST_REDIS_FLUSH", ALLOW_FLUSH)
            except NotEmpty as exc:
                pytest.exit(str(exc), returncode=4)
            cls.checked.add(url)
        return url

    @classmethod
    def stop(cls) -> None:
        import redis

        for url in cls.checked:  # the user's databases: emptied of what the tests left
            try:
                redis.Redis.from_url(url, socket_connect_timeout=2).flushdb()
            except redis.RedisError:
                pass
        cls.checked.clear()
        if cls.server is not None:
            cls.server.stop()
            cls.server = None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _Redis.stop()


def own_redis_url() -> str:
    """The tests' Redis database: database 0 of a redis-server of their own, or
    `TEST_REDIS_URL`/`TEST_REDIS_DB` (checked empty first, and for one test process only)."""
    if EXTERNAL_REDIS:
        if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
            pytest.exit("TEST_REDIS_URL is one database for one test process: run "
                        "`make test TEST_PROCESSES=1` with it", returncode=4)
        return _Redis.external(f"{REDIS_BASE}/{TEST_REDIS_DB}", "TEST_REDIS_URL")
    return f"{_Redis.base()}/{OWN_TEST_DB}"


def bloom_redis_url() -> str:
    """The Bloom filter tests' database: `TEST_BLOOM_REDIS_URL`, or one of our own server."""
    url = os.environ.get("TEST_BLOOM_REDIS_URL")
    if url:
        return _Redis.external(url, "TEST_BLOOM_REDIS_URL")
    if EXTERNAL_REDIS:
        return _Redis.external(f"{REDIS_BASE}/{TEST_REDIS_DB + 2}", "TEST_REDIS_URL")
    return f"{_Redis.base()}/{OWN_BLOOM_DB}"


@pytest.fixture
def redis_url() -> str:
    """A Redis database of the tests' own, emptied before each test."""
    import redis

    url = own_redis_url()
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterServers]:
    """The session's Redis Cluster of its own (3 masters, 3 replicas, cluster-node-timeout
    2000 ms); a test that kills a node gets the cluster back whole at its end. Skipped only
    without the redis-server or redis-cli binary; a cluster that fails to form fails the
    tests that need it."""
    try:
        for name in ("redis-server", "redis-cli"):
            binary(name)
    except RuntimeError as exc:
        pytest.skip(f"no Redis Cluster of the tests' own: {exc}")
    cluster = RedisClusterServers()
    try:
        cluster.start()
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"the tests' Redis Cluster did not form: {exc} {exc.stderr!r}",
                    pytrace=False)
    except RuntimeError as exc:
        pytest.fail(f"the tests' Redis Cluster did not form: {exc}", pytrace=False)
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_cluster_url(redis_cluster: RedisClusterServers) -> str:
    """A node of the tests' Redis Cluster, every master of it emptied before each test."""
    from crawlapp.adapters.redis.client import connect, flush

    redis_cluster.heal()
    client = connect(redis_cluster.url, cluster=True)
    flush(client)
    client.close()
    return redis_cluster.url


def _pg_url(database: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(PG_SERVER).set(database=database).render_as_string(hide_password=False)


def _admin():  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(PG_SERVER.replace("postgresql+psycopg://", "postgresql://"),
                           autocommit=True, connect_timeout=3)


def drop_database(name: str) -> None:
    """DROP DATABASE `name` (a database these tests created), closing its connections."""
    import psycopg

    with _admin() as conn:
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except psycopg.errors.SyntaxError:  # before Postgres 13
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = %s", (name,))
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def create_database() -> str:
    """CREATE DATABASE crawlapp_test_<pid>_<random> on TEST_DATABASE_URL's server; its name.
    Skips the test, with the reason, when no server answers or it refuses."""
    import psycopg

    name = f"crawlapp_test_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        with _admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        pytest.skip(f"no Postgres server at {PG_SERVER} (set TEST_DATABASE_URL): "
                    f"{str(exc).strip().splitlines()[-1]}")
    except psycopg.Error as exc:
        pytest.skip(f"cannot create a database on {PG_SERVER}: {exc}".strip())
    return name


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A Postgres database of the tests' own for the whole session, dropped at the end."""
    name = create_database()
    yield name
    drop_database(name)


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """The tests' own Postgres database, emptied (schema `public` made anew) before each test."""
    import psycopg

    url = _pg_url(pg_database)
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return url


@contextlib.contextmanager
def _moto_server(**env: str) -> Iterator[str]:
    """moto's S3-compatible server on a free loopback port (`env` added to its environment);
    its URL."""
    port = _free_port()
    moto = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    assert moto, "moto_server is installed with the dev extras"
    proc = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)], env=os.environ | env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("moto_server did not start") from None
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3-compatible server on loopback, for the whole session."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with _moto_server() as url:
        yield url


@pytest.fixture
def s3_checking_signatures() -> Iterator[tuple[str, dict[str, str]]]:
    """A moto S3 server that checks every request's SigV4 signature and its sender's rights,
    as S3 does (its first 3 requests excepted: they make a user, its key and its policy);
    its URL and the AWS_* variables of a user allowed s3:*."""
    import boto3

    with _moto_server(INITIAL_NO_AUTH_ACTION_COUNT="3") as url:
        iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        iam.create_user(UserName="crawler")
        key = iam.create_access_key(UserName="crawler")["AccessKey"]
        iam.put_user_policy(UserName="crawler", PolicyName="s3", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        yield url, {"AWS_ACCESS_KEY_ID": key["AccessKeyId"],
                    "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                    "AWS_DEFAULT_REGION": "us-east-1"}


def rabbitmqctl(*args: str) -> subprocess.CompletedProcess[str]:
    """rabbitmqctl ARGS, as root on the local RabbitMQ."""
    return subprocess.run(["rabbitmqctl", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def amqp_url() -> Iterator[str]:
    """A virtual host of the test's own on the local RabbitMQ, as a broker URL."""
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl is not installed")
    from kombu import Connection  # imported here: only RabbitMQ's tests need it

    vhost = f"crawltest-{uuid.uuid4().hex[:8]}"
    made = rabbitmqctl("add_vhost", vhost)
    if made.returncode != 0:
        pytest.skip(f"rabbitmqctl cannot add a virtual host: {made.stderr.strip()[:200]}")
    try:
        assert rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"
                           ).returncode == 0
        url = f"amqp://guest:guest@127.0.0.1:5672/{vhost}"
        with Connection(url, connect_timeout=5) as conn:
            conn.ensure_connection(max_retries=1)
        yield url
    finally:
        rabbitmqctl("delete_vhost", vhost)


def crawl_env(tmp_path: Path, redis_url: str, **extra: str) -> dict[str, str]:
    """Environment of a crawler on the tests' Redis database and a temporary data dir."""
    env = {
        "CRAWL_DATA_DIR": str(tmp_path / "var"),
        "CELERY_BROKER_URL": redis_url,
        "CRAWL_REDIS_URL": redis_url,
        "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",
        "CRAWL_SHARDS": "4",
        "CRAWL_ROBOTS_RETRY": "0.5",  # a failing robots.txt is asked again within seconds
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    env.update(extra)
    return env
