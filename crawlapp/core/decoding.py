"""Content-Encoding decoded in bounded steps, so a compression bomb stops at the cap. Pure."""

from __future__ import annotations

import zlib

DEFAULT_CAP = 10 * 1024 * 1024


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
    """Collect a body from raw chunks, decoding gzip or deflate, never past `cap` bytes.

    Each step inflates at most what is left under the cap, so memory stays within
    `cap` plus one raw chunk whatever the compression ratio.
    """

    def __init__(self, content_encoding: str | None, cap: int = DEFAULT_CAP) -> None:
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise UnsupportedEncoding(content_encoding or "")
        self.encoding = codings[0] if codings else None
        self.cap = cap
        self.size = 0
        self._chunks: list[bytes] = []
        self._inflate: zlib._Decompress | None = None

    def _keep(self, data: bytes) -> None:
        room = self.cap - self.size
        self.size += len(data)
        if self.size > self.cap:
            self._chunks.append(data[:room])  # body() then gives the first `cap` bytes
            raise BodyTooLarge(self.size)
        if data:
            self._chunks.append(data)

    def feed(self, data: bytes) -> None:
        """Add one raw chunk; raises BodyTooLarge or zlib.error."""
        if self.encoding is None:
            self._keep(data)
            return
        while data:
            if self._inflate is None:
                self._inflate = _decompressor(self.encoding, data)
            self._keep(self._inflate.decompress(data, self.cap - self.size + 1))
            data = self._inflate.unconsumed_tail
            if self._inflate.eof:
                data = self._inflate.unused_data  # another gzip member, or trailing bytes
                self._inflate = None
                if self.encoding == "deflate" or not data.startswith(b"\x1f\x8b"):
                    return

    def body(self) -> bytes:
        """The decoded body so far (all of it once the last chunk was fed, or its first
        `cap` bytes after BodyTooLarge)."""
        if self._inflate is not None and self.size <= self.cap:
            self._keep(self._inflate.flush())
        return b"".join(self._chunks)
