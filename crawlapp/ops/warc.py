"""WARC/1.1 records of fetches, as Heritrix and Common Crawl write them: a warcinfo record
first in every file, then per fetch a request record and a response record, or a revisit
record (a 304 to a conditional GET, or the same payload as the URL's previous response);
one gzip member per record, SHA-1 base32 block and payload digests (warcio computes them).

A server-not-modified revisit has an empty block: a replay tool (pywb) then answers with
the original response's status, headers and body. The 304's own headers stay in the fetch
history (the `fetches` table).

Redirects and error answers are response records like any other, their body as kept (its
first CRAWL_ARCHIVE_ANSWER_BYTES). A record whose payload was cut is marked
`WARC-Truncated: length`: such an answer, a robots.txt past 500 KiB, a 2xx answer past
CRAWL_MAX_BODY_BYTES (`too_large`: the bytes read, none when its Content-Length said so
first). An exchange over HTTP/2 is written as HTTP/1.1, as Common Crawl and Heritrix do for
readers that know no other, with `WARC-Protocol: h2`; one over TLS with `WARC-Cipher-Suite`
(OpenSSL's name of the suite), the fields the IIPC proposals name (warc-specifications
issues 42 and 86)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

WARC_VERSION = "WARC/1.1"
FORMAT = {
    "format": "WARC File Format 1.1",
    "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
}
SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
# The body is stored decoded and whole, so these would make readers decode it a second time:
# kept under X-Crawler-<name> (as Common Crawl does), and Content-Length written afresh.
_RENAMED_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
# WARC-Protocol's value of an HTTP version: its ALPN protocol identifier (RFC 7301).
_PROTOCOLS = {"HTTP/1.0": "http/1.0", "HTTP/1.1": "http/1.1", "HTTP/2": "h2", "HTTP/3": "h3"}


@dataclass(frozen=True)
class Original:
    """A response record that later revisits refer to."""

    url: str
    date: str            # its WARC-Date
    digest: str          # its WARC-Payload-Digest
    record_id: str | None = None  # its WARC-Record-ID, when written in this export


@dataclass(frozen=True)
class FetchRecord:
    """One fetch as the history keeps it: `body` is the stored (decoded) body, `truncated`
    when cut; `revisit_of` set makes it a revisit record of that response
    (server-not-modified for a 304). `http_version` ("HTTP/2") and `cipher_suite` are
    written when known."""

    url: str
    fetched_at: datetime  # naive values are taken as UTC
    http_status: int
    request_headers: list[tuple[str, str]]
    response_headers: list[tuple[str, str]]
    body: bytes = b""
    ip_address: str | None = None
    revisit_of: Original | None = None
    truncated: bool = False
    http_version: str | None = None
    cipher_suite: str | None = None


def parse_header_block(block: str | None) -> list[tuple[str, str]]:
    """The (name, value) pairs of a header block as the fetch history keeps it."""
    if not block:
        return []
    pairs = []
    for line in block.split("\r\n"):
        name, _, value = line.partition(":")
        pairs.append((name, value.strip()))
    return pairs


def warc_date(moment: datetime) -> str:
    """A WARC/1.1 date (UTC, microseconds when non-zero) of `moment`."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return str(datetime_to_iso_date(moment, use_micros=True))


class Warc:
    """Writes fetches to one stream, after a warcinfo record with `info`."""

    def __init__(self, out: BinaryIO, info: dict[str, str]) -> None:
        self.out = out
        self.writer = WARCWriter(out, gzip=True, warc_version=WARC_VERSION)
        self.writer.write_record(self.writer.create_warcinfo_record(None, info))

    def write(self, fetch: FetchRecord) -> Original | None:
        """A request record and a response (returned, for later revisits) or revisit record."""
        if fetch.revisit_of is None:
            record = _response(self.writer, fetch)
        else:
            record = _revisit(self.writer, fetch, fetch.revisit_of)
        record_id = record.rec_headers.get_header("WARC-Record-ID")
        self.writer.write_record(_request(self.writer, fetch, record_id))
        self.writer.write_record(record)
        if fetch.revisit_of is not None:
            return None
        headers = record.rec_headers
        return Original(fetch.url, headers.get_header("WARC-Date"),
                        headers.get_header("WARC-Payload-Digest"), record_id)


class WarcFiles:
    """Fetches written to `path`; past `max_size` bytes the export goes on in a next file
    (the first renamed), named <stem>-00000.warc.gz, -00001 ..., each with its warcinfo.
    A fetch's records always share a file."""

    def __init__(self, path: Path, info: dict[str, str], max_size: int) -> None:
        self.path, self.info, self.max_size = path, info, max_size
        self.paths = [path]
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._warc = Warc(self._file, info)
        self._fetches = 0  # in the current file

    def write(self, fetch: FetchRecord) -> Original | None:
        if self._fetches and self._file.tell() >= self.max_size:
            self._next_file()
        self._fetches += 1
        return self._warc.write(fetch)

    def _next_file(self) -> None:
        self._file.close()
        if len(self.paths) == 1:
            self.paths[0] = self.path.rename(self._part(0))
        self.paths.append(self._part(len(self.paths)))
        self._file = open(self.paths[-1], "wb")  # noqa: SIM115
        self._warc = Warc(self._file, self.info)
        self._fetches = 0

    def _part(self, n: int) -> Path:
        name = self.path.name
        stem = name.removesuffix(".warc.gz") if name.endswith(".warc.gz") else self.path.stem
        return self.path.with_name(f"{stem}-{n:05d}.warc.gz")

    def close(self) -> None:
        self._file.close()


def write_records(out: BinaryIO, fetches: Iterable[FetchRecord], info: dict[str, str]
                  ) -> int:
    """Write a warcinfo record, then every fetch's records to one stream; the fetch count."""
    warc = Warc(out, info)
    count = 0
    for fetch in fetches:
        warc.write(fetch)
        count += 1
    return count


def read_records(path_or_file: str | os.PathLike[str] | BinaryIO,
                 record_type: str = "response") -> list[dict[str, Any]]:
    """url, date (WARC-Date), status, headers and decoded body of every record of a type."""
    with _open(path_or_file) as stream:
        return [{
            "url": record.rec_headers.get_header("WARC-Target-URI"),
            "date": record.rec_headers.get_header("WARC-Date"),
            "status": int(record.http_headers.get_statuscode()) if record.http_headers else None,
            "headers": dict(record.http_headers.headers) if record.http_headers else {},
            "body": record.content_stream().read(),
        } for record in ArchiveIterator(stream) if record.rec_type == record_type]


def _http_headers(fetch: FetchRecord) -> StatusAndHeaders:
    """The response's status line and headers, the encoding ones renamed, Content-Length
    that of the decoded body."""
    headers = [(f"X-Crawler-{name}", value) if name.lower() in _RENAMED_HEADERS
               else (name, value) for name, value in fetch.response_headers]
    headers.append(("Content-Length", str(len(fetch.body))))
    status_line = f"{fetch.http_status} {_reason(fetch.http_status)}".rstrip()
    return StatusAndHeaders(status_line, headers, protocol="HTTP/1.1")


def _warc_headers(fetch: FetchRecord) -> dict[str, str]:
    headers = {"WARC-Date": warc_date(fetch.fetched_at)}
    if fetch.ip_address:
        headers["WARC-IP-Address"] = fetch.ip_address
    if fetch.http_version:
        headers["WARC-Protocol"] = _PROTOCOLS.get(fetch.http_version,
                                                  fetch.http_version.lower())
    if fetch.cipher_suite:
        headers["WARC-Cipher-Suite"] = fetch.cipher_suite
    return headers


def _response(builder: RecordBuilder, fetch: FetchRecord) -> Any:
    warc_headers = _warc_headers(fetch)
    if fetch.truncated:
        warc_headers["WARC-Truncated"] = "length"
    return builder.create_warc_record(fetch.url, "response", payload=BytesIO(fetch.body),
                                      http_headers=_http_headers(fetch),
                                      warc_headers_dict=warc_headers)


def _revisit(builder: RecordBuilder, fetch: FetchRecord, original: Original) -> Any:
    """A 304 (empty block: replayed as the original) or a response with the payload of
    `original` (its own status and headers, the body left out)."""
    not_modified = fetch.http_status == 304
    warc_headers = _warc_headers(fetch)
    if original.record_id:
        warc_headers["WARC-Refers-To"] = original.record_id
    record = builder.create_revisit_record(
        fetch.url, original.digest, original.url, original.date,
        http_headers=None if not_modified else _http_headers(fetch),
        warc_headers_dict=warc_headers)
    record.rec_headers.replace_header(
        "WARC-Profile", SERVER_NOT_MODIFIED if not_modified else IDENTICAL_PAYLOAD)
    return record


def _request(builder: RecordBuilder, fetch: FetchRecord, concurrent_to: str) -> Any:
    """The GET as it went on the wire, linked to its response (or revisit) record."""
    parts = urlsplit(fetch.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    http_headers = StatusAndHeaders(f"GET {target} HTTP/1.1", list(fetch.request_headers),
                                    is_http_request=True)
    warc_headers = {**_warc_headers(fetch), "WARC-Concurrent-To": concurrent_to}
    return builder.create_warc_record(fetch.url, "request", http_headers=http_headers,
                                      warc_headers_dict=warc_headers)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


@contextmanager
def _open(path_or_file: str | os.PathLike[str] | BinaryIO) -> Iterator[BinaryIO]:
    """The file at a path (closed afterwards) or the given file object (left open)."""
    if isinstance(path_or_file, str | os.PathLike):
        with open(path_or_file, "rb") as stream:
            yield stream
    else:
        yield path_or_file
