"""Asyncio HTTP/1.1 server for a generated Web: one listener per host address, all on one port.

Each request is logged as one JSON line (host, path, start, end, status, ua, inm, ims, conn),
buffered in memory and appended to the log file every FLUSH_INTERVAL seconds and at shutdown.
`conn` numbers the connections, so reuse of keep-alive connections shows in the log.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import itertools
import json
import logging
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from email.utils import formatdate
from http import HTTPStatus
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from crawlapp.testweb.site import Response, Web, WebSpec, error_response

logger = logging.getLogger(__name__)

FLUSH_INTERVAL = 0.2
IDLE_TIMEOUT = 30.0  # seconds a connection may sit idle or take to send a request
MAX_LINE = 16 * 1024
MAX_HEADERS = 100
MAX_BODY = 1 << 20
LISTEN_BACKLOG = 128
PORT_ATTEMPTS = 10
SERVER_NAME = "crawlapp-testweb"
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_REQUEST_LINE = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP/([0-9])\.([0-9])")


class BadRequest(Exception):
    """A request the server cannot serve; answered with `status`, then the connection closes."""

    def __init__(self, status: int = 400, target: str = "") -> None:
        super().__init__(status)
        self.status = status
        self.target = target


@dataclass(frozen=True)
class RequestHead:
    method: str
    target: str  # path and query
    version: tuple[int, int]
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "

    @property
    def keep_alive(self) -> bool:
        """Whether the connection may serve another request after this one."""
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if "transfer-encoding" in self.headers:  # a body we do not read: its end is unknown
            return False
        return "keep-alive" in tokens if self.version < (1, 1) else "close" not in tokens

    @property
    def content_length(self) -> int:
        value = self.headers.get("content-length", "0")
        lengths = {v.strip() for v in value.split(",")}
        if len(lengths) != 1 or not (length := lengths.pop()).isdigit():
            raise BadRequest(400, self.target)
        return int(length)


def parse_head(lines: list[bytes]) -> RequestHead:
    """Parse a request line and header lines (without line ends); raise BadRequest if malformed."""
    match = _REQUEST_LINE.fullmatch(lines[0])
    if match is None:
        raise BadRequest(400)
    raw_target = match[2].decode("latin-1")
    if match[3] != b"1":
        raise BadRequest(505, raw_target)
    target = _origin_form(raw_target)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or _TOKEN.fullmatch(name) is None:
            raise BadRequest(400, target)
        key, text = name.decode("ascii").lower(), value.strip(b" \t").decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return RequestHead(match[1].decode("ascii"), target, (1, int(match[4])), headers)


def _origin_form(raw_target: str) -> str:
    """Path and query of a request target in origin form or absolute form."""
    if raw_target.startswith("/"):
        return raw_target
    if raw_target.lower().startswith(("http://", "https://")):
        parts = urlsplit(raw_target)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    raise BadRequest(400, raw_target)


async def _read_head(reader: asyncio.StreamReader) -> list[bytes] | None:
    """Lines of the next request head without line ends; None at a clean end of stream."""
    line = await _read_line(reader)
    while line in (b"\r\n", b"\n"):  # tolerate stray empty lines between requests
        line = await _read_line(reader)
    lines: list[bytes] = []
    while line not in (b"\r\n", b"\n"):
        if not line.endswith(b"\n"):  # end of stream: clean if before any line, else truncated
            if lines or line:
                raise asyncio.IncompleteReadError(line, None)
            return None
        if len(lines) == MAX_HEADERS:
            raise BadRequest(431)
        lines.append(line.rstrip(b"\r\n"))
        line = await _read_line(reader)
    return lines


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readline()
    except ValueError as error:  # line longer than the reader's limit
        raise BadRequest(431) from error


class RequestLog:
    """JSON lines buffered in memory and appended to a file on flush()."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lines: list[str] = []

    def add(self, record: dict[str, object]) -> None:
        self._lines.append(json.dumps(record, separators=(",", ":")) + "\n")

    def flush(self) -> None:
        if self._lines:
            chunk, self._lines = "".join(self._lines), []
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(chunk)

    async def flush_periodically(self, interval: float = FLUSH_INTERVAL) -> None:
        while True:
            await asyncio.sleep(interval)
            self.flush()


class _Connections:
    """Serves the connections of all listeners and logs every request."""

    def __init__(self, web: Web, log: RequestLog) -> None:
        self.web = web
        self.log = log
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        address, port = writer.get_extra_info("sockname")[:2]
        netloc, conn = f"{address}:{port}", next(self._ids)
        try:
            while await self._exchange(reader, writer, netloc, conn):
                pass
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:
            logger.exception("connection %d to %s failed", conn, netloc)
        finally:
            self._tasks.discard(task)
            writer.close()

    async def close(self) -> None:
        """Cancel all open connections and wait for them to end."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        netloc: str, conn: int) -> bool:
        """Serve one request; True if the connection stays open for another."""
        try:
            async with asyncio.timeout(IDLE_TIMEOUT):
                lines = await _read_head(reader)
                if lines is None:
                    return False
                start = time.time()
                head = parse_head(lines)
                await reader.readexactly(_checked_body_length(head))
        except BadRequest as error:
            start = time.time()
            response, keep_alive, head_only = error_response(error.status), False, False
            target, headers = error.target, {}
        else:
            response, keep_alive = self._respond(netloc, head), head.keep_alive
            head_only, target, headers = head.method == "HEAD", head.target, head.headers
        await _send(writer, response, head_only, keep_alive)
        self.log.add({
            "host": netloc, "path": target, "start": start, "end": time.time(),
            "status": response.status, "ua": headers.get("user-agent", ""),
            "inm": headers.get("if-none-match"), "ims": headers.get("if-modified-since"),
            "conn": conn,
        })
        return keep_alive

    def _respond(self, netloc: str, head: RequestHead) -> Response:
        if head.method not in ("GET", "HEAD"):
            refusal = error_response(405)
            return Response(405, [*refusal.headers, ("Allow", "GET, HEAD")], refusal.body)
        return self.web.respond(netloc, head.target, head.headers)


def _checked_body_length(head: RequestHead) -> int:
    """Length of the request body to read and discard (0 if of unknown length)."""
    if "transfer-encoding" in head.headers:
        return 0
    length = head.content_length
    if length > MAX_BODY:
        raise BadRequest(413, head.target)
    return length


async def _send(writer: asyncio.StreamWriter, response: Response,
                head_only: bool, keep_alive: bool) -> None:
    lines = [f"HTTP/1.1 {response.status} {HTTPStatus(response.status).phrase}",
             *(f"{name}: {value}" for name, value in response.headers),
             f"Date: {formatdate(usegmt=True)}", f"Server: {SERVER_NAME}",
             f"Connection: {'keep-alive' if keep_alive else 'close'}", "", ""]
    head = "\r\n".join(lines).encode("latin-1")
    writer.write(head if head_only else head + response.body)
    await writer.drain()


async def serve(web: Web, log_path: str, ready_path: str | None = None,
                stop: asyncio.Event | None = None, seeds_path: str | None = None) -> None:
    """Serve `web` until `stop` is set or SIGTERM/SIGINT arrives (signals only in the main thread).

    If web.spec.port is 0 a free port is chosen. Once all listeners are up, `seeds_path` gets
    one seed URL per line and then `ready_path` the port.
    """
    stop = stop or asyncio.Event()
    _raise_fd_limit(web.spec.hosts + 1024)
    port, sockets = _bind_sockets(web)
    web = Web(replace(web.spec, port=port))
    log = RequestLog(log_path)
    connections = _Connections(web, log)
    servers = [await asyncio.start_server(connections.handle, sock=sock, limit=MAX_LINE)
               for sock in sockets]
    flusher = asyncio.create_task(log.flush_periodically())
    try:
        if seeds_path:
            _write_atomically(seeds_path, "".join(f"{url}\n" for url in web.seeds()))
        if ready_path:
            _write_atomically(ready_path, f"{port}\n")
        with _stop_on_signals(stop):
            await stop.wait()
    finally:
        for server in servers:
            server.close()
        await connections.close()
        flusher.cancel()
        log.flush()


def _bind_sockets(web: Web) -> tuple[int, list[socket.socket]]:
    """Listening sockets on every host address, all on one port (a free one if the spec says 0)."""
    for _ in range(PORT_ATTEMPTS):
        port, sockets = web.spec.port, []
        try:
            for i in range(web.spec.hosts):
                sockets.append(_listening_socket(web.host_addr(i), port))
                port = sockets[-1].getsockname()[1]
            return port, sockets
        except OSError as error:
            for sock in sockets:
                sock.close()
            if web.spec.port != 0 or error.errno != errno.EADDRINUSE:
                raise
    raise OSError(errno.EADDRINUSE, f"no port free on all {web.spec.hosts} addresses")


def _listening_socket(address: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _raise_fd_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


@contextlib.contextmanager
def _stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """Set `stop` on SIGTERM/SIGINT while inside; does nothing outside the main thread."""
    loop = asyncio.get_running_loop()
    installed = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(RuntimeError, ValueError, NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def _write_atomically(path: str, text: str) -> None:
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(partial, path)


# --- command line of a WebSpec, shared by the CLI and start_in_background ------------------------

def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = WebSpec()
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--pages", type=int, default=defaults.pages_per_host, help="pages per host")
    parser.add_argument("--port", type=int, default=defaults.port, help="0 = pick a free port")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--crawl-delay-every", type=int, default=defaults.crawl_delay_every,
                        help="every Nth host has Crawl-delay: 2 (0 = none)")
    parser.add_argument("--words", type=int, default=defaults.words_per_page, help="words per page")


def spec_from_args(args: argparse.Namespace) -> WebSpec:
    return WebSpec(hosts=args.hosts, pages_per_host=args.pages, port=args.port, seed=args.seed,
                   crawl_delay_every=args.crawl_delay_every, words_per_page=args.words)


def spec_argv(spec: WebSpec) -> list[str]:
    """Command-line arguments that make spec_from_args() return `spec`."""
    return ["--hosts", str(spec.hosts), "--pages", str(spec.pages_per_host),
            "--port", str(spec.port), "--seed", str(spec.seed),
            "--crawl-delay-every", str(spec.crawl_delay_every), "--words", str(spec.words_per_page)]


# --- running the server in another process (for tests, demos, benchmarks) -------------------------

def free_port() -> int:
    """A TCP port free on 127.0.1.1 at the time of the call."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.1.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class BackgroundServer:
    """A server process started by start_in_background(); `web` carries the actual port."""

    process: subprocess.Popen[bytes]
    web: Web
    log_path: str
    _stderr: IO[bytes] = field(repr=False)
    _workdir: tempfile.TemporaryDirectory[str] = field(repr=False)

    @property
    def port(self) -> int:
        return self.web.spec.port

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the server (which flushes its log) and wait for it; kill it if it lingers."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()
        self._workdir.cleanup()

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_in_background(web: Web, log_path: str, timeout: float = 10.0) -> BackgroundServer:
    """Run `python -m crawlapp.testweb serve` for `web` in a subprocess; return once it is ready."""
    workdir = tempfile.TemporaryDirectory(prefix="testweb-")
    ready = os.path.join(workdir.name, "ready")
    command = [sys.executable, "-m", "crawlapp.testweb", "serve", *spec_argv(web.spec),
               "--log", log_path, "--ready", ready]
    root = str(Path(__file__).resolve().parents[2])
    python_path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    stderr = tempfile.TemporaryFile()
    process = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": python_path},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    handle = BackgroundServer(process, web, log_path, stderr, workdir)
    deadline = time.monotonic() + timeout
    while not os.path.exists(ready):
        if process.poll() is not None or time.monotonic() > deadline:
            stderr.seek(0)
            message = stderr.read().decode(errors="replace")
            handle.stop()
            raise RuntimeError(f"test web server did not start: {message}")
        time.sleep(0.02)
    with open(ready, encoding="utf-8") as file:
        handle.web = Web(replace(web.spec, port=int(file.read())))
    return handle
