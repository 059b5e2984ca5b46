"""Near-duplicate detection: visible text, 64-bit SimHash fingerprints and a banded index. Pure.

A page's fingerprint is the SimHash of the word 3-shingles of its visible text: every shingle
is hashed to 64 bits, and bit k of the fingerprint is 1 when more than half of the shingle
hashes have bit k set. Pages that share most shingles get fingerprints a few bits apart, so
"near duplicate" means a Hamming distance of at most 3.

Finding those pairs without comparing every pair: the fingerprint is cut into 4 disjoint
bands of 16 bits, and a page is filed under each of its 4 band values. Two fingerprints
within 3 bits differ in at most 3 bit positions, and 3 positions can touch at most 3 of the
4 bands, so by the pigeonhole principle at least one band is identical in both: they always
share a bucket. In general `count` bands find every pair within `count - 1` bits; only the
fingerprints sharing a bucket (the candidates) are compared exactly.
"""

from __future__ import annotations

import re
from collections import defaultdict

import lxml.html
import mmh3
import numpy as np
from lxml import etree

from crawlapp.core.html import decode_body, text_of

BITS = 64
MASK = (1 << BITS) - 1
MAX_DISTANCE = 3
BAND_COUNT = 4

_WORD_RE = re.compile(r"\w+")
# An ASCII character's byte where \w matches it ([A-Za-z0-9_]), a space elsewhere.
_ASCII_WORD_BYTES = bytes(c if chr(c).isalnum() or c == ord("_") else 32 for c in range(128)) \
    + b" " * 128
# WHATWG MIME sniffing's "binary data bytes": control characters that text never contains.
_BINARY_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_SNIFF_CHARS = 1024
_PARSER = lxml.html.HTMLParser(encoding="utf-8")


def visible_text(html: bytes | str, content_type: str | None = None) -> str:
    """The lower-cased, whitespace-collapsed text a reader sees; "" for binary or unparseable."""
    text = decode_body(html, content_type) if isinstance(html, bytes) else html
    if not text.strip() or _BINARY_RE.search(text, 0, _SNIFF_CHARS):
        return ""
    try:
        root = lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=_PARSER)
    except (etree.ParserError, ValueError):
        return ""
    return text_of(root)


def tokens(text: str) -> list[bytes]:
    """The words of `text` (runs of \\w characters), UTF-8 encoded, as the shingles are hashed.

    ASCII text, most pages, is split by a byte table: a tenth of the regex's CPU.
    """
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORD_BYTES).split()
    # \w never matches ASCII whitespace, and UTF-8 never encodes a non-ASCII character
    # with ASCII bytes, so joining and splitting on spaces gives back the same words.
    return " ".join(_WORD_RE.findall(text)).encode().split()


def shingles(words: list[bytes], size: int = 3) -> list[bytes]:
    """Runs of `size` consecutive words joined by a space; the words themselves if fewer."""
    if len(words) < size:
        return words
    return list(map(b" ".join, zip(*(words[k:] for k in range(size)), strict=False)))


def simhash(text: str, shingle: int = 3) -> int:
    """64-bit SimHash (unsigned) of the word shingles of `text`; 0 for text without words.

    A shingle's hash is the first 64 bits of its MurmurHash3 x64 128 (mmh3.hash64's first
    value), taken for all shingles in one pass: the first 8 bytes of each hash_bytes,
    little-endian, read backwards so that each row of bits runs from bit 63 down to bit 0.
    """
    features = shingles(tokens(text), shingle)
    if not features:
        return 0
    digests = np.frombuffer(b"".join(map(mmh3.hash_bytes, features)), dtype=np.uint8)
    bits = np.unpackbits(digests.reshape(-1, 16)[:, 7::-1], axis=1)
    majority = np.add.reduce(bits, axis=0, dtype=np.uint32) * 2 > len(features)
    return int.from_bytes(np.packbits(majority).tobytes(), "big")


def hamming(a: int, b: int) -> int:
    """Number of bits in which two fingerprints differ."""
    return (a ^ b).bit_count()


def near_duplicate(a: int, b: int, max_distance: int = MAX_DISTANCE) -> bool:
    return hamming(a, b) <= max_distance


def to_signed(x: int) -> int:
    """An unsigned 64-bit fingerprint as the signed 64-bit integer SQL BIGINT can store."""
    if not 0 <= x <= MASK:
        raise ValueError(f"not an unsigned 64-bit integer: {x}")
    return x - (1 << BITS) if x >> (BITS - 1) else x


def from_signed(x: int) -> int:
    """The unsigned fingerprint of a signed 64-bit integer read from SQL."""
    if not -(1 << (BITS - 1)) <= x < 1 << (BITS - 1):
        raise ValueError(f"not a signed 64-bit integer: {x}")
    return x & MASK


def bands(fp: int, count: int = BAND_COUNT) -> list[int]:
    """`fp` cut into `count` bands, most significant first, each tagged `(index << width) | bits`.

    The index tag keeps equal bit patterns in different bands apart.
    """
    if count < 1 or BITS % count:
        raise ValueError(f"band count must divide {BITS}: {count}")
    width = BITS // count
    mask = (1 << width) - 1
    return [(index << width) | (fp >> (BITS - width * (index + 1)) & mask)
            for index in range(count)]


class BandIndex:
    """In-memory banded look-up of fingerprints by key: the model of the Redis index."""

    def __init__(self, count: int = BAND_COUNT) -> None:
        self.count = count
        self._fingerprints: dict[str, int] = {}
        self._buckets: defaultdict[int, set[str]] = defaultdict(set)

    def add(self, key: str, fp: int) -> None:
        """File `key` under the bands of `fp`, replacing its previous fingerprint if any."""
        old = self._fingerprints.get(key)
        if old is not None:
            for band in bands(old, self.count):
                self._buckets[band].discard(key)
        self._fingerprints[key] = fp
        for band in bands(fp, self.count):
            self._buckets[band].add(key)

    def candidates(self, fp: int) -> set[str]:
        """Keys whose fingerprint shares at least one band with `fp`."""
        found: set[str] = set()
        for band in bands(fp, self.count):
            found |= self._buckets.get(band, set())
        return found

    def near(self, fp: int, max_distance: int = MAX_DISTANCE) -> list[tuple[str, int]]:
        """(key, distance) of the keys within `max_distance` bits of `fp`, closest first."""
        if max_distance >= self.count:
            raise ValueError(f"{self.count} bands only guarantee distances below {self.count}")
        distances = ((key, hamming(fp, self._fingerprints[key])) for key in self.candidates(fp))
        near = [(key, d) for key, d in distances if d <= max_distance]
        return sorted(near, key=lambda pair: (pair[1], pair[0]))
