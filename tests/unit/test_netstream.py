"""httpcore's network layer on asyncio streams (crawlapp/adapters/netstream.py), against
small HTTP and HTTPS servers of the test's own on loopback: keep-alive, a connection the
server closed while idle, TLS with and without a trusted certificate, refused and silent
servers."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import brotli
import httpcore
import httpx
import pytest
import zstandard

from crawlapp.adapters.http import KEPT_HEADERS, Fetcher, headers_of, tls_failure
from crawlapp.adapters.netstream import AsyncioStream, origin_pool
from crawlapp.adapters.redis.dnscache import DnsCache
from crawlapp.core.records import FetchError
from crawlapp.core.settings import load_settings
from tests.tls import self_signed

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"


class Server:
    """Answers each request RESPONSE (or nothing with `silent`; `delay` seconds after it),
    keeping the connection open, or closing it right after the response with `close_after`;
    counts connections."""

    def __init__(self, silent: bool = False, close_after: bool = False,
                 stall_first: bool = False, response: bytes = RESPONSE,
                 delay: float = 0.0) -> None:
        self.silent, self.close_after, self.stall_first = silent, close_after, stall_first
        self.response, self.delay = response, delay
        self.connections = 0
        self.closed_by_client = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            if self.stall_first and self.connections == 1:  # half a body, then nothing
                await reader.readuntil(b"\r\n\r\n")
                writer.write(RESPONSE.replace(b"Length: 5", b"Length: 10"))
                await writer.drain()
                await asyncio.sleep(10)
            while (request := await reader.readuntil(b"\r\n\r\n")) and not self.silent:
                self.requests.append(request)
                await asyncio.sleep(self.delay)
                writer.write(self.response)
                await writer.drain()
                if self.close_after:
                    break
            if self.silent:
                await asyncio.sleep(10)
        except asyncio.IncompleteReadError:
            self.closed_by_client += 1
        except ConnectionError:
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serving(server: Server, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=tls)
    async with listener:
        yield listener.sockets[0].getsockname()[1]


def fetcher(timeout: str = "5", clock: Callable[[], float] = time.monotonic) -> Fetcher:
    settings = load_settings({"CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",
                              "CRAWL_FETCH_TIMEOUT": timeout})
    return Fetcher(settings, DnsCache(None, "test", 60, 60), clock=clock)


def test_requests_to_a_host_share_one_keep_alive_connection() -> None:
    server = Server()

    async def body() -> list[tuple[int | None, bytes | None, str | None]]:
        async with serving(server) as port:
            client = fetcher()
            return [(r.status, r.body, r.ip_address) for r in
                    [await client.get(f"http://127.0.0.1:{port}/{n}") for n in range(3)]]

    assert asyncio.run(body()) == [(200, b"hello", "127.0.0.1")] * 3
    assert server.connections == 1


def test_a_host_no_request_asked_for_within_keep_alive_has_its_connection_closed() -> None:
    """httpcore closes an expired connection only when its pool is asked again: the Fetcher
    closes those of the hosts no request asked for within KEEPALIVE_SECONDS (60 s), at the
    next request to any host, and keeps the others."""
    a, b, c = Server(), Server(), Server()
    now = [1000.0]

    async def body() -> list[int | None]:
        async with serving(a) as pa, serving(b) as pb, serving(c) as pc:
            client = fetcher(clock=lambda: now[0])
            got = [await client.get(f"http://127.0.0.1:{pa}/1")]
            now[0] += 30
            got.append(await client.get(f"http://127.0.0.1:{pb}/1"))
            now[0] += 31  # a was last asked for 61 s ago, b 31 s ago
            got.append(await client.get(f"http://127.0.0.1:{pc}/1"))
            await asyncio.sleep(0.05)  # the close reaches the server
            assert (a.closed_by_client, b.closed_by_client) == (1, 0)
            now[0] += 1
            got += [await client.get(f"http://127.0.0.1:{pa}/2"),
                    await client.get(f"http://127.0.0.1:{pb}/2")]
            return [r.status for r in got]

    assert asyncio.run(body()) == [200] * 5
    assert (a.connections, b.connections, c.connections) == (2, 1, 1)


def test_a_host_beyond_the_kept_origins_keeps_its_connection_while_its_request_is_under_way(
        ) -> None:
    """The least recent origins beyond max_origins are closed as other hosts are asked, but
    not under a request: a slow answer is read whole, and its pool is closed after it."""
    slow, quick = Server(delay=0.3), Server()

    async def body() -> list[tuple[int | None, str | None]]:
        async with serving(slow) as ps, serving(quick) as pq:
            client = fetcher()
            client.max_origins = 1
            asked = asyncio.ensure_future(client.get(f"http://127.0.0.1:{ps}/slow"))
            await asyncio.sleep(0.1)  # the slow request is under way
            others = [await client.get(f"http://127.0.0.1:{pq}/{n}") for n in range(3)]
            await asyncio.sleep(0.05)
            assert slow.closed_by_client == 0
            assert quick.connections == 1  # nor the pool of the host being asked
            results = [await asked, *others]
            await client.get(f"http://127.0.0.1:{pq}/last")  # the slow host's pool goes now
            await asyncio.sleep(0.05)
            assert slow.closed_by_client == 1
            return [(r.status, r.error) for r in results]

    assert asyncio.run(body()) == [(200, None)] * 4


def test_a_connection_the_server_closed_while_idle_is_not_used_again() -> None:
    server = Server(close_after=True)

    async def body() -> list[tuple[int | None, str | None]]:
        async with serving(server) as port:
            client = fetcher()
            results = []
            for n in range(3):
                results.append(await client.get(f"http://127.0.0.1:{port}/{n}"))
                await asyncio.sleep(0.05)  # the server's close arrives
            return [(r.status, r.error) for r in results]

    assert asyncio.run(body()) == [(200, None)] * 3
    assert server.connections == 3


def test_a_request_cut_short_by_its_timeout_leaves_the_host_usable() -> None:
    """httpcore's locks and shields are asyncio's here (use_asyncio_primitives): a request
    cancelled mid-body releases its connection's lock and closes it."""
    server = Server(stall_first=True)

    async def body() -> tuple[list[tuple[int | None, str | None]], object]:
        async with serving(server) as port:
            client = fetcher(timeout="0.5")
            results = [await client.get(f"http://127.0.0.1:{port}/{n}") for n in range(2)]
            pool, _ = next(iter(client._pools.values()))
            assert isinstance(pool, httpcore.AsyncConnectionPool)
            lock = pool.connections[0]._connection._state_lock
            return [(r.status, r.error) for r in results], lock

    results, lock = asyncio.run(body())
    assert results == [(200, FetchError.TIMEOUT), (200, None)]
    assert server.connections == 2
    assert isinstance(lock, asyncio.Lock)


def test_https_through_the_asyncio_streams(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    trusting.check_hostname = False  # the certificate names no IP address

    async def body() -> tuple[httpcore.Response, tuple[object, object], BaseException]:
        async with serving(Server(), server_tls) as port:
            url = f"https://127.0.0.1:{port}/"
            host = [(b"Host", f"127.0.0.1:{port}".encode())]
            pool = origin_pool(trusting)
            response = await pool.handle_async_request(httpcore.Request("GET", url, headers=host))
            await response.aread()
            stream = response.extensions["network_stream"]
            ssl_object = stream.get_extra_info("ssl_object")
            with pytest.raises(httpcore.ConnectError) as refused:
                await origin_pool(ssl.create_default_context()).handle_async_request(
                    httpcore.Request("GET", url, headers=host))
            await pool.aclose()
            return response, (stream, ssl_object), refused.value

    response, (stream, ssl_object), refused = asyncio.run(body())
    assert (response.status, response.content) == (200, b"hello")
    assert isinstance(stream, AsyncioStream) and ssl_object is not None
    assert tls_failure(refused) == FetchError.TLS_CERTIFICATE


@pytest.mark.parametrize(("encoding", "encode"), [
    ("br", lambda data: brotli.compress(data, quality=5)), ("zstd", zstandard.compress)])
def test_a_server_sending_a_bomb_in_what_the_crawler_asks_for_is_too_large(
        encoding: str, encode: Callable[[bytes], bytes]) -> None:
    bomb = encode(b"\0" * (64 << 20))
    server = Server(response=b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d"
                    b"\r\n\r\n%s" % (encoding.encode(), len(bomb), bomb))

    async def body() -> tuple[int | None, str | None]:
        async with serving(server) as port:
            result = await fetcher().get(f"http://127.0.0.1:{port}/")
        return result.status, result.error

    assert asyncio.run(body()) == (200, FetchError.TOO_LARGE)
    assert b"\r\nAccept-Encoding: br, zstd, gzip, deflate\r\n" in server.requests[0]


def test_a_refused_connection_and_a_silent_server_are_fetch_errors() -> None:
    async def body() -> tuple[str | None, str | None]:
        async with serving(Server()) as closed_port:
            pass  # nothing listens on this port any more
        refused = await fetcher().get(f"http://127.0.0.1:{closed_port}/")
        async with serving(Server(silent=True)) as port:
            silent = await fetcher(timeout="0.5").get(f"http://127.0.0.1:{port}/")
        return refused.error, silent.error

    assert asyncio.run(body()) == (FetchError.CONNECT, FetchError.TIMEOUT)


def test_the_headers_kept_are_those_httpx_gives() -> None:
    """headers_of reads the kept headers in one pass, as httpx.Headers' own look-ups would."""
    headers = httpx.Headers([
        (b"Content-Type", b"text/html"), (b"X-Robots-Tag", b"noindex"), (b"Server", b"x"),
        (b"x-robots-tag", b"nofollow"), (b"LOCATION", "/caf\u00e9".encode()),
        (b"ETag", b'"a"'), (b"Set-Cookie", b"a=1")])
    assert headers_of(headers.raw) == {k: headers[k] for k in KEPT_HEADERS if k in headers} == {
        "content-type": "text/html", "x-robots-tag": "noindex, nofollow",
        "location": "/caf\u00e9", "etag": '"a"'}
