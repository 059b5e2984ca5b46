"""Certificates for the tests' TLS servers on loopback: self-signed, or issued by a CA of the
test's own (valid, expired, or for another name), and an HTTPS server that answers 200."""

from __future__ import annotations

import datetime as dt
import http.server
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DAY = dt.timedelta(days=1)


def _write(folder: Path, stem: str, cert: Any, key: Any) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization

    cert_file, key_file = folder / f"{stem}.pem", folder / f"{stem}-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def _builder(subject: str, issuer: str, public_key: Any, expired: bool = False) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)
    end = now - DAY if expired else now + DAY
    return (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(end - 2 * DAY).not_valid_after(end))


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    cert = _builder("127.0.0.1", "127.0.0.1", key.public_key()).sign(key, hashes.SHA256())
    return _write(tmp_path, "cert", cert, key)


class Authority:
    """A root CA of the test's own, written to `folder/ca.pem`, and the leaves it issues."""

    def __init__(self, folder: Path, name: str = "Test Root CA") -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        self.folder, self.name = folder, name
        self.key = ec.generate_private_key(ec.SECP256R1())
        cert = (_builder(name, name, self.key.public_key())
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True,
                    crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
                .sign(self.key, hashes.SHA256()))
        self.cert_file, _ = _write(folder, "ca", cert, self.key)

    def issue(self, name: str = "127.0.0.1", expired: bool = False) -> tuple[Path, Path]:
        """A leaf for `name` (an IP address or a host name): its certificate and key files."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        try:
            alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(name))
        except ValueError:
            alt = x509.DNSName(name)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (_builder(name, self.name, key.public_key(), expired)
                .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
                .sign(self.key, hashes.SHA256()))
        return _write(self.folder, f"{name}{'-expired' if expired else ''}", cert, key)


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
