"""Politeness slots on the real Redis: one holder per key, the key's next time handed on."""

from __future__ import annotations

import asyncio

import redis

from crawlapp.adapters.redis.dnscache import Resolution, with_names
from crawlapp.adapters.redis.slots import PolitenessSlots


def test_one_holder_per_key_and_the_next_time_handed_on(redis_url: str) -> None:
    slots = PolitenessSlots(redis.Redis.from_url(redis_url), "t")
    assert slots.take(["ip:10.0.0.1", "domain:a.com"], "b1", 100.0, 160.0) == {
        "ip:10.0.0.1": 0.0, "domain:a.com": 0.0}
    assert slots.take(["ip:10.0.0.1"], "b2", 101.0, 161.0) == {"ip:10.0.0.1": None}
    slots.give_back({"ip:10.0.0.1": 105.5}, "b2")  # not its slot: nothing changes
    assert slots.take(["ip:10.0.0.1"], "b2", 102.0, 162.0) == {"ip:10.0.0.1": None}
    slots.give_back({"ip:10.0.0.1": 105.5}, "b1")
    assert slots.take(["ip:10.0.0.1"], "b2", 103.0, 163.0) == {"ip:10.0.0.1": 105.5}
    # a holder past its deadline is taken for dead
    assert slots.take(["domain:a.com"], "b3", 161.0, 221.0) == {"domain:a.com": 0.0}


def test_names_given_their_addresses_and_the_rest_asked() -> None:
    async def fallback(host: str) -> Resolution:
        return Resolution(error="dns")

    lookup = with_names({"a.test": ("127.0.3.21",)}, fallback)
    assert asyncio.run(lookup("A.test.")) == Resolution(("127.0.3.21",))
    assert asyncio.run(lookup("b.test")) == Resolution(error="dns")
