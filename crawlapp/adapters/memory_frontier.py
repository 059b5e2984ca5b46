"""The frontier in one process's memory, for tests that run without a server.

Each operation does what the Redis frontier's Lua script of the same name does on a shard
(adapters/redis/frontier/scripts.py), step for step, on the same structures held in
dicts: a host with URLs queued is in exactly one of ready, leases and parked. Equal scores
pop in the Redis frontier's member order ("depth<TAB>url" as text), so both hand out URLs
in the same order.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

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

EXPIRED_PER_DISPATCH = 1000  # leases handed back, and parked hosts brought back, per call
BOOST_WINDOW = 4  # candidates per host of a batch, when more are ready than there is room for


def _member(depth: int, url: str, hops: int = 0) -> str:
    return f"{depth}.{hops}\t{url}" if hops else f"{depth}\t{url}"


def _unpack(member: str) -> tuple[int, str, int]:
    depth, url = member.split("\t", 1)
    depth, _, hops = depth.partition(".")
    return int(depth), url, int(hops or 0)


def _lowest(scores: dict[str, float], upto: float, limit: int) -> list[tuple[float, str]]:
    """(score, name) of the `limit` lowest scores up to `upto`, lowest first."""
    return heapq.nsmallest(limit, ((s, name) for name, s in scores.items() if s <= upto))


@dataclass
class _Shard:
    """One shard's structures, named as the Redis keys they stand for."""

    ready: dict[str, float] = field(default_factory=dict)
    idle: dict[str, float] = field(default_factory=dict)
    leases: dict[str, float] = field(default_factory=dict)
    token: dict[str, str] = field(default_factory=dict)
    leased: dict[str, dict[str, float]] = field(default_factory=dict)  # member -> score
    parked: dict[str, float] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)
    paused: set[str] = field(default_factory=set)
    fails: dict[str, int] = field(default_factory=dict)
    queues: dict[str, dict[str, float]] = field(default_factory=dict)  # never an empty one
    queued: int = 0
    boost: dict[str, float] = field(default_factory=dict)
    warm: dict[str, float] = field(default_factory=dict)  # host -> when its session began
    yielding: dict[str, str] = field(default_factory=dict)  # host -> token of a lease to end

    def queue_add(self, host: str, member: str, score: float) -> int:
        """ZADD LT: a member queued already keeps its lower score; 1 if it is new."""
        queue = self.queues.setdefault(host, {})
        old = queue.get(member)
        if old is None or score < old:
            queue[member] = score
        return int(old is None)

    def queue_remove(self, host: str, members: Iterable[str]) -> int:
        queue = self.queues.get(host, {})
        removed = sum(queue.pop(m, None) is not None for m in members)
        if not queue:
            self.queues.pop(host, None)
        return removed

    def put_back(self, host: str, member: str, score: float, behind: bool = False) -> None:
        """A URL leased under `host` goes back to its queue (`behind`: after its last URL)."""
        queue = self.queues.get(host)
        if behind and queue:
            score = max(score, max(queue.values()) + 0.001)
        self.queued += self.queue_add(host, member, score)

    def hand_back(self, host: str, member: str, back: bool, behind: bool) -> int:
        """Take one URL out of `host`'s lease (putting it back with `back`); returns how
        many URLs the lease still holds."""
        held = self.leased[host]
        score = held.pop(member, None)
        if back and score is not None:
            self.put_back(host, member, score, behind)
        return len(held)

    def end_lease(self, host: str) -> None:
        del self.leases[host], self.leased[host], self.token[host]

    def enqueue(self, now: float, host: str, member: str, score: float,
                replaces: str | None, unless_leased: bool) -> int:
        url = member.split("\t", 1)[1]
        if unless_leased and any(held.split("\t", 1)[1] == url
                                 for held in self.leased.get(host, ())):
            return 0  # being fetched: not queued again (ENQUEUE)
        if replaces is not None:
            if self.queue_remove(host, [replaces]):
                self.queue_add(host, member, score)
            return 0
        added = self.queue_add(host, member, score)
        if host in self.leases:
            if added and score + YIELD_MARGIN < max(self.leased[host].values(), default=-math.inf):
                self.yielding[host] = self.token[host]
        elif host not in self.parked:
            self.ready.setdefault(host, max(self.idle.get(host, 0.0), now))
            self.idle.pop(host, None)
        self.queued += added
        return added

    def dispatch(self, now: float, *, max_hosts: int, lease: float, max_leased: int,
                 token_prefix: str, horizon: float, due_by: float, per_lease: int,
                 warm_hosts: int, warm_seconds: float
                 ) -> tuple[float | None, list[tuple[str, str, str, float]]]:
        for _, host in _lowest(self.leases, now, EXPIRED_PER_DISPATCH):
            for member, score in self.leased[host].items():
                self.put_back(host, member, score)
            self.end_lease(host)
            if host in self.queues:
                self.ready[host] = now
        for until, host in _lowest(self.parked, now, EXPIRED_PER_DISPATCH):
            del self.parked[host]
            self.why.pop(host, None)
            (self.ready if host in self.queues else self.idle)[host] = until
        out = []
        room = min(max_hosts, max_leased - len(self.leases))
        if room > 0:
            window = _lowest(self.ready, horizon, BOOST_WINDOW * max_hosts)
            warm = self._warm_hosts(now - warm_seconds) if warm_hosts else []
            listed = {host for _, host in window}
            window += [(self.ready[host], host) for host in warm
                       if host not in listed and self.ready.get(host, math.inf) <= horizon]
            first = set(warm)
            hosts = window if len(window) <= room else sorted(
                window, key=lambda c: (c[1] not in first, -self.boost.get(c[1], 0.0), c))[:room]
            if hosts and len(hosts) < max_hosts and window[0][0] > due_by:
                hosts = []  # not full and nothing due yet: let the batch grow until the next tick
            take = (max(1, min(per_lease, max_hosts // len(hosts)))
                    if 0 < len(hosts) < max_hosts else 1)
            for n, (ready_at, host) in enumerate(hosts):
                del self.ready[host]
                queue = self.queues.get(host)
                if not queue:
                    self.idle[host] = ready_at
                    continue
                popped = heapq.nsmallest(take, ((s, m) for m, s in queue.items()))
                popped = [(s, m) for s, m in popped if s <= popped[0][0] + YIELD_MARGIN]
                self.queue_remove(host, [member for _, member in popped])
                token, not_before = f"{token_prefix}:{n}", max(now, ready_at)
                self.leases[host] = not_before + lease
                self.token[host] = token
                self.leased[host] = {member: score for score, member in popped}
                self.queued -= len(popped)
                out += [(host, token, member, not_before) for _, member in popped]
                if warm_hosts:
                    self.warm.setdefault(host, now)
            if warm_hosts:
                for host in self._warm_hosts(-math.inf)[:max(0, len(self.warm) - warm_hosts)]:
                    del self.warm[host]
        return min(self.ready.values(), default=None), out

    def _warm_hosts(self, ended: float) -> list[str]:
        """The warm hosts in the order of `warm` (by when their session began, then name),
        after forgetting those whose session began at or before `ended`."""
        for host in [host for host, since in self.warm.items() if since <= ended]:
            del self.warm[host]
        return sorted(self.warm, key=lambda host: (self.warm[host], host))

    def renew(self, now: float, lease: float, host: str, token: str) -> int | None:
        if self.token.get(host) != token:
            return None
        self.leases[host] = now + lease
        return self.fails.get(host, 0)

    def release(self, rel: Release) -> int:
        host, lease = rel.lease.host, rel.lease
        member = _member(lease.depth, lease.url, lease.hops)
        if self.token.get(host) != lease.token:
            if not rel.requeue:  # answered after its lease expired: not fetched again
                self.queued -= self.queue_remove(host, [member])
                if host in self.ready:
                    self.ready[host] = max(self.ready[host], rel.next_time)
            return 0
        if self.hand_back(host, member, rel.requeue, rel.behind):
            return 0
        self.end_lease(host)
        self.yielding.pop(host, None)
        if rel.failures == 0:
            self.fails.pop(host, None)
        else:
            self.fails[host] = rel.failures
        if host in self.paused:
            self.parked[host] = math.inf
            self.why[host] = "paused"
        elif rel.park_reason:
            self.parked[host] = rel.next_time
            self.why[host] = str(rel.park_reason)
        elif host in self.queues:
            self.ready[host] = rel.next_time
        else:
            self.idle[host] = rel.next_time
        return 1

    def pause(self, host: str, reason: ParkReason) -> None:
        self.paused.add(host)
        if host not in self.leases:
            at = self.ready.pop(host, None)
            if at is not None:
                self.idle[host] = at
            self.parked[host] = math.inf
            self.why[host] = str(reason)

    def resume(self, host: str, now: float) -> bool:
        was = host in self.paused
        self.paused.discard(host)
        if host in self.parked:
            was = True
            del self.parked[host]
            self.why.pop(host, None)
            self.fails.pop(host, None)
            if host in self.queues:
                self.ready[host] = max(self.idle.pop(host, 0.0), now)
        return was

    def drop(self, host: str, members: list[str] | None) -> int:
        removed = self.queue_remove(host, list(self.queues.get(host, {})) if members is None
                                    else members)
        self.queued -= removed
        if host not in self.queues and host in self.ready:
            self.idle[host] = self.ready.pop(host)
        return removed

    def host_state(self, host: str, now: float) -> HostState:
        return HostState.of(len(self.queues.get(host, {})), self.ready.get(host),
                            host in self.leases, self.parked.get(host), self.why.get(host),
                            self.fails.get(host, 0), now)


class MemoryFrontier:
    """The Redis frontier's behaviour without Redis: the `Frontier` of a test's Context."""

    def __init__(self, shards: int) -> None:
        self.shards = shards
        self._shards = [_Shard() for _ in range(shards)]
        self._dispatches = itertools.count()
        # each shard's last dispatch: its call, and what it gave (replayed to that call)
        self._last: dict[int, tuple[str, float | None, list[tuple[str, str, str, float]]]] = {}
        self._lock = threading.Lock()  # each operation is atomic, as a Lua script is
        self._alive = False

    def _shard_of(self, host: str) -> _Shard:
        return self._shards[shard_of(host, self.shards)]

    def add(self, urls: Iterable[QueuedURL], now: float, unless_leased: bool = False) -> int:
        with self._lock:
            added = 0
            for item in urls:
                host = host_of(item.url)
                replaces = (None if item.replaces_depth is None
                            else _member(item.replaces_depth, item.url, item.hops))
                added += self._shard_of(host).enqueue(
                    now, host, _member(item.depth, item.url, item.hops),
                    queue_score(item.priority, now),
                    replaces, unless_leased)
            return added

    def dispatch(self, shards: Iterable[int], now: float, *, max_hosts: int,
                 lease_seconds: float, max_leased: int, lookahead: float = 0.0,
                 due_by: float | None = None, per_lease: int = 1, call: str | None = None,
                 warm_hosts: int = 0, warm_seconds: float = 0.0
                 ) -> tuple[dict[int, list[Lease]], float | None]:
        due_by = now + lookahead if due_by is None else due_by
        leases: dict[int, list[Lease]] = {}
        next_ready: float | None = None
        with self._lock:
            call = call or str(next(self._dispatches))
            for shard in shards:
                last = self._last.get(shard)
                if last is not None and last[0] == call:
                    first, got = last[1], last[2]
                else:
                    first, got = self._shards[shard].dispatch(
                        now, max_hosts=max_hosts, lease=lease_seconds, max_leased=max_leased,
                        token_prefix=f"{call}.{shard}", horizon=now + lookahead,
                        due_by=due_by, per_lease=per_lease, warm_hosts=warm_hosts,
                        warm_seconds=warm_seconds)
                    self._last[shard] = (call, first, got)
                if first is not None:
                    next_ready = first if next_ready is None else min(next_ready, first)
                for host, token, member, not_before in got:
                    depth, url, hops = _unpack(member)
                    leases.setdefault(shard, []).append(
                        Lease(shard, host, token, url, depth, not_before, hops))
        return leases, next_ready

    def boost(self, scores: Mapping[str, float]) -> None:
        with self._lock:
            for host, score in scores.items():
                self._shard_of(host).boost[host] = score

    def renew(self, leases: list[Lease], now: float, lease_seconds: float) -> list[int | None]:
        with self._lock:
            return [self._shards[lease.shard].renew(now, lease_seconds, lease.host, lease.token)
                    for lease in leases]

    def mark_alive(self, now: float) -> None:
        self._alive = True

    def layout(self) -> int | None:
        return self.shards if self._alive else None

    def shards_holding(self, limit: int) -> list[int]:
        with self._lock:
            return [n for n, s in enumerate(self._shards[:limit])
                    if s.ready or s.idle or s.leases or s.parked]

    def reshard(self, now: float, limit: int) -> tuple[int, int]:
        """Nothing to move: a frontier of one process keeps the number of shards it was made
        with."""
        return 0, 0

    def yielding(self, leases: Iterable[Lease]) -> set[str]:
        with self._lock:
            return {lease.host for lease in leases
                    if self._shards[lease.shard].yielding.get(lease.host) == lease.token}

    def release(self, releases: Iterable[Release]) -> int:
        with self._lock:
            return sum(self._shards[rel.lease.shard].release(rel) for rel in releases)

    def stats(self, now: float) -> list[ShardStats]:
        with self._lock:
            out = []
            for n, shard in enumerate(self._shards):
                ready_now = sum(at <= now for at in shard.ready.values())
                out.append(ShardStats(n, len(shard.ready) - ready_now, ready_now,
                                      len(shard.leases), len(shard.parked), shard.queued,
                                      len(shard.fails)))
            return out

    def parked(self) -> dict[str, tuple[float, ParkReason]]:
        with self._lock:
            return {host: (until, ParkReason.parse(shard.why.get(host, "")))
                    for shard in self._shards for host, until in shard.parked.items()}

    def hold(self, hosts: Iterable[str], until: float) -> None:
        with self._lock:
            for host in hosts:
                shard = self._shard_of(host)
                if host in shard.ready:
                    shard.ready[host] = max(shard.ready[host], until)
                shard.idle[host] = until

    def pause(self, host: str, reason: ParkReason = PAUSED) -> None:
        with self._lock:
            self._shard_of(host).pause(host, reason)

    def resume(self, host: str, now: float) -> bool:
        with self._lock:
            return self._shard_of(host).resume(host, now)

    def drop(self, host: str, urls: Iterable[QueueEntry] | None = None) -> int:
        members = None if urls is None else [_member(*url) for url in urls]
        if members is not None and not members:
            return 0
        with self._lock:
            return self._shard_of(host).drop(host, members)

    def host_states(self, hosts: list[str], now: float) -> dict[str, HostState]:
        with self._lock:
            return {host: self._shard_of(host).host_state(host, now) for host in hosts}

    def next_due(self, now: float) -> float | None:
        with self._lock:
            if any(s.leases for s in self._shards):
                return now
            return min((at for s in self._shards for at in (*s.ready.values(), *s.parked.values())
                        if at != math.inf), default=None)

    def waiting_after(self, after: float, limit: int) -> dict[str, float]:
        with self._lock:
            return {host: at for s in self._shards
                    for at, host in heapq.nsmallest(
                        limit, ((at, host) for host, at in s.ready.items() if at > after))}

    def is_idle(self, now: float) -> bool:
        with self._lock:
            return not any(s.ready or s.leases for s in self._shards)
