"""`crawlctl crawl`: the worker, beat and dispatcher as child processes, and idle detection."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from crawlapp.context import Context

PR_SET_PDEATHSIG = 1
IDLE_CHECKS = 3  # consecutive idle readings, half a second apart, before a crawl is done


def _die_with_parent() -> None:
    """Linux: a child gets SIGTERM when the crawl process dies, so none is orphaned."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def child_commands(ctx: Context, workers: int) -> dict[str, list[str]]:
    """A fetch worker (threads: its tasks mostly wait on the network), a pipeline worker
    (processes: parsing and storing use CPU), beat and the dispatcher."""
    from celeryconfig import FETCH_QUEUES, PIPELINE_QUEUES

    celery = [sys.executable, "-m", "celery", "-A", "crawlapp.celery_app"]
    common = ["-E", "--without-gossip", "--without-mingle", "--loglevel", "WARNING"]
    return {
        "fetch-worker": [*celery, "worker", "-Q", ",".join(FETCH_QUEUES), "-P", "threads",
                         "-c", str(ctx.settings.fetch_concurrency), *common,
                         "-n", f"fetch{os.getpid()}@%h"],
        "pipeline-worker": [*celery, "worker", "-Q", ",".join(PIPELINE_QUEUES), "-P", "prefork",
                            "-c", str(workers), *common, "-n", f"pipeline{os.getpid()}@%h"],
        "beat": [*celery, "beat", "--loglevel", "WARNING",
                 "-s", str(ctx.settings.data_dir / "celerybeat-schedule")],
        "dispatcher": [sys.executable, "-m", "crawlapp.cli", "dispatcher"],
    }


@dataclass
class Fleet:
    """The child processes of one `crawlctl crawl`."""

    log_dir: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, commands: dict[str, list[str]]) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name, cmd in commands.items():
            log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
            self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL,
                                                preexec_fn=_die_with_parent)
            log.close()

    def dead(self) -> list[str]:
        return [name for name, proc in self.procs.items() if proc.poll() is not None]

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM every child (warm shutdown), then SIGKILL what is still there."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_until_idle(ctx: Context, fleet: Fleet, poll: float = 0.5) -> None:
    """Block until the frontier is empty and no batch is in flight, for IDLE_CHECKS readings."""
    idle_for = 0
    while idle_for < IDLE_CHECKS:
        time.sleep(poll)
        dead = fleet.dead()
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited; see {fleet.log_dir}")
        idle_for = idle_for + 1 if ctx.frontier.is_idle(time.time()) else 0


def wait_forever(fleet: Fleet, poll: float = 1.0) -> None:
    while True:
        time.sleep(poll)
        dead = fleet.dead()
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited; see {fleet.log_dir}")
