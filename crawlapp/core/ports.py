"""The frontier as the stages, ops and observe see it: the operations on it, whoever keeps it.

`RedisFrontier` (adapters/redis/frontier) is the crawl's; `MemoryFrontier`
(adapters/memory_frontier.py) keeps the same state in one process, for tests without a server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

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


class Frontier(Protocol):
    """Per-host URL queues by score, one lease per host, and each host's next allowed time.

    A host with URLs queued is ready (from its next allowed time on), leased, or parked;
    a host with nothing queued only remembers its next allowed time. Hosts are spread over
    `shards`, and a batch of leases comes from one shard.
    """

    shards: int

    def add(self, urls: Iterable[QueuedURL], now: float, unless_leased: bool = False) -> int:
        """Queue URLs under their hosts (a URL queued already keeps its better score; one
        with `replaces_depth` moves to its new depth if it still waits; with `unless_leased`,
        none that its host's lease holds: a fetch under way plans what comes next); a host
        made ready here is not fetched before `now`. Returns how many were not queued
        already."""
        ...

    def dispatch(self, shards: Iterable[int], now: float, *, max_hosts: int,
                 lease_seconds: float, max_leased: int, lookahead: float = 0.0,
                 due_by: float | None = None, per_lease: int = 1, call: str | None = None,
                 warm_hosts: int = 0, warm_seconds: float = 0.0
                 ) -> tuple[dict[int, list[Lease]], float | None]:
        """Hand expired leases' URLs back (every URL of each), bring back parked hosts whose
        time came, then lease each shard's hosts ready by now + lookahead (their best URL
        each, at most `max_hosts`, while fewer than `max_leased` are leased), once the batch
        is full or its earliest host is due by `due_by` (default now + lookahead). When fewer
        than `max_hosts` hosts are leased, each lease takes up to `per_lease` of its host's
        best URLs, the batch at most `max_hosts` URLs in all, none with a queue value above
        the best one's by more than YIELD_MARGIN (core/priority.py): a new URL or a hub ahead
        of re-crawls is leased alone, its page not held back by a chain of them. Returns the
        leases by shard (a Lease per URL; those of one host share its token and not_before,
        in the order to fetch them) and the earliest next ready time of a host not leased.

        `call` names the dispatch: asked again by the same call (its reply was lost), a
        shard whose last dispatch was that call's gives the same leases and changes nothing
        (within a lease period); the other shards dispatch as usual.

        With `warm_hosts`, a shard's hosts leased lately are warm: from a host's lease on,
        until `warm_seconds` after its first or until `warm_hosts` hosts of the shard were
        leased after that, it goes first among the hosts due, before the boosted ones. When
        more hosts are due than are fetched in the time a host waits between two requests,
        leasing the earliest first cycles through all of them: a host's next request comes
        after every other host's, once its connection has been closed (by a fetch worker
        keeping fewer, or by a server's keep-alive timeout), so each request opens a new
        one. Warm hosts keep being fetched at their polite pace on the connections they
        have, and the others take their turn as warm hosts run dry or their session ends
        (a host with endless URLs gives way every `warm_seconds`)."""
        ...

    def boost(self, scores: Mapping[str, float]) -> None:
        """Set the boost of these hosts (their authority, in [0, 1]; 0 for a host never
        boosted). When more hosts are ready than a dispatch has room for, the earliest
        4 x max_hosts of them are candidates and the most boosted go first (ties: the earliest);
        no host is leased before its next allowed time, and queued URLs keep their scores."""
        ...

    def renew(self, leases: list[Lease], now: float, lease_seconds: float) -> list[int | None]:
        """Extend each lease still held and return its host's failures in a row; None for a
        lease that expired and was handed back."""
        ...

    def yielding(self, leases: Iterable[Lease]) -> set[str]:
        """The hosts of `leases` (one a host) whose lease was asked to end early since it
        began: a URL queued meanwhile has a queue value lower by more than YIELD_MARGIN
        (core/priority.py) than one the lease holds; its fetch then asks nothing more and puts
        the rest back, and the host's next lease starts with that URL."""
        ...

    def release(self, releases: Iterable[Release]) -> int:
        """Take the releases' URLs out of their leases still held (putting back those to
        requeue); the release of a lease's last URL ends the lease: a host paused meanwhile or
        given a park reason is parked, the others may be fetched again at its next_time.
        Returns how many leases ended."""
        ...

    def stats(self, now: float) -> list[ShardStats]:
        ...

    def mark_alive(self, now: float) -> None:
        """Note that the frontier is whole (one restarted empty has no such note)."""
        ...

    def layout(self) -> int | None:
        """The number of shards the frontier is laid out in: None when it is not whole, 0
        when a release that did not note the number laid it out."""
        ...

    def shards_holding(self, limit: int) -> list[int]:
        """The shards among the first `limit` that hold any host."""
        ...

    def reshard(self, now: float, limit: int) -> tuple[int, int]:
        """Lay a frontier laid out in another number of shards (at most `limit`) out in
        `shards`, every host in its own shard with its state, and note the layout. Expired
        leases end first; while one is held nothing moves. Returns (hosts moved, leases
        held)."""
        ...

    def parked(self) -> dict[str, tuple[float, ParkReason]]:
        """Every parked or paused host: (time it comes back, reason)."""
        ...

    def hold(self, hosts: Iterable[str], until: float) -> None:
        """No request to any of `hosts` before `until`."""
        ...

    def pause(self, host: str, reason: ParkReason = PAUSED) -> None:
        """Park `host` until resumed: at once, or when its current lease ends."""
        ...

    def resume(self, host: str, now: float) -> bool:
        """Resume a paused or parked host; False if it was neither."""
        ...

    def drop(self, host: str, urls: Iterable[QueueEntry] | None = None) -> int:
        """Remove these URLs from `host`'s queue, or its whole queue when None; returns how
        many URLs were removed."""
        ...

    def host_states(self, hosts: list[str], now: float) -> dict[str, HostState]:
        ...

    def next_due(self, now: float) -> float | None:
        """When the frontier next has work: `now` while a lease is held, else the earliest
        next time of a host with URLs queued or of a parked host coming back (a paused or
        given-up one never does); None when there is none."""
        ...

    def waiting_after(self, after: float, limit: int) -> dict[str, float]:
        """Hosts with URLs queued, neither leased nor parked, whose next time is later than
        `after`: host -> that time, the `limit` soonest of each shard."""
        ...

    def is_idle(self, now: float) -> bool:
        """No host ready, waiting or leased (parked hosts keep their URLs for later and do
        not count; batches in flight are the batch ledger's)."""
        ...
