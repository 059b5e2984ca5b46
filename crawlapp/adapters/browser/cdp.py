"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe).

The browser opens no debugging port: only this process can drive it. It runs in a process
group of its own, so `kill` ends it and every renderer it started, whatever they are doing
(a page stuck in an endless script included).
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any

# Chromium reads commands from fd 3 and writes answers and events to fd 4.
_LAUNCH = 'exec "$0" "$@" 3<&{r} 4>&{w} {r}<&- {w}>&-'
READ_LIMIT = 256 * 1024 * 1024  # one message carries a whole DOM or a response body
FLAGS = (
    "--headless", "--remote-debugging-pipe", "--disable-gpu", "--no-first-run",
    "--no-default-browser-check", "--disable-extensions", "--disable-sync",
    "--disable-background-networking", "--disable-component-update",
    "--disable-default-apps", "--disable-dev-shm-usage", "--mute-audio",
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
    "--blink-settings=imagesEnabled=false",
    # Every request is answered by the crawler (Fetch domain); anything that slipped past it
    # would go to a proxy that does not exist, loopback included.
    "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
)

EventHandler = Callable[[str | None, dict[str, Any]], Awaitable[None] | None]


class BrowserGone(RuntimeError):
    """The browser exited or its pipe closed."""


def _above(fd: int, lowest: int = 10) -> int:
    """A copy of `fd` numbered `lowest` or more; `fd` is closed."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, lowest)
    os.close(fd)
    return moved


def find_chromium(configured: str | None = None) -> str | None:
    """The browser's path: `configured`, else the first of the usual names on PATH."""
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One Chromium process and its protocol connection; `send` waits for the answer."""

    def __init__(self, path: str, on_event: EventHandler) -> None:
        self.path = path
        self.on_event = on_event
        self.proc: asyncio.subprocess.Process | None = None
        self._profile: str | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # The browser's ends move above fd 9, so bash's 3<& and 4>& never overwrite them.
        to_browser_r, from_browser_w = _above(to_browser_r), _above(from_browser_w)
        self._profile = tempfile.mkdtemp(prefix="crawl-chromium-")
        flags = [*FLAGS, f"--user-data-dir={self._profile}"]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox
        try:
            self.proc = await asyncio.create_subprocess_exec(
                "/bin/bash", "-c", _LAUNCH.format(r=to_browser_r, w=from_browser_w), self.path,
                *flags, "about:blank", pass_fds=(to_browser_r, from_browser_w),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        finally:
            os.close(to_browser_r)
            os.close(from_browser_w)
        reader = asyncio.StreamReader(limit=READ_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(from_browser_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(to_browser_w, "wb", 0))
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)
        self._reader_task = loop.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                raw = await reader.readuntil(b"\0")
                message = json.loads(raw[:-1])
                if "id" in message:
                    future = self._waiting.pop(message["id"], None)
                    if future is not None and not future.done():
                        future.set_result(message)
                else:
                    result = self.on_event(message.get("sessionId"), message)
                    if result is not None:
                        asyncio.get_running_loop().create_task(result)  # type: ignore[arg-type]
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(BrowserGone("the browser's pipe closed"))
            self._waiting.clear()

    async def send(self, method: str, params: dict[str, Any] | None = None,
                   session: str | None = None) -> dict[str, Any]:
        """Send one command and return its result; a protocol error raises RuntimeError."""
        if self._writer is None or self._reader_task is None or self._reader_task.done():
            raise BrowserGone("the browser is not running")
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        self._writer.write(json.dumps(message).encode() + b"\0")
        answer = await future
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error'].get('message')}")
        return dict(answer.get("result", {}))

    def post(self, method: str, params: dict[str, Any], session: str | None) -> None:
        """Send a command without waiting for its answer."""
        if self._writer is not None and not self._writer.is_closing():
            message = {"id": next(self._ids), "method": method, "params": params,
                       "sessionId": session}
            self._writer.write(json.dumps(message).encode() + b"\0")

    async def close(self) -> None:
        """Kill the browser's process group and remove its profile."""
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await self.proc.wait()
        if self._writer is not None:
            self._writer.close()
        if self._reader_task is not None:
            await asyncio.gather(self._reader_task, return_exceptions=True)
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
        self.proc = self._writer = self._reader_task = None
