"""The adapters a process uses (Redis and the owner of each of its structures, the database,
the blob store), built once per process."""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from crawlapp.adapters.blobstore import BlobStore, open_blobstore
from crawlapp.adapters.errors import transient_errors
from crawlapp.adapters.redis.authority import HostAuthorities
from crawlapp.adapters.redis.batches import BatchLedger
from crawlapp.adapters.redis.budgets import PATTERNS_PER_URL_BUCKET, TrapBudgets
from crawlapp.adapters.redis.canonicals import CanonicalPointers
from crawlapp.adapters.redis.change_rates import ChangeRates
from crawlapp.adapters.redis.client import Client, connect, ride_out
from crawlapp.adapters.redis.counters import Counters
from crawlapp.adapters.redis.denylist import Denylist
from crawlapp.adapters.redis.dnscache import DnsCache, with_names
from crawlapp.adapters.redis.doorbell import Doorbell
from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.adapters.redis.parts import Parts, buckets
from crawlapp.adapters.redis.recrawl_sets import RecrawlSets
from crawlapp.adapters.redis.redirect_hops import RedirectHops
from crawlapp.adapters.redis.replicas import ReplicaAcks
from crawlapp.adapters.redis.retries import FetchRetries
from crawlapp.adapters.redis.robots_cache import RobotsCache
from crawlapp.adapters.redis.scope import SeedScopes
from crawlapp.adapters.redis.sitemap_trust import SitemapTrust
from crawlapp.adapters.redis.slots import PolitenessSlots
from crawlapp.adapters.redis.throttles import Throttles
from crawlapp.adapters.redis.urlseen import RedisBloom
from crawlapp.adapters.redis.validators import Validators
from crawlapp.adapters.redis.verify_report import VerifyReport
from crawlapp.adapters.redis.workers import WorkerReports
from crawlapp.core.bloom import BloomShape
from crawlapp.core.errors import TransientError
from crawlapp.core.ports import Frontier
from crawlapp.core.settings import Settings, get_settings

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from crawlapp.adapters.redis.dedup_index import DedupIndex


@dataclass
class Context:
    """Each Redis structure has one owner here (adapters/redis/keys.py lists their keys);
    `frontier_override` replaces the Redis frontier (a test's MemoryFrontier)."""

    settings: Settings
    frontier_override: Frontier | None = field(default=None, repr=False, kw_only=True)

    @cached_property
    def redis(self) -> Client:
        """The hot, bounded state (CRAWL_REDIS_URL; a cluster with CRAWL_REDIS_CLUSTER)."""
        return connect(self.settings.redis_url, self.settings.redis_cluster)

    @cached_property
    def dedup_redis(self) -> Client:
        """What grows with the crawl (CRAWL_DEDUP_REDIS_URL; the same client by default)."""
        if self.settings.dedup_redis_url == self.settings.redis_url:
            return self.redis
        return connect(self.settings.dedup_redis_url, self.settings.dedup_redis_cluster)

    def steady(self, call: Callable[[], R], what: str) -> R:
        """`call()` on the hot state, ridden through a Redis failover or restart
        (CRAWL_REDIS_RIDE_OUT): for the reads and writes that work already done rests on."""
        return ride_out(self.redis, call, self.settings.redis_ride_out, what)

    @property
    def _prefix(self) -> str:
        return self.settings.redis_prefix

    @cached_property
    def parts(self) -> Parts:
        """How the structures that grow with the crawl are cut (CRAWL_REDIS_PARTS)."""
        return Parts(self.settings.redis_parts)

    @cached_property
    def frontier(self) -> Frontier:
        if self.frontier_override is not None:
            return self.frontier_override
        return RedisFrontier(self.redis, self._prefix, self.settings.shards, self.replica_acks,
                             self.doorbell)

    @cached_property
    def doorbell(self) -> Doorbell:
        """Rung by the frontier when a host may be ready sooner; the dispatcher waits on it."""
        return Doorbell(self.redis, self._prefix)

    @cached_property
    def batches(self) -> BatchLedger:
        return BatchLedger(self.redis, self._prefix)

    @cached_property
    def url_seen(self) -> RedisBloom:
        """Tier 1 of URL dedup: a Bloom filter sized from CRAWL_EXPECTED_URLS."""
        shape = BloomShape.for_capacity(self.settings.expected_urls, self.settings.bloom_fp_rate,
                                        min_shards=self.settings.redis_parts)
        return RedisBloom(self.dedup_redis, self._prefix, shape)

    @cached_property
    def dedup_index(self) -> DedupIndex:
        # Imported here: its SimHash tables bring numpy, for the processes that dedup.
        from crawlapp.adapters.redis.dedup_index import DedupIndex
        return DedupIndex.planned(self.dedup_redis, self._prefix, self.settings.expected_urls,
                                  self.settings.near_duplicate_bits)

    @cached_property
    def canonicals(self) -> CanonicalPointers:
        return CanonicalPointers(self.dedup_redis, self._prefix)

    @cached_property
    def robots(self) -> RobotsCache:
        return RobotsCache(self.redis, self._prefix, self.settings.robots_ttl)

    @cached_property
    def hops(self) -> RedirectHops:
        return RedirectHops(self.redis, self._prefix)

    @cached_property
    def validators(self) -> Validators:
        return Validators(self.redis, self._prefix, self.parts)

    @cached_property
    def retries(self) -> FetchRetries:
        return FetchRetries(self.redis, self._prefix)

    @cached_property
    def slots(self) -> PolitenessSlots:
        return PolitenessSlots(self.redis, self._prefix, self.replica_acks)

    @cached_property
    def replica_acks(self) -> ReplicaAcks:
        """How the writes politeness rests on wait for replicas (CRAWL_REDIS_REPLICA_ACKS)."""
        return ReplicaAcks(self.redis, self.settings.redis_replica_acks, self.counters)

    @cached_property
    def throttles(self) -> Throttles:
        return Throttles(self.redis, self._prefix)

    @cached_property
    def recrawls(self) -> RecrawlSets:
        return RecrawlSets(self.dedup_redis, self._prefix, self.parts)

    @cached_property
    def change_rates(self) -> ChangeRates:
        return ChangeRates(self.redis, self._prefix)

    @cached_property
    def sitemap_trust(self) -> SitemapTrust:
        return SitemapTrust(self.redis, self._prefix)

    @cached_property
    def budgets(self) -> TrapBudgets:
        return TrapBudgets(self.redis, self._prefix, self.parts,
                           buckets(self.settings.expected_urls, PATTERNS_PER_URL_BUCKET))

    @cached_property
    def authority(self) -> HostAuthorities:
        return HostAuthorities(self.redis, self._prefix)

    @cached_property
    def counters(self) -> Counters:
        return Counters(self.redis, self._prefix)

    @cached_property
    def denylist(self) -> Denylist:
        return Denylist(self.redis, self._prefix)

    @cached_property
    def scopes(self) -> SeedScopes:
        return SeedScopes(self.redis, self._prefix)

    @cached_property
    def workers(self) -> WorkerReports:
        return WorkerReports(self.redis, self._prefix)

    @cached_property
    def verify_report(self) -> VerifyReport:
        return VerifyReport(self.redis, self._prefix)

    @cached_property
    def sessions(self) -> sessionmaker[Session]:
        # Imported here: SQLAlchemy is for the processes that use the database.
        from crawlapp.adapters.db.engine import session_factory
        return session_factory(self.settings)

    @cached_property
    def blobs(self) -> BlobStore:
        return open_blobstore(self.settings)

    def dns_cache(self) -> DnsCache:
        """A resolver on the fleet's shared DNS cache (one per fetcher: it keeps a local copy)."""
        s = self.settings
        if s.resolve:
            return DnsCache(self.redis, s.redis_prefix, s.dns_ttl, s.dns_negative_ttl,
                            lookup=with_names(s.resolve))
        return DnsCache(self.redis, s.redis_prefix, s.dns_ttl, s.dns_negative_ttl)


P = ParamSpec("P")
R = TypeVar("R")
_CONTEXTS: dict[int, Context] = {}


def get_context() -> Context:
    """This process's context (a forked child builds its own connections)."""
    ctx = _CONTEXTS.get(os.getpid())
    if ctx is None:
        ctx = _CONTEXTS[os.getpid()] = Context(get_settings())
    return ctx


def timed(stage: str, elsewhere: Callable[[], float] = lambda: 0.0
          ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Add the CPU time the calling thread spends in the wrapped stage, plus what
    `elsewhere()` reports for other threads doing its work, to the stage CPU of this
    process's context, and count the call under `<stage>:batches` (one round trip per batch)."""
    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.thread_time()
            try:
                return func(*args, **kwargs)
            finally:
                used = time.thread_time() - started + elsewhere()
                ctx = get_context()  # a counter is not worth the batch: ridden out, then left
                with contextlib.suppress(TransientError), transient_errors():
                    ctx.steady(lambda: ctx.counters.add_stage_cpu(stage, used),
                               f"counting {stage}'s CPU")
        return run
    return wrap
