"""The adapters a process uses (Redis, frontier, database, blob store), built once per process."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

import redis
from redis.commands.core import Script
from sqlalchemy.orm import Session, sessionmaker

from crawlapp.adapters.blobstore import BlobStore, open_blobstore
from crawlapp.adapters.db.engine import session_factory
from crawlapp.adapters.ports import Frontier
from crawlapp.adapters.redis.dnscache import DnsCache
from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.adapters.redis.urlseen import RedisBloom
from crawlapp.core.bloom import BloomShape
from crawlapp.core.settings import Settings, get_settings


@dataclass
class Context:
    settings: Settings
    _scripts: dict[str, Script] = field(default_factory=dict, repr=False)
    frontier_override: Frontier | None = field(default=None, repr=False, kw_only=True)

    def script(self, source: str) -> Script:
        """A Lua script registered once per process; redis-py then calls it by its SHA."""
        if source not in self._scripts:
            self._scripts[source] = self.redis.register_script(source)
        return self._scripts[source]

    @cached_property
    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.settings.redis_url, health_check_interval=30)

    @cached_property
    def frontier(self) -> Frontier:
        """The Redis frontier, or `frontier_override` when given (a test's MemoryFrontier)."""
        if self.frontier_override is not None:
            return self.frontier_override
        return RedisFrontier(self.redis, self.settings.redis_prefix, self.settings.shards)

    @cached_property
    def url_seen(self) -> RedisBloom:
        """Tier 1 of URL dedup: a Bloom filter sized from CRAWL_EXPECTED_URLS."""
        shape = BloomShape.for_capacity(self.settings.expected_urls, self.settings.bloom_fp_rate)
        return RedisBloom(self.redis, self.settings.redis_prefix, shape)

    @cached_property
    def sessions(self) -> sessionmaker[Session]:
        return session_factory(self.settings)

    @cached_property
    def blobs(self) -> BlobStore:
        return open_blobstore(self.settings)

    def dns_cache(self) -> DnsCache:
        """A resolver on the fleet's shared DNS cache (one per fetcher: it keeps a local copy)."""
        s = self.settings
        return DnsCache(self.redis, s.redis_prefix, s.dns_ttl, s.dns_negative_ttl)

    def key(self, *parts: str) -> str:
        """A Redis key in the crawler's namespace."""
        return ":".join((self.settings.redis_prefix, *parts))


_CONTEXTS: dict[int, Context] = {}


def get_context() -> Context:
    """This process's context (a forked child builds its own connections)."""
    ctx = _CONTEXTS.get(os.getpid())
    if ctx is None:
        ctx = _CONTEXTS[os.getpid()] = Context(get_settings())
    return ctx
