"""The frontier's behaviour (tests/frontier_contract.py) on the Redis frontier and real Redis."""

from __future__ import annotations

import pytest
import redis

from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.core.ports import Frontier
from tests.frontier_contract import FrontierContract, MakeFrontier


class TestRedisFrontier(FrontierContract):
    @pytest.fixture
    def make(self, redis_url: str) -> MakeFrontier:
        client = redis.Redis.from_url(redis_url)

        def make(shards: int = 2) -> Frontier:
            return RedisFrontier(client, "t", shards)

        return make
