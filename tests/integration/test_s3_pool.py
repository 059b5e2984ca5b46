"""S3 uploads and checks run as many requests at once as the client's connection pool holds:
no `Connection pool is full` warning, no connection thrown away (moto's S3 server)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from crawlapp.adapters.blobstore import S3BlobStore, open_blobstore
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
    items = [(f"bodies/{n:04d}", b"x" * 100, "text/html") for n in range(64)]
    assert store.put_many(items) == 64
    assert store.missing([key for key, _, _ in items] + ["bodies/none"]) == {"bodies/none"}
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]
