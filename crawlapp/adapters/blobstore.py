"""Page bodies, gzip-compressed and keyed by content hash: S3 (boto3) or a local folder."""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import re
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from crawlapp.core.retry import SERVERS, Server
from crawlapp.core.settings import Settings

PREFIX = "bodies"
S3_CONCURRENCY = 16  # S3 requests in flight at once (HEADs of a check, PUTs of a batch)
# boto3's tries again (botocore's max_attempts: after the first), its standard mode's waits.
BLOB_RETRY = SERVERS[Server.BLOB_STORE]
PRESIGNED_SECONDS = 300  # how long a PUT's presigned URL is good for (it is used at once)
_PLAIN_KEY = re.compile(r"[A-Za-z0-9/._-]+\Z")  # nothing to quote in a URL: body keys
_SignedPut = tuple[str, dict[str, str]]  # a signed PUT: its URL and headers


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


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


class LocalBlobStore:
    """A folder laid out like the bucket; writes are atomic renames of a file named after
    this process, thread and write (no random name to draw; a folder is made only when a
    write finds it missing)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root)
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
        # os calls on str paths: a third of the CPU of pathlib and a file object per body.
        path = f"{self.location}/{key}"
        if os.path.exists(path):
            return False
        folder = path.rpartition("/")[0]
        # No live process writes under this name; one of a dead process is written over.
        tmp = f"{folder}/.tmp-{os.getpid()}-{threading.get_ident()}-{next(self._writes)}"
        try:
            fd = os.open(tmp, _NEW_FILE, 0o644)
        except FileNotFoundError:  # its folder is not there yet (or was removed)
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, _NEW_FILE, 0o644)
        try:
            rest = memoryview(data)
            while rest:
                rest = rest[os.write(fd, rest):]
        finally:
            os.close(fd)
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
    """An S3 bucket through boto3; a key is written once (a conditional PUT).

    A body's PUT goes to the URL boto3 gives its key (endpoint and addressing style), signed
    by botocore's SigV4 signer (_Signer), and is sent on a urllib3 pool of our own: boto3's
    request pipeline (event hooks, user agent, response parser) costs about as much CPU
    again as the request itself, over half a millisecond a page. Any answer but 200 or 412,
    and a failed connection, is sent again through `put_object`, with boto3's retries and
    errors. With a proxy set in the environment every PUT goes through boto3, which
    honours it.
    """

    def __init__(self, client: Any, bucket: str, credentials: Any = None) -> None:
        self.client = client
        self.bucket = bucket
        self.location = f"s3://{bucket}"
        self._pool: ThreadPoolExecutor | None = None  # for put_many, made on first use
        self._http = _direct_pool(client)
        self._signer = _Signer(client, bucket, credentials) if credentials else None

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
        (keys are content hashes); a HEAD first would cost every new body two requests.
        Content-MD5 has S3 check the bytes it received."""
        return self._send(key, data, content_type, self._signed(key, data, content_type))

    def _signed(self, key: str, data: bytes, content_type: str | None) -> _SignedPut | None:
        """The signed PUT of a body (presigned by the client where its key needs quoting),
        or None where boto3 sends it (a proxy is set)."""
        if self._http is None:
            return None
        headers = {"If-None-Match": "*", "Content-Encoding": "gzip",
                   "Content-Type": content_type or "application/octet-stream",
                   "Content-MD5": base64.b64encode(hashlib.md5(data).digest()).decode()}
        if self._signer is not None and _PLAIN_KEY.match(key):
            return self._signer.signed(key, data, headers)
        return self.client.generate_presigned_url(
            "put_object", Params={"Bucket": self.bucket, "Key": key},
            ExpiresIn=PRESIGNED_SECONDS), headers

    def _send(self, key: str, data: bytes, content_type: str | None,
              signed: _SignedPut | None) -> bool:
        """The signed PUT, where there is one; put_object when there is none, and when
        it fails or gets any answer but 200 (written) or 412 (there already)."""
        if signed is not None:
            import urllib3

            url, headers = signed
            try:
                answer = self._http.request("PUT", url, body=data, headers=headers,
                                            retries=False)
            except urllib3.exceptions.HTTPError:
                pass
            else:
                if answer.status in (200, 412):
                    return answer.status == 200
        return self._put_object(key, data, content_type)

    def _put_object(self, key: str, data: bytes, content_type: str | None) -> bool:
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
        the next batch. Every PUT is signed first, in one go: signing between the waits
        for S3's answers costs this thread three times the CPU (its caches gone cold)."""
        if len(items) <= 1:
            return sum(self.put(*item) for item in items)
        signed = [self._signed(*item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=S3_CONCURRENCY,
                                            thread_name_prefix="s3-put")
        return sum(self._pool.map(self._upload, items, signed))

    def _upload(self, item: tuple[str, bytes, str | None], signed: _SignedPut | None) -> bool:
        """put_many's work on an upload thread, its CPU added to _UPLOAD_CPU."""
        started = time.thread_time()
        try:
            return self._send(*item, signed)
        finally:
            used = time.thread_time() - started
            with _UPLOAD_CPU_LOCK:
                _UPLOAD_CPU[0] += used

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


class _Signer:
    """PUTs of one bucket's bodies, signed in their headers by botocore's SigV4 signer.

    The client's generate_presigned_url resolves the endpoint, validates and serialises the
    parameters and runs its event hooks for every key: three quarters of its 0.13 ms a URL.
    The URL of a key with nothing to quote (_PLAIN_KEY: body keys) is the same but for the
    key, so one URL from the client gives the rest of it, and each request only needs its
    signature. Signed in its headers rather than presigned, a request's URL is short:
    urllib3 checks a URL one character at a time in Python, four times a request (a
    presigned PUT took 3.0 M instructions in all, one signed in its headers 2.6 M:
    callgrind, 400 PUTs). The credentials are frozen for each request: temporary ones are
    refreshed.
    """

    PROBE = f"{PREFIX}/probe"

    def __init__(self, client: Any, bucket: str, credentials: Any) -> None:
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest

        self._auth, self._request = S3SigV4Auth, AWSRequest
        probe = client.generate_presigned_url("put_object", Params={"Bucket": bucket,
                                                                    "Key": self.PROBE})
        self._prefix = probe.split("?", 1)[0].removesuffix(self.PROBE)
        self._host = urllib.parse.urlsplit(self._prefix).netloc
        self._region = client.meta.region_name
        self._credentials = credentials

    def signed(self, key: str, data: bytes, headers: dict[str, str]) -> _SignedPut:
        """The URL of `key`, and `headers` with its host, date, payload hash and signature."""
        request = self._request(method="PUT", url=self._prefix + key, data=data,
                                headers={"Host": self._host, **headers})
        self._auth(self._credentials.get_frozen_credentials(), "s3",
                   self._region).add_auth(request)
        return str(request.url), dict(request.headers.items())


_UPLOAD_CPU = [0.0]  # CPU seconds of this process's upload threads not yet reported
_UPLOAD_CPU_LOCK = threading.Lock()


def upload_threads_cpu() -> float:
    """CPU seconds this process's S3 upload threads used since the previous call: the store
    stage's, spent on threads its timer does not see."""
    with _UPLOAD_CPU_LOCK:
        used, _UPLOAD_CPU[0] = _UPLOAD_CPU[0], 0.0
    return used


def _direct_pool(client: Any) -> Any:
    """The urllib3 pool of signed PUTs (None with a proxy set: boto3 sends them), with
    the CA bundle botocore uses (AWS_CA_BUNDLE, else its own) and its timeouts."""
    if urllib.request.getproxies():
        return None
    import urllib3
    from botocore.httpsession import get_cert_path

    config = client.meta.config
    return urllib3.PoolManager(
        maxsize=S3_CONCURRENCY, cert_reqs="CERT_REQUIRED",
        ca_certs=os.environ.get("AWS_CA_BUNDLE") or get_cert_path(True),
        timeout=urllib3.Timeout(connect=config.connect_timeout, read=config.read_timeout))


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

    session = boto3.session.Session()
    client = session.client("s3", endpoint_url=settings.s3_endpoint_url,
                            config=Config(retries={"max_attempts": BLOB_RETRY.tries_again,
                                                   "mode": "standard"},
                                          max_pool_connections=S3_CONCURRENCY,
                                          signature_version="s3v4"))
    return S3BlobStore(client, settings.s3_bucket, session.get_credentials())
