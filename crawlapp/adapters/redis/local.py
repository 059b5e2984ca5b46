"""A Redis of our own for the demo and the tests: `redis-server` on a free loopback port, no
persistence, stopped at the end; and the check that keeps them off a database they did not
create (`refuse_unless_empty`)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator


class NotEmpty(RuntimeError):
    """A Redis database we did not create holds keys; we will not flush it."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One `redis-server` child process on 127.0.0.1: nothing saved, nothing left behind."""

    def __init__(self, databases: int = 16) -> None:
        self.databases = databases
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def start(self, timeout: float = 20.0) -> str:
        """Start it; returns its base URL (`redis://127.0.0.1:PORT`, add `/DB`)."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is not on the PATH: install Redis (Debian: apt-get install "
                "redis-server; macOS: brew install redis), or point at a Redis server with "
                "the variable named in the README")
        self._dir = tempfile.TemporaryDirectory(prefix="crawlapp-redis-")
        for _ in range(5):  # a port taken between free_port() and the bind: try another
            self.port = free_port()
            self.proc = subprocess.Popen(
                [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                 "--appendonly", "no", "--databases", str(self.databases),
                 "--dir", self._dir.name, "--logfile", ""],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait(timeout):
                return self.url
            self.stop()
        raise RuntimeError("redis-server did not start on a loopback port")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def _wait(self, timeout: float) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


@contextlib.contextmanager
def own_redis(databases: int = 16) -> Iterator[str]:
    """A RedisServer for the duration of the block; yields its base URL."""
    server = RedisServer(databases)
    try:
        yield server.start()
    finally:
        server.stop()


def refuse_unless_empty(url: str, variable: str, allow_variable: str, allowed: bool) -> None:
    """Raise NotEmpty when the Redis database at `url` (one we did not start) holds keys and
    the user did not allow us to empty it (`allow_variable`=1)."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=5)
    try:
        keys = int(client.dbsize())
    finally:
        client.close()
    if keys and not allowed:
        raise NotEmpty(
            f"{variable}={url}: that database holds {keys} key(s), and it would be emptied; "
            f"point {variable} at an empty database, set {allow_variable}=1 to empty it "
            f"anyway, or unset {variable} to use a redis-server of our own")
