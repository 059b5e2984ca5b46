"""httpcore's network layer and locks on asyncio's own, for the fetch loop.

httpcore runs on anyio by default. anyio's socket streams enter a cancel scope around every
read and write and rebuild a table of socket attributes on each lookup: a third of the HTTP
client's CPU per request (`python -m bench.fetch_bench`). The fetch loop is always asyncio,
and each request already runs under one overall timeout (Fetcher.get), so these streams are
asyncio's StreamReader and StreamWriter, with a timeout only where httpcore asks for one.

httpcore's locks, events and cancellation shields go through anyio too: each lock taken
yields a turn of the event loop, and each shield and event asks sniffio which library runs
(a tenth of the fetch process's CPU, six or more per request; over HTTP/2 half the client's
CPU). `use_asyncio_primitives` gives httpcore's HTTP/1.1 and HTTP/2 modules asyncio's lock,
event and semaphore and a shield that does nothing: what httpcore shields is a connection's
close, or over HTTP/2 a stream's end (a semaphore released, a lock no other request holds, as
a host has one request at a time, then perhaps the close), none of which suspends on
AsyncioStream with asyncio's primitives, so no cancellation can reach it.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections import OrderedDict
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar

import httpcore
import httpcore._async.connection
import httpcore._async.connection_pool
import httpcore._async.http2
import httpcore._async.http11

T = TypeVar("T")
# httpcore reads at most 64 KiB at a time; the reader pauses its socket past twice this.
READ_LIMIT = 256 * 1024


async def _within(timeout: float | None, awaitable: Awaitable[T]) -> T:
    if timeout is None:
        return await awaitable
    async with asyncio.timeout(timeout):
        return await awaitable


class ResumingContext(ssl.SSLContext):
    """A client's TLS context that resumes sessions: the last session of each server name
    (the `MAX_SESSIONS` names used last) is offered in that name's next handshake, so a
    connection made again (a host idle past keep-alive, a server that closed it) skips the
    key exchange and certificate check, as browsers and curl do. A session OpenSSL cannot
    resume costs nothing: the handshake is a full one. asyncio's start_tls takes no session,
    so it is given where the handshake's TLS object is made (wrap_bio)."""

    MAX_SESSIONS = 4096

    def __init__(self, protocol: int = ssl.PROTOCOL_TLS_CLIENT) -> None:
        super().__init__()
        self._sessions: OrderedDict[str, ssl.SSLSession] = OrderedDict()

    def wrap_bio(self, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO,
                 server_side: bool = False, server_hostname: str | bytes | None = None,
                 session: ssl.SSLSession | None = None) -> ssl.SSLObject:
        if session is None and not server_side and isinstance(server_hostname, str):
            session = self._sessions.get(server_hostname)
        return super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)

    def keep(self, ssl_object: ssl.SSLObject) -> None:
        """Keep the session of a connection that ends, for its server name's next one."""
        name, session = ssl_object.server_hostname, ssl_object.session
        if name is None or session is None:
            return
        self._sessions[name] = session
        self._sessions.move_to_end(name)
        while len(self._sessions) > self.MAX_SESSIONS:
            self._sessions.popitem(last=False)


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One TCP (or TLS) connection as httpcore uses it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return await _within(timeout, self._reader.read(max_bytes))
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            await _within(timeout, self._writer.drain())
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    async def aclose(self) -> None:
        ssl_object = self._writer.get_extra_info("ssl_object")
        if ssl_object is not None and isinstance(ssl_object.context, ResumingContext):
            ssl_object.context.keep(ssl_object)
        # Not waiting for the close to complete: a TLS peer may never answer close_notify.
        self._writer.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        try:
            await _within(timeout, self._writer.start_tls(ssl_context,
                                                          server_hostname=server_hostname))
        except TimeoutError as exc:
            self._writer.close()
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:  # ssl.SSLError is an OSError
            self._writer.close()
            raise httpcore.ConnectError(str(exc)) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # an idle keep-alive connection the server has closed
            return self._reader.at_eof() or self._writer.transport.is_closing()
        name = {"ssl_object": "ssl_object", "client_addr": "sockname",
                "server_addr": "peername", "socket": "socket"}.get(info)
        return self._writer.get_extra_info(name) if name else None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """TCP connections for httpcore's pool (no Unix sockets: the crawler never asks for one)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        try:
            reader, writer = await _within(timeout, asyncio.open_connection(
                host, port, limit=READ_LIMIT,
                local_addr=(local_address, 0) if local_address else None))
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _Event:
    """httpcore's AsyncEvent on asyncio: a pool request waiting for its connection."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self, timeout: float | None = None) -> None:
        if self._event.is_set():
            return
        try:
            await _within(timeout, self._event.wait())
        except TimeoutError as exc:
            raise httpcore.PoolTimeout(str(exc)) from exc


class _Semaphore:
    """httpcore's AsyncSemaphore on asyncio: an HTTP/2 connection's streams at once."""

    def __init__(self, bound: int) -> None:
        self._semaphore = asyncio.Semaphore(bound)

    async def acquire(self) -> None:
        await self._semaphore.acquire()

    async def release(self) -> None:
        self._semaphore.release()


class _NoShield:
    """httpcore's AsyncShieldCancellation for connections on AsyncioStream (see above)."""

    def __enter__(self) -> _NoShield:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


@functools.cache
def use_asyncio_primitives() -> None:
    """Give httpcore's asynchronous pool, HTTP/1.1 and HTTP/2 connections asyncio's lock,
    event and semaphore, and _NoShield (once a process: a transport per origin asks)."""
    for module in (httpcore._async.connection, httpcore._async.http11,
                   httpcore._async.http2, httpcore._async.connection_pool):
        for name, primitive in (("AsyncLock", asyncio.Lock), ("AsyncEvent", _Event),
                                ("AsyncSemaphore", _Semaphore),
                                ("AsyncShieldCancellation", _NoShield)):
            if hasattr(module, name):
                setattr(module, name, primitive)


def origin_pool(ssl_context: ssl.SSLContext, http2: bool = False, max_connections: int = 2,
                max_keepalive_connections: int = 1, keepalive_expiry: float | None = None
                ) -> httpcore.AsyncConnectionPool:
    """httpcore's connection pool on AsyncioBackend, with asyncio's primitives; with `http2`,
    HTTP/2 where the server picks it by ALPN (httpcore's h2 connection), HTTP/1.1 elsewhere."""
    use_asyncio_primitives()
    return httpcore.AsyncConnectionPool(
        ssl_context=ssl_context, max_connections=max_connections,
        max_keepalive_connections=max_keepalive_connections, keepalive_expiry=keepalive_expiry,
        http2=http2, network_backend=AsyncioBackend())
