"""How every Lua script of the crawler runs: a `Lua` per script, called with its KEYS (each
script's header comment declares them; a script touches no key outside them but for keys
built from one with the same hash tag) and its ARGV.

Scripts go by EVAL, on a client or into a pipeline: Redis caches the compiled script by its
SHA1, and a pipeline needs no extra round trip (redis-py's Script asks SCRIPT EXISTS before
every pipeline that holds one) nor a retry after Redis lost its script cache. They are sent
as commands (a cluster pipeline has no `eval` method): a cluster routes each by its KEYS,
which must share a slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crawlapp.adapters.redis.client import Client, Pipeline


class Lua:
    """One script; `source` must not change (Redis caches it by its SHA1)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __call__(self, target: Client | Pipeline, keys: Sequence[str],
                 args: Sequence[Any] = ()) -> Any:
        """Run it (on a client: its reply; on a pipeline: queued, the reply comes with the
        pipeline's)."""
        send: Any = target.execute_command  # untyped on redis-py's cluster classes
        return send("EVAL", self.source, len(keys), *keys, *args)
