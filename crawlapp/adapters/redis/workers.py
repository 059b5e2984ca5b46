"""Worker health in Redis: each worker process reports its resident memory now and then.

`P:workers` is a hash, "host:pid" -> "rss peak time"; a report also deletes the reports of
processes silent for FORGET_AFTER seconds, so the hash holds about one field per live process.
"""

from __future__ import annotations

import os
import resource
import socket
import time
from typing import Any

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client

FORGET_AFTER = 86400.0


def _rss_mib() -> tuple[float, float]:
    """This process's resident memory now and at its peak, in MiB."""
    with open(f"/proc/{os.getpid()}/statm") as statm:
        pages = int(statm.read().split()[1])
    now = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return round(now, 1), round(max(now, peak), 1)


class WorkerReports:
    """The workers hash."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.WORKERS.of(prefix)

    def report(self) -> None:
        """Record this process's memory (field host:pid) and forget the processes long
        silent (one round trip, two when some are)."""
        now, peak = _rss_mib()
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(self.key, f"{socket.gethostname()}:{os.getpid()}",
                  f"{now} {peak} {time.time():.0f}")
        pipe.hgetall(self.key)
        silent = [name for name, (_, _, at) in _parse(pipe.execute()[1]).items()
                  if time.time() - at > FORGET_AFTER]
        if silent:
            self.client.hdel(self.key, *silent)

    def read(self, max_age: float = 300.0) -> dict[str, dict[str, Any]]:
        """The processes that reported within `max_age` seconds: rss and peak in MiB."""
        return {name: {"rss_mib": now, "peak_rss_mib": peak}
                for name, (now, peak, at) in _parse(self.client.hgetall(self.key)).items()
                if time.time() - at <= max_age}


def _parse(raw: dict[Any, Any]) -> dict[str, tuple[float, float, float]]:
    """The reports as (rss, peak, time) by process."""
    out = {}
    for name, value in raw.items():
        now, peak, at = value.decode().split()
        out[name.decode()] = (float(now), float(peak), float(at))
    return out
