"""Certificates for TLS servers on loopback (the tests' and the test web's): self-signed, or
issued by a CA of one's own (valid, expired, for another name, or for many addresses)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testweb.hosts import Hosts

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

    def issue(self, name: str = "127.0.0.1", expired: bool = False,
              others: tuple[str, ...] = ()) -> tuple[Path, Path]:
        """A leaf for `name` and `others` (IP addresses or host names): its certificate and
        key files."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
        alt = [_general_name(n) for n in (name, *others)]
        cert = (_builder(name, self.name, key.public_key(), expired)
                .add_extension(x509.SubjectAlternativeName(alt), critical=False)
                .sign(self.key, hashes.SHA256()))
        return _write(self.folder, f"{name}{'-expired' if expired else ''}", cert, key)


def _general_name(name: str) -> Any:
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def web_certificate(authority: Authority, web: Hosts) -> tuple[str, str]:
    """A leaf of `authority` for every address and name of a test web's hosts: the
    certificate and key files its TLS listeners serve (start_in_background's `tls`)."""
    addresses = [web.host_addr(i) for i in range(web.host_count)]
    cert, key = authority.issue(addresses[0], others=(*addresses[1:], *web.spec.names))
    return str(cert), str(key)
