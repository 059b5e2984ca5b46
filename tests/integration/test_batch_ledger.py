"""The batch ledger on the real Redis: batches in flight, and the URLs of lost ones."""

from __future__ import annotations

import redis

from crawlapp.adapters.redis.batches import BatchLedger
from crawlapp.core.records import Lease

NOW = 1_000_000.0


def test_a_batch_is_in_flight_until_finished_and_a_lost_one_hands_back_its_urls(
        redis_url: str) -> None:
    ledger = BatchLedger(redis.Redis.from_url(redis_url), "t")
    assert ledger.in_flight() == 0
    ledger.track("b1", NOW + 60, [Lease(0, "a.com", "tok", "http://a.com/x", 2)])
    ledger.track("b2", NOW + 90)
    assert ledger.in_flight() == 2
    assert ledger.expired(NOW + 59) == {}
    assert ledger.expired(NOW + 61) == {"b1": [("http://a.com/x", 2)]}
    ledger.track("b1", NOW + 120)  # a stage started: the deadline moves, the URLs stay
    assert ledger.expired(NOW + 91) == {"b2": []}
    assert ledger.expired(NOW + 121) == {"b1": [("http://a.com/x", 2)], "b2": []}
    ledger.finish("b1")
    ledger.finish("b2")
    assert ledger.in_flight() == 0 and ledger.expired(NOW + 121) == {}
    assert redis.Redis.from_url(redis_url).keys("*") == []


def test_a_stage_is_taken_up_once_per_attempt(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    ledger = BatchLedger(client, "t")
    assert ledger.take_up("b1", "fetch", 0, 60, "r1")
    assert ledger.take_up("b1", "fetch", 0, 60, "r1")  # the same run, its answer lost
    assert not ledger.take_up("b1", "fetch", 0, 60, "r2")  # the message delivered again
    assert ledger.take_up("b1", "render", 0, 60, "r3")  # another stage of the batch
    assert ledger.take_up("b1", "render", 1, 60, "r4")  # a retry of the render
    assert not ledger.take_up("b1", "render", 0, 60, "r5")  # a late copy of the first attempt
    assert not ledger.take_up("b1", "render", 0, 60, "r3")  # the first attempt's run, too late
    assert 0 < client.ttl("{t:batches}:run:fetch:b1") <= 60
    client.delete("{t:batches}:run:fetch:b1")  # as when it expires
    assert ledger.take_up("b1", "fetch", 0, 60, "r6")
    client.flushdb()
