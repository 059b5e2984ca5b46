"""When may a host be asked again after a request? Pure: times are passed in.

- Success: the end of the request plus the host's delay.
- 429 or 503 with Retry-After: at least that long (seconds or an HTTP date), capped.
- 5xx, timeouts, connection and protocol errors: exponential backoff per host,
  delay * 2**failures, capped; after `park_after` failures in a row the host is parked.
- A response the crawler abandoned (timeout, too large, broken): `abort_grace` more, since
  the server may still be sending it and would see the next request overlap it.
A URL whose server was overloaded or unreachable (429, 5xx, connection refused) goes back
to its host's queue, at most `max_retries` times; a timeout is not retried (the server was
slow for that URL, and another try would cost the host another full timeout).
- A host that cannot be reached for a reason that will not change soon (the address guard
  refuses its address, its name does not resolve, it is not a valid host name, TLS fails)
  is backed off the same way, and after `give_up_after` such failures in a row it is given
  up: parked for good ("unreachable: <error>") until an operator resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from crawlapp.core.records import FetchError

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
TRANSIENT_ERRORS = frozenset({FetchError.TIMEOUT, FetchError.CONNECT, FetchError.PROTOCOL,
                              FetchError.DNS})
ABANDONED_ERRORS = frozenset({FetchError.TIMEOUT, FetchError.PROTOCOL, FetchError.TOO_LARGE})
# Errors of the host, not of one request, that another try soon will not change
# (plus every `ssrf_*`: the address guard refused the host's address).
UNREACHABLE_ERRORS = frozenset({FetchError.DNS, FetchError.INVALID_HOST, FetchError.TLS,
                                FetchError.TLS_CERTIFICATE})
GIVEN_UP = "unreachable: "  # the park reason of a given-up host starts with this
_ADDRESS_KINDS = {"loopback": "a loopback address", "private": "a private address",
                  "link_local": "a link-local address", "multicast": "a multicast address",
                  "unspecified": "unspecified (0.0.0.0 or ::)", "reserved": "a reserved address",
                  "bad_address": "not an IP address"}


@dataclass(frozen=True)
class Backoff:
    max_backoff: float = 300.0
    max_retry_after: float = 3600.0
    park_after: int = 8
    park_seconds: float = 600.0
    max_retries: int = 2
    abort_grace: float = 5.0
    give_up_after: int = 3


@dataclass(frozen=True)
class HostNext:
    """What one request means for its host: next allowed time, failures in a row, parking."""

    next_time: float
    failures: int
    park_reason: str | None = None


def is_transient(status: int | None, error: str | None) -> bool:
    """A failure that says nothing about the URL itself: worth trying again later."""
    if error is not None:
        return error in TRANSIENT_ERRORS
    return status in TRANSIENT_STATUSES


def is_unreachable(error: str | None) -> bool:
    """A failure of the host itself that will not change soon (see UNREACHABLE_ERRORS)."""
    return error is not None and (error in UNREACHABLE_ERRORS or error.startswith("ssrf_"))


def unreachable_sentence(error: str) -> str:
    """Why a host cannot be reached, in words, for people. Pure."""
    if error.startswith("ssrf_"):
        kind = _ADDRESS_KINDS.get(error.removeprefix("ssrf_"), "not a public address")
        return (f"refused by the private-address guard: its address is {kind}; "
                "CRAWL_ALLOWED_NETWORKS names networks to fetch anyway")
    return {
        "dns": "its name does not resolve (DNS)",
        "invalid_host": "not a valid host name",
        "tls": "the TLS handshake fails",
        "tls_certificate": "its TLS certificate does not verify",
    }.get(error, error)


def is_retryable(status: int | None, error: str | None) -> bool:
    """A failed URL worth queueing again."""
    return status in TRANSIENT_STATUSES if error is None else error == "connect"


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def host_next(end: float, delay: float, status: int | None, error: str | None,
              retry_after: str | None, failures: int, policy: Backoff) -> HostNext:
    """The host's next allowed time after a request that ended at `end`."""
    if error in ABANDONED_ERRORS:
        end += policy.abort_grace
    if is_unreachable(error):
        failures += 1
        if failures >= policy.give_up_after:
            return HostNext(float("inf"), failures, f"{GIVEN_UP}{error}")
        return HostNext(end + max(min(delay * 2 ** failures, policy.max_backoff), delay),
                        failures)
    if not is_transient(status, error):
        return HostNext(end + delay, 0)
    failures += 1
    wait = min(delay * 2 ** failures, policy.max_backoff)
    if status in (429, 503):
        asked = parse_retry_after(retry_after, end)
        if asked is not None:
            wait = max(wait, min(asked, policy.max_retry_after))
    if failures >= policy.park_after:
        reason = f"{failures} failures in a row, last: {error or status}"
        return HostNext(end + max(wait, policy.park_seconds), failures, reason)
    return HostNext(end + max(wait, delay), failures)
