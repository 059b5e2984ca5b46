"""Crawl counters kept in one Redis hash, so every worker process adds to the same numbers."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import ParamSpec, TypeVar, cast

from crawlapp.adapters.context import Context, get_context

P = ParamSpec("P")
R = TypeVar("R")


def bump(ctx: Context, counts: Mapping[str, int], prefix: str = "",
         refused: Mapping[tuple[str, str], int] | None = None) -> None:
    """Add `counts` to the crawl counters, and count refused links by reason (the counters)
    and by host (one hash per reason), in one round trip."""
    items = {f"{prefix}{k}": v for k, v in counts.items() if v}
    if not items and not refused:
        return
    pipe = ctx.redis.pipeline(transaction=False)
    for field, value in items.items():
        pipe.hincrby(ctx.key("counters"), field, value)
    for (reason, host), n in (refused or {}).items():
        pipe.hincrby(ctx.key("counters"), f"refused:{reason}", n)
        pipe.hincrby(ctx.key("refused", reason), host, n)
    pipe.execute()


def read(ctx: Context) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in ctx.redis.hgetall(ctx.key("counters")).items()}


def timed(stage: str, elsewhere: Callable[[], float] = lambda: 0.0
          ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Add the CPU time the calling thread spends in the wrapped stage, plus what
    `elsewhere()` reports for other threads doing its work, to the `stage_cpu` hash, and
    count the call under `<stage>:batches` (one round trip per batch)."""
    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.thread_time()
            try:
                return func(*args, **kwargs)
            finally:
                ctx = get_context()
                pipe = ctx.redis.pipeline(transaction=False)
                used = time.thread_time() - started + elsewhere()
                pipe.hincrbyfloat(ctx.key("stage_cpu"), stage, used)
                pipe.hincrby(ctx.key("stage_cpu"), f"{stage}:batches", 1)
                pipe.execute()
        return run
    return wrap


def read_stage_cpu(ctx: Context) -> dict[str, float]:
    """CPU seconds spent in each stage so far, summed over every worker."""
    seconds = cast(dict[bytes, bytes], ctx.redis.hgetall(ctx.key("stage_cpu")))
    return {k.decode(): float(v) for k, v in seconds.items()}
