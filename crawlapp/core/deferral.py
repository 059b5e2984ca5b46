"""When a crawl run until idle is done, and why the hosts it leaves for later wait. Pure.

A crawl is done once no batch is in flight and nothing is due within the horizon
(CRAWL_IDLE_HORIZON): a host whose robots.txt is to be asked again later, one asked to wait
(Retry-After, Crawl-delay), throttled, backing off or parked keeps its URLs and its time in
the frontier, and the next crawl (or a fleet's dispatcher) asks it at that time.
"""

from __future__ import annotations

from dataclasses import dataclass

ROBOTS_FAILED = frozenset({0, 429})  # robots.txt answers, besides 5xx, that allow nothing for now


@dataclass(frozen=True, slots=True)
class Deferred:
    """A host left for later: why it waits and when it is asked again."""

    host: str
    reason: str
    until: float


def is_done(next_due: float | None, now: float, horizon: float) -> bool:
    """Nothing is due within `horizon` seconds of `now`; `next_due` is when the frontier next
    has work (None: it has none)."""
    return next_due is None or next_due > now + horizon


def robots_failed(status: int | None) -> bool:
    """The last robots.txt answer (None: never asked; 0: no answer) allows nothing for now."""
    return status is not None and (status in ROBOTS_FAILED or status >= 500)


def waiting_reason(failures: int, throttled: bool, robots_status: int | None) -> str:
    """Why a host that is not parked waits, from what the crawl keeps of it: its failures in
    a row, whether a 429/503 without Retry-After throttles it, and its origin's last
    robots.txt answer."""
    if failures and robots_failed(robots_status):
        return ("robots.txt not answered" if robots_status == 0
                else f"robots.txt answered {robots_status}")
    if throttled:
        return "throttled (429/503 without Retry-After)"
    if failures:
        return f"backing off after {failures} failure(s) in a row"
    return "asked to wait (Retry-After or Crawl-delay)"
