"""The batch ledger: fetch batches between dispatch and the end of extract_links.

A batch's fetch (and render) is taken up once (`take_up`): a broker may deliver its message
again while the first worker still runs it (RabbitMQ does as soon as that worker's
connection drops), and a second run under the same leases would ask the same hosts at once.

Each stage extends its batch's deadline when it starts; a batch past its deadline was lost
with a worker (after its leases ended), and the dispatcher queues its URLs again from the
ledger (`expired`) before forgetting it. `crawl --until-idle` waits for an empty ledger.
Nothing to rebuild: a lost batch's URLs are still 'queued' rows, queued again by a rebuild.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgpack

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, text
from crawlapp.adapters.redis.lua import Lua
from crawlapp.core.records import Lease

# KEYS: the run key of a batch's stage; ARGV: attempt (the task's retries so far), seconds,
# the run's token
# Takes the stage up for this attempt unless another run took it up for this attempt or a
# later one already (the same run asking again, its first answer lost, is answered 1); the
# key expires after `seconds`. Returns 1 if taken up.
_TAKE_UP = Lua("""
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] .. ' ' .. ARGV[3] then return 1 end
if held and tonumber(string.match(held, '^%d+')) >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[3], 'EX', ARGV[2])
return 1
""")


class BatchLedger:
    """`{P:batches}:due` (batch id -> deadline) and each batch's URLs."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.due = keys.BATCHES.of(prefix)

    def _urls(self, batch_id: str) -> str:
        return keys.BATCH_URLS.of(self.prefix, batch=batch_id)

    def track(self, batch_id: str, deadline: float, leases: Iterable[Lease] | None = None
              ) -> None:
        """Record a batch in flight until `deadline`, with its leases' URLs when given."""
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(self.due, {batch_id: deadline})
        if leases is not None:
            pipe.set(self._urls(batch_id),
                     msgpack.packb([[lease.url, lease.depth] for lease in leases]))
        pipe.execute()

    def take_up(self, batch_id: str, stage: str, attempt: int, seconds: int, run: str
                ) -> bool:
        """Whether this run (`run`: its token) of a batch's stage is the one to do it: False
        for a second delivery of a message already taken up (not for a retry: `attempt`
        counts those); True again for the same run asking again."""
        key = keys.BATCH_RUN.of(self.prefix, stage=stage, batch=batch_id)
        return bool(_TAKE_UP(self.client, [key], [attempt, seconds, run]))

    def finish(self, batch_id: str) -> None:
        pipe = self.client.pipeline(transaction=False)
        pipe.zrem(self.due, batch_id)
        pipe.delete(self._urls(batch_id))
        pipe.execute()

    def in_flight(self) -> int:
        """Batches in the pipeline, including lost ones not yet handed back."""
        return int(self.client.zcard(self.due))

    def urls_in_flight(self, now: float) -> set[str]:
        """The URLs of the batches not past their deadline at `now`."""
        ids: list[bytes] = self.client.zrangebyscore(  # type: ignore[assignment]
            self.due, f"({now!r}", "+inf")
        return {url for pairs in self._pairs([text(i) for i in ids]).values()
                for url, _ in pairs}

    def expired(self, now: float, limit: int = 100) -> dict[str, list[tuple[str, int]]]:
        """Batches past their deadline, with their (url, depth) pairs."""
        due: list[bytes] = self.client.zrangebyscore(  # type: ignore[assignment]
            self.due, "-inf", now, start=0, num=limit)  # members only: no scores asked
        return self._pairs([text(i) for i in due])

    def _pairs(self, ids: list[str], chunk: int = 500) -> dict[str, list[tuple[str, int]]]:
        """The (url, depth) pairs of each batch of `ids` (none where its URLs are not kept),
        read `chunk` batches a round trip."""
        out: dict[str, list[tuple[str, int]]] = {}
        for start in range(0, len(ids), chunk):
            part = ids[start:start + chunk]
            raw = self.client.mget([self._urls(i) for i in part])
            out.update({i: [(str(u), int(d)) for u, d in msgpack.unpackb(v)] if v else []
                        for i, v in zip(part, raw, strict=True)})
        return out
