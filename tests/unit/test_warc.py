"""WARC export: a round trip through warcio."""

from __future__ import annotations

import hashlib
import zlib
from base64 import b32encode
from datetime import UTC, datetime, timedelta, timezone
from io import BytesIO
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlapp.ops.warc import PageRecord, read_records, warc_date, write_records
from testweb.site import HTML_TYPE, Web, WebSpec

UA = "crawlapp-test/1.0 (+https://example.test/bot)"
FETCHED = datetime(2024, 5, 17, 8, 30, 15, 250000, tzinfo=UTC)


def pages() -> list[PageRecord]:
    web = Web(WebSpec(hosts=1, port=8080))
    ok = web.respond(web.netloc(0), "/p/1.html")
    missing = web.respond(web.netloc(0), "/missing/3.html")
    return [
        PageRecord(f"{web.base_url(0)}/p/1.html?x=1", FETCHED, 200, {
            "Content-Type": HTML_TYPE,
            "ETag": ok.header("ETag") or "",
            "Last-Modified": ok.header("Last-Modified") or "",
        }, ok.body, UA),
        PageRecord(f"{web.base_url(0)}/missing/3.html", FETCHED + timedelta(seconds=2), 404,
                   {"Content-Type": HTML_TYPE}, missing.body, UA),
        PageRecord("http://example.test/old", datetime(2024, 5, 17, 10, 30, 17), 301,
                   {"Location": "http://example.test/new", "Content-Type": "text/html"}, b"", UA),
    ]


def gzip_members(data: bytes) -> list[int]:
    """Start offsets of the gzip members `data` is a concatenation of (fails if it is not)."""
    offsets, position = [], 0
    while position < len(data):
        offsets.append(position)
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        member.decompress(data[position:])
        assert member.eof, f"truncated gzip member at {position}"
        position = len(data) - len(member.unused_data)
    return offsets


@pytest.fixture(scope="module")
def warc() -> bytes:
    out = BytesIO()
    assert write_records(out, iter(pages())) == 3
    return out.getvalue()


def test_round_trip_keeps_status_headers_and_exact_body(warc: bytes) -> None:
    read = read_records(BytesIO(warc))
    assert [r["url"] for r in read] == [page.url for page in pages()]
    for record, page in zip(read, pages(), strict=True):
        assert record["status"] == page.http_status
        assert record["body"] == page.body
        assert record["headers"] == page.headers | {"Content-Length": str(len(page.body))}
    assert read[2]["headers"]["Location"] == "http://example.test/new"


def test_records_and_warc_headers(warc: bytes) -> None:
    records = list(ArchiveIterator(BytesIO(warc)))
    assert [r.rec_type for r in records] == ["warcinfo"] + ["request", "response"] * 3
    assert {r.rec_headers.protocol for r in records} == {"WARC/1.1"}
    info = next(iter(ArchiveIterator(BytesIO(warc)))).content_stream().read().decode()
    assert "software: crawlapp" in info and "format: WARC File Format 1.1" in info
    dates = [r.rec_headers.get_header("WARC-Date") for r in records[1:]]
    expected = ["2024-05-17T08:30:15.250000Z", "2024-05-17T08:30:17.250000Z",
                "2024-05-17T10:30:17Z"]
    assert dates == [d for d in expected for _ in range(2)]
    for request, response in zip(records[1::2], records[2::2], strict=True):
        uri = response.rec_headers.get_header("WARC-Target-URI")
        assert request.rec_headers.get_header("WARC-Target-URI") == uri
        assert (request.rec_headers.get_header("WARC-Concurrent-To")
                == response.rec_headers.get_header("WARC-Record-ID"))
        assert response.http_headers.protocol == "HTTP/1.1"


def test_payload_digest_is_sha1_of_the_body(warc: bytes) -> None:
    responses = [r for r in ArchiveIterator(BytesIO(warc)) if r.rec_type == "response"]
    for record, page in zip(responses, pages(), strict=True):
        digest = "sha1:" + b32encode(hashlib.sha1(page.body).digest()).decode()
        assert record.rec_headers.get_header("WARC-Payload-Digest") == digest
        assert record.rec_headers.get_header("WARC-Block-Digest", "").startswith("sha1:")


def test_request_records_are_gets_with_the_user_agent(warc: bytes) -> None:
    requests = [r for r in ArchiveIterator(BytesIO(warc)) if r.rec_type == "request"]
    assert len(requests) == 3
    assert [r.http_headers.protocol for r in requests] == ["GET"] * 3
    assert requests[0].http_headers.statusline == "/p/1.html?x=1 HTTP/1.1"
    assert requests[2].http_headers.get_header("Host") == "example.test"
    assert {r.http_headers.get_header("User-Agent") for r in requests} == {UA}


def test_every_record_is_its_own_gzip_member(warc: bytes) -> None:
    iterator = ArchiveIterator(BytesIO(warc))
    offsets = [iterator.get_record_offset() for _ in iterator]
    assert gzip_members(warc) == offsets
    assert len(offsets) == 7
    for start, end in zip(offsets, [*offsets[1:], len(warc)], strict=True):
        member = zlib.decompress(warc[start:end], 16 + zlib.MAX_WBITS)
        assert member.startswith(b"WARC/1.1\r\n") and member.count(b"WARC/1.1\r\n") == 1


def test_decoded_bodies_are_not_marked_as_encoded() -> None:
    page = PageRecord("http://example.test/", FETCHED, 200, {
        "Content-Type": "text/plain", "Content-Encoding": "gzip",
        "Transfer-Encoding": "chunked", "Content-Length": "5"}, b"plain text", UA)
    out = BytesIO()
    write_records(out, [page])
    [record] = read_records(BytesIO(out.getvalue()))
    assert record["body"] == b"plain text"
    assert record["headers"] == {"Content-Type": "text/plain", "Content-Length": "10"}


def test_read_records_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "export.warc.gz"
    with path.open("wb") as out:
        write_records(out, pages())
    assert [r["status"] for r in read_records(path)] == [200, 404, 301]
    assert [r["status"] for r in read_records(str(path))] == [200, 404, 301]


def test_empty_export_has_only_warcinfo() -> None:
    out = BytesIO()
    assert write_records(out, []) == 0
    assert [r.rec_type for r in ArchiveIterator(BytesIO(out.getvalue()))] == ["warcinfo"]
    assert read_records(BytesIO(out.getvalue())) == []


def test_warc_date_is_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert warc_date(datetime(2024, 1, 1, 12, 0, tzinfo=plus_two)) == "2024-01-01T10:00:00Z"
    assert warc_date(datetime(2024, 1, 1, 12, 0, 0, 5)) == "2024-01-01T12:00:00.000005Z"
