"""HTTP/2 for the test web's TLS listeners: a connection whose client picked `h2` by ALPN is
served by the h2 library (the one httpx's HTTP/2 uses, here on the server side), each stream
answered by the web as an HTTP/1.1 request would be and logged the same way, with
`"proto": "2"`. Bodies go out within the peer's flow-control window; a streamed body (big,
bomb, drip pages) pauses where its stream says."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from email.utils import formatdate

import h2.config
import h2.connection
import h2.events
import h2.exceptions

from testweb.hosts import Response

READ_BYTES = 64 * 1024
# Headers of a connection, not a message: HTTP/2 forbids them (RFC 9113, 8.2.2).
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                         "upgrade"})

Respond = Callable[[str, str, dict[str, str]], Response]  # method, target, headers
Log = Callable[[dict[str, object]], None]


class H2Connection:
    """One HTTP/2 connection: reads frames, answers each request stream in a task of its own."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 respond: Respond, log: Log, record: Callable[[], dict[str, object]]) -> None:
        self.reader, self.writer = reader, writer
        self.respond, self.log, self.record = respond, log, record
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=False, header_encoding="latin-1"))
        self._window = asyncio.Event()  # set when the peer opens a flow-control window
        self._streams: set[asyncio.Task[None]] = set()

    async def serve(self, idle_timeout: float) -> None:
        self.conn.initiate_connection()
        await self._flush()
        try:
            while True:
                async with asyncio.timeout(idle_timeout):
                    data = await self.reader.read(READ_BYTES)
                if not data:
                    return
                for event in self.conn.receive_data(data):
                    self._on(event)
                await self._flush()
        except h2.exceptions.ProtocolError:
            await self._flush()
        finally:
            for task in self._streams:
                task.cancel()

    def _on(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            task = asyncio.create_task(self._answer(event.stream_id, dict(event.headers or [])))
            self._streams.add(task)
            task.add_done_callback(self._streams.discard)
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            self._window.set()
        elif isinstance(event, h2.events.DataReceived):  # a request body: read and dropped
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)

    async def _answer(self, stream_id: int, pseudo: dict[str, str]) -> None:
        start = time.time()
        headers = {name: value for name, value in pseudo.items() if not name.startswith(":")}
        target, method = pseudo.get(":path", "/"), pseudo.get(":method", "GET")
        response = self.respond(method, target, headers)
        record = {**self.record(), "path": target, "start": start, "status": response.status,
                  "ua": headers.get("user-agent", ""), "inm": headers.get("if-none-match"),
                  "ims": headers.get("if-modified-since"), "bytes": 0, "proto": "2"}
        sent = [0]
        try:
            await self._send(stream_id, response, method == "HEAD", sent)
        except BaseException:
            record.update(end=time.time(), bytes=sent[0], aborted=True)
            self.log(record)
            raise
        record.update(end=time.time(), bytes=sent[0])
        self.log(record)

    async def _send(self, stream_id: int, response: Response, head_only: bool,
                    sent: list[int]) -> None:
        head = [(":status", str(response.status)),
                *((name.lower(), value) for name, value in response.headers
                  if name.lower() not in _HOP_BY_HOP),
                ("date", formatdate(usegmt=True)), ("server", "crawlapp-testweb")]
        if head_only:
            self.conn.send_headers(stream_id, head, end_stream=True)
            await self._flush()
            return
        self.conn.send_headers(stream_id, head)
        if response.stream is None:
            await self._data(stream_id, response.body, sent)
        else:
            for item in response.stream():
                if isinstance(item, bytes):
                    await self._data(stream_id, item, sent)
                else:
                    await self._flush()
                    await asyncio.sleep(item)
        self.conn.end_stream(stream_id)
        await self._flush()

    async def _data(self, stream_id: int, data: bytes, sent: list[int]) -> None:
        """Send `data` on the stream as the peer's windows allow."""
        view = memoryview(data)
        while view:
            room = min(self.conn.local_flow_control_window(stream_id),
                       self.conn.max_outbound_frame_size, len(view))
            if room <= 0:
                self._window.clear()
                await self._flush()
                await self._window.wait()
                continue
            self.conn.send_data(stream_id, bytes(view[:room]))
            view = view[room:]
            sent[0] += room
            await self._flush()

    async def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.writer.write(data)
            await self.writer.drain()
