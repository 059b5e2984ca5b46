"""Host name resolution shared by the fleet: a DNS cache in Redis with one resolver per name.

An answer is kept `ttl` seconds (a failed lookup `negative_ttl`), in Redis for every worker
(`P:dns:<host>`, expiring) and in the process for the next requests. While one worker
resolves a name it holds a short lock (`P:dns-lock:<host>`, expiring); the others wait for
its answer instead of asking the resolver again.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, text

LOCK_SECONDS = 10.0
WAIT_STEP = 0.05


@dataclass(frozen=True)
class Resolution:
    """The addresses of a name, or the error that stopped its lookup."""

    addresses: tuple[str, ...] = ()
    error: str | None = None

    def encode(self) -> str:
        return f"!{self.error}" if self.error else ",".join(self.addresses)

    @classmethod
    def decode(cls, raw: str) -> Resolution:
        if raw.startswith("!"):
            return cls(error=raw[1:] or "dns")
        return cls(addresses=tuple(a for a in raw.split(",") if a))


Lookup = Callable[[str], Awaitable[Resolution]]


async def system_lookup(host: str) -> Resolution:
    """Ask the system resolver (getaddrinfo in the loop's thread pool)."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        return Resolution(error="dns")
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    return Resolution(addresses) if addresses else Resolution(error="dns")


def with_names(names: Mapping[str, tuple[str, ...]], fallback: Lookup = system_lookup) -> Lookup:
    """`fallback`, except for the `names` given their addresses (CRAWL_RESOLVE)."""
    async def lookup(host: str) -> Resolution:
        addresses = names.get(host.lower().rstrip("."))
        return Resolution(addresses) if addresses else await fallback(host)
    return lookup


class DnsCache:
    """Resolve names through Redis (shared, with TTLs) and a per-process copy."""

    def __init__(self, client: Client | None, prefix: str, ttl: float, negative_ttl: float,
                 lookup: Lookup = system_lookup) -> None:
        self.redis = client
        self.prefix = prefix
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.lookup = lookup
        self._local: dict[str, tuple[float, Resolution]] = {}

    def _ttl_of(self, answer: Resolution) -> float:
        return self.negative_ttl if answer.error else self.ttl

    async def resolve(self, host: str) -> Resolution:
        cached = self._local.get(host)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        answer = await (self._shared(host) if self.redis is not None else self.lookup(host))
        self._local[host] = (time.monotonic() + self._ttl_of(answer), answer)
        if len(self._local) > 100_000:
            self._local.clear()
        return answer

    async def _shared(self, host: str) -> Resolution:
        """The fleet's answer for `host`: cached, another worker's fresh one, or ours."""
        assert self.redis is not None
        key = keys.DNS.of(self.prefix, host=host)
        lock = keys.DNS_LOCK.of(self.prefix, host=host)
        deadline = time.monotonic() + LOCK_SECONDS
        while True:
            raw = self.redis.get(key)
            if raw is not None:
                return Resolution.decode(text(raw))
            if self.redis.set(lock, "1", nx=True, px=int(LOCK_SECONDS * 1000)):
                break
            if time.monotonic() > deadline:
                break  # the holder died or hangs: resolve it ourselves
            await asyncio.sleep(WAIT_STEP)
        try:
            answer = await self.lookup(host)
            self.redis.set(key, answer.encode(), px=int(self._ttl_of(answer) * 1000))
        finally:
            self.redis.delete(lock)
        return answer
