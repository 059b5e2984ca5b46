"""The client of a Redis role (CRAWL_REDIS_URL, CRAWL_DEDUP_REDIS_URL): one Redis server, or
a Redis Cluster reached through any of its nodes (CRAWL_REDIS_CLUSTER, CRAWL_DEDUP_CLUSTER).

The owners in adapters/redis take either: a command, script or MULTI touches the keys of one
hash slot (keys.py), pipelines may mix slots (redis-py's ClusterPipeline sends each node its
part), SCAN walks every master (RedisCluster.scan_iter).
"""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import urlsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.client import Pipeline as ServerPipeline
from redis.cluster import ClusterNode, ClusterPipeline, RedisCluster
from redis.retry import Retry

Client = redis.Redis | RedisCluster
Pipeline = ServerPipeline | ClusterPipeline


def text(value: bytes | str) -> str:
    """A reply as text (the clients answer bytes: no decode_responses)."""
    return value.decode() if isinstance(value, bytes) else value


# A master lost is replaced by its replica after cluster-node-timeout plus an election (a few
# seconds). A command is tried this many times (redis-py 8.1 takes the count from the Retry,
# not yet its backoff) before it fails; then the crawler's TransientError
# (adapters/errors.py) lets the task or the dispatcher try again.
CLUSTER_RETRIES = 10


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


def connect(url: str, cluster: bool) -> Client:
    """A client of the server at `url`, or of the cluster one of whose nodes is at `url`
    (several, comma-separated: a process started while the first is down finds another)."""
    if cluster:
        first, *others = url.split(",")
        nodes = [ClusterNode(p.hostname or "127.0.0.1", p.port or 6379)  # type: ignore[no-untyped-call]
                 for p in map(urlsplit, others)]
        return Cluster.from_url(
            first, startup_nodes=nodes, health_check_interval=30,
            retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), CLUSTER_RETRIES))
    return redis.Redis.from_url(url, health_check_interval=30)


def flush(client: Client) -> None:
    """Empty the database (every master of a cluster); the tests' servers only."""
    if isinstance(client, RedisCluster):
        client.flushdb(target_nodes=RedisCluster.PRIMARIES)
    else:
        client.flushdb()
