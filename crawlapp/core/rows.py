"""The rows the stages and operations read from the database (the repository builds them
from its columns; adapters/db). Pure: no I/O."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from crawlapp.core.records import Status


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
