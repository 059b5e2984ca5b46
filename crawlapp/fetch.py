"""The HTTP client of the fetch stage: httpx, limits, the SSRF guard, no automatic redirects."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar
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
    """One httpx.AsyncClient per process, reused across batches for keep-alive."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        headers = {"User-Agent": settings.user_agent, "Accept": "text/html,*/*;q=0.5",
                   "Accept-Encoding": "gzip, deflate"}
        self.client = httpx.AsyncClient(
            headers=headers, follow_redirects=False, trust_env=False,
            timeout=httpx.Timeout(settings.fetch_timeout, connect=min(10.0, settings.fetch_timeout)),
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=500))
        self._dns: dict[str, tuple[float, str | None]] = {}

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
        async with self.client.stream("GET", url, headers=headers) as response:
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

    async def aclose(self) -> None:
        await self.client.aclose()


_PROCESS: dict[str, Any] = {}


def run_in_process_loop(settings: Settings, coro_factory: Any) -> T:  # type: ignore[type-var]
    """Run `coro_factory(fetcher)` on this process's event loop, reusing its Fetcher."""
    if _PROCESS.get("pid") != os.getpid():
        loop = asyncio.new_event_loop()
        _PROCESS.update(pid=os.getpid(), loop=loop, fetcher=None)
    loop = _PROCESS["loop"]
    if _PROCESS["fetcher"] is None:
        async def make() -> Fetcher:
            return Fetcher(settings)
        _PROCESS["fetcher"] = loop.run_until_complete(make())
    coro: Coroutine[Any, Any, T] = coro_factory(_PROCESS["fetcher"])
    return loop.run_until_complete(coro)
