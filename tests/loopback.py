"""A small HTTP server of a test's own on 127.0.0.1, and how long an event loop stalled."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

T = TypeVar("T")


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and sends whole bodies."""

    def send_body(self, body: bytes, content_type: str = "text/plain", status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """`handler` served on a free port of 127.0.0.1 for the block; yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


async def with_longest_stall(work: Awaitable[T]) -> tuple[T, float]:
    """`work`'s result, and the longest the running loop went without running a 10 ms
    ticker beside it (how long something blocked the loop)."""
    task = asyncio.ensure_future(work)
    longest, last = 0.0, time.monotonic()
    while not task.done():
        await asyncio.sleep(0.01)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    return task.result(), longest
