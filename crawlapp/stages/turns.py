"""A fetch process's own check of politeness, behind the frontier's leases (stages/fetching.py).

The frontier leases a host to one batch at a time and makes it ready again no sooner than a
delay after its last answer, so a chain of a host's requests never meets another one of the
same host. `HostTurns` holds that on the process's side as well, as Scrapy's downloader slots
do: a chain that would start while another chain of its host runs in this process, or sooner
than the delay after that chain's last answer, waits for its turn, and is reported (logged
with both leases' tokens and counted), for it means the frontier handed out a host still
held. One fetch process sees only its own chains: a fleet's several processes rely on the
leases alone.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from crawlapp.core.records import Lease

log = logging.getLogger(__name__)
# A lease's not_before comes from the frontier's Lua, which writes a time with 14 significant
# digits (50 us of a UNIX time): a start later than it by no more than this is its own.
TOLERANCE = 0.001


@dataclass
class _Turn:
    """A host's chain under way: its lease's token, and the event set as it ends."""

    token: str
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class HostTurns:
    """The hosts a fetch process is asking, across its batches (one event loop)."""

    def __init__(self) -> None:
        self._running: dict[str, _Turn] = {}
        # host -> the earliest start of its next request, for chains ended lately, in the
        # order they ended (dropped once passed: bounded by the hosts asked within a delay)
        self._after: OrderedDict[str, float] = OrderedDict()

    async def begin(self, lease: Lease) -> tuple[float, bool]:
        """Take `lease`'s host's turn, waiting while another chain of the host runs here.
        Returns the earliest time its first request may start (its not_before, or the end of
        the delay after the last answer the host gave this process, if later) and whether
        the lease came too soon (another chain of its host under way, or that delay not
        over): reported, for the frontier should never lease a host so."""
        held_by: list[str] = []
        while (other := self._running.get(lease.host)) is not None:
            held_by.append(other.token)
            await other.ended.wait()
        self._forget_passed(time.time())
        start = max(lease.not_before, self._after.get(lease.host, 0.0))
        self._running[lease.host] = _Turn(lease.token)
        too_soon = bool(held_by) or start > lease.not_before + TOLERANCE
        if too_soon:
            log.error("%s was leased to %s %s; its requests wait for their turn (%.3f s "
                      "after the lease allowed)", lease.host, lease.token,
                      f"while the lease {held_by[0]} of it was being asked" if held_by
                      else "less than a delay after its last answer", start - lease.not_before)
        return start, too_soon

    def end(self, host: str, next_start: float) -> None:
        """The chain of `host` under way here ended; no request to the host from this
        process starts before `next_start`."""
        turn = self._running.pop(host)
        self._after.pop(host, None)
        self._after[host] = next_start
        turn.ended.set()

    def _forget_passed(self, now: float) -> None:
        while self._after:
            host, at = next(iter(self._after.items()))
            if at > now:
                return
            del self._after[host]


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HostTurns] = (
    weakref.WeakKeyDictionary())


def host_turns() -> HostTurns:
    """The HostTurns of the running event loop (a fetch process's one fetch loop)."""
    loop = asyncio.get_running_loop()
    turns = _BY_LOOP.get(loop)
    if turns is None:
        turns = _BY_LOOP[loop] = HostTurns()
    return turns
