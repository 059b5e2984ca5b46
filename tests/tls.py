"""The tests' TLS on loopback: certificates (testweb.tls) and an HTTPS server that answers 200."""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testweb.tls import Authority, self_signed

__all__ = ["Authority", "hello_server", "self_signed"]


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def hello_server(cert_key: tuple[Path, Path] | None = None) -> Iterator[int]:
    """The port of a server on 127.0.0.1 that answers 200 `hello` to every GET: over TLS
    with the certificate and key files `cert_key`, else plain HTTP."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    if cert_key is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*cert_key)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
