"""Export fetched pages as WARC/1.1 (request + response records, one gzip member per record)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from io import BytesIO
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

WARC_VERSION = "WARC/1.1"
WARCINFO = {
    "software": "crawlapp",
    "format": "WARC File Format 1.1",
    "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
}
# The body is stored decoded and whole, so these would make readers decode it a second time.
_DROPPED_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})


@dataclass(frozen=True)
class PageRecord:
    """A fetched page as stored: `body` is already decompressed."""

    url: str
    fetched_at: datetime  # naive values are taken as UTC
    http_status: int
    headers: dict[str, str]
    body: bytes
    user_agent: str


def write_records(out: BinaryIO, records: Iterable[PageRecord]) -> int:
    """Write a warcinfo record, then a request and a response record per page; the page count."""
    writer = WARCWriter(out, gzip=True, warc_version=WARC_VERSION)
    writer.write_record(writer.create_warcinfo_record(None, WARCINFO))
    count = 0
    for page in records:
        response = _response(writer, page)
        response_id = response.rec_headers.get_header("WARC-Record-ID")
        writer.write_record(_request(writer, page, response_id))
        writer.write_record(response)
        count += 1
    return count


def read_records(path_or_file: str | os.PathLike[str] | BinaryIO) -> list[dict[str, Any]]:
    """url, date (WARC-Date), status, headers and decoded body of every response record."""
    with _open(path_or_file) as stream:
        return [{
            "url": record.rec_headers.get_header("WARC-Target-URI"),
            "date": record.rec_headers.get_header("WARC-Date"),
            "status": int(record.http_headers.get_statuscode()),
            "headers": dict(record.http_headers.headers),
            "body": record.content_stream().read(),
        } for record in ArchiveIterator(stream) if record.rec_type == "response"]


def warc_date(moment: datetime) -> str:
    """A WARC/1.1 date (UTC, microseconds when non-zero) of `moment`."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return datetime_to_iso_date(moment, use_micros=True)


def _response(builder: RecordBuilder, page: PageRecord) -> Any:
    headers = [(k, v) for k, v in page.headers.items() if k.lower() not in _DROPPED_HEADERS]
    headers.append(("Content-Length", str(len(page.body))))
    status_line = f"{page.http_status} {_reason(page.http_status)}".rstrip()
    http_headers = StatusAndHeaders(status_line, headers, protocol="HTTP/1.1")
    return builder.create_warc_record(page.url, "response", payload=BytesIO(page.body),
                                      http_headers=http_headers,
                                      warc_headers_dict={"WARC-Date": warc_date(page.fetched_at)})


def _request(builder: RecordBuilder, page: PageRecord, response_id: str) -> Any:
    """The GET that fetched the page, linked to its response record."""
    parts = urlsplit(page.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [("Host", parts.netloc), ("User-Agent", page.user_agent)]
    http_headers = StatusAndHeaders(f"GET {target} HTTP/1.1", headers, is_http_request=True)
    warc_headers = {"WARC-Date": warc_date(page.fetched_at), "WARC-Concurrent-To": response_id}
    return builder.create_warc_record(page.url, "request", http_headers=http_headers,
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
