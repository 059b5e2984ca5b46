"""Bounded Content-Encoding decoding: bombs stop at the cap, every coding round-trips."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlapp.core.decoding import BodyTooLarge, BoundedDecoder, UnsupportedEncoding

TEXT = b"<html><body>" + b"hello world " * 5000 + b"</body></html>"


def _chunks(data: bytes, size: int = 4096) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def _decode(encoding: str | None, raw: bytes, cap: int = 1 << 20) -> bytes:
    decoder = BoundedDecoder(encoding, cap)
    for chunk in _chunks(raw):
        decoder.feed(chunk)
    return decoder.body()


@pytest.mark.parametrize(("encoding", "raw"), [
    (None, TEXT),
    ("identity", TEXT),
    ("gzip", gzip.compress(TEXT)),
    ("x-gzip", gzip.compress(TEXT)),
    ("GZIP", gzip.compress(TEXT)),
    ("deflate", zlib.compress(TEXT)),
    ("deflate", zlib.compress(TEXT)[2:-4]),  # raw deflate, as many servers send it
    ("gzip", gzip.compress(TEXT[:1000]) + gzip.compress(TEXT[1000:])),  # two members
])
def test_codings_decode(encoding: str | None, raw: bytes) -> None:
    assert _decode(encoding, raw) == TEXT


def test_a_gzip_bomb_stops_at_the_cap_without_inflating_it() -> None:
    bomb = gzip.compress(b"\0" * (200 * 1024 * 1024), compresslevel=9)  # ~200 KiB on the wire
    decoder = BoundedDecoder("gzip", cap=1024 * 1024)
    with pytest.raises(BodyTooLarge):
        for chunk in _chunks(bomb, 65536):
            decoder.feed(chunk)
    assert len(decoder.body()) == 1024 * 1024  # the first `cap` bytes, nothing more held


def test_a_plain_body_past_the_cap_keeps_its_first_bytes() -> None:
    decoder = BoundedDecoder(None, cap=100)
    decoder.feed(b"a" * 60)
    with pytest.raises(BodyTooLarge):
        decoder.feed(b"b" * 60)
    assert decoder.body() == b"a" * 60 + b"b" * 40


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, br", "compress"])
def test_codings_not_asked_for_are_refused(encoding: str) -> None:
    with pytest.raises(UnsupportedEncoding):
        BoundedDecoder(encoding)


def test_corrupt_gzip_raises_zlib_error() -> None:
    with pytest.raises(zlib.error):
        _decode("gzip", b"\x1f\x8b\x08\x00" + b"garbage" * 100)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([None, "gzip", "deflate"]), st.binary(max_size=2048),
       st.integers(min_value=1, max_value=4096))
def test_any_bytes_raise_only_declared_errors(encoding: str | None, raw: bytes, cap: int) -> None:
    decoder = BoundedDecoder(encoding, cap)
    try:
        for chunk in _chunks(raw, 97):
            decoder.feed(chunk)
        assert len(decoder.body()) <= cap
    except (BodyTooLarge, zlib.error):
        assert len(decoder.body()) <= cap
