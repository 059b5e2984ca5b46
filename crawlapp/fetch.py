"""The HTTP client of the fetch stage: httpx, limits, the SSRF guard, no automatic redirects."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

import httpx

from crawlapp.netguard import refusal_reason
from crawlapp.settings import Settings

T = TypeVar("T")
KEPT_HEADERS = ("content-type", "etag", "last-modified", "location", "retry-after",
                "x-robots-tag", "content-encoding")
DNS_TTL = 300.0


@dataclass
class Fetched:
    """What one request got: an HTTP status and body, or an error code."""

    url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None
    started: float = 0.0
    ended: float = 0.0


class Fetcher:
    """httpx clients, one per origin, kept across batches for keep-alive.

    One small pool per origin instead of one large pool: httpcore scans every pooled
    connection on each request, which costs more CPU than the request itself once a
    crawl holds connections to hundreds of hosts.
    """

    def __init__(self, settings: Settings, max_clients: int = 2048) -> None:
        self.settings = settings
        self.max_clients = max_clients
        self._headers = {"User-Agent": settings.user_agent, "Accept": "text/html,*/*;q=0.5",
                         "Accept-Encoding": "gzip, deflate"}
        self._ssl = httpx.create_ssl_context()
        self._timeout = httpx.Timeout(settings.fetch_timeout,
                                      connect=min(10.0, settings.fetch_timeout))
        self._clients: OrderedDict[str, httpx.AsyncClient] = OrderedDict()
        self._dns: dict[str, tuple[float, str | None]] = {}

    async def _client(self, origin: str) -> httpx.AsyncClient:
        client = self._clients.get(origin)
        if client is not None:
            self._clients.move_to_end(origin)
            return client
        client = httpx.AsyncClient(
            headers=self._headers, follow_redirects=False, trust_env=False, verify=self._ssl,
            timeout=self._timeout, limits=httpx.Limits(max_connections=2,
                                                       max_keepalive_connections=1))
        self._clients[origin] = client
        while len(self._clients) > self.max_clients:
            _, oldest = self._clients.popitem(last=False)
            await oldest.aclose()
        return client

    async def _guard(self, host: str) -> str | None:
        """None if the host's addresses may be fetched, else the refusal reason."""
        try:
            ipaddress.ip_address(host)
            return refusal_reason(host, self.settings.allowed_networks)
        except ValueError:
            pass
        cached = self._dns.get(host)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None,
                                                                 type=socket.SOCK_STREAM)
            reasons = [refusal_reason(str(info[4][0]), self.settings.allowed_networks)
                       for info in infos]
            reason = next((r for r in reasons if r), None)
        except (socket.gaierror, UnicodeError):
            reason = "dns"
        self._dns[host] = (time.monotonic() + DNS_TTL, reason)
        return reason

    async def get(self, url: str, extra_headers: dict[str, str] | None = None,
                  max_bytes: int | None = None) -> Fetched:
        """GET `url`, streaming at most `max_bytes` of decoded body within the fetch timeout."""
        result = Fetched(url=url, started=time.time())
        cap = max_bytes or self.settings.max_body_bytes
        host = urlsplit(url).hostname or ""
        try:
            refused = await self._guard(host)
            if refused:
                result.error = f"ssrf_{refused}"
                return result
            async with asyncio.timeout(self.settings.fetch_timeout):
                await self._stream(url, extra_headers or {}, cap, result)
        except TimeoutError:
            result.error = "timeout"
        except httpx.TimeoutException:
            result.error = "timeout"
        except httpx.ConnectError:
            result.error = "connect"
        except (httpx.DecodingError, httpx.RemoteProtocolError, httpx.LocalProtocolError):
            result.error = "protocol"
        except httpx.HTTPError as exc:
            result.error = f"http_{type(exc).__name__}"[:40]
        finally:
            result.ended = time.time()
        return result

    async def _stream(self, url: str, headers: dict[str, str], cap: int, result: Fetched) -> None:
        parts = urlsplit(url)
        client = await self._client(f"{parts.scheme}://{parts.netloc}")
        async with client.stream("GET", url, headers=headers) as response:
            result.status = response.status_code
            result.headers = {k: response.headers[k] for k in KEPT_HEADERS if k in response.headers}
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > cap:
                result.error = "too_large"
                return
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > cap:
                    result.error = "too_large"
                    return
                chunks.append(chunk)
            result.body = b"".join(chunks)


class _LoopState(threading.local):
    pid: int = 0
    loop: asyncio.AbstractEventLoop | None = None
    fetcher: Fetcher | None = None


_STATE = _LoopState()


def run_in_thread_loop(settings: Settings, coro_factory: Callable[[Fetcher], Awaitable[T]]) -> T:
    """Run `coro_factory(fetcher)` on this thread's event loop, reusing its Fetcher.

    One loop and one Fetcher per thread (and per process after a fork), so a threads pool
    runs several batches at once and each keeps its connections between batches.
    """
    state = _STATE
    if state.pid != os.getpid() or state.loop is None or state.fetcher is None:
        state.pid = os.getpid()
        state.loop = asyncio.new_event_loop()
        state.fetcher = Fetcher(settings)
    fetcher = state.fetcher

    async def main() -> T:
        return await coro_factory(fetcher)

    return state.loop.run_until_complete(main())


async def start_at(when: float, call: Awaitable[T]) -> T:
    """Await `call` no earlier than the UNIX time `when` (a host's next allowed time)."""
    delay = when - time.time()
    if delay > 0:
        await asyncio.sleep(delay)
    return await call
