"""The fetch process's turns (stages/turns.py): what it keeps of the hosts it asked is bounded
by those asked within a delay, not by every host of the crawl."""

from __future__ import annotations

import asyncio
import time

from crawlapp.core.records import Lease
from crawlapp.stages.turns import HostTurns


def test_hosts_whose_delay_is_over_are_forgotten() -> None:
    async def run() -> tuple[int, tuple[float, bool]]:
        turns, now = HostTurns(), time.time()
        for n in range(1000):
            lease = Lease(0, f"h{n}.test", f"t{n}", f"http://h{n}.test/", 0, now)
            await turns.begin(lease)
            turns.end(lease.host, now - 1 if n < 990 else now + 60)  # the last ten: a minute
        kept = len(turns._after)  # each turn taken drops the hosts whose delay is over
        got = await turns.begin(Lease(0, "h995.test", "again", "http://h995.test/", 0, now))
        return kept, got

    kept, (start, too_soon) = asyncio.run(run())
    assert kept == 10  # the ten whose minute runs, not the thousand asked
    assert too_soon and start > time.time() + 50  # h995 waits out its minute


def test_a_lease_at_its_hosts_time_as_the_frontier_wrote_it_is_on_time() -> None:
    """The frontier's Lua writes a lease's not_before with 14 significant digits: a lease at
    the very time its host's last chain allowed, so rounded down, is no lease too soon."""
    rounded = round(time.time() + 10, 4)  # a UNIX time in 14 digits: 4 decimals
    allowed = rounded + 0.00004  # written so, it is `rounded`
    assert float(f"{allowed:.14g}") == rounded

    async def run() -> tuple[float, bool]:
        turns = HostTurns()
        await turns.begin(Lease(0, "a.test", "A", "http://a.test/", 0, 0.0))
        turns.end("a.test", allowed)
        return await turns.begin(Lease(0, "a.test", "B", "http://a.test/", 0, rounded))

    start, too_soon = asyncio.run(run())
    assert rounded < allowed and start == allowed and not too_soon
