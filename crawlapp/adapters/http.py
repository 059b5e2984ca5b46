"""The HTTP client of the fetch stage: httpcore, limits, the SSRF guard, no automatic redirects."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import resource
import ssl
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar
from urllib.parse import SplitResult, urlsplit

import certifi
import httpcore
import httpx

from crawlapp.adapters.netstream import ResumingContext, origin_pool
from crawlapp.adapters.redis.dnscache import DnsCache
from crawlapp.core.decoding import (
    ACCEPT_ENCODING,
    CORRUPT,
    BodyTooLarge,
    BoundedDecoder,
    UnsupportedEncoding,
)
from crawlapp.core.netguard import refusal_reason
from crawlapp.core.records import Fetched, FetchError
from crawlapp.core.scope import is_address
from crawlapp.core.settings import TLS_VERIFY_OFF, Settings

T = TypeVar("T")
log = logging.getLogger(__name__)
KEPT_HEADERS = ("content-type", "etag", "last-modified", "location", "retry-after",
                "x-robots-tag", "content-encoding")
_KEPT = frozenset(name.encode("ascii") for name in KEPT_HEADERS)
KEEPALIVE_SECONDS = 60.0
MAX_ORIGINS = 2048  # origins whose pools (and keep-alive connections) a Fetcher keeps
WANTED_FILES = 65536  # the open files a fetch process asks for (files_for_connections)
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)\Z")
_HASHED = re.compile(r"[0-9a-f]{8}\.[0-9]+")  # a certificate in an OpenSSL CA directory
MAX_REASON = 200  # characters of a TLS failure's reason kept
# TLS failures of the connection itself (a closed or reset connection is "connect").
_NOT_TLS = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError, ssl.SSLWantReadError,
            ssl.SSLWantWriteError)


def valid_host_name(host: str) -> bool:
    """A name DNS can be asked for: labels of 1-63 letters, digits, '-' or '_', 253 in all."""
    name = host.lower().removesuffix(".")
    return 0 < len(name) <= 253 and all(_LABEL.match(label) for label in name.split("."))


def _tls_error(exc: BaseException) -> ssl.SSLError | None:
    """The failed TLS handshake behind a connection error, if that is what it is."""
    seen: BaseException | None = exc
    for _ in range(8):  # httpx -> httpcore -> ssl
        if seen is None:
            break
        if isinstance(seen, ssl.SSLError) and not isinstance(seen, _NOT_TLS):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def tls_failure(exc: BaseException) -> str | None:
    """'tls_certificate' or 'tls' when a connection error is a failed TLS handshake."""
    error = _tls_error(exc)
    if error is None:
        return None
    return (FetchError.TLS_CERTIFICATE if isinstance(error, ssl.SSLCertVerificationError)
            else FetchError.TLS)


def tls_reason(exc: BaseException) -> str | None:
    """Why a TLS handshake failed, as OpenSSL says it: the certificate's fault
    ('certificate has expired', 'Hostname mismatch, certificate is not valid for ...',
    'unable to get local issuer certificate', 'self-signed certificate') or the
    handshake's ('wrong version number', 'tlsv1 alert protocol version')."""
    error = _tls_error(exc)
    if error is None:
        return None
    if isinstance(error, ssl.SSLCertVerificationError) and error.verify_message:
        reason = str(error.verify_message)
    else:
        reason = (error.reason or "").lower().replace("_", " ") or str(error)
    return reason.rstrip(".")[:MAX_REASON]


def _system_has_roots(context: ssl.SSLContext) -> bool:
    """A context made with OpenSSL's default verify paths trusts some certificates: its CA
    file had some, or its CA directory holds some by hash."""
    if context.cert_store_stats()["x509"]:  # read from the CA file when the context was made
        return True
    capath = ssl.get_default_verify_paths().capath  # read at each verification
    try:
        return capath is not None and any(map(_HASHED.fullmatch, os.listdir(capath)))
    except OSError:
        return False


def tls_context(settings: Settings) -> ssl.SSLContext:
    """The fetch stage's TLS context: the system's roots (OpenSSL's default verify paths,
    as curl and wget trust), certifi's bundle where the system has none, and
    CRAWL_CA_BUNDLE's; with CRAWL_TLS_VERIFY=false none at all, and a warning. Sessions are
    resumed (ResumingContext)."""
    if not settings.tls_verify:
        log.warning(TLS_VERIFY_OFF)
        return httpx.create_ssl_context(verify=False)
    # ssl.create_default_context()'s client context: certificates and names verified, and
    # OpenSSL's default verify paths.
    context = ResumingContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if not _system_has_roots(context):
        context.load_verify_locations(cafile=certifi.where())
    if settings.ca_bundle is not None:
        context.load_verify_locations(cafile=settings.ca_bundle)
    return context


class Pool(Protocol):
    """What the Fetcher sends its requests to: httpcore's connection pool, or in tests a
    stand-in answering from a table (tests/mock_web.py)."""

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response: ...
    async def aclose(self) -> None: ...


class Fetcher:
    """httpcore connection pools, one per origin, kept across batches for keep-alive.

    One small pool per origin instead of one large pool: httpcore scans every pooled
    connection on each request, which costs more CPU than the request itself once a
    crawl holds connections to hundreds of hosts. Requests go to httpcore itself, built from
    the request URL's parts: httpx's client layers (cookies, auth, redirects, event hooks)
    are all things a crawler must not use, and its request, URL, header and response objects
    around httpcore's (the URL parsed twice, the headers normalised and decoded) cost a
    third of the fetch loop's CPU.

    A `pool` given (tests/mock_web.py) answers every request instead of the network; the
    header and body limits and decoding still apply. Without a DNS cache (only with a pool)
    no name is resolved and no address guarded: requests keep their host.
    """

    def __init__(self, settings: Settings, dns: DnsCache | None, max_origins: int = MAX_ORIGINS,
                 pool: Pool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if dns is None and pool is None:
            raise ValueError("a Fetcher on the network needs a DNS cache")
        self.settings = settings
        self.dns = dns
        self.max_origins = max_origins
        self.pool = pool
        self._headers = [(b"User-Agent", settings.user_agent.encode("latin-1", "replace")),
                         (b"Accept", b"text/html,*/*;q=0.5"),
                         (b"Accept-Encoding", ACCEPT_ENCODING.encode("ascii"))]
        if settings.from_address:
            self._headers.append((b"From", settings.from_address.encode("latin-1", "replace")))
        self._ssl = tls_context(settings)
        # The connection's own timeout; reading and writing are bounded by the whole
        # request's (get), so the streams set no timer of their own on each read and write.
        self._timeout = {"connect": min(10.0, settings.fetch_timeout), "read": None,
                         "write": None, "pool": None}
        self._clock = clock
        # origin -> its pool and when a request last asked for it, the least recent first
        self._pools: OrderedDict[str, tuple[Pool, float]] = OrderedDict()
        self._asking: Counter[str] = Counter()  # origin -> its requests under way

    async def _pool(self, origin: str) -> Pool:
        if self.pool is not None:
            return self.pool
        now = self._clock()
        kept = self._pools.pop(origin, None)
        # A host's connection is kept a minute between requests (httpx's default is 5 s):
        # while the pipeline is busy a host's next URL may take longer than that to come.
        # With HTTP/2 an origin's requests share its one connection (one at a time: politeness).
        pool = kept[0] if kept else origin_pool(self._ssl, self.settings.http2,
                                                keepalive_expiry=KEEPALIVE_SECONDS)
        self._pools[origin] = (pool, now)
        await self._close_unused(now)
        return pool

    async def _close_unused(self, now: float) -> None:
        """Close the pools of the origins no request asked for within the keep-alive time
        (or a request's longest, so that none is closed under a request), and of the least
        recent beyond max_origins, but never a pool with a request under way (it goes to
        the end of the line instead): httpcore closes an expired connection only when its
        pool is asked again, and a host done with would hold its connection (and a file on
        either side) until then."""
        unused = now - max(KEEPALIVE_SECONDS, self.settings.fetch_timeout)
        passed = 0  # pools under way moved to the end: each once at most
        while self._pools and passed < len(self._pools):
            origin, (pool, used) = next(iter(self._pools.items()))
            if used > unused and len(self._pools) <= self.max_origins:
                return
            if self._asking[origin]:
                self._pools.move_to_end(origin)
                passed += 1
                continue
            del self._pools[origin]
            await pool.aclose()

    async def _address(self, host: str) -> tuple[str | None, str | None]:
        """The address to connect to, or None and why not (the SSRF guard's refusal, DNS).

        Every address of the name must pass the guard; the request then goes to the first
        one, so a second resolution (DNS rebinding) cannot change where it connects.
        """
        if self.dns is None:
            return host, None
        if is_address(host):
            reason = refusal_reason(host, self.settings.allowed_networks)
            return (None, reason) if reason else (host, None)
        if not valid_host_name(host):
            return None, FetchError.INVALID_HOST
        answer = await self.dns.resolve(host)
        if answer.error:
            return None, answer.error
        reasons = [refusal_reason(a, self.settings.allowed_networks) for a in answer.addresses]
        refused = next((r for r in reasons if r), None)
        return (None, refused) if refused else (answer.addresses[0], None)

    async def get(self, url: str, extra_headers: dict[str, str] | None = None,
                  max_bytes: int | None = None, truncate: bool = False) -> Fetched:
        """GET `url`, streaming at most `max_bytes` of decoded body within the fetch timeout;
        a longer body is an error, or with `truncate` cut to its first `max_bytes`."""
        result = Fetched(url=url, started=time.time())
        cap = max_bytes or self.settings.max_body_bytes
        try:
            parts = urlsplit(url)
            target = _Target(parts.scheme, parts.hostname or "", parts.port,
                             parts.netloc.rpartition("@")[2], _path_and_query(url, parts))
        except (ValueError, UnicodeError, httpx.InvalidURL):
            result.error = FetchError.INVALID_URL
            result.ended = time.time()
            return result
        try:
            address, refused = await self._address(target.host)
            if address is None:
                result.error = refused
                return result
            async with asyncio.timeout(self.settings.fetch_timeout):
                await self._stream(target, address, extra_headers or {}, cap, truncate, result)
        except (TimeoutError, httpcore.TimeoutException):
            result.error = FetchError.TIMEOUT
        except httpcore.ConnectError as exc:
            result.error = tls_failure(exc) or FetchError.CONNECT
            result.error_note = tls_reason(exc)
        except BodyTooLarge:
            result.error = FetchError.TOO_LARGE
        except UnsupportedEncoding:
            result.error = FetchError.UNSUPPORTED_ENCODING
        except (*CORRUPT, httpcore.ProtocolError):
            result.error = FetchError.PROTOCOL
        except (httpcore.NetworkError, httpcore.UnsupportedProtocol, httpcore.ProxyError) as exc:
            result.error = f"http_{type(exc).__name__}"[:40]
        except Exception as exc:  # one request's failure is its own, never its batch's
            log.exception("fetching %s failed", url)
            result.error = f"error_{type(exc).__name__}"[:40]
        finally:
            result.ended = time.time()
        return result

    async def _stream(self, target: _Target, address: str, extra: dict[str, str], cap: int,
                      truncate: bool, result: Fetched) -> None:
        origin = f"{target.scheme}://{target.netloc}"
        self._asking[origin] += 1  # before its pool is looked up: closing others spares it
        try:
            await self._exchange(await self._pool(origin), target, address, extra, cap,
                                 truncate, result)
        finally:
            self._asking[origin] -= 1
            if not self._asking[origin]:
                del self._asking[origin]

    async def _exchange(self, pool: Pool, target: _Target, address: str, extra: dict[str, str],
                        cap: int, truncate: bool, result: Fetched) -> None:
        """One request on `pool` and its response, read into `result`."""
        headers = [(b"Host", target.netloc.encode("ascii")), *self._headers,
                   *((_header_bytes(name), _header_bytes(value)) for name, value in extra.items())]
        extensions: dict[str, object] = {"timeout": self._timeout}
        if target.host != address:
            # Connect to the checked address; the name still goes in Host and TLS SNI.
            extensions["sni_hostname"] = target.host
        scheme = target.scheme.encode("ascii")
        request = httpcore.Request(b"GET", httpcore.URL(
            scheme=scheme, host=address.encode("ascii"), target=target.path,
            port=target.port or _DEFAULT_PORTS.get(scheme)), headers=headers,
            extensions=extensions)
        response = await pool.handle_async_request(request)
        try:
            result.status = response.status
            result.headers = headers_of(response.headers)
            result.request_headers = header_block(headers)
            result.response_headers = header_block(response.headers)
            result.ip_address, result.cipher_suite = _server_ip(response), _cipher(response)
            result.http_version = response.extensions.get(
                "http_version", b"HTTP/1.1").decode("ascii", "replace")
            declared = next((value for name, value in response.headers
                             if name.lower() == b"content-length"), b"")
            if declared.isdigit() and int(declared) > cap and not truncate:
                result.error, result.truncated = FetchError.TOO_LARGE, True  # none of it read
                return
            decoder = BoundedDecoder(result.headers.get("content-encoding"), cap)
            try:
                async for chunk in response.aiter_stream():
                    decoder.feed(chunk)
                result.body = decoder.body()
            except BodyTooLarge:
                result.body, result.truncated = decoder.body(), True  # the bytes read, kept
                if not truncate:
                    raise
        finally:
            await response.aclose()


_DEFAULT_PORTS = {b"http": 80, b"https": 443}


class _Target(NamedTuple):
    """What a request is built from: a URL's scheme, host name, port (None: the scheme's),
    authority (for Host) and request target (path and query, ASCII)."""

    scheme: str
    host: str
    port: int | None
    netloc: str
    path: bytes


def _path_and_query(url: str, parts: SplitResult) -> bytes:
    """The request target of `url`: its path and query as the request URL has them (the URL
    Standard's serializer escapes all but ASCII, as a browser sends them), "/" for an empty
    path; a URL not serialized so is escaped as httpx escapes it."""
    start = url.find("//") + 2
    end = start + len(parts.netloc)
    rest = url[end:].partition("#")[0]
    if not rest.startswith("/"):
        rest = "/" + rest
    if url[start:end] == parts.netloc and rest.isascii() and " " not in rest:
        return rest.encode("ascii")
    return httpx.URL(url).raw_path


def _header_bytes(text: str) -> bytes:
    """A header's name or value as sent: Latin-1, else UTF-8 (a validator read as UTF-8
    goes back as its own bytes)."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def headers_of(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The KEPT_HEADERS of a response as httpx.Headers would give them
    (names lower-cased, the values of a repeated one joined by ", ", all decoded as ASCII,
    else UTF-8, else Latin-1), read in one pass."""
    encoding = _header_encoding(raw)
    kept: dict[str, str] = {}
    for name, value in raw:
        key = name.lower()
        if key in _KEPT:
            text, field = value.decode(encoding), key.decode("ascii")
            kept[field] = f"{kept[field]}, {text}" if field in kept else text
    return kept


def _header_encoding(raw: list[tuple[bytes, bytes]]) -> str:
    """httpx's choice of an encoding for a response's headers: the first of ASCII and UTF-8
    that decodes every name and value, else Latin-1."""
    if all(name.isascii() and value.isascii() for name, value in raw):
        return "ascii"
    try:
        for name, value in raw:
            name.decode("utf-8")
            value.decode("utf-8")
    except UnicodeDecodeError:
        return "iso-8859-1"
    return "utf-8"


def header_block(raw: list[tuple[bytes, bytes]]) -> str:
    """Headers as on the wire, "Name: value" lines joined by CRLF (latin-1: any byte kept)."""
    return b"\r\n".join(b"%s: %s" % pair for pair in raw).decode("latin-1")


def _cipher(response: httpcore.Response) -> str | None:
    """The cipher suite of the TLS connection the response came over (None: plain HTTP, or
    a stand-in pool)."""
    stream = response.extensions.get("network_stream")
    tls = stream.get_extra_info("ssl_object") if stream is not None else None
    cipher = tls.cipher() if tls is not None else None
    return str(cipher[0]) if cipher else None


def _server_ip(response: httpcore.Response) -> str | None:
    """The address of the server the response came from (None from a stand-in pool)."""
    stream = response.extensions.get("network_stream")
    address = stream.get_extra_info("server_addr") if stream is not None else None
    return str(address[0]) if address else None


@dataclass
class _FetchLoop:
    """The process's fetch event loop, run by a thread of its own, and its Fetcher."""

    pid: int
    loop: asyncio.AbstractEventLoop
    fetcher: Fetcher
    thread: threading.Thread
    cpu_reported: float = 0.0

    def cpu_since_last(self) -> float:
        """CPU seconds the loop's thread used since the previous call."""
        ident = self.thread.ident
        if ident is None:
            return 0.0
        used = time.clock_gettime(time.pthread_getcpuclockid(ident))
        delta, self.cpu_reported = used - self.cpu_reported, used
        return delta


def files_for_connections() -> int:
    """Raise this process's soft limit on open files to its hard limit (at most
    WANTED_FILES) and return it. A fetch process holds a socket per host it is fetching
    and per host whose connection it keeps: thousands on a large web, where the soft limit
    many systems start a shell or service with is 1,024 (a connect past it fails with
    EMFILE, and its host would be counted unreachable)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return WANTED_FILES
    want = WANTED_FILES if hard == resource.RLIM_INFINITY else min(hard, WANTED_FILES)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError) as exc:
            log.warning("open files stay limited to %d (%s)", soft, exc)
    return soft


def _kept_origins(files: int) -> int:
    """How many origins' connections a fetch process may keep with `files` open files: a
    quarter of them (as many again for requests under way, the rest for the process's
    other sockets and files), at most MAX_ORIGINS."""
    kept = min(MAX_ORIGINS, max(1, files // 4))
    if kept < MAX_ORIGINS:
        log.warning("open files limited to %d (ulimit -n): a fetch process keeps the "
                    "connections of %d hosts, not %d", files, kept, MAX_ORIGINS)
    return kept


_LOOP: _FetchLoop | None = None
_LOOP_LOCK = threading.Lock()


def _fetch_loop(settings: Settings, dns: Callable[[], DnsCache]) -> _FetchLoop:
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.pid != os.getpid():  # first use, or a forked child
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="fetch-loop", daemon=True)
            thread.start()
            fetcher = Fetcher(settings, dns(), _kept_origins(files_for_connections()))
            _LOOP = _FetchLoop(os.getpid(), loop, fetcher, thread)
        return _LOOP


def fetch_loop_cpu() -> float:
    """CPU seconds this process's fetch loop used since the previous call (0 if none)."""
    with _LOOP_LOCK:
        return _LOOP.cpu_since_last() if _LOOP is not None and _LOOP.pid == os.getpid() else 0.0


def run_on_fetch_loop(settings: Settings, dns: Callable[[], DnsCache],
                      coro_factory: Callable[[Fetcher], Awaitable[T]]) -> T:
    """Run `coro_factory(fetcher)` on the process's fetch loop and wait for its result.

    Every batch of a threads-pool worker runs on the same loop with the same Fetcher, so
    a host's keep-alive connection serves its next request whichever thread runs it.
    """
    state = _fetch_loop(settings, dns)

    async def main() -> T:
        return await coro_factory(state.fetcher)

    return asyncio.run_coroutine_threadsafe(main(), state.loop).result()


async def start_at(when: float, call: Awaitable[T]) -> T:
    """Await `call` no earlier than the UNIX time `when` (a host's next allowed time)."""
    delay = when - time.time()
    if delay > 0:
        await asyncio.sleep(delay)
    return await call
