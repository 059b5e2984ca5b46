"""Each step of the frontier's DISPATCH script alone, on the real Redis: a script of the step
(and the functions it calls) on DISPATCH's keys, with a main body that calls it once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from crawlapp.adapters.redis.client import Client, connect
from crawlapp.adapters.redis.frontier import scripts
from crawlapp.adapters.redis.frontier.redis_frontier import ShardKeys

pytestmark = pytest.mark.integration
K = ShardKeys.of("t", 0)
NOW = 1000.0
ARGV_LIST = "local list = {}\nfor i = {first}, #ARGV do table.insert(list, ARGV[i]) end\n"


@pytest.fixture
def client(redis_url: str) -> Client:
    return connect(redis_url, cluster=False)


def run(client: Client, *steps: str, main: str, args: Sequence[object] = ()) -> Any:
    """`main` after the functions of `steps`, on the keys of shard 0."""
    return scripts.dispatch_script(*steps, main=main)(client, K.dispatch_keys(), args)


def list_from(first: int) -> str:
    """Lua: `list`, ARGV[first..]."""
    return ARGV_LIST.replace("{first}", str(first))


def lease(client: Client, host: str, deadline: float, tok: str, urls: dict[str, float]) -> None:
    """`host` leased until `deadline`, holding `urls` (member -> score)."""
    client.zadd(K.leases, {host: deadline})
    client.hset(K.token, host, tok)
    client.hset(K.leased, host, "\n".join(f"{score!r}\t{m}" for m, score in urls.items()))


def test_a_reply_recorded_is_replayed_to_its_call_only(client: Client) -> None:
    record = "record_reply(ARGV[1], {'-1', 'a.example', 'c.0:1', '0\\ts/'}, 90.5)\nreturn 1"
    replay = "return replay_lost_reply(ARGV[1]) or 'none'"
    run(client, scripts.RECORD_REPLY, main=record, args=["c.0"])
    assert 90 <= client.ttl(K.dispatched) <= 91  # as long as a lease, rounded up
    assert run(client, scripts.REPLAY_LOST_REPLY, main=replay, args=["c.0"]) == [
        b"-1", b"a.example", b"c.0:1", b"0\ts/"]
    assert run(client, scripts.REPLAY_LOST_REPLY, main=replay, args=["d.0"]) == b"none"
    assert run(client, scripts.REPLAY_LOST_REPLY, main=replay, args=[""]) == b"none"
    client.delete(K.dispatched)
    assert run(client, scripts.REPLAY_LOST_REPLY, main=replay, args=["c.0"]) == b"none"
    run(client, scripts.RECORD_REPLY, main=record, args=[""])  # a call without a name
    assert not client.exists(K.dispatched)


def test_return_expired_ends_the_leases_past_their_deadline(client: Client) -> None:
    lease(client, "gone.example", NOW - 1, "c:1", {"0\ts/a": 1.0, "1\ts/b": 2.0})
    lease(client, "held.example", NOW + 1, "c:3", {"0\ts/": 1.0})
    client.zadd(K.queue("gone.example"), {"1\ts/b": 0.5, "2\ts/c": 3.0})
    client.set(K.queued, 1)
    run(client, scripts.END_LEASE, scripts.RETURN_EXPIRED, main="return_expired(tonumber(ARGV[1]))",
        args=[NOW])
    assert client.zrange(K.queue("gone.example"), 0, -1, withscores=True) == [
        (b"1\ts/b", 0.5), (b"0\ts/a", 1.0), (b"2\ts/c", 3.0)]  # one queued already kept 0.5
    assert int(client.get(K.queued) or 0) == 2
    assert client.zrange(K.ready, 0, -1, withscores=True) == [(b"gone.example", NOW)]
    assert client.zrange(K.leases, 0, -1) == [b"held.example"]
    assert client.hkeys(K.token) == [b"held.example"]
    assert client.hkeys(K.leased) == [b"held.example"]


def test_bring_back_parked_hosts_whose_time_came(client: Client) -> None:
    client.zadd(K.parked, {"queued.example": NOW - 5, "empty.example": NOW,
                           "later.example": NOW + 1, "paused.example": float("inf")})
    client.hset(K.why, mapping={"queued.example": "throttled", "empty.example": "throttled",
                                "later.example": "throttled", "paused.example": "paused"})
    client.zadd(K.queue("queued.example"), {"0\ts/": 1.0})
    run(client, scripts.BRING_BACK_PARKED, main="bring_back_parked(tonumber(ARGV[1]))",
        args=[NOW])
    assert client.zrange(K.ready, 0, -1, withscores=True) == [(b"queued.example", NOW - 5)]
    assert client.zrange(K.idle, 0, -1, withscores=True) == [(b"empty.example", NOW)]
    assert client.zrange(K.parked, 0, -1) == [b"later.example", b"paused.example"]
    assert sorted(client.hkeys(K.why)) == [b"later.example", b"paused.example"]


def test_forget_idle_times_passed(client: Client) -> None:
    client.zadd(K.idle, {"passed.example": NOW - 1, "now.example": NOW, "later.example": NOW + 1})
    run(client, scripts.FORGET_IDLE, main="forget_idle(tonumber(ARGV[1]))", args=[NOW])
    assert client.zrange(K.idle, 0, -1) == [b"later.example"]


def test_warm_sessions_end_when_old_and_none_without_warm_hosts(client: Client) -> None:
    client.zadd(K.warm, {"old.example": NOW - 60, "b.example": NOW - 10, "a.example": NOW - 30})
    main = "return warm_sessions(tonumber(ARGV[1]), tonumber(ARGV[2]), 60)"
    assert run(client, scripts.WARM_SESSIONS, main=main, args=[NOW, 0]) == []
    assert client.zcard(K.warm) == 3  # untouched
    assert run(client, scripts.WARM_SESSIONS, main=main, args=[NOW, 5]) == [
        b"a.example", b"b.example"]  # the oldest session first
    assert client.zrange(K.warm, 0, -1) == [b"a.example", b"b.example"]


def test_first_by_boost_puts_warm_hosts_first_then_the_boosted(client: Client) -> None:
    client.hset(K.boost, mapping={"c.example": 5, "e.example": 5, "b.example": 5})
    main = list_from(3) + "return first_by_boost(list, {[ARGV[2]] = 1}, tonumber(ARGV[1]))"
    window = ["a.example", "1", "b.example", "2", "e.example", "2", "c.example", "1.5",
              "d.example", "9"]
    assert run(client, scripts.FIRST_BY_BOOST, main=main, args=[4, "d.example", *window]) == [
        b"d.example", b"9", b"c.example", b"1.5", b"b.example", b"2", b"e.example", b"2"]


CHOOSE = """
local hosts, earliest = choose_candidates(tonumber(ARGV[1]), tonumber(ARGV[2]),
  tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), 60)
return {hosts, earliest}
"""


def test_choose_candidates_the_earliest_in_the_window_and_warm_hosts(client: Client) -> None:
    client.zadd(K.ready, {f"h{i}.example": NOW + i for i in range(10)})
    client.zadd(K.warm, {"h8.example": NOW - 1, "h6.example": NOW - 90})  # h6's session is over
    client.hset(K.boost, "h3.example", 1)
    steps = (scripts.WARM_SESSIONS, scripts.FIRST_BY_BOOST, scripts.CHOOSE_CANDIDATES)
    # room for 2 of the window of 4 x max_hosts (h0-h3) and warm h8, ready by the horizon
    hosts, earliest = run(client, *steps, main=CHOOSE, args=[NOW, NOW + 8, 2, 1, 5])
    assert hosts == [b"h8.example", b"1008", b"h3.example", b"1003"] and earliest == b"1000"
    assert client.zrange(K.warm, 0, -1) == [b"h8.example"]
    # a warm host ready after the horizon is no candidate; room for all: the window as it is
    hosts, _ = run(client, *steps, main=CHOOSE, args=[NOW, NOW + 7, 9, 1, 5])
    assert hosts == [b"h0.example", b"1000", b"h1.example", b"1001", b"h2.example", b"1002",
                     b"h3.example", b"1003"]
    # without warm hosts: the boosted first
    hosts, _ = run(client, *steps, main=CHOOSE, args=[NOW, NOW + 8, 1, 1, 0])
    assert hosts == [b"h3.example", b"1003"]


@pytest.mark.parametrize(("hosts", "earliest", "due_by", "held"), [
    (["a.example", "5", "b.example", "6"], "5", 4, True),  # not full, nothing due
    (["a.example", "5", "b.example", "6"], "5", 5, False),  # the earliest is due
    (["a.example", "5", "b.example", "6", "c.example", "7"], "5", 4, False),  # full
    ([], "5", 4, False),
])
def test_hold_until_full_or_due(client: Client, hosts: list[str], earliest: str, due_by: float,
                                held: bool) -> None:
    main = list_from(3) + (
        "return hold_until_full_or_due(list, ARGV[1], 3, tonumber(ARGV[2]))")
    got = run(client, scripts.HOLD_UNTIL_FULL_OR_DUE, main=main, args=[earliest, due_by, *hosts])
    assert got == ([] if held else [h.encode() for h in hosts])


LEASE = list_from(6) + """
local out = {}
lease_urls(out, list, tonumber(ARGV[1]), 30, 'c.0', tonumber(ARGV[2]), tonumber(ARGV[3]),
           tonumber(ARGV[4]), tonumber(ARGV[5]))
return out
"""


def test_lease_urls_takes_several_urls_a_host_while_the_batch_is_short(client: Client) -> None:
    client.zadd(K.ready, {"a.example": NOW - 5, "b.example": NOW + 2, "empty.example": NOW})
    client.zadd(K.queue("a.example"), {"0\ts/1": 1.0, "0\ts/2": 2.0, "0\ts/3": 3.0})
    client.zadd(K.queue("b.example"), {"0\ts/": 1.0})
    client.set(K.queued, 4)
    client.zadd(K.warm, {"old.example": NOW - 30, "b.example": NOW - 20})
    hosts = ["a.example", repr(NOW - 5), "b.example", repr(NOW + 2), "empty.example", repr(NOW)]
    # 3 hosts of a batch of 8: 8 // 3 = 2 URLs a lease (at most per_lease, 8)
    out = run(client, scripts.LEASE_URLS, main=LEASE, args=[NOW, 8, 8, 2, 5, *hosts])
    assert out == [b"a.example", b"c.0:1", b"0\ts/1", b"1000",
                   b"a.example", b"c.0:1", b"0\ts/2", b"1000",
                   b"b.example", b"c.0:3", b"0\ts/", b"1002"]  # not before its ready time
    assert client.zrange(K.leases, 0, -1, withscores=True) == [
        (b"a.example", NOW + 30), (b"b.example", NOW + 32)]
    assert client.hgetall(K.token) == {b"a.example": b"c.0:1", b"b.example": b"c.0:3"}
    assert client.hget(K.leased, "a.example") == b"1\t0\ts/1\n2\t0\ts/2"
    assert client.zrange(K.queue("a.example"), 0, -1) == [b"0\ts/3"]
    assert int(client.get(K.queued) or 0) == 1
    assert client.zrange(K.ready, 0, -1) == []
    assert client.zrange(K.idle, 0, -1, withscores=True) == [(b"empty.example", NOW)]
    # warm sessions: a's begins now, b's goes on; the oldest beyond 2 ends
    assert client.zrange(K.warm, 0, -1, withscores=True) == [
        (b"b.example", NOW - 20), (b"a.example", NOW)]


def test_lease_urls_takes_one_url_a_host_in_a_full_batch(client: Client) -> None:
    for host in ("a.example", "b.example"):
        client.zadd(K.ready, {host: NOW})
        client.zadd(K.queue(host), {"0\ts/1": 1.0, "0\ts/2": 2.0})
    client.set(K.queued, 4)
    out = run(client, scripts.LEASE_URLS, main=LEASE,
              args=[NOW, 2, 8, 0, 5, "a.example", repr(NOW), "b.example", repr(NOW)])
    assert out == [b"a.example", b"c.0:1", b"0\ts/1", b"1000",
                   b"b.example", b"c.0:3", b"0\ts/1", b"1000"]
    assert int(client.get(K.queued) or 0) == 2
    assert client.zcard(K.warm) == 0  # no warm hosts, no sessions


def test_lease_urls_leaves_the_urls_well_behind_the_best_queued(client: Client) -> None:
    """No URL whose score is above the lease's best one's by more than the margin: a URL
    well ahead of its host's others is leased alone, and the others keep their scores."""
    client.zadd(K.ready, {"a.example": NOW, "b.example": NOW})
    client.zadd(K.queue("a.example"), {"0\ts/hub": 0.55, "1\ts/1": 0.70, "1\ts/2": 0.701})
    client.zadd(K.queue("b.example"), {"1\ts/1": 0.70, "1\ts/2": 0.701, "1\ts/3": 0.76})
    client.set(K.queued, 6)
    out = run(client, scripts.LEASE_URLS, main=LEASE,
              args=[NOW, 8, 8, 0, 0.05, "a.example", repr(NOW), "b.example", repr(NOW)])
    assert [out[i + 2] for i in range(0, len(out), 4)] == [
        b"0\ts/hub", b"1\ts/1", b"1\ts/2"]  # a: the hub alone; b: its two close ones
    assert client.zrange(K.queue("a.example"), 0, -1, withscores=True) == [
        (b"1\ts/1", 0.70), (b"1\ts/2", 0.701)]
    assert client.zrange(K.queue("b.example"), 0, -1, withscores=True) == [(b"1\ts/3", 0.76)]
    assert int(client.get(K.queued) or 0) == 3
    score, member = (client.hget(K.leased, "a.example") or b"").split(b"\t", 1)
    assert member == b"0\ts/hub" and float(score) == pytest.approx(0.55)


def test_next_ready_time(client: Client) -> None:
    main = "return next_ready_time()"
    assert run(client, scripts.NEXT_READY_TIME, main=main) == -1
    client.zadd(K.ready, {"a.example": NOW + 2, "b.example": NOW + 1})
    assert run(client, scripts.NEXT_READY_TIME, main=main) == b"1001"


def test_dispatch_is_its_steps() -> None:
    assert scripts.DISPATCH.source.startswith(scripts.DISPATCH_KEYS)
    for step in (scripts.END_LEASE, scripts.REPLAY_LOST_REPLY, scripts.RETURN_EXPIRED,
                 scripts.BRING_BACK_PARKED, scripts.FORGET_IDLE, scripts.WARM_SESSIONS,
                 scripts.FIRST_BY_BOOST, scripts.CHOOSE_CANDIDATES,
                 scripts.HOLD_UNTIL_FULL_OR_DUE, scripts.LEASE_URLS, scripts.NEXT_READY_TIME,
                 scripts.RECORD_REPLY):
        assert step in scripts.DISPATCH.source
