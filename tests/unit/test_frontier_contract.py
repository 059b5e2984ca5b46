"""The frontier's behaviour on the in-memory frontier (tests/frontier_contract.py)."""

from __future__ import annotations

import pytest

from crawlapp.adapters.memory_frontier import MemoryFrontier
from crawlapp.core.ports import Frontier
from tests.frontier_contract import FrontierContract, MakeFrontier


class TestMemoryFrontier(FrontierContract):
    @pytest.fixture
    def make(self) -> MakeFrontier:
        def make(shards: int = 2) -> Frontier:
            return MemoryFrontier(shards)

        return make
