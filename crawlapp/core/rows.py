"""The rows the stages and operations write to the database and read from it: named tuples
whose fields are the columns they fill (adapters/db turns them into one array a column, or
builds them from what it reads). Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from crawlapp.core.records import Status
from crawlapp.core.recrawl import Planned, tier_of, timestamp


class UrlRow(NamedTuple):
    """A URL found, as its row is inserted: `priority` and `authority` are its score on
    admission (`scored`); `last_error` says why a row is recorded blocked."""

    url_hash: str
    url: str
    host: str
    depth: int
    status: str
    discovered_at: datetime
    hops: int = 0  # off-scope links in a row that led to it (crawlapp.core.scope)
    link_context: float | None = None  # its depth and the link that found it
    priority: float = 0.0
    authority: float | None = None
    last_error: str | None = None

    def scored(self, authority: float, priority: float, link_context: float) -> UrlRow:
        """The row with its score."""
        return self._replace(link_context=link_context, priority=priority, authority=authority)


class LinkEdge(NamedTuple):
    """A link from one page to another, by URL hash."""

    source_hash: str
    target_hash: str
    anchor: str | None
    nofollow: bool


class FetchOutcome(NamedTuple):
    """What a fetch writes onto its URL row (a None column is written None, NULL)."""

    url_hash: str
    status: str
    last_fetched_at: datetime | None = None
    http_status: int | None = None
    content_type: str | None = None
    content_length: int | None = None
    content_hash: str | None = None
    simhash: int | None = None  # signed, as the column holds it
    content_dedup: bool = False
    duplicate_of: str | None = None
    storage_key: str | None = None
    title: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    last_error: str | None = None
    redirect_to: str | None = None
    redirect_hops: int | None = None
    next_crawl_at: datetime | None = None
    canonical_url: str | None = None
    noindex: bool = False
    rendered: bool = False
    render_error: str | None = None
    raw_storage_key: str | None = None
    changes: bytes | None = None  # its change record (core/freshness.py), packed
    links_digest: int | None = None
    text_digest: int | None = None  # of its visible text (core/textchanges.py), HTML only


class HistoryRow(NamedTuple):
    """A fetch whose answer is kept, as the fetch history records it (header blocks are
    "Name: value" lines joined by CRLF; None: not known)."""

    url_hash: str
    url: str
    host: str
    fetched_at: datetime
    http_status: int
    ip_address: str | None = None
    request_headers: str | None = None
    response_headers: str | None = None
    storage_key: str | None = None  # None for a 304
    payload_digest: str | None = None
    not_modified: bool = False
    robots: bool = False
    truncated: bool = False  # the body kept was cut (Page.truncated)
    # What the answer came over ("HTTP/1.1", "HTTP/2"; None: not known) and its TLS cipher
    # suite as OpenSSL names it (None: not over TLS, or fetched before it was recorded),
    # written as WARC-Protocol and WARC-Cipher-Suite.
    http_version: str | None = None
    cipher_suite: str | None = None


@dataclass(frozen=True, slots=True)
class Lowered:
    """A known URL found again closer to a seed, with the priority of the closer link."""

    url_hash: str
    url: str
    status: str
    old_depth: int
    new_depth: int
    priority: float
    hops: int = 0


@dataclass(frozen=True, slots=True)
class Previous:
    """What the last fetch of a URL found, for the re-crawl schedule."""

    content_hash: str | None
    last_fetched_at: datetime | None
    next_crawl_at: datetime | None
    priority: float  # the row's link context: the depth and link it was found at
    changes: bytes | None = None  # its change record (core/freshness.py), packed
    links_digest: int | None = None
    sitemap_lastmod: datetime | None = None
    text_digest: int | None = None

    @property
    def interval(self) -> float | None:
        if self.last_fetched_at is None or self.next_crawl_at is None:
            return None
        return (self.next_crawl_at - self.last_fetched_at).total_seconds()


class LinkedPage(NamedTuple):
    """A page at the other end of a recorded link: its URL, the link's anchor and
    nofollow, and the page's status."""

    url: str
    anchor: str | None
    nofollow: bool
    status: str


class PageRow(NamedTuple):
    """What the database holds of a page, as dedup, verify and takedowns look at it."""

    id: int
    url_hash: str
    url: str
    host: str
    status: str
    content_hash: str | None
    fingerprint: int | None  # its SimHash (unsigned)
    content_dedup: bool
    duplicate_of: str | None
    storage_key: str | None
    raw_storage_key: str | None
    canonical_url: str | None

    @property
    def original(self) -> bool:
        """A stored original: its own body, not a copy, not taken down."""
        return self.status != Status.DELETED and not self.content_dedup and self.storage_key is not None


class Repointed(NamedTuple):
    """A copy handed to another original (`duplicate_of`), or made an original itself
    (`content_dedup` False)."""

    url_hash: str
    content_dedup: bool
    duplicate_of: str | None


class QueuedRow(NamedTuple):
    """A 'queued' row, as a rebuild queues it again (with its validators)."""

    id: int
    url: str
    host: str
    depth: int
    priority: float
    hops: int
    etag: str | None
    last_modified: str | None


class UrlKey(NamedTuple):
    id: int
    url_hash: str


class StoredContent(NamedTuple):
    """What a stored original holds in the dedup index: its content hash and its SimHash
    as the row has it (signed)."""

    id: int
    url_hash: str
    content_hash: str | None
    simhash: int | None


class ChangeRow(NamedTuple):
    """A page's change record (core/freshness.py), packed, its host and URL."""

    id: int
    host: str
    url: str
    changes: bytes


class CanonicalPointer(NamedTuple):
    """A page that defers to its <link rel=canonical>."""

    id: int
    url_hash: str
    canonical_url: str


class ScheduledRow(NamedTuple):
    """A page's last fetch and next one (its re-crawl tier follows from the two)."""

    id: int
    url_hash: str
    last_fetched_at: datetime | None
    next_crawl_at: datetime

    def planned(self, at: float | None = None) -> Planned:
        """The page's entry in its tier: the tier of the interval between its last fetch and
        its next one (to the second: a row keeps microseconds), due at its next fetch or at
        `at`."""
        interval = round((self.next_crawl_at - (self.last_fetched_at or self.next_crawl_at))
                         .total_seconds())
        return Planned(self.url_hash, tier_of(interval),
                       timestamp(self.next_crawl_at) if at is None else at)


class SitemapEntry(NamedTuple):
    """A page a sitemap lists, as its row holds it for the sitemap's <lastmod>."""

    id: int
    url_hash: str
    host: str
    status: str
    last_fetched_at: datetime | None
    next_crawl_at: datetime | None
    changes: bytes | None
    sitemap_lastmod: datetime | None
    last_error: str | None

    @property
    def held(self) -> bool:
        """Its last refresh failed or was refused: its copy is kept until its re-check
        (stages/storing.py), which a lastmod does not bring forward."""
        return self.status == Status.FETCHED and self.last_error is not None

    def scheduled(self) -> ScheduledRow | None:
        if self.next_crawl_at is None:
            return None
        return ScheduledRow(self.id, self.url_hash, self.last_fetched_at, self.next_crawl_at)


class HostRow(NamedTuple):
    """A row of a host a denylist pattern names, as blocking and unblocking read it."""

    url_hash: str
    url: str
    host: str
    depth: int
    priority: float
    hops: int
    status: str
    last_error: str | None


class TakenDownRow(NamedTuple):
    """A row being taken down: what leaves the frontier, the blob store and the dedup index
    (`simhash` as the row has it, signed)."""

    url_hash: str
    url: str
    host: str
    depth: int
    hops: int
    status: str
    storage_key: str | None
    raw_storage_key: str | None
    content_hash: str | None
    simhash: int | None


class Removal(NamedTuple):
    """What a takedown removed from the database: the bodies its rows and their fetch
    history named (`keys`), of which other pages or fetches still name some (`shared`), and
    how many fetch history rows it deleted."""

    keys: list[str]
    shared: set[str]
    fetches: int
