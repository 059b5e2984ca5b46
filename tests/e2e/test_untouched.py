"""`make demo` and `make test` leave the user's data alone: with a sentinel key in the Redis
databases the project once flushed (127.0.0.1:6379, databases 0, 3, 9, 11) and a sentinel
table in the Postgres database it once emptied (`test`, else the server's `postgres`), the
demo and a run of the test fixtures (their own redis-server, their own Postgres database)
change neither; the database the fixtures created is gone afterwards."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
USER_REDIS = "redis://127.0.0.1:6379"
USER_DATABASES = (0, 3, 9, 11)
PG_SERVER = "postgresql://postgres@127.0.0.1:5432"


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user who set none of the variables that point elsewhere."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TEST_", "CRAWL_", "CELERY_", "DATABASE_URL", "S3_"))}
    return env | extra


@pytest.fixture
def sentinels() -> Iterator[dict[str, object]]:
    """A sentinel key in each of the user's Redis databases and a sentinel table in the
    user's Postgres database, where a server answers (removed afterwards)."""
    import psycopg
    import redis

    name = f"crawlapp_sentinel_{secrets.token_hex(4)}"
    planted: dict[str, object] = {"name": name, "redis": [], "pg": None}
    for db in USER_DATABASES:
        client = redis.Redis.from_url(f"{USER_REDIS}/{db}", socket_connect_timeout=1)
        try:
            client.set(name, "the user's", ex=900)
            planted["redis"].append(db)  # type: ignore[attr-defined]
        except redis.ConnectionError:
            break
    for database in ("test", "postgres"):
        try:
            with psycopg.connect(f"{PG_SERVER}/{database}", autocommit=True,
                                 connect_timeout=2) as conn:
                conn.execute(f"CREATE TABLE {name} (kept text)")
                conn.execute(f"INSERT INTO {name} VALUES ('the user''s')")
                planted["pg"] = database
                break
        except psycopg.Error:
            continue
    if not planted["redis"] and planted["pg"] is None:
        pytest.skip("neither a Redis on 127.0.0.1:6379 nor a Postgres on 127.0.0.1:5432")
    yield planted
    for db in planted["redis"]:  # type: ignore[attr-defined]
        redis.Redis.from_url(f"{USER_REDIS}/{db}").delete(name)
    if planted["pg"]:
        with psycopg.connect(f"{PG_SERVER}/{planted['pg']}", autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {name}")


def _intact(planted: dict[str, object]) -> None:
    import psycopg
    import redis

    name = str(planted["name"])
    for db in planted["redis"]:  # type: ignore[attr-defined]
        assert redis.Redis.from_url(f"{USER_REDIS}/{db}").get(name) == b"the user's", db
    if planted["pg"]:
        with psycopg.connect(f"{PG_SERVER}/{planted['pg']}") as conn:
            assert conn.execute(f"SELECT kept FROM {name}").fetchall() == [("the user's",)]


def _test_databases() -> set[str]:
    import psycopg

    try:
        with psycopg.connect(f"{PG_SERVER}/postgres", connect_timeout=2) as conn:
            return {row[0] for row in conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'crawlapp_test_%'")}
    except psycopg.Error:
        return set()


def test_the_demo_and_the_test_fixtures_leave_the_users_data_alone(
        sentinels: dict[str, object], tmp_path: Path) -> None:
    demo = subprocess.run([sys.executable, "-m", "testweb.demo"], cwd=ROOT, text=True,
                          capture_output=True, timeout=300, check=False,
                          env=_clean_env(CRAWL_DATA_DIR=str(tmp_path / "var"),
                                         CRAWL_DEMO_HOSTS="2", CRAWL_DEMO_PAGES="2"))
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "a redis-server of the demo's own" in demo.stdout
    _intact(sentinels)

    # The fixtures' own Redis (redis_url, the Bloom filter's database) and Postgres database.
    nested = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/integration/test_state.py::test_only_new_urls_are_reported_new",
         "tests/integration/test_urlseen.py"],
        cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_clean_env())
    out, _ = nested.communicate(timeout=300)
    assert nested.returncode == 0, out
    assert "skipped" not in out or sentinels["pg"] is None, out
    _intact(sentinels)
    # The database the fixtures made (named after their process) is dropped.
    assert not {d for d in _test_databases() if d.startswith(f"crawlapp_test_{nested.pid}_")}


def test_the_demo_refuses_a_redis_database_that_holds_keys(tmp_path: Path) -> None:
    from crawlapp.adapters.redis.local import own_redis

    with own_redis(databases=2) as base:
        import redis

        redis.Redis.from_url(f"{base}/1").set("theirs", "1")
        refused = subprocess.run(
            [sys.executable, "-m", "testweb.demo"], cwd=ROOT, text=True, capture_output=True,
            timeout=60, check=False,
            env=_clean_env(CRAWL_DATA_DIR=str(tmp_path / "var"),
                           CRAWL_DEMO_REDIS_URL=f"{base}/1"))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "holds 1 key(s)" in refused.stderr and "CRAWL_DEMO_FLUSH=1" in refused.stderr
        assert redis.Redis.from_url(f"{base}/1").get("theirs") == b"1"
    theirs = tmp_path / "var" / "demo"
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("mine")
    kept = subprocess.run([sys.executable, "-m", "testweb.demo"], cwd=ROOT, text=True,
                          capture_output=True, timeout=60, check=False,
                          env=_clean_env(CRAWL_DATA_DIR=str(tmp_path / "var")))
    assert kept.returncode == 2 and "was not made by the demo" in kept.stderr
    assert (theirs / "notes.txt").read_text() == "mine"
