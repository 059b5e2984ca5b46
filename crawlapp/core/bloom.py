"""Sizing and bit positions of a Bloom filter split over several bitmaps. Pure: no I/O.

All k bits of an item live in ONE shard (chosen by its own hash), at offsets found by
double hashing: offset_i = (h1 + i * h2) mod bits_per_shard, with h1, h2 = mmh3.hash64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mmh3

REDIS_MAX_BITS = 2**32  # a Redis string holds at most 512 MB
DEFAULT_MAX_SHARD_BITS = 2**31  # 256 MB per key, well under the limit
_SHARD_SEED = 0x5BD1E995  # the shard's hash differs from the one giving h1, h2


@dataclass(frozen=True)
class BloomShape:
    """`shards` bitmaps of `bits_per_shard` bits (`bits` in all); `hashes` bits per item."""

    bits: int
    hashes: int
    shards: int
    bits_per_shard: int

    def __post_init__(self) -> None:
        if self.hashes < 1 or self.shards < 1 or self.bits_per_shard < 1:
            raise ValueError(f"hashes, shards and bits_per_shard must be positive: {self}")
        if self.bits_per_shard > REDIS_MAX_BITS:
            raise ValueError(f"a shard holds at most {REDIS_MAX_BITS} bits: {self}")
        if self.bits != self.shards * self.bits_per_shard:
            raise ValueError(f"bits must be shards * bits_per_shard: {self}")

    @classmethod
    def for_capacity(cls, expected: int, fp_rate: float,
                     max_shard_bits: int = DEFAULT_MAX_SHARD_BITS, min_shards: int = 1
                     ) -> BloomShape:
        """The optimal filter for `expected` items at `fp_rate`, in at least `min_shards`
        shards of at most `max_shard_bits` bits each."""
        if expected < 1:
            raise ValueError(f"expected must be at least 1, got {expected}")
        if not 0 < fp_rate < 1:
            raise ValueError(f"fp_rate must be between 0 and 1 (exclusive), got {fp_rate}")
        if not 1 <= max_shard_bits <= REDIS_MAX_BITS:
            raise ValueError(f"max_shard_bits must be in [1, {REDIS_MAX_BITS}], "
                             f"got {max_shard_bits}")
        bits = math.ceil(-expected * math.log(fp_rate) / math.log(2) ** 2)
        hashes = max(1, round(bits / expected * math.log(2)))
        shards = max(min_shards, math.ceil(bits / max_shard_bits))
        per_shard = math.ceil(bits / shards)
        return cls(per_shard * shards, hashes, shards, per_shard)


def probe(shape: BloomShape, item: bytes) -> tuple[int, int, int]:
    """The item's shard and the start (h1) and step (h2) of its offsets, both reduced
    modulo bits_per_shard."""
    shard = mmh3.hash(item, _SHARD_SEED, signed=False) % shape.shards
    h1, h2 = mmh3.hash64(item, signed=False)
    return shard, h1 % shape.bits_per_shard, h2 % shape.bits_per_shard


def positions(shape: BloomShape, item: bytes) -> tuple[int, list[int]]:
    """The item's shard and its k bit offsets within that shard."""
    shard, start, step = probe(shape, item)
    return shard, [(start + i * step) % shape.bits_per_shard for i in range(shape.hashes)]


def expected_fp_rate(shape: BloomShape, items: int) -> float:
    """The false-positive rate once `items` distinct items are in: (1 - e^(-kn/m))^k."""
    if items < 0:
        raise ValueError(f"items must not be negative, got {items}")
    return (1 - math.exp(-shape.hashes * items / shape.bits)) ** shape.hashes
