"""Bloom filter sizing and bit positions."""

from __future__ import annotations

import math

import pytest

from crawlapp.core.bloom import (
    DEFAULT_MAX_SHARD_BITS,
    REDIS_MAX_BITS,
    BloomShape,
    expected_fp_rate,
    positions,
    probe,
)


def test_ten_million_at_one_in_a_thousand() -> None:
    shape = BloomShape.for_capacity(10_000_000, 0.001)
    assert shape.bits == 143_775_876
    assert shape.bits / 10_000_000 == pytest.approx(14.38, abs=0.01)
    assert shape.hashes == 10
    assert (shape.shards, shape.bits_per_shard) == (1, shape.bits)
    assert expected_fp_rate(shape, 10_000_000) == pytest.approx(0.001, rel=0.05)


def test_one_percent_takes_about_seven_hashes_and_ten_bits_per_item() -> None:
    shape = BloomShape.for_capacity(1000, 0.01)
    assert shape.bits == 9586
    assert shape.hashes == 7


def test_at_least_one_hash() -> None:
    assert BloomShape.for_capacity(1, 0.9).hashes == 1


@pytest.mark.parametrize("cap", [1_000_000, 33_333_333, 143_775_875])
def test_shards_respect_the_cap_and_cover_the_bits(cap: int) -> None:
    shape = BloomShape.for_capacity(10_000_000, 0.001, max_shard_bits=cap)
    assert shape.bits_per_shard <= cap
    assert shape.shards == math.ceil(143_775_876 / cap)
    assert shape.bits == shape.shards * shape.bits_per_shard >= 143_775_876


def test_default_cap_keeps_a_huge_filter_in_keys_of_256_mb() -> None:
    shape = BloomShape.for_capacity(2_000_000_000, 0.001)
    assert shape.shards == 14
    assert shape.bits_per_shard <= DEFAULT_MAX_SHARD_BITS < REDIS_MAX_BITS


def test_positions_are_deterministic_in_one_shard_and_in_range() -> None:
    shape = BloomShape.for_capacity(1_000_000, 0.001, max_shard_bits=1_000_000)
    shards_used = set()
    for n in range(2000):
        item = n.to_bytes(8, "big")
        shard, offsets = positions(shape, item)
        assert positions(shape, item) == (shard, offsets)
        assert 0 <= shard < shape.shards
        assert len(offsets) == shape.hashes
        assert all(0 <= off < shape.bits_per_shard for off in offsets)
        shards_used.add(shard)
    assert shards_used == set(range(shape.shards))


def test_positions_are_double_hashing_from_the_probe() -> None:
    shape = BloomShape.for_capacity(1000, 0.01)
    shard, start, step = probe(shape, b"http://a.com/")
    assert positions(shape, b"http://a.com/") == (
        shard, [(start + i * step) % shape.bits_per_shard for i in range(shape.hashes)])


def test_expected_fp_rate_grows_with_the_load() -> None:
    shape = BloomShape.for_capacity(1000, 0.01)
    assert expected_fp_rate(shape, 0) == 0.0
    assert expected_fp_rate(shape, 500) < expected_fp_rate(shape, 1000) < 0.011
    assert expected_fp_rate(shape, 2000) > 0.1


@pytest.mark.parametrize(("expected", "fp_rate", "cap", "message"), [
    (0, 0.01, DEFAULT_MAX_SHARD_BITS, "expected must be at least 1"),
    (-5, 0.01, DEFAULT_MAX_SHARD_BITS, "expected must be at least 1"),
    (100, 0.0, DEFAULT_MAX_SHARD_BITS, "fp_rate must be between 0 and 1"),
    (100, 1.0, DEFAULT_MAX_SHARD_BITS, "fp_rate must be between 0 and 1"),
    (100, -0.1, DEFAULT_MAX_SHARD_BITS, "fp_rate must be between 0 and 1"),
    (100, 0.01, 0, "max_shard_bits must be in"),
    (100, 0.01, REDIS_MAX_BITS + 1, "max_shard_bits must be in"),
])
def test_invalid_capacity_raises(expected: int, fp_rate: float, cap: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BloomShape.for_capacity(expected, fp_rate, max_shard_bits=cap)


@pytest.mark.parametrize("fields", [(10, 0, 1, 10), (10, 3, 2, 4), (2**33, 3, 1, 2**33)])
def test_inconsistent_shape_raises(fields: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError):
        BloomShape(*fields)


def test_negative_load_raises() -> None:
    with pytest.raises(ValueError, match="items must not be negative"):
        expected_fp_rate(BloomShape.for_capacity(10, 0.01), -1)
