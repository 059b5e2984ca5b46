"""ride_out (adapters/redis/client.py): Redis's failures are tried again, with a capped
backoff and for a bounded time; anything else is raised at once."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import redis

from crawlapp.adapters.redis.client import ride_out
from crawlapp.core.errors import TransientError

CLIENT = redis.Redis(host="127.0.0.1", port=1)  # never reached: its pool is only dropped


def failing(times: int, error: Exception) -> tuple[list[float], Callable[[], str]]:
    calls: list[float] = []

    def call() -> str:
        calls.append(time.monotonic())
        if len(calls) <= times:
            raise error
        return "done"
    return calls, call


def test_redis_failing_is_tried_again_until_it_answers() -> None:
    calls, call = failing(3, redis.ConnectionError("refused"))
    assert ride_out(CLIENT, call, 10, "test") == "done"
    assert len(calls) == 4 and calls[-1] - calls[0] < 1.6


def test_the_crawlers_own_redis_fault_is_tried_again_too() -> None:
    calls, call = failing(1, TransientError("Redis", "a write was sent again"))
    assert ride_out(CLIENT, call, 10, "test") == "done"
    assert len(calls) == 2


def test_it_gives_up_after_its_seconds() -> None:
    calls, call = failing(1000, redis.TimeoutError("slow"))
    started = time.monotonic()
    with pytest.raises(redis.TimeoutError):
        ride_out(CLIENT, call, 1.0, "test")
    assert 1.0 <= time.monotonic() - started < 1.7 and len(calls) > 2


@pytest.mark.parametrize("error", [ValueError("a bug"), TransientError("the database", "down"),
                                   redis.ResponseError("WRONGTYPE")])
def test_anything_else_is_raised_at_once(error: Exception) -> None:
    calls, call = failing(1, error)
    with pytest.raises(type(error)):
        ride_out(CLIENT, call, 10, "test")
    assert len(calls) == 1
