"""Names the stages and the database share: the status of a URL row (and of a page record)
and the errors of a fetch. Pure: no I/O.

Both are `StrEnum`s: each member is its string, so rows, msgpack messages and Redis keep
the same text as before, and a comparison with a plain string still holds.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Where a URL stands (`urls.status`); a page record carries the outcome of its fetch."""

    QUEUED = "queued"            # waiting in the frontier
    FETCHED = "fetched"          # answered 2xx, or 304 to a conditional GET
    REDIRECTED = "redirected"    # answered 3xx; its target is queued as a link
    FAILED = "failed"            # 4xx/5xx past its retries, or a fetch error
    BLOCKED = "blocked"          # robots.txt or the denylist refuses it
    TOO_DEEP = "too_deep"        # past CRAWL_MAX_DEPTH (queued if found closer to a seed)
    OVER_BUDGET = "over_budget"  # past CRAWL_MAX_PAGES_PER_HOST
    TRAP = "trap"                # past CRAWL_TRAP_PATTERN_CAP URLs of one shape on its host
    DELETED = "deleted"          # taken down: never queued again
    ROBOTS = "robots"            # a page record of a robots.txt answer (it has no row)


class FetchError(StrEnum):
    """Why a request got no HTTP answer (besides `ssrf_<kind>`, `http_<exception>` and
    `error_<exception>`, which name what refused or failed)."""

    TIMEOUT = "timeout"
    CONNECT = "connect"
    PROTOCOL = "protocol"
    DNS = "dns"
    INVALID_HOST = "invalid_host"
    INVALID_URL = "invalid_url"
    TLS = "tls"
    TLS_CERTIFICATE = "tls_certificate"
    TOO_LARGE = "too_large"
    UNSUPPORTED_ENCODING = "unsupported_encoding"
