"""Crawl counters kept in Redis hashes, so every worker process adds to the same numbers.

  P:counters           HASH counter name -> value (the names observe/metrics.py reads)
  P:refused:<reason>   HASH host -> links refused for that reason
  P:stage_cpu          HASH stage -> CPU seconds, "<stage>:batches" -> batches
They count for the whole crawl: nothing deletes them but the crawl's end (FLUSHDB of its
Redis resets them; Prometheus handles a counter reset) and nothing rebuilds them.
"""

from __future__ import annotations

from collections.abc import Mapping

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline, text
from crawlapp.adapters.redis.pipeline import joined


class Counters:
    """The counters, refused links per host and CPU per stage."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.counters = keys.COUNTERS.of(prefix)
        self.stage_cpu = keys.STAGE_CPU.of(prefix)

    def bump(self, counts: Mapping[str, int], prefix: str = "",
             refused: Mapping[tuple[str, str], int] | None = None,
             pipe: Pipeline | None = None) -> None:
        """Add `counts` (names given `prefix`) to the counters, and count refused links by
        reason (the counters) and by host (one hash per reason), in one round trip (the
        caller's, with `pipe`)."""
        items = {f"{prefix}{k}": v for k, v in counts.items() if v}
        if not items and not refused:
            return
        with joined(self.client, pipe) as p:
            for field, value in items.items():
                p.hincrby(self.counters, field, value)
            for (reason, host), n in (refused or {}).items():
                p.hincrby(self.counters, f"refused:{reason}", n)
                p.hincrby(keys.REFUSED.of(self.prefix, reason=reason), host, n)

    def read(self) -> dict[str, int]:
        return {text(k): int(v) for k, v in self.client.hgetall(self.counters).items()}

    def add_stage_cpu(self, stage: str, seconds: float) -> None:
        """Add the CPU seconds of one batch of `stage`, and count the batch."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hincrbyfloat(self.stage_cpu, stage, seconds)
        pipe.hincrby(self.stage_cpu, f"{stage}:batches", 1)
        pipe.execute()

    def read_stage_cpu(self) -> dict[str, float]:
        """CPU seconds spent in each stage so far, summed over every worker."""
        return {text(k): float(v) for k, v in self.client.hgetall(self.stage_cpu).items()}
