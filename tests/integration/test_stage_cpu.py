"""CPU per pipeline stage: counted in Redis by context.timed, shown by stats.collect."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawlapp.adapters import context
from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.core.settings import load_settings
from crawlapp.observe import stats


def test_timed_stages_add_their_cpu(tmp_path: Path, redis_url: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url}))
    upgrade(ctx.settings)
    monkeypatch.setattr(context, "get_context", lambda: ctx)

    @context.timed("parse")
    def busy(n: int) -> int:
        return sum(i * i for i in range(n))

    @context.timed("store")
    def failing() -> None:
        sum(i * i for i in range(200_000))
        raise ValueError("stage failed")

    assert busy.__name__ == "busy" and busy(300_000) == sum(i * i for i in range(300_000))
    once = ctx.counters.read_stage_cpu()["parse"]
    busy(300_000)
    with pytest.raises(ValueError):
        failing()
    seconds = ctx.counters.read_stage_cpu()
    assert 0 < once < seconds["parse"] and seconds["store"] > 0
    assert stats.collect(ctx, with_queues=False)["stage_cpu_seconds"] == seconds
