"""S3's refusals that another try meets again (no such bucket, credentials it does not take)
reach the tasks and crawlctl as a ServerRefused saying what to check, which no task retries
(moto's S3 server)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from crawlapp.adapters.blobstore import BlobStore, body_key, open_blobstore
from crawlapp.adapters.errors import transient_errors
from crawlapp.core.errors import ServerRefused
from crawlapp.core.settings import load_settings

pytestmark = pytest.mark.integration


def _store(endpoint: str, tmp_path: Path, bucket: str) -> BlobStore:
    return open_blobstore(load_settings({"CRAWL_DATA_DIR": str(tmp_path),
                                         "S3_ENDPOINT_URL": endpoint, "S3_BUCKET": bucket}))


def test_a_missing_bucket_is_refused_naming_the_setting(s3_endpoint: str, tmp_path: Path) -> None:
    store = _store(s3_endpoint, tmp_path, "no-such-bucket")
    with pytest.raises(ServerRefused, match=r"NoSuchBucket.*; check S3_BUCKET: "), \
            transient_errors():
        store.put(body_key("ab" * 32), gzip.compress(b"<html>"), "text/html")


@pytest.mark.parametrize(("wrong", "code"), [("AWS_ACCESS_KEY_ID", "InvalidAccessKeyId"),
                                             ("AWS_SECRET_ACCESS_KEY", "SignatureDoesNotMatch")])
def test_a_wrong_credential_is_refused_naming_the_credentials(
        s3_checking_signatures: tuple[str, dict[str, str]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, wrong: str, code: str) -> None:
    endpoint, credentials = s3_checking_signatures
    for name, value in (credentials | {wrong: "wrong"}).items():
        monkeypatch.setenv(name, value)
    store = _store(endpoint, tmp_path, "refused-test")
    with pytest.raises(ServerRefused, match=rf"{code}.*; check the credentials \(AWS_"), \
            transient_errors():
        store.put(body_key("ab" * 32), gzip.compress(b"<html>"), "text/html")
