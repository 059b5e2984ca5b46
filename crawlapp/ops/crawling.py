"""A crawl on one machine: the stores made ready, then the workers as children and the
dispatcher and beat as threads, until the crawl is idle or stopped."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from crawlapp.adapters.blobstore import S3BlobStore
from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.proctree import TreePeak
from crawlapp.core.errors import FrontierLayoutError
from crawlapp.ops import dispatcher as dispatching
from crawlapp.ops import runner
from crawlapp.ops.dispatcher import SendBatch
from crawlapp.ops.rebuild import ensure_frontier


def prepare(ctx: Context, lay_out: bool = False) -> dict[str, int] | None:
    """Make the stores ready for seeds and fetches: the newest schema, the bucket, and a
    frontier rebuilt from the database if Redis lost it (`lay_out`: and laid out in
    CRAWL_SHARDS shards if it was in another number). Returns what was rebuilt (None or all
    zeros when there was nothing to)."""
    upgrade(ctx.settings)
    if isinstance(ctx.blobs, S3BlobStore):
        ctx.blobs.ensure_bucket()
    return ensure_frontier(ctx, lay_out=lay_out)

# The process tree's memory is read this often (a reading of a crawl's ~20 processes and
# their browsers costs about 25 ms of CPU).
MEMORY_READ_SECONDS = 2.0


@dataclass(frozen=True)
class Run:
    """One `crawl` that ended: how long it ran, when it was seen idle (time.time(); None:
    never) and how long its end took from then, how often a child was restarted, where the
    children's logs are, and the peak memory (PSS, bytes) of its whole process tree (this
    process, the workers, their browsers) with each kind's share at that peak."""

    seconds: float
    idle_at: float | None
    stopping: float
    restarted: int
    log_dir: Path
    peak_memory: int = 0
    memory_shares: dict[str, int] = field(default_factory=dict)


class Beat(Protocol):
    """Beat's schedule, kept by a thread of this process (crawlapp.app.beat.BeatThread)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


def crawl(ctx: Context, send: SendBatch, beat: Beat, workers: int, until_idle: bool,
          on_interrupt: Callable[[], None], tick: Callable[[], None] = lambda: None) -> Run:
    """Run the fleet, beat and the dispatcher until the crawl is idle (`until_idle`) or
    forever; `tick` is called at each look (the progress line).

    A KeyboardInterrupt calls `on_interrupt` before the shutdown starts, then goes on up
    once every child has stopped. An idle crawl's workers get a cold shutdown (no task is
    running or queued; a warm one waits for the pool's housekeeping).
    """
    # The dispatcher and beat run here, as threads (two Python processes fewer to start);
    # beat sends no dispatch tasks: each would cost the pipeline worker a task a second.
    fleet = runner.Fleet(ctx.settings.data_dir / "logs")
    started = time.time()
    fleet.start(runner.child_commands(ctx, workers))
    memory = TreePeak(os.getpid(), fleet.name_of, MEMORY_READ_SECONDS, root_kind="crawl")
    memory.start()
    stop = threading.Event()
    ended: list[FrontierLayoutError] = []  # what ended the dispatcher

    def dispatch() -> None:
        try:
            dispatching.run(ctx, send, stop)
        except FrontierLayoutError as exc:
            ended.append(exc)

    def watch() -> None:
        if ended:
            raise ended[0]
        tick()

    thread = threading.Thread(target=dispatch, name="dispatcher", daemon=True)
    thread.start()
    beat.start()
    idle_at: float | None = None
    try:
        if until_idle:
            runner.wait_until_idle(ctx, fleet, watch)
            idle_at = time.time()
        else:
            runner.wait_forever(fleet, watch)
    except KeyboardInterrupt:
        on_interrupt()
        raise
    finally:
        stop.set()
        beat.stop()
        thread.join(10)
        memory.stop()
        fleet.stop(timeout=5.0, cold=True) if idle_at else fleet.stop()
    finished = time.time()
    return Run(finished - started, idle_at, finished - (idle_at or finished), fleet.restarted,
               fleet.log_dir, memory.peak, dict(memory.shares.most_common()))
