"""The dispatcher on the real Redis and database: backpressure from batches in flight, a
dispatch whose reply was lost, lost batches."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.core.ports import Frontier
from crawlapp.core.records import Lease, Release
from crawlapp.core.settings import load_settings
from crawlapp.ops import dispatcher
from crawlapp.ops.dispatcher import dispatch_once
from crawlapp.ops.seeding import add_seeds


def _context(tmp_path: Path, redis_url: str, **env: str) -> Context:
    """A context on the tests' Redis and a migrated SQLite database, with `env` settings."""
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                              "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8", **env})
    upgrade(settings)
    return Context(settings)


def test_no_batch_leaves_while_the_pipeline_holds_the_limit(tmp_path: Path,
                                                            redis_url: str) -> None:
    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="1", CRAWL_MAX_BATCHES_IN_FLIGHT="1")
    add_seeds(ctx, ["http://127.0.0.2:9/", "http://127.0.0.3:9/"])
    sent: list[tuple[str, list[Lease]]] = []

    def send(shard: int, batch_id: str, leases: list[Lease]) -> None:
        sent.append((batch_id, leases))

    ctx.batches.track("earlier", time.time() + 60)
    largest, look_again = dispatch_once(ctx, send)
    assert largest == 0 and sent == [] and look_again is not None  # soon: a batch may end
    ctx.batches.finish("earlier")
    largest, _ = dispatch_once(ctx, send)
    assert largest == 2 and len(sent) == 1
    assert dispatch_once(ctx, send)[0] == 0  # the batch just sent is the one in flight


def test_a_batch_that_cannot_be_sent_gives_its_leases_back_at_once(tmp_path: Path,
                                                                   redis_url: str) -> None:
    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="4")
    add_seeds(ctx, [f"http://127.0.0.{i}:9/" for i in range(2, 10)])
    tried: list[list[Lease]] = []

    def first_refused(shard: int, batch_id: str, leases: list[Lease]) -> None:
        tried.append(leases)
        if len(tried) == 1:
            raise ConnectionError("the broker is down")

    with pytest.raises(ConnectionError):
        dispatch_once(ctx, first_refused)
    assert len(tried) > 1  # the other shards' batches went all the same
    assert ctx.batches.in_flight() == len(tried) - 1  # the one refused is not to recover
    sent: list[Lease] = []
    dispatch_once(ctx, lambda shard, batch_id, leases: sent.extend(leases))
    assert sorted(lease.url for lease in sent) == sorted(lease.url for lease in tried[0])


class _LosesFirstReply:
    """A frontier whose first dispatch is made but its reply lost (a master killed after
    the scripts ran, a connection cut)."""

    def __init__(self, frontier: Frontier) -> None:
        self.frontier = frontier
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.frontier, name)

    def dispatch(self, *args: Any, **kwargs: Any) -> Any:
        got = self.frontier.dispatch(*args, **kwargs)
        self.calls.append(kwargs["call"])
        if len(self.calls) == 1:
            raise redis.ConnectionError("Connection reset by peer")
        return got


def test_a_dispatch_whose_reply_was_lost_sends_the_leases_it_took(tmp_path: Path,
                                                                  redis_url: str) -> None:
    """Tried again by the same call, it gets the same leases: every host is sent, none held
    until its lease expires."""
    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="4")
    add_seeds(ctx, [f"http://127.0.0.{i}:9/" for i in range(2, 10)])
    lossy = _LosesFirstReply(ctx.frontier)
    ctx.__dict__["frontier"] = lossy
    sent: list[Lease] = []
    dispatch_once(ctx, lambda shard, batch_id, leases: sent.extend(leases))
    assert len(lossy.calls) == 2 and lossy.calls[0] == lossy.calls[1]
    assert sorted(lease.host for lease in sent) == sorted(f"127.0.0.{i}:9" for i in range(2, 10))
    assert dispatch_once(ctx, lambda shard, batch_id, leases: sent.extend(leases))[0] == 0


def test_a_lost_batchs_urls_are_queued_again_once_with_each_rows_priority(
        tmp_path: Path, redis_url: str) -> None:
    """Of a lost batch, a URL whose lease was released (fetched, then lost in the pipeline)
    is queued with its row's priority and hops; one a lease still holds is left to it (the
    lost batch's, handing it back as it expires; or another batch's, fetching it already:
    queued here too, it was asked twice)."""
    from sqlalchemy import update

    from crawlapp.adapters.db.models import Url
    from crawlapp.adapters.redis.frontier.redis_frontier import decode_member
    from crawlapp.core.priority import queue_score
    from crawlapp.core.urls import url_hash
    from crawlapp.ops.dispatcher import recover_lost_batches

    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="1")
    urls = ["http://127.0.0.2:9/", "http://127.0.0.3:9/"]
    add_seeds(ctx, urls)
    with ctx.sessions.begin() as session:  # a link's priority and off-scope hops
        session.execute(update(Url).where(Url.url_hash.in_([url_hash(u) for u in urls]))
                        .values(priority=0.25, hops=1))
    sent: list[Lease] = []
    dispatch_once(ctx, lambda shard, batch_id, leases: sent.extend(leases))
    assert sorted(lease.url for lease in sent) == urls
    fetched = next(lease for lease in sent if lease.url == urls[0])
    ctx.frontier.release([Release(fetched, time.time())])  # its fetch ended and handed it on
    later = time.time() + 3600  # the batch was lost: past its deadline
    assert recover_lost_batches(ctx, later) == 2

    def queued(host: str) -> list[tuple[tuple[int, str, int], float]]:
        key = next(ctx.redis.scan_iter(match=f"*:q:{host}"), None)
        return [] if key is None else [(decode_member(host, m.decode()), score)
                                       for m, score in ctx.redis.zrange(key, 0, -1,
                                                                        withscores=True)]

    assert queued("127.0.0.2:9") == [((0, urls[0], 1), queue_score(0.25, later))]
    assert queued("127.0.0.3:9") == []  # its lease holds it
    ctx.frontier.dispatch([0], later, max_hosts=0, lease_seconds=60, max_leased=10)
    assert [url for (_, url, _), _ in queued("127.0.0.3:9")] == [urls[1]]  # as it was queued


def test_a_lost_batchs_url_in_another_batch_in_flight_is_left_to_it(
        tmp_path: Path, redis_url: str) -> None:
    """A lost batch's host whose lease ended before the batch's deadline had its URL handed
    back, leased to another batch and asked (its lease released, its page on its way): that
    batch brings it to its row, and queued again it would be asked twice."""
    from crawlapp.ops.dispatcher import recover_lost_batches

    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="1")
    urls = ["http://127.0.0.2:9/", "http://127.0.0.3:9/"]
    add_seeds(ctx, urls)
    sent: list[Lease] = []
    dispatch_once(ctx, lambda shard, batch_id, leases: sent.extend(leases))
    ctx.frontier.release([Release(lease, time.time()) for lease in sent])
    later = time.time() + 3600  # the first batch lost; the second still in the pipeline
    ctx.batches.track("second", later + 60, [next(x for x in sent if x.url == urls[0])])
    assert recover_lost_batches(ctx, later) == 1
    assert [k for k in ctx.redis.scan_iter(match="*:q:127.0.0.2:9")] == []
    assert len(list(ctx.redis.scan_iter(match="*:q:127.0.0.3:9"))) == 1
    assert ctx.batches.in_flight() == 1  # the lost one forgotten
    ctx.batches.finish("second")


def test_a_lost_batchs_recrawl_is_queued_again_with_its_copys_validators(
        tmp_path: Path, redis_url: str) -> None:
    """Its worker forgot the validators once it had asked the URL, then died before handing
    the page on: the recovery reads them from the row, so the next ask is conditional."""
    from sqlalchemy import update

    from crawlapp.adapters.db.models import Url
    from crawlapp.core.urls import url_hash
    from crawlapp.ops.dispatcher import recover_lost_batches

    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="1")
    urls = ["http://127.0.0.2:9/", "http://127.0.0.3:9/"]
    add_seeds(ctx, urls)
    with ctx.sessions.begin() as session:  # the first a re-crawl of a copy with an ETag
        session.execute(update(Url).where(Url.url_hash == url_hash(urls[0])).values(
            etag='"v1"', last_modified="Tue, 24 Nov 2026 10:00:00 GMT"))
    sent: list[Lease] = []
    dispatch_once(ctx, lambda shard, batch_id, leases: sent.extend(leases))
    assert sorted(lease.url for lease in sent) == urls
    ctx.validators.forget(urls)  # as the fetch does once it has asked them
    assert recover_lost_batches(ctx, time.time() + 3600) == 2
    pipe = ctx.redis.pipeline(transaction=False)
    reply = ctx.validators.read(urls, pipe)
    assert reply(pipe.execute()) == {urls[0]: '"v1"\tTue, 24 Nov 2026 10:00:00 GMT'}


def test_the_dispatcher_sleeps_until_the_doorbell_rings(tmp_path: Path, redis_url: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing queued it looks at the frontier only at its longest sleep (here made a
    minute); URLs queued ring the doorbell and their batch leaves at once."""
    monkeypatch.setattr(dispatcher, "LOST_BATCH_CHECK_SECONDS", 60.0)
    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="2")
    looks: list[float] = []
    real_dispatch = ctx.frontier.dispatch

    def counted(*args: object, **kwargs: object) -> object:
        looks.append(time.monotonic())
        return real_dispatch(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ctx.frontier, "dispatch", counted)
    sent = threading.Event()
    stop = threading.Event()
    thread = threading.Thread(target=dispatcher.run,
                              args=(ctx, lambda shard, batch_id, leases: sent.set(), stop))
    thread.start()
    try:
        time.sleep(3)  # 12 looks at CRAWL_DISPATCH_INTERVAL (0.25 s) if it polled
        assert len(looks) <= 2, looks
        add_seeds(Context(ctx.settings), ["http://127.0.0.2:9/"])  # another process queues a URL
        assert sent.wait(30), "the doorbell did not wake the dispatcher"
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()  # a stop is seen within a slice of the sleep


def test_a_lost_batchs_url_leased_again_and_fetched_is_not_queued_a_third_time(
        tmp_path: Path, redis_url: str) -> None:
    """The dispatcher's loop: a batch sent and never taken up (its worker died) is lost as
    its lease expires; the look that hands the lease's URL back (to a second batch, which
    asks it and releases it at once, its page on its way down the pipeline) first recovers
    the lost batch, whose URL its expired lease still holds then. Recovered only every 2 s
    (another host kept the dispatcher looking meanwhile), after that second batch's release,
    the URL was queued again and asked a third time; recovered at each look but at a time
    of its own, a few ms before the dispatch's, at the lease's end (when the look comes), it
    was so in 3 of 6 runs on a loaded machine. The two hosts are in shards of their own: a
    batch of one lease (a batch's deadline is its latest lease's end)."""
    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="2", CRAWL_LEASE_SECONDS="1",
                   CRAWL_DISPATCH_INTERVAL="0.05")
    url, busy = "http://127.0.0.2:9/", "http://127.0.0.3:9/"  # shards 1 and 0
    add_seeds(ctx, [url, busy])
    sent: list[str] = []

    def send(shard: int, batch_id: str, leases: list[Lease]) -> None:
        # the busy host's URL asked and put back, ready again soon: the looks go on
        ctx.frontier.release([Release(lease, time.time() + 0.1, requeue=True)
                              for lease in leases if lease.url == busy])
        mine = [lease for lease in leases if lease.url == url]
        sent.extend(lease.url for lease in mine)
        if not mine:
            ctx.batches.finish(batch_id)
        elif len(sent) > 1:  # asked at once; in the pipeline a long while (its row 'queued')
            ctx.batches.track(batch_id, time.time() + 3600)
            ctx.frontier.release([Release(lease, time.time()) for lease in mine])

    stop = threading.Event()
    thread = threading.Thread(target=dispatcher.run, args=(ctx, send, stop))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while len(sent) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(3)  # the looks that follow, over a lost-batch check or more
    finally:
        stop.set()
        thread.join(5)
    assert sent == [url, url]


def test_every_url_of_a_lost_lease_of_several_comes_back_once(tmp_path: Path,
                                                              redis_url: str) -> None:
    from crawlapp.ops.dispatcher import recover_lost_batches

    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="1", CRAWL_URLS_PER_LEASE="3")
    urls = [f"http://127.0.0.2:9/{n}" for n in range(4)]
    add_seeds(ctx, urls)
    sent: list[list[Lease]] = []
    dispatch_once(ctx, lambda shard, batch_id, leases: sent.append(leases))
    ((first, *others),) = sent
    assert len(others) == 2 and {(lease.host, lease.token) for lease in others} == {
        (first.host, first.token)}
    later = time.time() + 3600  # the batch's worker died: past its deadline and its lease
    assert recover_lost_batches(ctx, later) == 3  # the ledger has every URL of the lease
    leases, _ = ctx.frontier.dispatch([0], later, max_hosts=50, lease_seconds=60, max_leased=100,
                                      per_lease=10)
    assert sorted(lease.url for lease in leases[0]) == urls  # each once
    assert ctx.frontier.stats(later)[0].urls_queued == 0


def test_only_the_release_that_ends_a_lease_rings_the_doorbell(tmp_path: Path,
                                                               redis_url: str) -> None:
    """A URL of a lease of several going on frees no host: no dispatcher is woken for it."""
    ctx = _context(tmp_path, redis_url, CRAWL_SHARDS="1", CRAWL_URLS_PER_LEASE="3")
    add_seeds(ctx, [f"http://127.0.0.2:9/{n}" for n in range(3)])
    leases, _ = ctx.frontier.dispatch([0], time.time(), max_hosts=50, lease_seconds=60,
                                      max_leased=100, per_lease=3)
    assert len(leases[0]) == 3
    bell = ctx.doorbell
    bell.subscribe()
    rings = []
    for lease in leases[0]:
        ended = ctx.frontier.release([Release(lease, time.time() + 1)])
        rings.append((ended, bell.wait(1.0)))
    bell.close()
    assert rings == [(0, False), (0, False), (1, True)]
