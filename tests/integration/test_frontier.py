"""The frontier's behaviour (tests/frontier_contract.py) on the Redis frontier and real Redis:
one server, and a Redis Cluster of 3 masters (each shard's keys in one slot)."""

from __future__ import annotations

import pytest

from crawlapp.adapters.redis.client import connect
from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.core.ports import Frontier
from tests.frontier_contract import FrontierContract, MakeFrontier


def maker(url: str, cluster: bool) -> MakeFrontier:
    client = connect(url, cluster)

    def make(shards: int = 2) -> Frontier:
        return RedisFrontier(client, "t", shards)

    return make


class TestRedisFrontier(FrontierContract):
    @pytest.fixture
    def make(self, redis_url: str) -> MakeFrontier:
        return maker(redis_url, cluster=False)


class TestRedisClusterFrontier(FrontierContract):
    @pytest.fixture
    def make(self, redis_cluster_url: str) -> MakeFrontier:
        return maker(redis_cluster_url, cluster=True)
