"""Worker health in Redis: each worker process reports its resident memory now and then."""

from __future__ import annotations

import os
import resource
import socket
import time
from typing import Any

from crawlapp.adapters.context import Context


def _rss_mib() -> tuple[float, float]:
    """This process's resident memory now and at its peak, in MiB."""
    with open(f"/proc/{os.getpid()}/statm") as statm:
        pages = int(statm.read().split()[1])
    now = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return round(now, 1), round(max(now, peak), 1)


def report(ctx: Context) -> None:
    """Record this process's memory under the `workers` hash (field host:pid)."""
    now, peak = _rss_mib()
    ctx.redis.hset(ctx.key("workers"), f"{socket.gethostname()}:{os.getpid()}",
                   f"{now} {peak} {time.time():.0f}")


def read(ctx: Context, max_age: float = 300.0) -> dict[str, dict[str, Any]]:
    """The processes that reported within `max_age` seconds: rss and peak in MiB."""
    out = {}
    for name, raw in ctx.redis.hgetall(ctx.key("workers")).items():
        now, peak, at = raw.decode().split()
        if time.time() - float(at) <= max_age:
            out[name.decode()] = {"rss_mib": float(now), "peak_rss_mib": float(peak)}
    return out
