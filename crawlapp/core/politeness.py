"""When may a host be asked again after a request? Pure: times are passed in. Which outcome
gets which of the rules below, and what becomes of its URL, is the retry rule's
(core/retry.py, FETCH; the table in docs/retries.md); the times are here.

- Success: the end of the request plus the host's delay.
- 429 or 503 with Retry-After: that long (seconds or an HTTP date), capped at
  `max_retry_after` (24 h).
- 429 or 503 without it: the host is throttled, `throttle_seconds` (60 s) doubling with each
  such answer up to `throttle_max` (a day), plus up to 10 % jitter; the escalation is
  forgiven `forgive_after` (30 min) after the last block ends (see `Throttle`).
- 500, 502, 504, timeouts, connection and protocol errors: exponential backoff per host on
  failures in a row, the delay for the first one, then delay * 2**(failures - 1), capped;
  after `park_after` failures in a row the host is parked. The failed URL goes back behind
  the host's other URLs, so one broken page does not become its host's next request again
  and again: a success in between resets the count.
- A robots.txt answering 429 or 5xx, or not answering: the host is deferred
  `robots_retry` (60 s, doubling with each failure in a row, or a longer Retry-After) and
  robots.txt asked again, at most `max_retries` more times before its "nothing allowed"
  stands for the cycle (cached for 10 minutes; see adapters/redis/robots_cache).
- A response the crawler abandoned (timeout, too large, broken): `abort_grace` more, since
  the server may still be sending it and would see the next request overlap it.
- A failure of the crawler's own resolver (`resolver`): the delay, the host's failures in
  a row kept: a fault of ours is neither a page's failure nor its host's.

The defaults follow StormCrawler and Nutch as Common Crawl runs them.
- A host that cannot be reached for a reason that will not change soon (the address guard
  refuses its address, its name does not resolve, it is not a valid host name, TLS fails)
  is backed off the same way, and after `give_up_after` such failures in a row it is given
  up: parked for good ("unreachable: <error>") until an operator resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from crawlapp.core.records import ADDRESS_REFUSED, FetchError, ParkKind, ParkReason
from crawlapp.core.retry import HostTry, UrlTry, fetch_rule, parse_retry_after
from crawlapp.core.scope import hostname, registrable_domain

_ADDRESS_KINDS = {FetchError.ADDRESS_LOOPBACK: "a loopback address",
                  FetchError.ADDRESS_PRIVATE: "a private address",
                  FetchError.ADDRESS_LINK_LOCAL: "a link-local address",
                  FetchError.ADDRESS_MULTICAST: "a multicast address",
                  FetchError.ADDRESS_UNSPECIFIED: "unspecified (0.0.0.0 or ::)",
                  FetchError.ADDRESS_RESERVED: "a reserved address",
                  FetchError.ADDRESS_INVALID: "not an IP address",
                  FetchError.ADDRESS_NOT_GLOBAL: "not a public address"}


JITTER = 0.1  # a throttle block is lengthened by up to this share, at random


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """How failures slow a host down: the settings of the same names (`Settings.backoff`),
    and `abort_grace`, a fixed rule."""

    max_backoff: float
    max_retry_after: float
    park_after: int
    park_seconds: float
    max_retries: int
    give_up_after: int
    throttle_seconds: float
    throttle_max: float
    forgive_after: float
    robots_retry: float
    abort_grace: float = 5.0


class Throttle(NamedTuple):
    """How far a host's throttling has escalated: 429/503 answers without Retry-After since
    it was last forgiven, and when the level is forgotten (`forgive_after` past the block)."""

    level: int
    forgive_at: float

    def level_at(self, now: float) -> int:
        return self.level if now < self.forgive_at else 0


@dataclass(frozen=True)
class HostNext:
    """What one request means for its host: next allowed time, failures in a row, parking,
    and its throttle when the request raised it (None: unchanged)."""

    next_time: float
    failures: int
    park_reason: ParkReason | None = None
    throttle: Throttle | None = None


def unreachable_sentence(error: str, note: str = "") -> str:
    """Why a host cannot be reached, in words, for people, with the error's note (a TLS
    failure's reason). Pure."""
    kind = _ADDRESS_KINDS.get(FetchError(error)) if error in ADDRESS_REFUSED else None
    if kind is not None:
        return (f"refused by the private-address guard: its address is {kind}; "
                "CRAWL_ALLOWED_NETWORKS names networks to fetch anyway")
    sentence = {
        "dns": "its name does not resolve (DNS)",
        "invalid_host": "not a valid host name",
        "tls": "the TLS handshake fails",
        "tls_certificate": "its TLS certificate does not verify",
    }.get(error, error)
    return f"{sentence}: {note}" if note else sentence


def requeues_url(status: int | None, error: str | None) -> bool:
    """A failed URL worth queueing again (core/retry.py: at most CRAWL_MAX_RETRIES times, but
    for a failure of ours)."""
    return fetch_rule(status, error).url is not UrlTry.FINAL


class Answer(NamedTuple):
    """What a request got, as far as its host's schedule goes: its status (None: no HTTP
    answer), its error, its Retry-After header, and the error's note (a TLS failure's
    reason, kept with a host given up)."""

    status: int | None
    error: str | None = None
    retry_after: str | None = None
    note: str | None = None


def host_next(end: float, delay: float, answer: Answer, failures: int, policy: Backoff, *,
              throttled: int = 0, jitter: float = 0.0, robots: bool = False) -> HostNext:
    """The host's next allowed time after a request that ended at `end`.

    `throttled` is the host's throttle level now, `jitter` a number in [0, 1) (random in a
    crawl), `robots` whether the request was for robots.txt.
    """
    status, error, retry_after, note = answer
    rule = fetch_rule(status, error, retry_after)
    if rule.host is HostTry.KEPT:  # asked nothing: the host keeps its standing
        return HostNext(end + delay, failures)
    if rule.grace:
        end += policy.abort_grace
    if rule.host is HostTry.UNREACHABLE:
        failures += 1
        if failures >= policy.give_up_after:
            given_up = ParkReason(ParkKind.UNREACHABLE, error or "", note or "")
            return HostNext(float("inf"), failures, given_up)
        return HostNext(end + max(min(delay * 2 ** failures, policy.max_backoff), delay),
                        failures)
    if rule.host is HostTry.GOOD:
        return HostNext(end + delay, 0)
    asked = parse_retry_after(retry_after, end) if rule.host is HostTry.WAITS else None
    if asked is not None:
        asked = min(asked, policy.max_retry_after)
    if robots:
        wait = min(policy.robots_retry * 2 ** failures, policy.throttle_max)
        return HostNext(end + max(wait, asked or 0.0, delay), failures + 1)
    if asked is not None:
        return HostNext(end + max(asked, delay), failures)
    if rule.host is HostTry.THROTTLED:
        block = min(policy.throttle_seconds * 2 ** throttled, policy.throttle_max)
        block *= 1.0 + JITTER * jitter
        return HostNext(end + max(block, delay), failures, None,
                        Throttle(throttled + 1, end + block + policy.forgive_after))
    failures += 1
    wait = max(min(delay * 2 ** (failures - 1), policy.max_backoff), delay)
    if failures >= policy.park_after:
        reason = ParkReason(ParkKind.FAILING, f"{failures} failures in a row, last: {error or status}")
        return HostNext(end + max(wait, policy.park_seconds), failures, reason)
    return HostNext(end + wait, failures)


POLITENESS_KEYS = ("host", "domain", "ip")


def politeness_key(kind: str, host: str, address: str | None = None) -> str:
    """What one request at a time is counted by (CRAWL_POLITENESS_KEY): the host name
    (`host`, the frontier's own unit), its registrable domain (`domain`), or the address
    it resolves to (`ip`; the name itself while it has none). robots.txt stays per origin."""
    if kind == "domain":
        return f"domain:{registrable_domain(host)}"
    if kind == "ip":
        return f"ip:{address or hostname(host)}"
    return host
