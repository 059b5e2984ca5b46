"""Periodic tasks driven by Celery beat."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler

from crawlapp.adapters.context import get_context
from crawlapp.adapters.errors import Outage, server_error
from crawlapp.app import app, preload
from crawlapp.app.chain import send_batch
from crawlapp.app.config import DISPATCH_ENTRY
from crawlapp.core.retry import SERVERS, Server

# The modules of beat's tasks, imported in their bodies: beat only sends them, and the worker
# that consumes `control` imports these when it starts (see `preload`).
CONTROL_MODULES = ("crawlapp.adapters.db.engine", "crawlapp.adapters.db.repository",
                   "crawlapp.ops.authority", "crawlapp.ops.dispatcher",
                   "crawlapp.stages.recrawling")
preload({"control": CONTROL_MODULES})
RETRY_SECONDS = SERVERS[Server.BEAT].cap  # BeatThread's wait after a tick that failed
log = logging.getLogger(__name__)


def periodic(doing: str) -> Callable[[Callable[[], int]], Callable[[], int]]:
    """A periodic task that a server's outage skips (0 done: the next tick tries again), told
    once by each worker process as it begins, every minute, and as it ends (Outage), not
    with a traceback a tick; any other failure is raised as it is."""

    def wrap(task: Callable[[], int]) -> Callable[[], int]:
        outage = Outage(log, doing, "skipped until its next tick")

        @functools.wraps(task)
        def run() -> int:
            try:
                done = task()
            except Exception as exc:
                if server_error(exc) is None:
                    raise
                outage.failed(exc)
                return 0
            outage.ended()
            return done
        return run
    return wrap


@app.task(name="crawl.dispatch")
def dispatch() -> int:
    """Safety net for the dispatcher process: lease ready hosts and send their batches."""
    from crawlapp.ops.dispatcher import dispatch_once  # imported here: see CONTROL_MODULES
    largest, _ = dispatch_once(get_context(), send_batch)
    return largest


@app.task(name="crawl.recrawl")
@periodic("queueing due re-crawls")
def recrawl() -> int:
    """Queue the pages whose next crawl time has come (claimed atomically, crash-safe)."""
    from crawlapp.stages.recrawling import drain  # imported here: see CONTROL_MODULES
    return drain(get_context())


@app.task(name="crawl.authority")
@periodic("scoring host authority")
def host_authority() -> int:
    """Score the hosts of the host graph again (PageRank); returns how many were scored."""
    from crawlapp.ops import authority  # imported here: see CONTROL_MODULES
    return authority.compute(get_context())


@app.task(name="crawl.partitions")
def fetch_partitions() -> list[str]:
    """Give the fetch history its partitions for this month and the next (Postgres)."""
    from crawlapp.adapters.db import repository  # imported here: see CONTROL_MODULES
    with get_context().sessions.begin() as session:
        return repository.add_fetch_months(session)


@app.task(name="crawl.host_counts")
@periodic("folding host counts")
def fold_host_counts() -> int:
    """Fold the per-statement deltas of the host counters into their totals (Postgres)."""
    from crawlapp.adapters.db import repository  # imported here: see CONTROL_MODULES
    with get_context().sessions.begin() as session:
        return repository.fold_host_counts(session)


class _Scheduler(PersistentScheduler):  # type: ignore[misc]
    """beat's scheduler with a broker that does not answer told once (adapters/errors.py:
    Outage), where beat's own says so with a traceback at every entry due."""

    outage = Outage(log, "beat: sending a due task", "sent at its next time")

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        try:
            self.apply_async(entry, producer=producer, advance=False)
        except Exception as exc:  # noqa: BLE001 - as beat's: an entry never ends the beat
            self.outage.failed(exc)
        else:
            self.outage.ended()


class BeatThread(threading.Thread):
    """Beat as a thread of `crawlctl crawl`, which runs the dispatcher itself: the schedule of
    `celery beat` but for its dispatch tick, kept in `schedule_file` as beat keeps it. It sleeps
    until its next task is due (beat's own loop wakes every second in a thread) and stops at
    once; a process of its own would cost a second of CPU to start."""

    def __init__(self, schedule_file: Path) -> None:
        super().__init__(name="beat", daemon=True)
        app.conf.beat_schedule = {name: entry for name, entry in app.conf.beat_schedule.items()
                                  if name != DISPATCH_ENTRY}
        schedule_file.parent.mkdir(parents=True, exist_ok=True)  # a data dir nothing made yet
        self.scheduler = _Scheduler(app=app, schedule_filename=str(schedule_file))
        self._stopping = threading.Event()

    def run(self) -> None:
        ticks = Outage(log, "beat: a tick", f"trying again in {RETRY_SECONDS:g} s")
        try:
            while not self._stopping.is_set():
                try:
                    interval = self.scheduler.tick()
                    if self.scheduler.should_sync():
                        self.scheduler._do_sync()  # as celery.beat.Service does
                except Exception as exc:  # beat must outlive a failed tick: nothing restarts it
                    ticks.failed(exc)
                    interval = RETRY_SECONDS
                else:
                    ticks.ended()
                self._stopping.wait(interval)
        finally:
            self.scheduler.close()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self.join(timeout)
