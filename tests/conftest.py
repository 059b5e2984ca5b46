"""Fixtures for the integration and end-to-end tests: the real Redis, Postgres and S3 server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REDIS_BASE = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379")
PG_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
TEST_REDIS_DB = int(os.environ.get("TEST_REDIS_DB", "9"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def own_redis_url() -> str:
    """The tests' own Redis database (`TEST_REDIS_DB`, default 9)."""
    return f"{REDIS_BASE}/{TEST_REDIS_DB}"


@pytest.fixture
def redis_url() -> str:
    """A Redis database of the tests' own, emptied before each test."""
    import redis

    url = own_redis_url()
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture
def pg_url() -> str:
    """The Postgres `test` database with every table of ours dropped."""
    import sqlalchemy as sa

    engine = sa.create_engine(PG_URL.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as conn:
        for table in ("links", "urls", "hosts", "denylist", "alembic_version"):
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table} CASCADE"))
    engine.dispose()
    return PG_URL


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3-compatible server on loopback, for the whole session."""
    port = _free_port()
    moto = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    assert moto, "moto_server is installed with the dev extras"
    proc = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)],
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
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


def crawl_env(tmp_path: Path, redis_url: str, **extra: str) -> dict[str, str]:
    """Environment of a crawler on the tests' Redis database and a temporary data dir."""
    env = {
        "CRAWL_DATA_DIR": str(tmp_path / "var"),
        "CELERY_BROKER_URL": redis_url,
        "CRAWL_REDIS_URL": redis_url,
        "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",
        "CRAWL_SHARDS": "4",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    env.update(extra)
    return env
