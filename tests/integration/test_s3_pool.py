"""S3 uploads and checks run as many requests at once as the client's connection pool holds:
no `Connection pool is full` warning, no connection thrown away; a body's PUT is signed by
the store, and goes through boto3 when that fails or a proxy is set (moto's S3 server)."""

from __future__ import annotations

import gzip
import logging
import socket
from pathlib import Path

import pytest
import urllib3

from crawlapp.adapters.blobstore import (
    S3BlobStore,
    body_key,
    open_blobstore,
    upload_threads_cpu,
)
from crawlapp.core.settings import load_settings

pytestmark = pytest.mark.integration


def test_concurrent_uploads_fit_the_connection_pool(
        s3_endpoint: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "S3_ENDPOINT_URL": s3_endpoint,
                              "S3_BUCKET": "pool-test"})
    store = open_blobstore(settings)
    assert isinstance(store, S3BlobStore)
    store.ensure_bucket()
    caplog.set_level(logging.WARNING, logger="urllib3.connectionpool")
    items: list[tuple[str, bytes, str | None]] = [
        (f"bodies/{n:04d}", b"x" * 100, "text/html") for n in range(64)]
    upload_threads_cpu()
    assert store.put_many(items) == 64
    assert upload_threads_cpu() > 0 and upload_threads_cpu() == 0  # the store stage's, once
    assert store.missing([key for key, _, _ in items] + ["bodies/none"]) == {"bodies/none"}
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]


def _store(s3_endpoint: str, tmp_path: Path, bucket: str) -> S3BlobStore:
    store = open_blobstore(load_settings({"CRAWL_DATA_DIR": str(tmp_path),
                                          "S3_ENDPOINT_URL": s3_endpoint, "S3_BUCKET": bucket}))
    assert isinstance(store, S3BlobStore)
    store.ensure_bucket()
    return store


def test_a_body_goes_up_on_a_presigned_url_once(s3_endpoint: str, tmp_path: Path) -> None:
    store = _store(s3_endpoint, tmp_path, "presigned-test")
    body = gzip.compress(b"<html>one</html>")
    assert store.put("bodies/ab/cd/one.gz", body, "text/html") is True
    assert store.put("bodies/ab/cd/one.gz", gzip.compress(b"other"), "text/html") is False
    assert store.get("bodies/ab/cd/one.gz") == body
    head = store.client.head_object(Bucket="presigned-test", Key="bodies/ab/cd/one.gz")
    assert (head["ContentType"], head["ContentEncoding"]) == ("text/html", "gzip")
    assert store._http is not None and len(store._http.pools) == 1  # the request went there


def test_a_presigned_put_that_fails_goes_through_boto3(s3_endpoint: str, tmp_path: Path) -> None:
    store = _store(s3_endpoint, tmp_path, "fallback-test")
    with socket.socket() as unused:  # a proxy that refuses every connection
        unused.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{unused.getsockname()[1]}"
    store._http = urllib3.ProxyManager(dead)
    body = gzip.compress(b"<html>two</html>")
    assert store.put("bodies/ab/cd/two.gz", body, "text/html") is True
    assert store.put("bodies/ab/cd/two.gz", body, "text/html") is False
    assert store.get("bodies/ab/cd/two.gz") == body


def test_with_a_proxy_in_the_environment_boto3_sends_every_put(
        s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert _store(s3_endpoint, tmp_path, "proxied-test")._http is None


def test_a_signed_put_is_one_s3_accepts(
        s3_checking_signatures: tuple[str, dict[str, str]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The store signs each body's PUT itself (_Signer): a server that checks signatures
    takes it, and refuses it with one signed header changed."""
    endpoint, credentials = s3_checking_signatures
    for name, value in credentials.items():
        monkeypatch.setenv(name, value)
    store = _store(endpoint, tmp_path, "signed-test")
    monkeypatch.setattr(store, "_put_object", _no_fallback)
    key, body = body_key("ab" * 32), gzip.compress(b"<html>signed</html>")
    assert store.put(key, body, "text/html") is True
    assert store.put(key, body, "text/html") is False
    assert store.put_many([(body_key(f"{n:02x}" * 32), body, None) for n in range(3)]) == 3
    url, headers = store._signed(body_key("cd" * 32), body, "text/html")  # type: ignore[misc]
    assert "?" not in url and "Signature=" in headers["Authorization"]
    assert store._http.request("PUT", url, body=body, retries=False,
                               headers=headers | {"Content-Type": "text/plain"}).status == 403
    assert store.get(key) == body


def _no_fallback(*_: object) -> bool:
    raise AssertionError("the signed PUT was refused")


def test_a_body_on_aws_is_signed_for_its_region(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With no endpoint set, the PUT goes where the client's own presigned URL goes (the
    bucket's AWS endpoint), signed for the client's region (no request is sent)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    store = open_blobstore(load_settings({"CRAWL_DATA_DIR": str(tmp_path),
                                          "S3_BUCKET": "sign-test"}))
    assert isinstance(store, S3BlobStore)
    key = body_key("ab" * 32)
    url, headers = store._signed(key, b"body", None)  # type: ignore[misc]
    assert url == store.client.generate_presigned_url(
        "put_object", Params={"Bucket": "sign-test", "Key": key}).split("?")[0]
    assert url == f"https://{headers['Host']}/{key}"
    assert "Credential=test-key/" in headers["Authorization"]
    assert "/eu-west-1/s3/aws4_request" in headers["Authorization"]
