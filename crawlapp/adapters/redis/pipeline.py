"""Commands of several owners in one round trip: an owner queues its commands on the
caller's pipeline (`joined`) and, for a read, returns a `Reply` that picks its own answers
out of the pipeline's replies once the caller has sent it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from crawlapp.adapters.redis.client import Client, Pipeline

__all__ = ["Pipeline", "Reply", "joined"]

T = TypeVar("T")
Reply = Callable[[Sequence[Any]], T]


@contextmanager
def joined(client: Client, pipe: Pipeline | None) -> Iterator[Pipeline]:
    """The caller's pipeline (sent by the caller), or one of our own sent at the end."""
    if pipe is not None:
        yield pipe
        return
    own = client.pipeline(transaction=False)
    yield own
    own.execute()
