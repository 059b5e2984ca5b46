"""The retry rule: for each outcome a try can meet, whether it is tried again, how long the
next try waits and how many tries there are. Pure: the call sites do the trying (a URL
queued again, a host's next time, a task retried, a sleep) and ask this module what to do.

- `FETCH`: what a request to the web met (the fetch stage's pages and robots.txt files), by
  `Outcome`: what becomes of its URL (`UrlTry`), of its host (`HostTry`; the times are
  politeness.host_next's) and of a robots.txt that met it (`RobotsTry`). `fetch_rule` is
  the look-up.
- `SERVERS`: a server the crawler needs failing (Redis, the database, the blob store, the
  broker), by who tries again (`Server`): the first wait, its doubling's cap, jitter, and how
  many tries again.

docs/retries.md shows both tables (`make docs` writes it; a unit test fails when it drifts).
"""

from __future__ import annotations

from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from enum import StrEnum

from crawlapp.core.records import ADDRESS_REFUSED, FetchError


class Outcome(StrEnum):
    """What one request met."""

    ANSWERED = "answered"            # an HTTP answer but those below
    RETRY_AFTER = "retry_after"      # 429 or 503 with a Retry-After
    OVERLOADED = "overloaded"        # 429 or 503 without one
    BROKEN_RETRY_AFTER = "broken_retry_after"  # the same, whose body timed out or broke
    BROKEN_OVERLOADED = "broken_overloaded"
    SERVER_ERROR = "server_error"    # 500, 502, 504
    OTHER_5XX = "other_5xx"          # 501, 505 and the other 5xx
    CONNECT = "connect"
    TIMEOUT = "timeout"
    PROTOCOL = "protocol"
    TOO_LARGE = "too_large"
    DNS = "dns"                      # the name does not resolve
    RESOLVER = "resolver"            # the crawler's own resolver failed
    TLS = "tls"                      # tls, tls_certificate
    INVALID_HOST = "invalid_host"
    ADDRESS_REFUSED = "address_refused"  # the private-address guard (ssrf_*)
    OTHER_ERROR = "other_error"      # invalid_url, unsupported_encoding, http_*, error_*


class UrlTry(StrEnum):
    """What becomes of the URL asked."""

    COUNTED = "again, counted"   # queued again behind its host's others; final past the limit
    UNCOUNTED = "again"          # queued again, never counted: no limit
    FINAL = "final"              # recorded as it ended


class HostTry(StrEnum):
    """What becomes of the host asked (politeness.host_next has the times)."""

    GOOD = "good standing"   # its delay; its failures in a row reset
    KEPT = "as it stood"     # its delay; its failures in a row kept
    WAITS = "waits"          # the Retry-After, capped; its failures in a row kept
    THROTTLED = "throttled"  # a throttle block, doubling per such answer; failures kept
    BACKED_OFF = "backed off"  # one failure more, exponential back-off, parked past a count
    UNREACHABLE = "given up"   # one failure more, exponential back-off, given up past a count


class RobotsTry(StrEnum):
    """What becomes of a robots.txt request that met the outcome."""

    STANDS = "stands"            # its answer is the origin's policy (cached)
    BACKED_OFF = "backed off"    # asked again after a robots back-off; final past a count
    AGAIN = "again"              # asked again after the host's delay: no limit
    GIVEN_UP = "given up"        # with its host


@dataclass(frozen=True, slots=True)
class FetchRule:
    """One row of `FETCH`; `grace`: the response was abandoned (the server may still be
    sending it), so the host's next time is `Backoff.abort_grace` later."""

    url: UrlTry
    host: HostTry
    robots: RobotsTry
    grace: bool = False

    def url_again(self, count: int, most: int) -> bool:
        """Whether the URL goes back to its queue, `count` its failures counted so far (this
        one included) and `most` the most tries again (CRAWL_MAX_RETRIES)."""
        if self.url is UrlTry.COUNTED:
            return count <= most
        return self.url is UrlTry.UNCOUNTED

    def robots_final(self, failures: int, most: int) -> bool:
        """Whether a robots.txt answer that allows nothing stands, `failures` its host's in a
        row (this one included) and `most` the most tries again (CRAWL_MAX_RETRIES)."""
        return self.robots is RobotsTry.BACKED_OFF and failures > most


_COUNTED_BACKED_OFF = FetchRule(UrlTry.COUNTED, HostTry.BACKED_OFF, RobotsTry.BACKED_OFF)
_FINAL_BACKED_OFF = FetchRule(UrlTry.FINAL, HostTry.BACKED_OFF, RobotsTry.BACKED_OFF, grace=True)
_FINAL_GOOD = FetchRule(UrlTry.FINAL, HostTry.GOOD, RobotsTry.AGAIN)
_GIVEN_UP = FetchRule(UrlTry.FINAL, HostTry.UNREACHABLE, RobotsTry.GIVEN_UP)

FETCH: dict[Outcome, FetchRule] = {
    Outcome.ANSWERED: FetchRule(UrlTry.FINAL, HostTry.GOOD, RobotsTry.STANDS),
    Outcome.RETRY_AFTER: FetchRule(UrlTry.COUNTED, HostTry.WAITS, RobotsTry.BACKED_OFF),
    Outcome.OVERLOADED: FetchRule(UrlTry.COUNTED, HostTry.THROTTLED, RobotsTry.BACKED_OFF),
    Outcome.BROKEN_RETRY_AFTER: FetchRule(UrlTry.FINAL, HostTry.WAITS, RobotsTry.BACKED_OFF,
                                          grace=True),
    Outcome.BROKEN_OVERLOADED: FetchRule(UrlTry.FINAL, HostTry.THROTTLED, RobotsTry.BACKED_OFF,
                                         grace=True),
    Outcome.SERVER_ERROR: _COUNTED_BACKED_OFF,
    Outcome.OTHER_5XX: _FINAL_GOOD,
    Outcome.CONNECT: _COUNTED_BACKED_OFF,
    # The server was slow for that URL: another try would cost the host another timeout.
    Outcome.TIMEOUT: _FINAL_BACKED_OFF,
    Outcome.PROTOCOL: _FINAL_BACKED_OFF,
    Outcome.TOO_LARGE: FetchRule(UrlTry.FINAL, HostTry.GOOD, RobotsTry.AGAIN, grace=True),
    Outcome.DNS: _GIVEN_UP,
    # A fault of ours is neither the page's failure nor its host's: no limit.
    Outcome.RESOLVER: FetchRule(UrlTry.UNCOUNTED, HostTry.KEPT, RobotsTry.AGAIN),
    Outcome.TLS: _GIVEN_UP,
    Outcome.INVALID_HOST: _GIVEN_UP,
    Outcome.ADDRESS_REFUSED: _GIVEN_UP,
    Outcome.OTHER_ERROR: _FINAL_GOOD,
}

# What each outcome is, in the terms of a request's status and error (docs/retries.md).
MET = {
    Outcome.ANSWERED: "an HTTP answer but those below (2xx, 3xx, 4xx)",
    Outcome.RETRY_AFTER: "429 or 503 with a `Retry-After` (seconds or an HTTP date)",
    Outcome.OVERLOADED: "429 or 503 without one",
    Outcome.BROKEN_RETRY_AFTER: "429 or 503 with a `Retry-After`, whose body timed out or broke "
                                "(`timeout`, `protocol`; one whose connection then failed, "
                                "`connect`, is a `retry_after` or an `overloaded`)",
    Outcome.BROKEN_OVERLOADED: "429 or 503 without one, whose body timed out or broke",
    Outcome.SERVER_ERROR: "500, 502, 504",
    Outcome.OTHER_5XX: "501, 505 and the other 5xx",
    Outcome.CONNECT: "`connect`: the connection was refused or failed",
    Outcome.TIMEOUT: "`timeout` (CRAWL_FETCH_TIMEOUT)",
    Outcome.PROTOCOL: "`protocol`: a broken answer",
    Outcome.TOO_LARGE: "`too_large` (CRAWL_MAX_BODY_BYTES)",
    Outcome.DNS: "`dns`: the name does not resolve",
    Outcome.RESOLVER: "`resolver`: the crawler's own resolver failed (Redis and the system's)",
    Outcome.TLS: "`tls`, `tls_certificate`",
    Outcome.INVALID_HOST: "`invalid_host`",
    Outcome.ADDRESS_REFUSED: "`ssrf_*`: the private-address guard refused the address",
    Outcome.OTHER_ERROR: "`invalid_url`, `unsupported_encoding`, `http_*`, `error_*`",
}

_BY_ERROR: dict[str, Outcome] = {
    FetchError.CONNECT: Outcome.CONNECT, FetchError.TIMEOUT: Outcome.TIMEOUT,
    FetchError.PROTOCOL: Outcome.PROTOCOL, FetchError.TOO_LARGE: Outcome.TOO_LARGE,
    FetchError.DNS: Outcome.DNS, FetchError.RESOLVER: Outcome.RESOLVER,
    FetchError.TLS: Outcome.TLS, FetchError.TLS_CERTIFICATE: Outcome.TLS,
    FetchError.INVALID_HOST: Outcome.INVALID_HOST,
}


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


def outcome_of(status: int | None, error: str | None, retry_after: str | None = None
               ) -> Outcome:
    """What a request met: its error if it has one, else its status and Retry-After. A 429
    or 503 that then failed in a way that backs its host off holds its host back as the
    status says, its URL as the error says."""
    overloaded = status in (429, 503)
    asked = overloaded and parse_retry_after(retry_after, 0.0) is not None
    if error is not None:
        if error in ADDRESS_REFUSED:
            return Outcome.ADDRESS_REFUSED
        outcome = _BY_ERROR.get(error, Outcome.OTHER_ERROR)
        if not overloaded or FETCH[outcome].host is not HostTry.BACKED_OFF:
            return outcome
        if FETCH[outcome].url is UrlTry.FINAL:
            return Outcome.BROKEN_RETRY_AFTER if asked else Outcome.BROKEN_OVERLOADED
    if overloaded:
        return Outcome.RETRY_AFTER if asked else Outcome.OVERLOADED
    if status is None:
        return Outcome.OTHER_ERROR
    if status in (500, 502, 504):
        return Outcome.SERVER_ERROR
    return Outcome.OTHER_5XX if status >= 500 else Outcome.ANSWERED


def fetch_rule(status: int | None, error: str | None, retry_after: str | None = None
               ) -> FetchRule:
    """The rule for what a request met (`FETCH`, `outcome_of`)."""
    return FETCH[outcome_of(status, error, retry_after)]


class Server(StrEnum):
    """Who tries a call to a failing server again."""

    STAGE = "stage task"           # a stage's Celery task (app/stages.py)
    RIDE_OUT = "Redis ride-out"    # Context.steady (adapters/redis/client.ride_out)
    NEXT_STAGE = "next stage's task"  # Celery's publish of a chain's next task (app/config.py)
    CLUSTER = "Redis Cluster command"  # redis-py's Retry on one command (client.connect)
    BLOB_STORE = "blob store"      # boto3 on S3 (adapters/blobstore.py)
    DISPATCHER = "dispatcher"      # its loop (ops/dispatcher.py)
    BEAT = "beat"                  # the embedded beat's tick (app/beat.py)


@dataclass(frozen=True, slots=True)
class ServerRule:
    """How `SERVERS` tries a failing call again: after `first` seconds, doubling up to
    `cap` (`jitter`: each wait a random share of that), `tries_again` times at most (None:
    for `for_setting`'s seconds, or with no limit). `meets` says which failures, for the
    docs."""

    meets: str
    first: float
    cap: float
    jitter: bool
    tries_again: int | None = None
    for_setting: str = ""

    def wait(self, failures: int) -> float:
        """The wait before the try after `failures` failures in a row (from 1), jitter aside."""
        return min(self.cap, self.first * 2.0 ** (min(failures, 64) - 1))


SERVERS: dict[Server, ServerRule] = {
    # The batch goes on within seconds of the server's return; 60 tries cover an outage of
    # several minutes (its URLs' politeness never waits through one).
    Server.STAGE: ServerRule("a `TransientError`: Redis, the database, the blob store or the "
                             "broker not answering", 2.0, 10.0, True, 60),
    # Work resumes within half a second of a replica's promotion.
    Server.RIDE_OUT: ServerRule("Redis failing as through a failover or a restart (what work "
                                "done rests on: leases, releases, retry counts...)",
                                0.1, 0.5, True, None, "CRAWL_REDIS_RIDE_OUT"),
    # A stage done while the broker is away hands its batch on once it is back: given up, the
    # batch would wait out its leases (CRAWL_LEASE_SECONDS) and be fetched again.
    Server.NEXT_STAGE: ServerRule("the broker not taking the message of a batch's next stage "
                                  "(Celery's publish of a chain's callback)", 0.5, 1.0, False,
                                  None, "CRAWL_REDIS_RIDE_OUT"),
    Server.CLUSTER: ServerRule("a node not answering, slots moving (redis-py 8.1 takes the "
                               "count, not yet the waits: it tries again at once)",
                               0.1, 1.0, False, 10),
    # The waits are boto3's standard mode's.
    Server.BLOB_STORE: ServerRule("S3 throttling, 5xx, timeouts, connections lost (boto3's "
                                  "waits, 1 s first when throttled; a signed PUT that fails is "
                                  "sent once more through boto3 first)", 0.05, 20.0, True, 5),
    # The look after a failover is soon; only CRAWL_SHARDS not fitting is final.
    Server.DISPATCHER: ServerRule("any failure of a look but `FrontierLayoutError`",
                                  0.1, 1.0, False),
    Server.BEAT: ServerRule("a tick that failed", 5.0, 5.0, False),
}
