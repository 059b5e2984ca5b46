"""The Redis Bloom filter on the real Redis (a database of the tests' own)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mmh3
import pytest
import redis

from crawlapp.adapters.redis.urlseen import RedisBloom
from crawlapp.core.bloom import BloomShape, positions
from tests.conftest import bloom_redis_url


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    """The Bloom filter's database (conftest), emptied before and after each test."""
    client = redis.Redis.from_url(bloom_redis_url())
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def url_hashes(start: int, count: int) -> list[bytes]:
    """Distinct synthetic items, as the crawler passes them: bytes.fromhex(url_hash(url))."""
    urls = (f"http://h{n % 97}.test/p/{n}" for n in range(start, start + count))
    return [mmh3.hash_bytes(url.encode()) for url in urls]


def batches(items: list[bytes], size: int) -> Iterator[list[bytes]]:
    for lo in range(0, len(items), size):
        yield items[lo:lo + size]


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts pipeline executions and writes to the server from now on."""
    counts = {"executes": 0, "sends": 0}
    execute = redis.client.Pipeline.execute
    send = redis.connection.AbstractConnection.send_packed_command

    def counting_execute(self: redis.client.Pipeline, raise_on_error: bool = True) -> list[Any]:
        counts["executes"] += 1
        return execute(self, raise_on_error)

    def counting_send(self: redis.connection.AbstractConnection, *args: object,
                      **kwargs: object) -> None:
        counts["sends"] += 1
        send(self, *args, **kwargs)

    monkeypatch.setattr(redis.client.Pipeline, "execute", counting_execute)
    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command",
                        counting_send)
    return counts


@pytest.mark.parametrize("cap", [2**31, 50_000])
def test_no_false_negatives(client: redis.Redis, cap: int) -> None:
    bloom = RedisBloom(client, "t", BloomShape.for_capacity(20_000, 0.01, max_shard_bits=cap),
                       items_per_call=300)
    items = url_hashes(0, 20_000)
    for batch in batches(items[:10_000], 1000):
        bloom.add(batch)
    for batch in batches(items[10_000:], 1000):
        bloom.check_and_add(batch)
    assert all(bloom.check(items))
    assert all(bloom.check_and_add(items))


def test_measured_false_positive_rate_is_near_the_target(client: redis.Redis) -> None:
    shape = BloomShape.for_capacity(50_000, 0.01)
    bloom = RedisBloom(client, "t", shape)
    for batch in batches(url_hashes(0, 50_000), 5000):
        bloom.add(batch)
    maybe_seen = sum(sum(bloom.check(batch)) for batch in batches(url_hashes(50_000, 50_000),
                                                                   5000))
    assert 0.005 <= maybe_seen / 50_000 <= 0.02


def test_check_and_add_sees_repeats_within_the_batch(client: redis.Redis) -> None:
    bloom = RedisBloom(client, "t", BloomShape.for_capacity(1000, 0.001, max_shard_bits=5000),
                       items_per_call=2)
    a, b, c = url_hashes(0, 3)
    assert bloom.check_and_add([a, b, a, c, b, a]) == [False, False, True, False, True, True]
    assert bloom.check_and_add([c, a, b]) == [True, True, True]


def test_check_adds_nothing(client: redis.Redis) -> None:
    bloom = RedisBloom(client, "t", BloomShape.for_capacity(1000, 0.001))
    items = url_hashes(0, 100)
    assert bloom.check(items) == [False] * 100
    assert bloom.check(items) == [False] * 100
    assert client.keys("*") == []


def test_bits_set_are_the_positions_of_the_pure_module(client: redis.Redis) -> None:
    shape = BloomShape.for_capacity(10_000, 0.001, max_shard_bits=40_000)
    bloom = RedisBloom(client, "t", shape)
    item = b"\x00\xff" * 8
    bloom.add([item])
    shard, offsets = positions(shape, item)
    assert client.keys("*") == [bloom.key(shard).encode()]
    assert client.bitcount(bloom.key(shard)) == len(set(offsets))
    assert all(client.getbit(bloom.key(shard), off) for off in offsets)


def test_allocated_shards_are_full_length_and_keep_their_bits(client: redis.Redis) -> None:
    shape = BloomShape.for_capacity(10_000, 0.001, max_shard_bits=40_000)
    bloom = RedisBloom(client, "t", shape)
    items = [bytes([i]) * 16 for i in range(50)]
    bloom.add(items)
    bits = {shard: client.bitcount(bloom.key(shard)) for shard in range(shape.shards)}
    bloom.allocate()
    bloom.allocate()  # a second time changes nothing
    assert {client.strlen(bloom.key(shard)) for shard in range(shape.shards)} \
        == {-(-shape.bits_per_shard // 8)}
    assert {shard: client.bitcount(bloom.key(shard)) for shard in range(shape.shards)} == bits
    assert bloom.check(items) == [True] * 50


@pytest.mark.parametrize("method", ["check", "add", "check_and_add"])
def test_one_round_trip_per_batch(client: redis.Redis, round_trips: dict[str, int],
                                  method: str) -> None:
    shape = BloomShape.for_capacity(10_000, 0.01, max_shard_bits=20_000)
    bloom = RedisBloom(client, "t", shape, items_per_call=700)
    assert shape.shards > 2
    getattr(bloom, method)(url_hashes(0, 5000))
    assert round_trips == {"executes": 1, "sends": 1}


def test_an_empty_batch_takes_no_round_trip(client: redis.Redis,
                                            round_trips: dict[str, int]) -> None:
    bloom = RedisBloom(client, "t", BloomShape.for_capacity(1000, 0.01))
    assert bloom.check([]) == [] and bloom.check_and_add([]) == []
    bloom.add([])
    assert round_trips == {"executes": 0, "sends": 0}


def test_memory_covers_the_bitmaps(client: redis.Redis) -> None:
    shape = BloomShape.for_capacity(100_000, 0.01, max_shard_bits=400_000)
    bloom = RedisBloom(client, "t", shape)
    assert bloom.memory_bytes() == 0
    bloom.add(url_hashes(0, 10_000))
    # a string grown bit by bit gets slack from Redis (doubling) and from the allocator
    assert 0.99 * shape.bits / 8 <= bloom.memory_bytes() <= 3 * shape.bits / 8
