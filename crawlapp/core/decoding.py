"""Content-Encoding decoded in bounded steps, so a compression bomb stops at the cap. Pure."""

from __future__ import annotations

import zlib
from typing import IO, cast

import brotli
import zstandard

DEFAULT_CAP = 10 * 1024 * 1024
# What the fetcher asks for: every coding BoundedDecoder reads, the smallest first.
ACCEPT_ENCODING = "br, zstd, gzip, deflate"
CODINGS = frozenset({"br", "zstd", "gzip", "x-gzip", "deflate"})
# What a body that is not in its Content-Encoding raises.
CORRUPT = (zlib.error, brotli.error, zstandard.ZstdError)
# Brotli's output in one step: at most about twice this (its buffer grows by doubling).
BROTLI_STEP = 64 * 1024
# The largest zstd window over HTTP (RFC 9659: 8 MiB); a frame asking for more is refused.
ZSTD_MAX_WINDOW = 8 * 1024 * 1024


class BodyTooLarge(Exception):
    """The decoded body passed its cap."""


class UnsupportedEncoding(Exception):
    """A Content-Encoding the crawler did not ask for and cannot decode."""


def _decompressor(encoding: str, first: bytes) -> zlib._Decompress:
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    # "deflate" is meant to be zlib-wrapped, but many servers send raw deflate.
    wrapped = len(first) >= 2 and first[0] & 0x0F == 8 and (first[0] << 8 | first[1]) % 31 == 0
    return zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)


class BoundedDecoder:
    """Collect a body from raw chunks, decoding gzip, deflate, Brotli or zstd, never past
    `cap` bytes.

    Each step inflates at most what is left under the cap (gzip, deflate), about
    BROTLI_STEP (Brotli) or zstd's output block (128 KiB), so memory stays within `cap` plus
    one raw chunk and one step whatever the compression ratio.
    """

    def __init__(self, content_encoding: str | None, cap: int = DEFAULT_CAP) -> None:
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in CODINGS):
            raise UnsupportedEncoding(content_encoding or "")
        self.encoding = codings[0] if codings else None
        self.cap = cap
        self.size = 0
        self._chunks: list[bytes] = []
        self._inflate: zlib._Decompress | None = None
        self._brotli = brotli.Decompressor() if self.encoding == "br" else None
        # The stream writer hands each output block to `write` (all it calls of its sink),
        # which stops it at the cap.
        self._zstd = (zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
                      .stream_writer(cast(IO[bytes], self), write_return_read=True)
                      if self.encoding == "zstd" else None)

    def _keep(self, data: bytes) -> None:
        room = self.cap - self.size
        self.size += len(data)
        if self.size > self.cap:
            self._chunks.append(data[:room])  # body() then gives the first `cap` bytes
            raise BodyTooLarge(self.size)
        if data:
            self._chunks.append(data)

    def write(self, data: bytes) -> int:
        """Keep one block of zstd's output (the zstd stream writer's sink)."""
        self._keep(data)
        return len(data)

    def feed(self, data: bytes) -> None:
        """Add one raw chunk; raises BodyTooLarge or one of CORRUPT."""
        if self._brotli is not None:
            self._feed_brotli(self._brotli, data)
        elif self._zstd is not None:
            self._zstd.write(data)
        elif self.encoding is None:
            self._keep(data)
        else:
            self._feed_zlib(self.encoding, data)

    def _feed_brotli(self, stream: brotli.Decompressor, data: bytes) -> None:
        while True:  # a step's output is bounded; empty once the input is spent
            out: bytes = stream.process(data, output_buffer_limit=BROTLI_STEP)
            if not out:
                return
            self._keep(out)
            data = b""

    def _feed_zlib(self, encoding: str, data: bytes) -> None:
        while data:
            if self._inflate is None:
                self._inflate = _decompressor(encoding, data)
            self._keep(self._inflate.decompress(data, self.cap - self.size + 1))
            data = self._inflate.unconsumed_tail
            if self._inflate.eof:
                data = self._inflate.unused_data  # another gzip member, or trailing bytes
                self._inflate = None
                if encoding == "deflate" or not data.startswith(b"\x1f\x8b"):
                    return

    def body(self) -> bytes:
        """The decoded body so far (all of it once the last chunk was fed, or its first
        `cap` bytes after BodyTooLarge)."""
        if self._inflate is not None and self.size <= self.cap:
            self._keep(self._inflate.flush())
        return b"".join(self._chunks)
