"""`crawlctl crawl`: the workers as child processes, and idle detection."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from crawlapp.adapters.context import Context
from crawlapp.adapters.errors import Outage, transient_errors
from crawlapp.core.deferral import is_done
from crawlapp.core.errors import TransientError
from crawlapp.core.queues import Queues
from crawlapp.ops.rebuild import is_alive

log = logging.getLogger(__name__)
PR_SET_PDEATHSIG = 1
MAX_RESTARTS = 5
IDLE_CHECKS = 2  # consecutive idle readings, half a second apart, before a crawl is done


def _die_with_parent() -> None:
    """Linux: a child gets SIGTERM when the crawl process dies, so none is orphaned."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def child_commands(ctx: Context, workers: int) -> dict[str, list[str]]:
    """Fetch workers (threads: their tasks mostly wait on the network; one process per three
    cores, as fetching is a third of a page's CPU: on two cores a second fetch process costs
    more CPU per page in switching and halves keep-alive reuse), a pipeline worker
    (processes: parsing and storing use CPU), with CRAWL_RENDER the render worker and,
    with CRAWL_METRICS_PORT, the metrics endpoint."""
    queues = Queues.of(ctx.settings)

    # `python -m crawlapp.app` starts them as `celery -A crawlapp.app` would, without loading
    # Celery's command line and its plugins (crawlapp/app/__main__.py).
    celery = [sys.executable, "-m", "crawlapp.app"]
    events = ["-E"] if ctx.settings.task_events else []
    common = [*events, "--loglevel", "WARNING"]
    fetchers = {
        f"fetch-worker-{i}": [*celery, "worker", "-Q", ",".join(queues.fetch), "-P", "threads",
                              "-c", str(ctx.settings.fetch_concurrency), *common,
                              "-n", f"fetch{i}-{os.getpid()}@%h"]
        for i in range(ctx.settings.fetch_processes)}
    # With CRAWL_RENDER: processes (one browser each) on every render.N queue.
    renderers = {"render-worker": [*celery, "worker", "-Q", ",".join(queues.render), "-P",
                                   "prefork", "-c", str(ctx.settings.render_processes), *common,
                                   "-n", f"render{os.getpid()}@%h"]} if queues.render else {}
    port = ctx.settings.metrics_port
    exporter = {"metrics": [sys.executable, "-m", "crawlapp.cli", "metrics", "serve",
                            "--port", str(port)]} if port else {}
    return {
        **fetchers,
        **renderers,
        **exporter,
        "pipeline-worker": [*celery, "worker", "-Q", ",".join(queues.pipeline), "-P", "prefork",
                            "-c", str(workers), *common, "-n", f"pipeline{os.getpid()}@%h"],
    }


@dataclass
class Fleet:
    """The child processes of one `crawlctl crawl`; a child that dies is started again."""

    log_dir: Path
    commands: dict[str, list[str]] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    restarts: list[float] = field(default_factory=list)
    restarted: int = 0

    def start(self, commands: dict[str, list[str]]) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.commands.update(commands)
        for name in commands:
            self._spawn(name)

    def _spawn(self, name: str) -> None:
        with open(self.log_dir / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(self.commands[name], stdout=log,
                                                stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL,
                                                preexec_fn=_die_with_parent)

    def name_of(self, pid: int) -> str | None:
        """The name of the child whose process `pid` is, if one is."""
        return next((name for name, proc in list(self.procs.items()) if proc.pid == pid), None)

    def supervise(self) -> None:
        """Restart children that exited; give up after MAX_RESTARTS within a minute."""
        for name, proc in list(self.procs.items()):
            if proc.poll() is None:
                continue
            now = time.monotonic()
            self.restarts = [t for t in self.restarts if now - t < 60] + [now]
            if len(self.restarts) > MAX_RESTARTS:
                raise RuntimeError(f"{name} keeps exiting (status {proc.returncode}); "
                                   f"see {self.log_dir / (name + '.log')}")
            log.warning("%s exited with status %s; starting it again", name, proc.returncode)
            self.restarted += 1
            self._spawn(name)

    def stop(self, timeout: float = 20.0, cold: bool = False) -> None:
        """SIGTERM every child (warm shutdown: running tasks finish), then SIGKILL what is
        still there. `cold` sends the workers SIGQUIT instead (they stop at once): only for
        a crawl known to be idle, with no task running or queued."""
        for name, proc in self.procs.items():
            if proc.poll() is None:
                quick = cold and "worker" in name
                proc.send_signal(signal.SIGQUIT if quick else signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_until_idle(ctx: Context, fleet: Fleet, watch: Callable[[], None],
                    poll: float = 0.5) -> None:
    """Block until no batch is in flight, nothing in the frontier is due within
    CRAWL_IDLE_HORIZON and no re-crawl is due, for IDLE_CHECKS readings (a Redis that lost
    the frontier is not idle: the dispatcher rebuilds it first). Hosts due later keep their
    URLs and time for the next crawl. `watch` raises what ended a thread the crawl needs."""
    horizon = ctx.settings.idle_horizon
    idle_for = 0
    outage = Outage(log, "reading the frontier", "not idle: asking again")
    while idle_for < IDLE_CHECKS:
        time.sleep(poll)
        fleet.supervise()
        watch()
        now = time.time()
        try:
            with transient_errors():
                # A batch in flight, the usual answer while the crawl runs, is one round trip.
                idle = (not ctx.batches.in_flight() and is_alive(ctx)
                        and is_done(ctx.frontier.next_due(now), now, horizon)
                        and ctx.recrawls.pending(now) == 0)
        except TransientError as exc:  # Redis restarting: not idle, ask again
            outage.failed(exc)
            idle = False
        else:
            outage.ended()
        idle_for = idle_for + 1 if idle else 0


def wait_forever(fleet: Fleet, watch: Callable[[], None], poll: float = 1.0) -> None:
    while True:
        time.sleep(poll)
        fleet.supervise()
        watch()
