"""The crawler's exceptions, by what the one who meets them can do about them. Pure.

- `InputError`: bad input from the operator or the web (a URL, a host pattern, a setting, a
  seed, a command-line argument). Trying again changes nothing; fixing the input does.
  `ServerRefused`, one of them: a server that answers but refuses what the settings ask of
  it (credentials it does not take, a bucket it does not have); `ServerTooOld`, a server
  older than the crawler works with.
- `TransientError`: a server that may come back (Redis, Postgres, S3, the broker). The same
  call may succeed later; `service` names which one failed. `NotQueued`, one of them, carries
  the URLs that a failure at the commit or at the frontier left unqueued, for the try again.

`crawlctl` turns the first into exit status 2 and the second into 1, each as one line on
stderr.
"""

from __future__ import annotations

from collections.abc import Sequence

from crawlapp.core.records import QueuedURL


class CrawlError(Exception):
    """Base of the crawler's own exceptions."""


class InputError(CrawlError, ValueError):
    """Input the crawler cannot use; the message says which input and why."""


class FrontierLayoutError(InputError):
    """The frontier in Redis is laid out in another number of shards than CRAWL_SHARDS, and
    cannot be laid out anew here or now."""

    def __init__(self, layout: int, shards: int, held: int = 0) -> None:
        if held:
            why = (f"{held} host(s) are leased: stop the crawl's dispatcher and workers, wait "
                   "for the leases to end (CRAWL_LEASE_SECONDS at most), then run it again")
        else:
            why = ("stop the crawl's dispatcher and workers, then run `crawlctl frontier "
                   "reshard` (`crawlctl crawl` does it by itself)")
        super().__init__(f"the frontier in Redis is laid out in {layout or 'another number of'} "
                         f"shards and CRAWL_SHARDS is {shards}: set CRAWL_SHARDS={layout or 'as before'}, "
                         f"or lay it out in {shards} shards: {why}")
        self.layout, self.shards, self.held = layout, shards, held


class ServerRefused(InputError):
    """A server refused a request, and will refuse it again until the settings change; the
    message says what to check."""

    def __init__(self, service: str, detail: str, check: str) -> None:
        super().__init__(f"{service} refused a request: {detail}; check {check}")
        self.service = service
        self.detail = detail


class ServerTooOld(InputError):
    """A server older than the oldest version the crawler works with."""

    def __init__(self, service: str, where: str, found: str, needed: str) -> None:
        super().__init__(f"{service} at {where} is version {found}; the crawler needs "
                         f"{service} {needed} or newer")
        self.found, self.needed = found, needed


class TransientError(CrawlError):
    """A server the crawler needs did not answer; it may come back."""

    def __init__(self, service: str, detail: str) -> None:
        super().__init__(f"{service} is unavailable: {detail}")
        self.service = service
        self.detail = detail


class NotQueued(TransientError):
    """URLs whose rows were committed, or perhaps were (the commit's answer was lost), but
    that the frontier did not get: the server's failure, the URLs to queue on the try
    again and `since`, when the try that failed began (crawlapp.stages.admission.admit)."""

    def __init__(self, error: TransientError, urls: Sequence[QueuedURL], since: float) -> None:
        super().__init__(error.service, error.detail)
        self.urls = list(urls)
        self.since = since
