"""Bounded Content-Encoding decoding: bombs stop at the cap, every coding round-trips."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable

import brotli
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlapp.core.decoding import (
    ACCEPT_ENCODING,
    CODINGS,
    CORRUPT,
    ZSTD_MAX_WINDOW,
    BodyTooLarge,
    BoundedDecoder,
    UnsupportedEncoding,
)

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
    ("br", brotli.compress(TEXT)),
    ("zstd", zstandard.ZstdCompressor().compress(TEXT)),
    ("zstd", zstandard.ZstdCompressor().compress(TEXT[:1000])
     + zstandard.ZstdCompressor().compress(TEXT[1000:])),  # two frames
])
def test_codings_decode(encoding: str | None, raw: bytes) -> None:
    assert _decode(encoding, raw) == TEXT


def test_the_codings_asked_for_are_those_decoded() -> None:
    assert {c.strip() for c in ACCEPT_ENCODING.split(",")} == CODINGS - {"x-gzip"}


ZEROS = b"\0" * (200 * 1024 * 1024)
# 200 MiB of zeros in each coding: ~200 KiB in gzip, a few hundred bytes in Brotli and zstd.
BOMBS: dict[str, Callable[[], bytes]] = {
    "gzip": lambda: gzip.compress(ZEROS, compresslevel=9),
    "br": lambda: brotli.compress(ZEROS, quality=5),
    "zstd": lambda: zstandard.ZstdCompressor(level=3).compress(ZEROS),
}


@pytest.fixture(scope="module", params=sorted(BOMBS))
def bomb(request: pytest.FixtureRequest) -> tuple[str, bytes]:
    """(coding, 200 MiB of zeros in it)."""
    return request.param, BOMBS[request.param]()


@pytest.mark.parametrize("chunk", [65536, 7])
def test_a_bomb_stops_at_the_cap_without_inflating_it(bomb: tuple[str, bytes],
                                                      chunk: int) -> None:
    encoding, raw = bomb
    decoder = BoundedDecoder(encoding, cap=1024 * 1024)
    with pytest.raises(BodyTooLarge):
        for piece in _chunks(raw, chunk):
            decoder.feed(piece)
    assert len(decoder.body()) == 1024 * 1024  # the first `cap` bytes, nothing more held
    assert decoder.size < 1024 * 1024 + 256 * 1024  # inflated one step past the cap at most


def test_a_zstd_frame_asking_for_a_window_past_http_s_is_refused() -> None:
    params = zstandard.ZstdCompressionParameters.from_level(19, window_log=24)  # 16 MiB
    packer = zstandard.ZstdCompressor(compression_params=params).compressobj()  # size unsaid
    raw = packer.compress(TEXT) + packer.flush()
    assert 1 << 24 > ZSTD_MAX_WINDOW
    with pytest.raises(zstandard.ZstdError):
        _decode("zstd", raw)


def test_a_plain_body_past_the_cap_keeps_its_first_bytes() -> None:
    decoder = BoundedDecoder(None, cap=100)
    decoder.feed(b"a" * 60)
    with pytest.raises(BodyTooLarge):
        decoder.feed(b"b" * 60)
    assert decoder.body() == b"a" * 60 + b"b" * 40


@pytest.mark.parametrize("encoding", ["gzip, br", "br, zstd", "compress", "dcb"])
def test_codings_not_asked_for_are_refused(encoding: str) -> None:
    with pytest.raises(UnsupportedEncoding):
        BoundedDecoder(encoding)


@pytest.mark.parametrize(("encoding", "error"), [
    ("gzip", zlib.error), ("br", brotli.error), ("zstd", zstandard.ZstdError)])
def test_a_corrupt_body_raises_its_codings_error(encoding: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        _decode(encoding, b"\x1f\x8b\x08\x00" + b"garbage" * 100)
    assert error in CORRUPT


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([None, "gzip", "deflate", "br", "zstd"]), st.binary(max_size=2048),
       st.integers(min_value=1, max_value=4096))
def test_any_bytes_raise_only_declared_errors(encoding: str | None, raw: bytes, cap: int) -> None:
    decoder = BoundedDecoder(encoding, cap)
    try:
        for chunk in _chunks(raw, 97):
            decoder.feed(chunk)
        assert len(decoder.body()) <= cap
    except (BodyTooLarge, *CORRUPT):
        assert len(decoder.body()) <= cap
