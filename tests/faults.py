"""Faults for tests: a loopback TCP proxy that can play a server being down."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class FaultProxy:
    """Forwards 127.0.0.1:`port` to a server. While down, it closes every open connection
    and each new one as soon as it is accepted (counted in `dropped`), so clients see the
    server go away and come back on the same address."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.dropped = 0
        self.down_at: float | None = None
        self.up_at: float | None = None
        self._down = False
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]

    @contextmanager
    def running(self) -> Iterator[FaultProxy]:
        self._listener.listen(128)
        threading.Thread(target=self._accept, daemon=True).start()
        try:
            yield self
        finally:
            self.down()
            _close(self._listener)

    def down(self) -> None:
        with self._lock:
            self._down, conns, self._conns = True, self._conns, set()
        self.down_at = time.time()
        for sock in conns:
            _close(sock)

    def up(self) -> None:
        with self._lock:
            self._down = False
        self.up_at = time.time()

    def outage(self, seconds: float) -> None:
        """Down for `seconds`, then up again."""
        self.down()
        time.sleep(seconds)
        self.up()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # the proxy was closed
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        with self._lock:
            refused = self._down
            self.dropped += refused
        if refused:
            _close(client)
            return
        try:
            server = socket.create_connection(self.target, timeout=5)
            server.settimeout(None)
        except OSError:
            _close(client)
            return
        with self._lock:
            refused = self._down  # went down while connecting
            if not refused:
                self._conns |= {client, server}
        if refused:
            _close(client)
            _close(server)
            return
        for src, dst in ((client, server), (server, client)):
            threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            _close(sock)
            with self._lock:
                self._conns.discard(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
