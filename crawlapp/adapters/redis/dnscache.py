"""Host name resolution shared by the fleet: a DNS cache in Redis with one resolver per name.

An answer is kept `ttl` seconds (a failed lookup `negative_ttl`), in Redis for every worker
(`P:dns:<host>`, expiring) and in the process for the next requests. While one worker
resolves a name it holds a short lock (`P:dns-lock:<host>`, expiring); the others wait for
its answer instead of asking the resolver again.

Redis is asked from threads of the cache's own, never on the event loop that awaits the
answer: the client's retries through a failover would stall every request of that loop.
A look-up that Redis does not answer within REDIS_WAIT (or answers with an error) is
resolved by the process alone, and so are the look-ups of the next REST_SECONDS: a Redis
fault costs the fleet some duplicate DNS queries, never a name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import redis
from redis.exceptions import RedisClusterException

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, text
from crawlapp.core.records import FetchError

LOCK_SECONDS = 10.0
WAIT_STEP = 0.05
REDIS_WAIT = 1.0    # longest a look-up waits for Redis before it resolves alone
REST_SECONDS = 5.0  # after Redis failed, look-ups resolve alone this long
REDIS_THREADS = 4
# getaddrinfo's failures that are the name's answer (it does not exist, has no address, its
# servers fail or do not answer); the others (EAI_SYSTEM, EAI_MEMORY...) are the process's.
_NAME_ERRORS = frozenset(getattr(socket, name) for name in (
    "EAI_NONAME", "EAI_NODATA", "EAI_ADDRFAMILY", "EAI_FAIL", "EAI_AGAIN", "EAI_SERVICE")
    if hasattr(socket, name))
_REDIS_FAULTS = (redis.RedisError, RedisClusterException, TimeoutError)
T = TypeVar("T")
log = logging.getLogger(__name__)


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

    @property
    def ours(self) -> bool:
        """The crawler's own resolver failed, not the name: not an answer to keep."""
        return self.error == FetchError.RESOLVER


Lookup = Callable[[str], Awaitable[Resolution]]


async def system_lookup(host: str) -> Resolution:
    """Ask the system resolver (getaddrinfo in the loop's thread pool)."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except UnicodeError:
        return Resolution(error=FetchError.DNS)
    except socket.gaierror as exc:
        return Resolution(error=FetchError.DNS if exc.errno in _NAME_ERRORS
                          else FetchError.RESOLVER)
    except (OSError, RuntimeError):  # out of files, the thread pool shut down
        return Resolution(error=FetchError.RESOLVER)
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    return Resolution(addresses) if addresses else Resolution(error=FetchError.DNS)


def with_names(names: Mapping[str, tuple[str, ...]], fallback: Lookup = system_lookup) -> Lookup:
    """`fallback`, except for the `names` given their addresses (CRAWL_RESOLVE)."""
    async def lookup(host: str) -> Resolution:
        addresses = names.get(host.lower().rstrip("."))
        return Resolution(addresses) if addresses else await fallback(host)
    return lookup


class _Unshared(Exception):
    """Redis did not answer the shared cache in time: the name is resolved alone."""


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
        self._threads = ThreadPoolExecutor(REDIS_THREADS, thread_name_prefix="dns-cache")
        self._alone_until = 0.0  # monotonic time until which Redis is not asked

    def _ttl_of(self, answer: Resolution) -> float:
        return self.negative_ttl if answer.error else self.ttl

    async def resolve(self, host: str) -> Resolution:
        cached = self._local.get(host)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        shared = self.redis is not None and time.monotonic() >= self._alone_until
        answer = await (self._shared(host) if shared else self.lookup(host))
        if answer.ours:
            return answer  # asked again next time
        self._local[host] = (time.monotonic() + self._ttl_of(answer), answer)
        if len(self._local) > 100_000:
            self._local.clear()
        return answer

    async def _shared(self, host: str) -> Resolution:
        """The fleet's answer for `host`: cached, another worker's fresh one, or ours (alone
        while Redis fails)."""
        key = keys.DNS.of(self.prefix, host=host)
        lock = keys.DNS_LOCK.of(self.prefix, host=host)
        deadline = time.monotonic() + LOCK_SECONDS
        try:
            while True:
                raw, locked = await self._off_loop(self._read_or_lock, key, lock)
                if raw is not None:
                    return Resolution.decode(text(raw))
                if locked or time.monotonic() > deadline:  # past it: the holder died or hangs
                    break
                await asyncio.sleep(WAIT_STEP)
        except _Unshared:
            return await self.lookup(host)
        answer = Resolution(error=FetchError.RESOLVER)
        try:
            answer = await self.lookup(host)
        finally:  # not awaited: the answer does not wait for Redis to take it
            with contextlib.suppress(RuntimeError):  # the threads shut down: the lock expires
                self._threads.submit(self._publish, key, lock, answer)
        return answer

    async def _off_loop(self, call: Callable[..., T], *args: object) -> T:
        """`call(*args)` in one of the cache's threads, within REDIS_WAIT."""
        try:
            return await asyncio.wait_for(
                asyncio.get_running_loop().run_in_executor(self._threads, call, *args),
                REDIS_WAIT)
        except (*_REDIS_FAULTS, RuntimeError) as exc:  # RuntimeError: the threads shut down
            self._rest(exc)
            raise _Unshared from exc

    def _rest(self, fault: BaseException) -> None:
        """Resolve alone for REST_SECONDS."""
        if time.monotonic() >= self._alone_until:
            log.warning("the shared DNS cache failed (%s): names are resolved by this "
                        "process alone for %.0f s", repr(fault), REST_SECONDS)
        self._alone_until = time.monotonic() + REST_SECONDS

    def _read_or_lock(self, key: str, lock: str) -> tuple[bytes | str | None, bool]:
        """The cached answer, or whether we took the lock to resolve the name."""
        assert self.redis is not None
        raw = self.redis.get(key)
        if raw is not None:
            return raw, False
        return None, bool(self.redis.set(lock, "1", nx=True, px=int(LOCK_SECONDS * 1000)))

    def _publish(self, key: str, lock: str, answer: Resolution) -> None:
        """The answer cached for the fleet (unless it is our own failure), the lock let go."""
        assert self.redis is not None
        try:
            if not answer.ours:
                self.redis.set(key, answer.encode(), px=int(self._ttl_of(answer) * 1000))
            self.redis.delete(lock)
        except _REDIS_FAULTS as exc:  # the lock expires by itself
            self._rest(exc)
