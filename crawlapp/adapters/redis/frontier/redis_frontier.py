"""The Redis frontier: per-host URL queues, a ready-time heap of hosts, and leases."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, text
from crawlapp.adapters.redis.doorbell import Doorbell
from crawlapp.adapters.redis.frontier import scripts
from crawlapp.adapters.redis.replicas import ReplicaAcks
from crawlapp.core.priority import YIELD_MARGIN, queue_score
from crawlapp.core.records import (
    PAUSED,
    HostState,
    Lease,
    ParkReason,
    QueuedURL,
    QueueEntry,
    Release,
    ShardStats,
)
from crawlapp.core.urls import host_of, shard_of

BOOST_CHUNK = 10_000  # fields per HSET
MOVE_CHUNK = 1000  # URLs of a host moved to its new shard per script call
MOVE_HOSTS = 500  # hosts moved per pipeline
_SCHEMES = {"http": "h", "https": "s"}
_SCHEME_OF = {v: k for k, v in _SCHEMES.items()}


def encode_member(depth: int, url: str, hops: int = 0) -> str:
    """A host queue's member: "depth<TAB><h|s>path?query", or "depth.hops<TAB>..." for a URL
    off-scope hops away. The host is the queue's own name, so it is not repeated; most
    members then fit Redis' compact listpack encoding."""
    scheme, rest = url.split("://", 1)
    slash = rest.find("/")
    return (f"{depth}.{hops}\t" if hops else f"{depth}\t") + (
        f"{_SCHEMES[scheme]}{rest[slash:] if slash >= 0 else '/'}")


def decode_member(host: str, member: str) -> tuple[int, str, int]:
    """(depth, URL, hops) of a host queue's member."""
    depth, rest = member.split("\t", 1)
    depth, _, hops = depth.partition(".")
    return int(depth), f"{_SCHEME_OF[rest[0]]}://{host}{rest[1:]}", int(hops or 0)


@dataclass(frozen=True)
class ShardKeys:
    """The keys of one frontier shard (adapters/redis/keys.py)."""

    ready: str
    idle: str
    leases: str
    token: str
    leased: str
    parked: str
    why: str
    paused: str
    fails: str
    queued: str
    queues: str  # a host's queue is this prefix followed by the host
    boost: str
    dispatched: str
    warm: str
    yielding: str

    @classmethod
    def of(cls, prefix: str, shard: int) -> ShardKeys:
        def key(k: keys.Key) -> str:
            return k.of(prefix, shard=shard)

        return cls(ready=key(keys.READY), idle=key(keys.IDLE), leases=key(keys.LEASES),
                   token=key(keys.TOKEN), leased=key(keys.LEASED), parked=key(keys.PARKED),
                   why=key(keys.WHY), paused=key(keys.PAUSED), fails=key(keys.FAILS),
                   queued=key(keys.QUEUED), queues=keys.QUEUE.of(prefix, shard=shard, host=""),
                   boost=key(keys.BOOST), dispatched=key(keys.DISPATCHED),
                   warm=key(keys.WARM), yielding=key(keys.YIELD))

    def queue(self, host: str) -> str:
        return self.queues + host

    def dispatch_keys(self) -> list[str]:
        """The KEYS of DISPATCH and its steps (scripts.DISPATCH_KEYS)."""
        return [self.ready, self.idle, self.leases, self.token, self.leased, self.parked,
                self.why, self.queued, self.queues, self.boost, self.dispatched, self.warm]


class RedisFrontier:
    """Mercator-style back queues in Redis; every operation touches one shard's keys.
    Leases, their renewals and releases are acknowledged by replicas per `acks`; URLs queued
    and leases ended ring the doorbell."""

    def __init__(self, client: Client, prefix: str, shards: int,
                 acks: ReplicaAcks | None = None, doorbell: Doorbell | None = None) -> None:
        self.client = client
        self._acks = acks or ReplicaAcks(client)
        self._doorbell = doorbell or Doorbell(client, prefix)
        self.shards = shards
        self._keys = [ShardKeys.of(prefix, shard) for shard in range(shards)]
        self._alive = keys.ALIVE.of(prefix)
        self._prefix = prefix

    def _of_host(self, host: str) -> ShardKeys:
        return self._keys[shard_of(host, self.shards)]

    def add(self, urls: Iterable[QueuedURL], now: float, unless_leased: bool = False) -> int:
        """Queue URLs under their hosts; returns how many were not queued already.

        `now` is the time of queueing: a host made ready here is not fetched before it.

        A URL with `replaces_depth` moves to its new depth if it is still waiting.
        """
        by_shard: dict[int, list[str]] = defaultdict(list)
        for item in urls:
            host = host_of(item.url)
            replaces = ("" if item.replaces_depth is None
                        else encode_member(item.replaces_depth, item.url, item.hops))
            by_shard[shard_of(host, self.shards)] += [
                host, encode_member(item.depth, item.url, item.hops),
                str(queue_score(item.priority, now)), replaces]
        if not by_shard:
            return 0
        pipe = self.client.pipeline(transaction=False)
        for shard, args in by_shard.items():
            k = self._keys[shard]
            scripts.ENQUEUE(pipe, [k.ready, k.idle, k.leases, k.parked, k.queued, k.queues,
                                   k.token, k.leased, k.yielding],
                            [now, YIELD_MARGIN, "1" if unless_leased else "0", *args])
        # Acknowledged by the replicas too: a URL queued on a master that dies before
        # replicating it would be lost while its row says 'queued' (nothing queues it again).
        queued = [int(n) for n in self._acks.execute(
            pipe, [self._keys[shard].leases for shard in by_shard])]
        if any(queued):
            self._doorbell.ring()
        return sum(queued)

    def dispatch(self, shards: Iterable[int], now: float, *, max_hosts: int,
                 lease_seconds: float, max_leased: int, lookahead: float = 0.0,
                 due_by: float | None = None, per_lease: int = 1, call: str | None = None,
                 warm_hosts: int = 0, warm_seconds: float = 0.0
                 ) -> tuple[dict[int, list[Lease]], float | None]:
        """Lease hosts of each shard ready by now + lookahead, once full or due by `due_by`,
        up to `per_lease` URLs each when fewer than `max_hosts` hosts are leased, warm hosts
        first. A shard asked again by the same `call` gives the leases it gave it
        (ports.Frontier).

        Returns the leases (one per URL) and the earliest next ready time of a host not leased.
        """
        due_by = now + lookahead if due_by is None else due_by
        shards = list(shards)
        token = call or uuid.uuid4().hex[:12]
        pipe = self.client.pipeline(transaction=False)
        for shard in shards:
            k = self._keys[shard]
            scripts.DISPATCH(pipe, k.dispatch_keys(),
                             [now, max_hosts, lease_seconds, max_leased, f"{token}.{shard}",
                              lookahead, due_by, per_lease, warm_hosts, warm_seconds,
                              YIELD_MARGIN])
        leases: dict[int, list[Lease]] = {}
        next_ready: float | None = None
        replies = self._acks.execute(pipe, [self._keys[shard].leases for shard in shards])
        for shard, reply in zip(shards, replies, strict=True):
            first = float(reply[0])
            if first >= 0:
                next_ready = first if next_ready is None else min(next_ready, first)
            got = []
            for i in range(1, len(reply), 4):
                host, tok, member, not_before = (v.decode() for v in reply[i:i + 4])
                depth, url, hops = decode_member(host, member)
                got.append(Lease(shard, host, tok, url, depth, float(not_before), hops))
            if got:
                leases[shard] = got
        return leases, next_ready

    def boost(self, scores: Mapping[str, float]) -> None:
        """Set the boost of these hosts (their authority): the first leased of the hosts
        due when more are due than a dispatch takes. Their queued URLs stay as they are."""
        by_shard: dict[int, dict[str, float]] = defaultdict(dict)
        for host, score in scores.items():
            by_shard[shard_of(host, self.shards)][host] = score
        pipe = self.client.pipeline(transaction=False)
        for shard, mapping in by_shard.items():
            items = list(mapping.items())
            for start in range(0, len(items), BOOST_CHUNK):
                pipe.hset(self._keys[shard].boost, mapping=dict(items[start:start + BOOST_CHUNK]))
        pipe.execute()

    def renew(self, leases: list[Lease], now: float, lease_seconds: float) -> list[int | None]:
        """Extend each lease still held and return its host's failures in a row; None for a
        lease that expired and was handed back."""
        by_shard: dict[int, list[int]] = defaultdict(list)
        for i, lease in enumerate(leases):
            by_shard[lease.shard].append(i)
        pipe = self.client.pipeline(transaction=False)
        for shard, idx in by_shard.items():
            k = self._keys[shard]
            args: list[object] = [now, lease_seconds]
            for i in idx:
                args += [leases[i].host, leases[i].token]
            scripts.RENEW(pipe, [k.leases, k.token, k.fails], args)
        held: list[int | None] = [None] * len(leases)
        replies = self._acks.execute(pipe, [self._keys[shard].leases for shard in by_shard])
        for idx, reply in zip(by_shard.values(), replies, strict=True):
            for i, failures in zip(idx, reply, strict=True):
                held[i] = None if int(failures) < 0 else int(failures)
        return held

    def yielding(self, leases: Iterable[Lease]) -> set[str]:
        """The hosts of `leases` (one a host) whose lease was asked to end early since it
        began: a URL that goes before one it holds was queued (ports.Frontier)."""
        by_shard: dict[int, list[Lease]] = defaultdict(list)
        for lease in leases:
            by_shard[lease.shard].append(lease)
        if not by_shard:
            return set()
        pipe = self.client.pipeline(transaction=False)
        for shard, held in by_shard.items():
            pipe.hmget(self._keys[shard].yielding, [lease.host for lease in held])
        return {lease.host for held, reply in zip(by_shard.values(), pipe.execute(), strict=True)
                for lease, token in zip(held, reply, strict=True)
                if token is not None and text(token) == lease.token}

    def release(self, releases: Iterable[Release]) -> int:
        """Take URLs out of their leases; a lease ends with its last URL, and its host may be
        fetched again at that release's next_time."""
        by_shard: dict[int, list[object]] = defaultdict(list)
        for rel in releases:
            by_shard[rel.lease.shard] += [rel.lease.host, rel.lease.token, rel.next_time,
                                          ("2" if rel.behind else "1") if rel.requeue else "0", rel.failures,
                                          str(rel.park_reason or ""),
                                          encode_member(rel.lease.depth, rel.lease.url, rel.lease.hops)]
        if not by_shard:
            return 0
        pipe = self.client.pipeline(transaction=False)
        for shard, args in by_shard.items():
            k = self._keys[shard]
            scripts.RELEASE(pipe, [k.ready, k.idle, k.leases, k.token, k.leased, k.parked, k.why,
                                   k.paused, k.fails, k.queued, k.queues, k.yielding], args)
        ended = sum(int(n) for n in self._acks.execute(
            pipe, [self._keys[shard].leases for shard in by_shard]))
        if ended:  # a host may be leased again (a URL of a lease going on frees none)
            self._doorbell.ring()
        return ended

    def stats(self, now: float) -> list[ShardStats]:
        pipe = self.client.pipeline(transaction=False)
        for k in self._keys:
            pipe.zcard(k.ready)
            pipe.zcount(k.ready, "-inf", now)
            pipe.zcard(k.leases)
            pipe.zcard(k.parked)
            pipe.get(k.queued)
            pipe.hlen(k.fails)
        raw = pipe.execute()
        out = []
        for shard in range(self.shards):
            ready, ready_now, leased, parked, queued, failing = raw[6 * shard: 6 * shard + 6]
            out.append(ShardStats(shard, int(ready) - int(ready_now), int(ready_now), int(leased),
                                  int(parked), int(queued or 0), int(failing)))
        return out

    def parked(self) -> dict[str, tuple[float, ParkReason]]:
        """Every parked or paused host: (time it comes back, reason)."""
        pipe = self.client.pipeline(transaction=False)
        for k in self._keys:
            pipe.zrange(k.parked, 0, -1, withscores=True)
            pipe.hgetall(k.why)
        raw = pipe.execute()
        out: dict[str, tuple[float, ParkReason]] = {}
        for until, why in zip(raw[::2], raw[1::2], strict=True):
            for host, score in until:
                out[host.decode()] = (float(score), ParkReason.parse(why.get(host, b"").decode()))
        return out

    def hold(self, hosts: Iterable[str], until: float) -> None:
        """No request to any of `hosts` before `until` (their last request times are unknown,
        after Redis lost them): a ready host's time moves later, the others remember it."""
        by_shard: dict[int, list[str]] = defaultdict(list)
        for host in hosts:
            by_shard[shard_of(host, self.shards)].append(host)
        pipe = self.client.pipeline(transaction=False)
        for shard, names in by_shard.items():
            k = self._keys[shard]
            pipe.zadd(k.ready, dict.fromkeys(names, until), xx=True, gt=True)
            pipe.zadd(k.idle, dict.fromkeys(names, until))
        pipe.execute()

    def pause(self, host: str, reason: ParkReason = PAUSED) -> None:
        k = self._of_host(host)
        scripts.PAUSE(self.client, [k.ready, k.idle, k.leases, k.parked, k.why, k.paused],
                      [host, str(reason)])

    def resume(self, host: str, now: float) -> bool:
        """Resume a paused or parked host; False if it was neither."""
        k = self._of_host(host)
        return bool(scripts.RESUME(self.client, [k.ready, k.idle, k.parked, k.why, k.paused,
                                                 k.fails, k.queue(host)], [host, now]))

    def drop(self, host: str, urls: Iterable[QueueEntry] | None = None) -> int:
        """Remove these URLs from `host`'s queue, or its whole queue when None; returns how
        many URLs were removed."""
        members = [] if urls is None else [encode_member(*url) for url in urls]
        if urls is not None and not members:
            return 0
        k = self._of_host(host)
        return int(scripts.DROP(self.client, [k.ready, k.idle, k.queued, k.queue(host)],
                                [host, *members]))

    def host_states(self, hosts: list[str], now: float) -> dict[str, HostState]:
        """Where each host stands in the frontier, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for host in hosts:
            k = self._of_host(host)
            pipe.zcard(k.queue(host))
            pipe.zscore(k.ready, host)
            pipe.zscore(k.leases, host)
            pipe.zscore(k.parked, host)
            pipe.hget(k.why, host)
            pipe.hget(k.fails, host)
        raw = pipe.execute()
        out = {}
        for i, host in enumerate(hosts):
            queued, ready, leased, parked, why, fails = raw[6 * i: 6 * i + 6]
            out[host] = HostState.of(int(queued), ready, leased is not None, parked,
                                     why.decode() if why else None, int(fails or 0), now)
        return out

    def is_idle(self, now: float) -> bool:
        """No host ready, waiting or leased (parked hosts keep their URLs for later and do
        not count; batches in flight are the batch ledger's)."""
        pipe = self.client.pipeline(transaction=False)
        for k in self._keys:
            pipe.zcard(k.ready)  # waiting and ready hosts alike
            pipe.zcard(k.leases)
        return not any(pipe.execute())

    def next_due(self, now: float) -> float | None:
        """`now` while a lease is held, else the earliest time in a ready or parked set (not
        inf: paused or given up); None when both are empty. One round trip."""
        pipe = self.client.pipeline(transaction=False)
        for k in self._keys:
            pipe.zcard(k.leases)
            pipe.zrange(k.ready, 0, 0, withscores=True)
            pipe.zrange(k.parked, 0, 0, withscores=True)
        raw = pipe.execute()
        if any(raw[::3]):
            return now
        times = [score for first in (*raw[1::3], *raw[2::3]) for _, score in first
                 if score != float("inf")]
        return min(times, default=None)

    def waiting_after(self, after: float, limit: int) -> dict[str, float]:
        """Hosts of the ready sets due later than `after`: host -> time, the `limit` soonest
        of each shard."""
        pipe = self.client.pipeline(transaction=False)
        for k in self._keys:
            pipe.zrangebyscore(k.ready, f"({after!r}", "+inf", start=0, num=limit,
                               withscores=True)
        return {text(host): float(score) for reply in pipe.execute() for host, score in reply}

    def mark_alive(self, now: float) -> None:
        """Note that Redis holds the whole crawl state, laid out in this frontier's shards (a
        Redis restarted empty has no such note, and is rebuilt from the database)."""
        self.client.set(self._alive, f"{self.shards} {now}")

    def layout(self) -> int | None:
        """The number of shards the frontier is laid out in: None when Redis does not hold
        it whole, 0 when a release that did not note the number laid it out."""
        value = self.client.get(self._alive)
        if value is None:
            return None
        count, _, at = text(value).partition(" ")
        return int(count) if at else 0

    def shards_holding(self, limit: int) -> list[int]:
        """The shards among the first `limit` that hold any host."""
        pipe = self.client.pipeline(transaction=False)
        for shard in range(limit):
            k = ShardKeys.of(self._prefix, shard)
            pipe.exists(k.ready, k.idle, k.leases, k.parked, k.fails, k.boost, k.paused, k.why)
        return [shard for shard, n in enumerate(pipe.execute()) if n]

    def reshard(self, now: float, limit: int) -> tuple[int, int]:
        """Move every host that a frontier laid out in another number of shards (at most
        `limit`) keeps outside its own shard under `self.shards` into its own, with its URLs,
        next time, parking, failures and boost, then note the layout (not on a frontier that
        is not whole: the rebuild from the database notes it). Leases that expired are ended
        first, their URLs back in their queues; while any is still held nothing moves.
        Returns (hosts moved, leases held). Run again after a failure, it goes on where that
        one stopped."""
        whole = self.layout() is not None
        shards = {shard: ShardKeys.of(self._prefix, shard)
                  for shard in self.shards_holding(max(limit, self.shards))}
        pipe = self.client.pipeline(transaction=False)
        for k in shards.values():
            scripts.DISPATCH(pipe, k.dispatch_keys(), [now, 0, 0, 0, "", 0, now, 1, 0, 0])  # leases no host
            pipe.zcard(k.leases)
        held = sum(int(n) for n in self._acks.execute(
            pipe, [k.leases for k in shards.values()])[1::2])
        if held:
            return 0, held
        moved = sum(self._move_out(k, shard) for shard, k in shards.items())
        pipe = self.client.pipeline(transaction=False)
        for shard, k in shards.items():
            if shard >= self.shards:  # a shard the new number does not have: its count goes
                pipe.delete(k.queued)
                pipe.delete(k.warm)
        pipe.execute()
        if whole:
            self.mark_alive(now)
        return moved, 0

    def _move_out(self, k: ShardKeys, shard: int) -> int:
        """Move the hosts of shard `k` that belong to another to theirs; returns how many."""
        pipe = self.client.pipeline(transaction=False)
        for key in (k.ready, k.idle, k.parked):
            pipe.zrange(key, 0, -1, withscores=True)
        for key in (k.why, k.paused, k.fails, k.boost):
            pipe.hgetall(key)
        ready, idle, parked, *fields = (
            {text(name): repr(score) if isinstance(score, float) else text(score)
             for name, score in (reply if isinstance(reply, list) else reply.items())}
            for reply in pipe.execute())
        hosts = sorted({host for state in (ready, idle, parked, *fields) for host in state
                        if shard_of(host, self.shards) != shard})
        for start in range(0, len(hosts), MOVE_HOSTS):
            group = hosts[start:start + MOVE_HOSTS]
            while group:
                pipe = self.client.pipeline(transaction=False)
                for host in group:
                    pipe.zrange(k.queue(host), 0, MOVE_CHUNK - 1, withscores=True)
                chunks = pipe.execute()
                pipe = self.client.pipeline(transaction=False)
                for host, chunk in zip(group, chunks, strict=True):
                    to = self._of_host(host)
                    state = [d.get(host, "") for d in (ready, idle, parked, *fields)]
                    urls = [v for member, score in chunk for v in (repr(score), text(member))]
                    scripts.MERGE_HOST(pipe, [to.ready, to.idle, to.parked, to.why, to.paused,
                                              to.fails, to.boost, to.queued, to.queue(host)],
                                       [host, *state, *urls])
                    scripts.REMOVE_HOST(pipe, [k.ready, k.idle, k.parked, k.why, k.paused,
                                               k.fails, k.boost, k.queued, k.queue(host)],
                                        [host, *(text(member) for member, _ in chunk)])
                self._acks.execute(pipe, [k.leases, *(self._of_host(h).leases for h in group)])
                group = [host for host, chunk in zip(group, chunks, strict=True)
                         if len(chunk) == MOVE_CHUNK]
        return len(hosts)
