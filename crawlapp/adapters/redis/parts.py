"""The structures that grow with the crawl, cut into parts (CRAWL_REDIS_PARTS): each part is
a key of its own, so that a Redis Cluster spreads them over its masters.

A cluster puts a key in one of 16,384 slots, by the CRC16 of its hash tag, and each master
owns ranges of slots (`redis-cli --cluster create` gives each master an equal contiguous
range). Left to CRC16, a few dozen part names scatter unevenly (a master may get half as many
again as another); so part i of n carries a hash tag chosen to fall in the i-th n-th of the
slot space, and n parts spread over m masters as evenly as n / m allows. Part i's tag is the
same for every structure, so the keys of one part of several structures (a re-crawl part's
tiers and claims) share a slot and may be read by one script.

On one server the tags cost nothing; there the default is one part.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TypeVar

import mmh3
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

T = TypeVar("T")
_SEED = 0x2F0A7C15  # a part's hash differs from the Bloom filter's and the frontier's


@functools.cache
def tag(part: int, parts: int) -> str:
    """The hash tag (braces included) of `part` of `parts`: the first `part.j` whose slot
    lies in the part's share of the slot space."""
    if not 0 <= part < parts:
        raise ValueError(f"part {part} is not one of {parts}")
    low = part * REDIS_CLUSTER_HASH_SLOTS // parts
    high = (part + 1) * REDIS_CLUSTER_HASH_SLOTS // parts
    j = 0
    while not low <= key_slot(f"{part}.{j}".encode()) < high:
        j += 1
    return f"{{{part}.{j}}}"


def buckets(expected_items: int, per_bucket: int, least: int = 1024) -> int:
    """How many small hashes hold `expected_items` entries at about `per_bucket` each: a power
    of two, at least `least`. Redis keeps a hash of up to 128 entries as a listpack (a few
    bytes an entry, against a key's hundred or a big hash's fifty): the structures that grow
    with the crawl are cut into such buckets, as many as CRAWL_EXPECTED_URLS calls for."""
    wanted = max(least, expected_items // per_bucket)
    return 1 << (wanted.bit_length() - 1)


class Parts:
    """`count` parts: which part an item falls in, and each part's hash tag."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"a structure has at least one part, not {count}")
        self.count = count
        self.tags = [tag(i, count) for i in range(count)]

    def of(self, item: str | bytes) -> int:
        """The part of an item (a URL, its hash, a host)."""
        return mmh3.hash(item, _SEED, signed=False) % self.count

    def group(self, items: Iterable[T], name: Callable[[T], str] = str) -> dict[int, list[T]]:
        """`items` by part, each in the part of its `name` (the item itself by default),
        in their order."""
        out: dict[int, list[T]] = defaultdict(list)
        for item in items:
            out[self.of(name(item))].append(item)
        return out
