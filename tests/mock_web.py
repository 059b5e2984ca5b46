"""Fetching without a network: a Fetcher on httpx.MockTransport, answering from a table."""

from __future__ import annotations

from collections.abc import Callable, Mapping

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


def mock_fetcher(handler: Handler, **env: str) -> Fetcher:
    """A Fetcher whose requests `handler` answers; `env` as CRAWL_* settings."""
    return Fetcher(load_settings(env), None, transport=httpx.MockTransport(handler))
