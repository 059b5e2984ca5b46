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
