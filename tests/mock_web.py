"""Fetching without a network: a Fetcher whose pool is httpx.MockTransport, answering from a
table."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpcore
import httpx

from crawlapp.adapters.http import Fetcher
from crawlapp.core.settings import load_settings

Handler = Callable[[httpx.Request], httpx.Response]
Answer = tuple[int, dict[str, str], bytes]  # status, headers, body


def answer(status: int = 200, body: bytes = b"", headers: Mapping[str, str] | None = None
           ) -> httpx.Response:
    """A response as a network transport gives it, its body still to be streamed (httpx
    reads a `content=` body at once, and the fetcher streams the raw bytes itself)."""
    return httpx.Response(status, headers=headers, stream=httpx.ByteStream(body))


def site(pages: Mapping[str, Answer]) -> Handler:
    """Answers each URL of `pages` with its (status, headers, body); 404 elsewhere."""

    def handler(request: httpx.Request) -> httpx.Response:
        status, headers, body = pages.get(str(request.url), (404, {}, b""))
        return answer(status, body, headers)

    return handler


class MockPool:
    """httpcore's side of a connection pool over httpx.MockTransport: each request as httpx's,
    each answer as httpcore's, its body streamed."""

    def __init__(self, handler: Handler) -> None:
        self.transport = httpx.MockTransport(handler)

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        url = request.url
        asked = httpx.Request(request.method.decode(), bytes(url).decode("ascii"),
                              headers=request.headers, extensions=request.extensions)
        response = await self.transport.handle_async_request(asked)
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        return httpcore.Response(response.status_code, headers=response.headers.raw,
                                 content=stream, extensions=response.extensions)

    async def aclose(self) -> None:
        await self.transport.aclose()


def mock_fetcher(handler: Handler, **env: str) -> Fetcher:
    """A Fetcher whose requests `handler` answers; `env` as CRAWL_* settings."""
    return Fetcher(load_settings(env), None, pool=MockPool(handler))
