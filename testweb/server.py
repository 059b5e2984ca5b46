"""Asyncio HTTP/1.1 server for a generated Web: one listener per host address, all on one port;
over TLS (`--tls`) also HTTP/2 by ALPN (testweb/h2server.py).

Each request is logged as one JSON line (host, path, start, end, status, ua, inm, ims, conn,
bytes, gen; "aborted": true if the client went away before the whole response was sent;
over TLS "tls": true, on a resumed TLS session "resumed": true, over HTTP/2 "proto": "2"),
buffered in memory and appended to the log file every FLUSH_INTERVAL seconds and at shutdown.
`conn` numbers the connections, so reuse of keep-alive connections shows in the log; `bytes`
counts the body bytes sent, `gen` is the content generation that answered.

Streamed responses (Response.stream: big, bomb and drip pages) are sent chunk by chunk, pausing
where the stream says. The content generation can change while the server runs: on SIGUSR1
(one generation on) or by writing a number to the --generation-file, which is looked at (stat)
on every request and read again when it changed.

The changing web (testweb/changing.py, `serve-changing`) changes by its own clock instead; its
log lines also carry "ver", the version of the page that answered.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import itertools
import json
import logging
import math
import os
import re
import resource
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from email.utils import formatdate
from http import HTTPStatus
from pathlib import Path
from typing import IO, Protocol, Self
from urllib.parse import urlsplit

from testweb.changing import ChangingSpec, ChangingWeb
from testweb.h2server import H2Connection
from testweb.hosts import CASE_GROUPS, Response, WebSpec, error_response
from testweb.site import Web

logger = logging.getLogger(__name__)
PAUSE_CHECK = 0.005  # seconds between looks at a connection while a response pauses

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


class Served(Protocol):
    """What the server needs of a web: its hosts' addresses (a listener each, all on one
    port), its answer to a request and its seed URLs (Web, ChangingWeb)."""

    @property
    def host_count(self) -> int: ...

    def host_addr(self, i: int) -> str: ...

    def respond(self, netloc: str, path_and_query: str,
                request_headers: Mapping[str, str] | None = None) -> Response: ...

    def seeds(self) -> list[str]: ...


class Switch(Protocol):
    """The web that answers each request, and its content generation (logged as `gen`);
    SIGUSR1 calls bump()."""

    generation: int

    def web(self) -> Served: ...

    def bump(self) -> None: ...


class GenerationSwitch:
    """The content generation in force: the spec's, then bumped by SIGUSR1 or set by a file.

    `path` (optional) is a file holding the generation as a decimal number; it is stat()ed on
    every call of web() and read again when its mtime, size or inode changed. A missing or
    unreadable file leaves the generation as it is.
    """

    def __init__(self, web: Web, path: str | None = None) -> None:
        self.path = path
        self.generation = web.spec.generation
        self._webs = {self.generation: web}
        self._stamp: tuple[int, int, int] | None = None

    def web(self) -> Web:
        if self.path is not None:
            self._check_file(self.path)
        web = self._webs.get(self.generation)
        if web is None:
            web = self._webs[self.generation] = next(iter(self._webs.values())).at_generation(
                self.generation)
        return web

    def bump(self) -> None:
        self.generation += 1
        logger.info("content generation %d", self.generation)

    def _check_file(self, path: str) -> None:
        try:
            info = os.stat(path)
        except OSError:
            return
        stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            with open(path, encoding="ascii") as file:
                generation = int(file.read().strip())
        except (OSError, ValueError):
            logger.warning("ignoring unreadable generation file %s", path)
            return
        if generation >= 0 and generation != self.generation:
            self.generation = generation
            logger.info("content generation %d", generation)


class StillSwitch:
    """A web without generations (the changing web follows its own clock): SIGUSR1 is
    ignored, every request is logged with generation 0."""

    generation = 0

    def __init__(self, web: Served) -> None:
        self._web = web

    def web(self) -> Served:
        return self._web

    def bump(self) -> None:
        logger.info("SIGUSR1 ignored: this web has no generations")


class _Connections:
    """Serves the connections of all listeners and logs every request."""

    def __init__(self, switch: Switch, log: RequestLog) -> None:
        self.switch = switch
        self.log = log
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        address, port = writer.get_extra_info("sockname")[:2]
        netloc, conn = f"{address}:{port}", next(self._ids)
        ssl_object = writer.get_extra_info("ssl_object")
        tls: dict[str, object] = {}
        if ssl_object is not None:
            tls = {"tls": True, **({"resumed": True} if ssl_object.session_reused else {})}
        try:
            if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
                await H2Connection(
                    reader, writer, lambda *request: self._respond_h2(netloc, *request),
                    self.log.add, lambda: self._record(netloc, conn, tls)).serve(IDLE_TIMEOUT)
                return
            while await self._exchange(reader, writer, netloc, conn, tls):
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

    @property
    def web(self) -> Served:
        """The web of the current generation."""
        return self.switch.web()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        netloc: str, conn: int, tls: dict[str, object]) -> bool:
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
        sent = [0]
        record: dict[str, object] = {
            "host": netloc, "path": target, "start": start, "end": 0.0,
            "status": response.status, "ua": headers.get("user-agent", ""),
            "inm": headers.get("if-none-match"), "ims": headers.get("if-modified-since"),
            "conn": conn, "bytes": 0, "gen": self.switch.generation,
            **tls, **dict(response.logged),
        }
        try:
            await _send(reader, writer, response, head_only, keep_alive, sent)
        except BaseException:
            record.update(end=time.time(), bytes=sent[0], aborted=True)
            self.log.add(record)
            raise
        record.update(end=time.time(), bytes=sent[0])
        self.log.add(record)
        return keep_alive

    def _record(self, netloc: str, conn: int, tls: dict[str, object]) -> dict[str, object]:
        return {"host": netloc, "end": 0.0, "conn": conn, "gen": self.switch.generation, **tls}

    def _respond_h2(self, netloc: str, method: str, target: str,
                    headers: dict[str, str]) -> Response:
        try:
            head = RequestHead(method, _origin_form(target), (2, 0), headers)
        except BadRequest as error:
            return error_response(error.status)
        return self._respond(netloc, head)

    def _respond(self, netloc: str, head: RequestHead) -> Response:
        if head.method not in ("GET", "HEAD"):
            refusal = error_response(405)
            return Response(405, [*refusal.headers, ("Allow", "GET, HEAD")], refusal.body)
        return self.switch.web().respond(netloc, head.target, head.headers)


def _checked_body_length(head: RequestHead) -> int:
    """Length of the request body to read and discard (0 if of unknown length)."""
    if "transfer-encoding" in head.headers:
        return 0
    length = head.content_length
    if length > MAX_BODY:
        raise BadRequest(413, head.target)
    return length


async def _send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, response: Response,
                head_only: bool, keep_alive: bool, sent: list[int]) -> None:
    """Send the response; sent[0] counts the body bytes written (and drained) so far. A client
    that closes the connection during a pause ends the request then (logged aborted)."""
    lines = [f"HTTP/1.1 {response.status} {HTTPStatus(response.status).phrase}",
             *(f"{name}: {value}" for name, value in response.headers),
             f"Date: {formatdate(usegmt=True)}", f"Server: {SERVER_NAME}",
             f"Connection: {'keep-alive' if keep_alive else 'close'}", "", ""]
    head = "\r\n".join(lines).encode("latin-1")
    if head_only or response.stream is None:
        writer.write(head if head_only else head + response.body)
        await writer.drain()
        sent[0] = 0 if head_only else len(response.body)
        return
    writer.write(head)
    for item in response.stream():
        if isinstance(item, bytes):
            writer.write(item)
            await writer.drain()
            sent[0] += len(item)
        else:
            await writer.drain()
            await _pause(reader, item)


async def _pause(reader: asyncio.StreamReader, seconds: float) -> None:
    """Sleep `seconds`, watching the connection: ConnectionResetError once the client has
    closed it (as a server that notices a client going away)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if reader.at_eof():
            raise ConnectionResetError("the client closed the connection")
        await asyncio.sleep(min(left, PAUSE_CHECK))


async def serve(web: Web, log_path: str, ready_path: str | None = None,
                stop: asyncio.Event | None = None, seeds_path: str | None = None,
                generation_path: str | None = None, tls: tuple[str, str] | None = None) -> None:
    """Serve `web` until `stop` is set or SIGTERM/SIGINT arrives (signals only in the main thread).

    With `tls` (certificate and key files) every listener speaks TLS and offers HTTP/2 and
    HTTP/1.1 by ALPN (the web's spec says `tls`, so its URLs are https).

    If web.spec.port is 0 a free port is chosen. Once all listeners are up (one per host, case
    hosts included), `seeds_path` gets one seed URL per line and then `ready_path` the port.
    SIGUSR1 moves the content on one generation; so does a new number in `generation_path`.
    """
    def at_port(port: int) -> GenerationSwitch:
        return GenerationSwitch(Web(replace(web.spec, port=port)), generation_path)

    await _serve(web, web.spec.port, at_port, lambda port: f"{port}\n", log_path, ready_path,
                 stop, seeds_path, tls)


async def serve_changing(spec: ChangingSpec, log_path: str, ready_path: str | None = None,
                         stop: asyncio.Event | None = None, seeds_path: str | None = None) -> None:
    """Serve the ChangingWeb of `spec` until `stop` is set or SIGTERM/SIGINT arrives, as
    serve() does; each log line carries the version that answered (`ver`).

    Its clock's origin t0 is the whole second it starts in (time.time() rounded down, so
    that no Last-Modified is later than the Date it goes with): versions follow
    time.time() - t0. `ready_path` gets {"port": port, "t0": t0} (JSON).
    """
    t0 = float(math.floor(time.time()))
    web = ChangingWeb(spec, t0)
    await _serve(web, spec.port, lambda port: StillSwitch(web.at_port(port)),
                 lambda port: json.dumps({"port": port, "t0": t0}) + "\n", log_path, ready_path,
                 stop, seeds_path)


async def _serve(web: Served, port: int, at_port: Callable[[int], Switch],
                 ready_text: Callable[[int], str], log_path: str, ready_path: str | None,
                 stop: asyncio.Event | None, seeds_path: str | None,
                 tls: tuple[str, str] | None = None) -> None:
    """Listen for `web` on `port` (0: a free one), then serve the web at_port(the port) gives;
    `ready_path` gets ready_text(the port) once every listener is up."""
    stop = stop or asyncio.Event()
    _raise_fd_limit(web.host_count + 1024)
    port, sockets = _bind_sockets(web, port)
    log = RequestLog(log_path)
    switch = at_port(port)
    connections = _Connections(switch, log)
    context = tls_context(*tls) if tls else None
    servers = [await asyncio.start_server(connections.handle, sock=sock, limit=MAX_LINE,
                                          ssl=context) for sock in sockets]
    flusher = asyncio.create_task(log.flush_periodically())
    try:
        if seeds_path:
            _write_atomically(seeds_path, "".join(f"{url}\n" for url in switch.web().seeds()))
        if ready_path:
            _write_atomically(ready_path, ready_text(port))
        with _stop_on_signals(stop, switch.bump):
            await stop.wait()
    finally:
        for server in servers:
            server.close()
        await connections.close()
        flusher.cancel()
        log.flush()


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """The listeners' TLS: the certificate given, HTTP/2 preferred to HTTP/1.1 by ALPN."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.set_alpn_protocols(["h2", "http/1.1"])
    return context


def _bind_sockets(web: Served, wanted: int) -> tuple[int, list[socket.socket]]:
    """Listening sockets on every host address, all on one port (a free one if `wanted` is 0)."""
    for _ in range(PORT_ATTEMPTS):
        port, sockets = wanted, []
        try:
            for i in range(web.host_count):
                sockets.append(_listening_socket(web.host_addr(i), port))
                port = sockets[-1].getsockname()[1]
            return port, sockets
        except OSError as error:
            for sock in sockets:
                sock.close()
            if wanted != 0 or error.errno != errno.EADDRINUSE:
                raise
    raise OSError(errno.EADDRINUSE, f"no port free on all {web.host_count} addresses")


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
def _stop_on_signals(stop: asyncio.Event,
                     on_usr1: Callable[[], None] | None = None) -> Iterator[None]:
    """Set `stop` on SIGTERM/SIGINT (and call `on_usr1` on SIGUSR1) while inside; does nothing
    outside the main thread."""
    loop = asyncio.get_running_loop()
    installed = []
    handlers: list[tuple[signal.Signals, Callable[[], object]]] = [
        (signal.SIGTERM, stop.set), (signal.SIGINT, stop.set)]
    if on_usr1 is not None:
        handlers.append((signal.SIGUSR1, on_usr1))
    for signum, handler in handlers:
        with contextlib.suppress(RuntimeError, ValueError, NotImplementedError):
            loop.add_signal_handler(signum, handler)
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
    parser.add_argument("--tls", action="store_true",
                        help="URLs are https (serve with --tls-cert and --tls-key)")
    parser.add_argument("--names", default="", help="comma-separated host names of hosts 0, 1, ... "
                        "(links use them; resolve each to its host's address)")
    cases = parser.add_argument_group("opt-in cases (see testweb/cases.py)")
    cases.add_argument("--cases", action="store_true", help="every case group")
    cases.add_argument("--case", action="append", choices=CASE_GROUPS, default=[],
                       dest="case_groups", metavar="GROUP",
                       help=f"one case group (repeatable): {', '.join(CASE_GROUPS)}")
    cases.add_argument("--vary-validators", action="store_true",
                       help="normal hosts vary ETag / Last-Modified")
    cases.add_argument("--generation", type=int, default=defaults.generation,
                       help="content generation to start at")
    cases.add_argument("--change-fraction", type=float, default=defaults.change_fraction,
                       help="share of pages changing per generation")
    cases.add_argument("--big-page-bytes", type=int, default=defaults.big_page_bytes)
    cases.add_argument("--bomb-bytes", type=int, default=defaults.bomb_bytes,
                       help="decompressed size of the gzip bomb")
    cases.add_argument("--drip-seconds", type=float, default=defaults.drip_seconds)


_EXTRA_FIELDS = (("generation", "--generation"), ("change_fraction", "--change-fraction"),
                 ("big_page_bytes", "--big-page-bytes"), ("bomb_bytes", "--bomb-bytes"),
                 ("drip_seconds", "--drip-seconds"))


def spec_from_args(args: argparse.Namespace) -> WebSpec:
    groups = set(getattr(args, "case_groups", None) or ())
    extras = {name: getattr(args, name) for name, _ in _EXTRA_FIELDS if hasattr(args, name)}
    return WebSpec(hosts=args.hosts, pages_per_host=args.pages, port=args.port, seed=args.seed,
                   crawl_delay_every=args.crawl_delay_every, words_per_page=args.words,
                   names=tuple(n for n in getattr(args, "names", "").split(",") if n),
                   tls=getattr(args, "tls", False),
                   cases=getattr(args, "cases", False),
                   vary_validators=getattr(args, "vary_validators", False),
                   **{f"{group}_cases": True for group in groups}, **extras)


def spec_argv(spec: WebSpec) -> list[str]:
    """Command-line arguments that make spec_from_args() return `spec`."""
    argv = ["--hosts", str(spec.hosts), "--pages", str(spec.pages_per_host),
            "--port", str(spec.port), "--seed", str(spec.seed),
            "--crawl-delay-every", str(spec.crawl_delay_every), "--words", str(spec.words_per_page)]
    if spec.names:
        argv += ["--names", ",".join(spec.names)]
    if spec.tls:
        argv.append("--tls")
    if spec.cases:
        argv.append("--cases")
    for group in CASE_GROUPS:
        if getattr(spec, f"{group}_cases"):
            argv += ["--case", group]
    if spec.vary_validators:
        argv.append("--vary-validators")
    defaults = WebSpec()
    for name, option in _EXTRA_FIELDS:
        if getattr(spec, name) != getattr(defaults, name):
            argv += [option, repr(getattr(spec, name))]
    return argv


# --- command line of a ChangingSpec: an option per field (--pages-per-host, --news-hosts...) --------

def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_changing_arguments(parser: argparse.ArgumentParser) -> None:
    """An option per ChangingSpec field, of its type, with its default (see testweb/changing.py)."""
    for spec_field in fields(ChangingSpec):
        parser.add_argument(_option(spec_field.name), type=type(spec_field.default),
                            default=spec_field.default, metavar=spec_field.name.upper(),
                            help="default: %(default)s")


def changing_spec_from_args(args: argparse.Namespace) -> ChangingSpec:
    return ChangingSpec(**{f.name: getattr(args, f.name) for f in fields(ChangingSpec)})


def changing_argv(spec: ChangingSpec) -> list[str]:
    """Command-line arguments that make changing_spec_from_args() return `spec`."""
    return [arg for f in fields(spec) for arg in (_option(f.name), repr(getattr(spec, f.name)))]


# --- running the server in another process (for tests, demos, benchmarks) -------------------------

def free_port() -> int:
    """A TCP port free on 127.0.1.1 at the time of the call."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.1.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _ServerProcess:
    """Stopping a server process started by _launch(), as a context manager too."""

    process: subprocess.Popen[bytes]
    _stderr: IO[bytes]
    _workdir: tempfile.TemporaryDirectory[str]

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the server (which flushes its log) and wait for it; kill it if it lingers."""
        _stop_process(self.process, self._stderr, self._workdir, timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@dataclass
class BackgroundServer(_ServerProcess):
    """A server process started by start_in_background(); `web` carries the actual port."""

    process: subprocess.Popen[bytes]
    web: Web
    log_path: str
    _stderr: IO[bytes] = field(repr=False)
    _workdir: tempfile.TemporaryDirectory[str] = field(repr=False)
    generation_path: str = ""

    @property
    def port(self) -> int:
        return self.web.spec.port

    def set_generation(self, generation: int) -> None:
        """Switch the running server to content `generation` (every request after this call
        returns sees it) and `web` with it."""
        _write_atomically(self.generation_path, f"{generation}\n")
        self.web = self.web.at_generation(generation)


@dataclass
class ChangingServer(_ServerProcess):
    """A changing web's server process started by start_changing_in_background(): `web` on
    its actual port, with the server's clock origin (`t0`, time.time() at offset 0)."""

    process: subprocess.Popen[bytes]
    web: ChangingWeb
    log_path: str
    _stderr: IO[bytes] = field(repr=False)
    _workdir: tempfile.TemporaryDirectory[str] = field(repr=False)

    @property
    def t0(self) -> float:
        return self.web.t0

    @property
    def port(self) -> int:
        return self.web.spec.port

    def seeds(self) -> list[str]:
        """The home page URL of every host."""
        return self.web.seeds()


def start_in_background(web: Web, log_path: str, timeout: float = 10.0,
                        tls: tuple[str, str] | None = None) -> BackgroundServer:
    """Run `python -m testweb serve` for `web` in a subprocess; return once it is ready.
    `tls`: the certificate and key files of its TLS listeners (for a web whose spec says
    `tls`)."""
    workdir = tempfile.TemporaryDirectory(prefix="testweb-")
    generation = os.path.join(workdir.name, "generation")
    arguments = ["serve", *spec_argv(web.spec), "--log", log_path, "--generation-file", generation,
                 *(["--tls-cert", tls[0], "--tls-key", tls[1]] if tls else [])]
    process, stderr, ready = _launch(arguments, workdir, timeout)
    return BackgroundServer(process, Web(replace(web.spec, port=int(ready))), log_path, stderr,
                            workdir, generation)


def start_changing_in_background(spec: ChangingSpec, log_path: str,
                                 timeout: float = 30.0) -> ChangingServer:
    """Run `python -m testweb serve-changing` for `spec` in a subprocess; return once it is
    ready, with the web on its port and the server's t0."""
    workdir = tempfile.TemporaryDirectory(prefix="testweb-")
    arguments = ["serve-changing", *changing_argv(spec), "--log", log_path]
    process, stderr, ready = _launch(arguments, workdir, timeout)
    started = json.loads(ready)
    web = ChangingWeb(replace(spec, port=int(started["port"])), float(started["t0"]))
    return ChangingServer(process, web, log_path, stderr, workdir)


def _launch(arguments: list[str], workdir: tempfile.TemporaryDirectory[str], timeout: float
            ) -> tuple[subprocess.Popen[bytes], IO[bytes], str]:
    """`python -m testweb ARGUMENTS --ready FILE` in a subprocess: the process, its stderr
    and what it wrote to FILE, once it did (the process stopped and RuntimeError if it did
    not within `timeout` seconds)."""
    ready = os.path.join(workdir.name, "ready")
    command = [sys.executable, "-m", "testweb", *arguments, "--ready", ready]
    root = str(Path(__file__).resolve().parents[1])
    python_path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    stderr = tempfile.TemporaryFile()
    process = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": python_path},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    _run_ahead(process.pid)
    deadline = time.monotonic() + timeout
    while not os.path.exists(ready):
        if process.poll() is not None or time.monotonic() > deadline:
            stderr.seek(0)
            message = stderr.read().decode(errors="replace")
            _stop_process(process, stderr, workdir, 10.0)
            raise RuntimeError(f"test web server did not start: {message}")
        time.sleep(0.02)
    with open(ready, encoding="utf-8") as file:
        return process, stderr, file.read()


def _run_ahead(pid: int) -> None:
    """Run the server process ahead of every ordinary one (SCHED_FIFO, the lowest real-time
    priority), where the machine lets it: its log is the judge's clock, and a server preempted
    between sending an answer and stamping its end, on a machine loaded by the crawl it serves
    and the tests beside it, logs the end late and the crawl's next request to the host as too
    soon. The server is single-threaded and waits on its sockets; the kernel keeps 5 % of each
    second for ordinary processes whatever it does."""
    try:
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(1))
    except OSError as error:  # no CAP_SYS_NICE (a container's default): ordinary scheduling
        print(f"test web server at ordinary priority ({error}): under load its log may stamp "
              "an answer's end late", file=sys.stderr)


def _stop_process(process: subprocess.Popen[bytes], stderr: IO[bytes],
                  workdir: tempfile.TemporaryDirectory[str], timeout: float) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    stderr.close()
    workdir.cleanup()
