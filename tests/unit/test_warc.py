"""WARC records of fetches: a round trip through warcio (request, response and revisit
records, digests, one gzip member per record) and files split by size."""

from __future__ import annotations

import hashlib
import zlib
from base64 import b32encode
from datetime import UTC, datetime, timedelta, timezone
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlapp.ops.warc import (
    IDENTICAL_PAYLOAD,
    SERVER_NOT_MODIFIED,
    FetchRecord,
    Original,
    Warc,
    WarcFiles,
    parse_header_block,
    read_records,
    warc_date,
    write_records,
)
from testweb.site import Web, WebSpec

UA = "crawlapp-test/1.0 (+https://example.test/bot)"
FETCHED = datetime(2024, 5, 17, 8, 30, 15, 250000, tzinfo=UTC)
INFO = {"software": "crawlapp/test", "http-header-user-agent": UA}


def sent(host: str) -> list[tuple[str, str]]:
    return [("Host", host), ("User-Agent", UA), ("Accept-Encoding", "gzip, deflate")]


def fetches() -> list[FetchRecord]:
    web = Web(WebSpec(hosts=1, port=8080))
    ok = web.respond(web.netloc(0), "/p/1.html")
    missing = web.respond(web.netloc(0), "/missing/3.html")
    return [
        FetchRecord(f"{web.base_url(0)}/p/1.html?x=1", FETCHED, 200, sent(web.netloc(0)),
                    ok.headers, ok.body, "127.0.1.1"),
        FetchRecord(f"{web.base_url(0)}/missing/3.html", FETCHED + timedelta(seconds=2), 404,
                    sent(web.netloc(0)), missing.headers, missing.body, "127.0.1.1"),
        FetchRecord("http://example.test/old", datetime(2024, 5, 17, 10, 30, 17), 301,
                    sent("example.test"),
                    [("Location", "http://example.test/new"), ("Content-Type", "text/html")]),
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


def sha1(body: bytes) -> str:
    return "sha1:" + b32encode(hashlib.sha1(body).digest()).decode()


def digests(record: Any) -> list[str]:
    return [v for k, v in record.rec_headers.headers if k == "WARC-Payload-Digest"]


@pytest.fixture(scope="module")
def warc() -> bytes:
    out = BytesIO()
    assert write_records(out, iter(fetches()), INFO) == 3
    return out.getvalue()


def test_round_trip_keeps_status_headers_and_exact_body(warc: bytes) -> None:
    read = read_records(BytesIO(warc))
    assert [r["url"] for r in read] == [fetch.url for fetch in fetches()]
    for record, fetch in zip(read, fetches(), strict=True):
        assert record["status"] == fetch.http_status
        assert record["body"] == fetch.body
        kept = {("X-Crawler-Content-Length" if k == "Content-Length" else k): v
                for k, v in fetch.response_headers}
        assert record["headers"] == kept | {"Content-Length": str(len(fetch.body))}
    assert read[2]["headers"]["Location"] == "http://example.test/new"


def test_records_and_warc_headers(warc: bytes) -> None:
    records = list(ArchiveIterator(BytesIO(warc)))
    assert [r.rec_type for r in records] == ["warcinfo"] + ["request", "response"] * 3
    assert {r.rec_headers.protocol for r in records} == {"WARC/1.1"}
    info = next(iter(ArchiveIterator(BytesIO(warc)))).content_stream().read().decode()
    assert info == "".join(f"{k}: {v}\r\n" for k, v in INFO.items())
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
    assert [r.rec_headers.get_header("WARC-IP-Address") for r in records[2::2]] == [
        "127.0.1.1", "127.0.1.1", None]  # an address only where the fetch kept one


def test_payload_digest_is_sha1_of_the_body(warc: bytes) -> None:
    responses = [r for r in ArchiveIterator(BytesIO(warc)) if r.rec_type == "response"]
    for record, fetch in zip(responses, fetches(), strict=True):
        assert record.rec_headers.get_header("WARC-Payload-Digest") == sha1(fetch.body)
        assert record.rec_headers.get_header("WARC-Block-Digest", "").startswith("sha1:")


def test_request_records_carry_the_headers_sent(warc: bytes) -> None:
    requests = [r for r in ArchiveIterator(BytesIO(warc)) if r.rec_type == "request"]
    assert [r.http_headers.protocol for r in requests] == ["GET"] * 3
    assert requests[0].http_headers.statusline == "/p/1.html?x=1 HTTP/1.1"
    assert requests[2].http_headers.headers == sent("example.test")


def test_every_record_is_its_own_gzip_member(warc: bytes) -> None:
    iterator = ArchiveIterator(BytesIO(warc))
    offsets = [iterator.get_record_offset() for _ in iterator]
    assert gzip_members(warc) == offsets
    assert len(offsets) == 7
    for start, end in zip(offsets, [*offsets[1:], len(warc)], strict=True):
        member = zlib.decompress(warc[start:end], 16 + zlib.MAX_WBITS)
        assert member.startswith(b"WARC/1.1\r\n") and member.count(b"WARC/1.1\r\n") == 1


def test_decoded_bodies_are_not_marked_as_encoded() -> None:
    fetch = FetchRecord("http://example.test/", FETCHED, 200, sent("example.test"), [
        ("Content-Type", "text/plain"), ("Content-Encoding", "gzip"),
        ("Transfer-Encoding", "chunked"), ("Content-Length", "5")], b"plain text")
    out = BytesIO()
    write_records(out, [fetch], INFO)
    [record] = read_records(BytesIO(out.getvalue()))
    assert record["body"] == b"plain text"
    assert record["headers"] == {  # what the server said is kept, under other names
        "Content-Type": "text/plain", "X-Crawler-Content-Encoding": "gzip",
        "X-Crawler-Transfer-Encoding": "chunked", "X-Crawler-Content-Length": "5",
        "Content-Length": "10"}


def test_a_304_is_a_server_not_modified_revisit_with_an_empty_block() -> None:
    out = BytesIO()
    warc = Warc(out, INFO)
    first = FetchRecord("http://example.test/", FETCHED, 200, sent("example.test"),
                        [("Content-Type", "text/html"), ("ETag", '"v1"')], b"<p>v1</p>")
    original = warc.write(first)
    assert original is not None and original.digest == sha1(b"<p>v1</p>")
    again = FetchRecord("http://example.test/", FETCHED + timedelta(days=1), 304,
                        sent("example.test") + [("If-None-Match", '"v1"')], [("ETag", '"v1"')],
                        revisit_of=original)
    assert warc.write(again) is None
    request, revisit = list(ArchiveIterator(BytesIO(out.getvalue())))[-2:]
    headers = revisit.rec_headers
    assert revisit.rec_type == "revisit"
    assert headers.get_header("WARC-Profile") == SERVER_NOT_MODIFIED
    assert headers.get_header("WARC-Refers-To-Target-URI") == "http://example.test/"
    assert headers.get_header("WARC-Refers-To-Date") == "2024-05-17T08:30:15.250000Z"
    assert headers.get_header("WARC-Refers-To") == original.record_id
    assert digests(revisit) == [original.digest]  # the original's, and only it
    assert headers.get_header("Content-Length") == "0" and revisit.http_headers is None
    assert request.http_headers.get_header("If-None-Match") == '"v1"'
    assert request.rec_headers.get_header("WARC-Concurrent-To") == headers.get_header(
        "WARC-Record-ID")


def test_the_same_payload_again_is_an_identical_payload_revisit() -> None:
    original = Original("http://example.test/a", "2024-05-17T08:30:15Z", sha1(b"same"))
    fetch = FetchRecord("http://example.test/a", FETCHED, 200, sent("example.test"),
                        [("Content-Type", "text/plain")], b"same", revisit_of=original)
    out = BytesIO()
    write_records(out, [fetch], INFO)
    revisit = list(ArchiveIterator(BytesIO(out.getvalue())))[-1]
    assert revisit.rec_headers.get_header("WARC-Profile") == IDENTICAL_PAYLOAD
    assert revisit.rec_headers.get_header("WARC-Refers-To") is None  # not in this file
    assert digests(revisit) == [sha1(b"same")]
    assert revisit.http_headers.get_statuscode() == "200"
    assert revisit.http_headers.get_header("Content-Length") == "4"
    assert revisit.content_stream().read() == b""  # the payload is the original's


def test_files_split_by_size_each_with_its_warcinfo(tmp_path: Path) -> None:
    path = tmp_path / "crawl.warc.gz"
    files = WarcFiles(path, INFO, max_size=1)  # every fetch past the first goes on afresh
    for fetch in fetches():
        files.write(fetch)
    files.close()
    assert files.paths == [tmp_path / f"crawl-{n:05d}.warc.gz" for n in range(3)]
    assert not path.exists()
    for part, fetch in zip(files.paths, fetches(), strict=True):
        with part.open("rb") as stream:
            records = list(ArchiveIterator(stream))
        assert [r.rec_type for r in records] == ["warcinfo", "request", "response"]
        assert records[2].rec_headers.get_header("WARC-Target-URI") == fetch.url


def test_a_file_under_the_size_keeps_its_name(tmp_path: Path) -> None:
    path = tmp_path / "crawl.warc.gz"
    files = WarcFiles(path, INFO, max_size=10**9)
    for fetch in fetches():
        files.write(fetch)
    files.close()
    assert files.paths == [path]
    assert [r["status"] for r in read_records(path)] == [200, 404, 301]
    assert [r["status"] for r in read_records(str(path))] == [200, 404, 301]


def test_header_blocks_parse_back_to_pairs() -> None:
    block = "Set-Cookie: a=1\r\nset-cookie: b=2; Path=/\r\nX-Empty:\r\nX-Colon: a: b"
    assert parse_header_block(block) == [("Set-Cookie", "a=1"), ("set-cookie", "b=2; Path=/"),
                                         ("X-Empty", ""), ("X-Colon", "a: b")]
    assert parse_header_block("") == parse_header_block(None) == []


def test_empty_export_has_only_warcinfo() -> None:
    out = BytesIO()
    assert write_records(out, [], INFO) == 0
    assert [r.rec_type for r in ArchiveIterator(BytesIO(out.getvalue()))] == ["warcinfo"]
    assert read_records(BytesIO(out.getvalue())) == []


def test_warc_date_is_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert warc_date(datetime(2024, 1, 1, 12, 0, tzinfo=plus_two)) == "2024-01-01T10:00:00Z"
    assert warc_date(datetime(2024, 1, 1, 12, 0, 0, 5)) == "2024-01-01T12:00:00.000005Z"


def test_an_http2_exchange_is_written_as_http11_with_its_protocol_and_cipher() -> None:
    fetch = FetchRecord("https://example.test/", FETCHED, 200, sent("example.test"),
                        [("content-type", "text/html")], b"<p>h2</p>", "127.0.1.1",
                        http_version="HTTP/2", cipher_suite="TLS_AES_256_GCM_SHA384")
    out = BytesIO()
    write_records(out, [fetch], INFO)
    request, response = list(ArchiveIterator(BytesIO(out.getvalue())))[1:]
    for record in (request, response):
        assert record.rec_headers.get_header("WARC-Protocol") == "h2"
        assert record.rec_headers.get_header("WARC-Cipher-Suite") == "TLS_AES_256_GCM_SHA384"
    assert response.http_headers.protocol == "HTTP/1.1"
    assert (request.http_headers.protocol, request.http_headers.statusline) == (
        "GET", "/ HTTP/1.1")
    plain = FetchRecord("http://example.test/", FETCHED, 200, sent("example.test"), [], b"")
    out = BytesIO()
    write_records(out, [plain], INFO)
    response = list(ArchiveIterator(BytesIO(out.getvalue())))[-1]
    assert response.rec_headers.get_header("WARC-Protocol") is None  # not known: not said
    assert response.rec_headers.get_header("WARC-Cipher-Suite") is None


def test_a_cut_body_is_marked_truncated() -> None:
    fetch = FetchRecord("http://example.test/huge-404", FETCHED, 404, sent("example.test"),
                        [("Content-Type", "text/html"), ("Content-Length", "5000")], b"x" * 100,
                        truncated=True)
    out = BytesIO()
    write_records(out, [fetch], INFO)
    response = list(ArchiveIterator(BytesIO(out.getvalue())))[-1]
    assert response.rec_headers.get_header("WARC-Truncated") == "length"
    assert response.http_headers.get_statuscode() == "404"
    assert response.http_headers.get_header("Content-Length") == "100"  # the body as archived
    assert response.http_headers.get_header("X-Crawler-Content-Length") == "5000"
    assert [r["body"] for r in read_records(BytesIO(out.getvalue()))] == [b"x" * 100]
