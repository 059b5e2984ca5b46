"""Page bodies, gzip-compressed and keyed by content hash: S3 (boto3) or a local folder."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from crawlapp.core.settings import Settings

PREFIX = "bodies"
S3_CONCURRENCY = 16  # S3 requests in flight at once (HEADs of a check, PUTs of a batch)


class BodyMissing(FileNotFoundError):
    """No body is stored under the key."""


def body_key(content_hash: str) -> str:
    """bodies/ab/cd/<hash>.gz: keys come only from hashes, spread over prefixes."""
    if len(content_hash) < 8 or not all(c in "0123456789abcdef" for c in content_hash):
        raise ValueError(f"not a content hash: {content_hash[:80]!r}")
    return f"{PREFIX}/{content_hash[:2]}/{content_hash[2:4]}/{content_hash}.gz"


class BlobStore(Protocol):
    location: str

    def put(self, key: str, data: bytes, content_type: str | None) -> bool:
        """Store `data` under `key` unless it is there already; True if it was written."""

    def get(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def missing(self, keys: Sequence[str]) -> set[str]:
        """The keys of `keys` with no body stored."""

    def listing(self, limit: int) -> set[str] | None:
        """Every body key, when listing them is cheaper than checking keys one by one and
        there are at most `limit`; else None."""

    def put_many(self, items: list[tuple[str, bytes, str | None]]) -> int:
        """put() each (key, data, content_type); returns how many were written."""

    def delete(self, key: str) -> bool:
        """Remove `key`; True if it was there."""


class LocalBlobStore:
    """A folder laid out like the bucket; writes are atomic renames of a file named after
    this process, thread and write (no random name to draw, no folder made twice)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root)
        self._folders: set[Path] = set()  # made by this store already
        self._writes = itertools.count()

    def _path(self, key: str) -> Path:
        return self.root / key

    def exists(self, key: str) -> bool:
        return self._path(key).exists()

    def missing(self, keys: Sequence[str]) -> set[str]:
        return {key for key in keys if not self._path(key).exists()}

    def listing(self, limit: int) -> set[str] | None:
        return None  # a stat per key costs about what a listing would

    def put(self, key: str, data: bytes, content_type: str | None) -> bool:
        path = self._path(key)
        if path.exists():
            return False
        # No live process writes under this name; one of a dead process is written over.
        tmp = f"{path.parent}/.tmp-{os.getpid()}-{threading.get_ident()}-{next(self._writes)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        if path.parent not in self._folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(path.parent)
        try:
            fd = os.open(tmp, flags, 0o644)
        except FileNotFoundError:  # its folder was removed since
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, flags, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return True

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise BodyMissing(f"no body stored under {key}") from None

    def put_many(self, items: list[tuple[str, bytes, str | None]]) -> int:
        return sum(self.put(*item) for item in items)

    def delete(self, key: str) -> bool:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            return False
        return True


class S3BlobStore:
    """An S3 bucket through boto3; a key is written once (a conditional PUT)."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket
        self.location = f"s3://{bucket}"
        self._pool: ThreadPoolExecutor | None = None  # for put_many, made on first use

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if _not_found(exc):
                return False
            raise
        return True

    def missing(self, keys: Sequence[str]) -> set[str]:
        """HEADs, S3_CONCURRENCY at a time: S3 latency, not CPU, bounds a check."""
        with ThreadPoolExecutor(max_workers=max(1, min(S3_CONCURRENCY, len(keys)))) as pool:
            return {key for key, there in zip(keys, pool.map(self.exists, keys), strict=True)
                    if not there}

    def listing(self, limit: int) -> set[str] | None:
        """One LIST per 1,000 keys, where checking them costs a HEAD each."""
        keys: set[str] = set()
        for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=f"{PREFIX}/"):
            keys.update(item["Key"] for item in page.get("Contents", ()))
            if len(keys) > limit:
                return None
        return keys

    def put(self, key: str, data: bytes, content_type: str | None) -> bool:
        """One request: a PUT with `If-None-Match: *`, which S3 refuses (412) for a key that
        is there already. A store that ignores the condition writes the same bytes again
        (keys are content hashes); a HEAD first would cost every new body two requests."""
        from botocore.exceptions import ClientError

        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data,
                                   ContentEncoding="gzip", IfNoneMatch="*",
                                   ContentType=content_type or "application/octet-stream")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                return False
            raise
        return True

    def get(self, key: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if _not_found(exc):
                raise BodyMissing(f"no body stored under {key} in {self.location}") from None
            raise

    def put_many(self, items: list[tuple[str, bytes, str | None]]) -> int:
        """Upload concurrently (S3 latency, not CPU, bounds a batch), on threads kept for
        the next batch."""
        if len(items) <= 1:
            return sum(self.put(*item) for item in items)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=S3_CONCURRENCY,
                                            thread_name_prefix="s3-put")
        return sum(self._pool.map(lambda item: self.put(*item), items))

    def delete(self, key: str) -> bool:
        if not self.exists(key):
            return False
        self.client.delete_object(Bucket=self.bucket, Key=key)
        return True

    def ensure_bucket(self) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError:
            self.client.create_bucket(Bucket=self.bucket)


def _not_found(exc: Any) -> bool:
    return exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")


def load_client(settings: Settings) -> None:
    """Import the S3 client library when S3_BUCKET is set, without connecting: a prefork
    worker does so before it forks, so that its processes share it."""
    if settings.s3_bucket:
        import boto3  # noqa: F401
        import botocore.config  # noqa: F401


def open_blobstore(settings: Settings) -> BlobStore:
    """S3 when S3_BUCKET is set, else the local folder under the data dir."""
    if not settings.s3_bucket:
        return LocalBlobStore(settings.blob_dir)
    import boto3
    from botocore.config import Config

    client = boto3.client("s3", endpoint_url=settings.s3_endpoint_url,
                          config=Config(retries={"max_attempts": 5, "mode": "standard"},
                                        max_pool_connections=S3_CONCURRENCY))
    return S3BlobStore(client, settings.s3_bucket)
