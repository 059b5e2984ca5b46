"""The crawl's Celery queue names, from the settings: the one list every part uses."""

from __future__ import annotations

from dataclasses import dataclass

from crawlapp.core.settings import Settings

PIPELINE_QUEUES = ("parse", "dedup", "store", "links", "control")


def fetch_queue(shard: int) -> str:
    """The queue of a frontier shard's fetch batches."""
    return f"fetch.{shard}"


def render_queue(shard: int) -> str:
    """The queue of a frontier shard's pages to render (only with CRAWL_RENDER)."""
    return f"render.{shard}"


@dataclass(frozen=True)
class Queues:
    """Fetch queues (one per shard), render queues (the same shards, only with CRAWL_RENDER)
    and the pipeline's."""

    fetch: tuple[str, ...]
    render: tuple[str, ...]
    pipeline: tuple[str, ...] = PIPELINE_QUEUES

    @classmethod
    def of(cls, settings: Settings) -> Queues:
        shards = range(settings.shards)
        return cls(fetch=tuple(map(fetch_queue, shards)),
                   render=tuple(map(render_queue, shards)) if settings.render else ())

    @property
    def all(self) -> tuple[str, ...]:
        """Every queue of the crawl: what workers consume, `queues` lists and purges, stats
        and metrics measure."""
        return (*self.fetch, *self.render, *self.pipeline)
