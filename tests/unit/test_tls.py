"""Whom the fetch stage trusts over TLS (crawlapp.adapters.http.tls_context), against HTTPS
servers on loopback with certificates of the test's own CA: the system's store (OpenSSL's
default verify paths, SSL_CERT_FILE), certifi only where the system has none,
CRAWL_CA_BUNDLE's roots, CRAWL_TLS_VERIFY=false; and a failure's precise reason."""

from __future__ import annotations

import asyncio
import logging
import shutil
import ssl
import subprocess
from pathlib import Path

import certifi
import pytest

from crawlapp.adapters.http import Fetcher, tls_context
from crawlapp.adapters.redis.dnscache import DnsCache
from crawlapp.core.politeness import unreachable_sentence
from crawlapp.core.records import Fetched, FetchError, ParkKind, ParkReason
from crawlapp.core.settings import TLS_VERIFY_OFF, SettingsError, load_settings
from tests.tls import Authority, hello_server, self_signed


@pytest.fixture
def ca(tmp_path: Path) -> Authority:
    return Authority(tmp_path)


@pytest.fixture(autouse=True)
def no_store_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The system's store as this machine has it, whatever the environment says."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def _settings(**env: str) -> dict[str, str]:
    return {"CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8", "CRAWL_FETCH_TIMEOUT": "5", **env}


def fetch(cert_key: tuple[Path, Path], **env: str) -> Fetched:
    """GET / of an HTTPS server on 127.0.0.1 with that certificate, by a Fetcher of `env`."""
    fetcher = Fetcher(load_settings(_settings(**env)), DnsCache(None, "test", 60, 60))
    with hello_server(cert_key) as port:
        return asyncio.run(fetcher.get(f"https://127.0.0.1:{port}/"))


def test_a_root_added_by_crawl_ca_bundle_is_trusted(ca: Authority) -> None:
    fetched = fetch(ca.issue(), CRAWL_CA_BUNDLE=str(ca.cert_file))
    assert (fetched.status, fetched.body, fetched.error) == (200, b"hello", None)
    # the connection's suite, as OpenSSL names it (WARC-Cipher-Suite)
    assert fetched.cipher_suite in {c["name"] for c in ssl.create_default_context().get_ciphers()}


@pytest.mark.parametrize(("leaf", "bundle", "reason"), [
    ("valid", False, "unable to get local issuer certificate"),
    ("expired", True, "certificate has expired"),
    ("other name", True, "IP address mismatch, certificate is not valid for '127.0.0.1'"),
    ("self-signed", True, "self-signed certificate"),
])
def test_a_certificate_that_does_not_verify_is_refused_with_its_reason(
        ca: Authority, tmp_path: Path, leaf: str, bundle: bool, reason: str) -> None:
    cert_key = {"valid": ca.issue, "expired": lambda: ca.issue(expired=True),
                "other name": lambda: ca.issue("www.example.test"),
                "self-signed": lambda: self_signed(tmp_path)}[leaf]()
    env = {"CRAWL_CA_BUNDLE": str(ca.cert_file)} if bundle else {}
    fetched = fetch(cert_key, **env)
    assert (fetched.status, fetched.error, fetched.error_note) == (
        None, FetchError.TLS_CERTIFICATE, reason)


def test_a_handshake_that_fails_keeps_its_reason(ca: Authority) -> None:
    """A server that speaks no TLS: the kind is `tls`, the reason OpenSSL's."""
    fetcher = Fetcher(load_settings(_settings()), DnsCache(None, "test", 60, 60))
    with hello_server() as port:
        fetched = asyncio.run(fetcher.get(f"https://127.0.0.1:{port}/"))
    assert (fetched.error, fetched.error_note) == (FetchError.TLS, "wrong version number")


def test_ssl_cert_file_names_the_system_store(ca: Authority,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """SSL_CERT_FILE replaces OpenSSL's default CA file, as curl and wget read it."""
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.cert_file))
    fetched = fetch(ca.issue())
    assert (fetched.status, fetched.error) == (200, None)
    assert tls_context(load_settings({})).cert_store_stats()["x509"] == 1  # not certifi's


def test_the_systems_store_is_trusted_and_certifi_only_without_one(
        ca: Authority, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = tls_context(load_settings({})).cert_store_stats()["x509"]
    assert system == ssl.create_default_context().cert_store_stats()["x509"]
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "none.pem"))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    bundled = ssl.create_default_context(cafile=certifi.where()).cert_store_stats()["x509"]
    assert tls_context(load_settings({})).cert_store_stats()["x509"] == bundled
    with_ca = load_settings({"CRAWL_CA_BUNDLE": str(ca.cert_file)})
    assert tls_context(with_ca).cert_store_stats()["x509"] == bundled + 1


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_ssl_cert_dir_of_certificates_by_hash_is_a_system_store(
        ca: Authority, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CA directory (as `openssl rehash` lays it out) is read when a certificate is
    verified: nothing is loaded up front, and certifi's bundle is not added."""
    folder = tmp_path / "certs"
    folder.mkdir()
    subject_hash = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", ca.cert_file],
                                  check=True, capture_output=True, text=True).stdout.strip()
    (folder / f"{subject_hash}.0").write_bytes(ca.cert_file.read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "none.pem"))
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    assert tls_context(load_settings({})).cert_store_stats()["x509"] == 0
    fetched = fetch(ca.issue())
    assert (fetched.status, fetched.error) == (200, None)


def test_verification_off_fetches_anything_and_says_so_loudly(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="crawlapp.adapters.http")
    fetched = fetch(self_signed(tmp_path), CRAWL_TLS_VERIFY="false")
    assert (fetched.status, fetched.error) == (200, None)
    assert [r.getMessage() for r in caplog.records] == [TLS_VERIFY_OFF]


@pytest.mark.parametrize(("content", "says"), [
    (None, "cannot read it"),
    (b"not a certificate\n", "expected a PEM file of certificates"),
])
def test_a_ca_bundle_that_cannot_be_read_stops_the_settings(
        tmp_path: Path, content: bytes | None, says: str) -> None:
    path = tmp_path / "roots.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SettingsError, match=f"CRAWL_CA_BUNDLE=.*{says}"):
        load_settings({"CRAWL_CA_BUNDLE": str(path)})


def test_a_given_up_hosts_reason_keeps_its_note() -> None:
    reason = ParkReason(ParkKind.UNREACHABLE, "tls_certificate", "certificate has expired")
    assert str(reason) == "unreachable: tls_certificate (certificate has expired)"
    assert ParkReason.parse(str(reason)) == reason
    assert ParkReason.parse("unreachable: dns") == ParkReason(ParkKind.UNREACHABLE, "dns")
    assert unreachable_sentence(reason.detail, reason.note) == (
        "its TLS certificate does not verify: certificate has expired")
