"""The services a measured crawl uses: a Redis and an S3 server of the bench's own on loopback,
and a Postgres database emptied of the crawler's tables; and which processes are each one's."""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from bench.procs import ProcStat, cmdline, read_stat
from crawlapp.adapters.redis.local import binary

# A backend's process title: "postgres: [cluster: ]user database host(port) activity"
_BACKEND_TITLE = re.compile(r"postgres: (?:\S+: )?\S+ (?P<database>\S+) (?:\S+\(\d+\)|\[local\])")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], name: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(f"{name} did not start on port {port}") from None
            time.sleep(0.1)


@contextlib.contextmanager
def _server(command: list[str], port: int, name: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, proc, name)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def own_redis() -> Iterator[str]:
    """A redis-server of the bench's own on a free loopback port (no persistence); its URL."""
    try:
        server = binary("redis-server")
    except RuntimeError as exc:
        raise RuntimeError(f"{exc} (BENCH_REDIS_URL)") from None
    port = free_port()
    command = [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
               "--appendonly", "no", "--databases", "1"]
    with _server(command, port, "redis-server"):
        yield f"redis://127.0.0.1:{port}/0"


@contextlib.contextmanager
def moto_s3() -> Iterator[tuple[str, int]]:
    """moto's S3-compatible server on a free loopback port: (endpoint URL, pid)."""
    moto = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if moto is None:
        raise RuntimeError("moto_server is missing: run `make install`")
    port = free_port()
    with _server([moto, "-H", "127.0.0.1", "-p", str(port)], port, "moto_server") as proc:
        yield f"http://127.0.0.1:{port}", proc.pid


def redis_pid(url: str) -> int:
    import redis

    return int(redis.Redis.from_url(url).info("server")["process_id"])


def _sa_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def reset_postgres(url: str) -> int:
    """Create the database if it is missing, drop the crawler's tables (every table of its
    models, their partitions with them, and Alembic's version); the postmaster's pid."""
    import sqlalchemy as sa

    from crawlapp.adapters.db.models import Base

    database = sa.engine.make_url(url).database
    admin = sa.create_engine(_sa_url(url).rsplit("/", 1)[0] + "/postgres",
                             isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if not conn.scalar(sa.text("SELECT 1 FROM pg_database WHERE datname = :d"),
                           {"d": database}):
            conn.execute(sa.text(f'CREATE DATABASE "{database}"'))
    admin.dispose()
    engine = sa.create_engine(_sa_url(url))
    with engine.begin() as conn:
        for table in [*Base.metadata.tables, "alembic_version"]:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table} CASCADE"))
        # Read while the connection is open: its backend exits with it.
        stat = read_stat(int(conn.scalar(sa.text("SELECT pg_backend_pid()"))))
    engine.dispose()
    if stat is None:
        raise RuntimeError("Postgres is not on this machine: its CPU cannot be read")
    return stat.ppid


def postgres_pids(postmaster: int, database: str, stats: dict[int, ProcStat]) -> Iterable[int]:
    """The postmaster and those of its children that serve `database` or the whole server
    (writer, checkpointer, autovacuum), not the backends of other databases."""
    yield postmaster
    for stat in stats.values():
        if stat.ppid == postmaster:
            backend = _BACKEND_TITLE.match(cmdline(stat.pid))
            if backend is None or backend["database"] == database:
                yield stat.pid
