"""Near-duplicate detection: 64-bit SimHash fingerprints. Pure.

A page's fingerprint is the SimHash of the word 3-shingles of its visible text (the text
core/html.py reads): every shingle is hashed to 64 bits, and bit k of the fingerprint is 1
when more than half of the shingle hashes have bit k set. Pages that share most shingles get
fingerprints a few bits apart: a near duplicate is one within CRAWL_NEAR_DUPLICATE_BITS
(at most 3) bits.

Finding those pairs without comparing every pair: core/near_tables.py (tables of permuted
fingerprints, filed in Redis by adapters/redis/dedup_index.py).
"""

from __future__ import annotations

import re

import mmh3
import numpy as np

BITS = 64
MASK = (1 << BITS) - 1

_WORD_RE = re.compile(r"\w+")
# An ASCII character's byte where \w matches it ([A-Za-z0-9_]), a space elsewhere.
_ASCII_WORD_BYTES = bytes(c if chr(c).isalnum() or c == ord("_") else 32 for c in range(128)) \
    + b" " * 128


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
