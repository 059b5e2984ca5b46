"""The client of a Redis role (CRAWL_REDIS_URL, CRAWL_DEDUP_REDIS_URL): one Redis server, or
a Redis Cluster reached through any of its nodes (CRAWL_REDIS_CLUSTER, CRAWL_DEDUP_CLUSTER).

The owners in adapters/redis take either: a command, script or MULTI touches the keys of one
hash slot (keys.py), pipelines may mix slots (redis-py's ClusterPipeline sends each node its
part), SCAN walks every master (RedisCluster.scan_iter).
"""

from __future__ import annotations

import redis
from redis.backoff import ExponentialBackoff
from redis.client import Pipeline as ServerPipeline
from redis.cluster import ClusterPipeline, RedisCluster
from redis.retry import Retry

Client = redis.Redis | RedisCluster
Pipeline = ServerPipeline | ClusterPipeline

# A master lost is replaced by its replica after cluster-node-timeout plus an election (a few
# seconds): a command tries again for about as long before it fails, then the crawler's
# TransientError (adapters/errors.py) lets the task retry.
CLUSTER_RETRIES = 10


def connect(url: str, cluster: bool) -> Client:
    """A client of the server at `url`, or of the cluster one of whose nodes is at `url`."""
    if cluster:
        return RedisCluster.from_url(
            url, health_check_interval=30,
            retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), CLUSTER_RETRIES))
    return redis.Redis.from_url(url, health_check_interval=30)


def flush(client: Client) -> None:
    """Empty the database (every master of a cluster); the tests' servers only."""
    if isinstance(client, RedisCluster):
        client.flushdb(target_nodes=RedisCluster.PRIMARIES)
    else:
        client.flushdb()
