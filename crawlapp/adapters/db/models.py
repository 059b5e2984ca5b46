"""SQLAlchemy 2 models. Alembic (migrations/) owns the schema history; these own the mapping."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from crawlapp.core.records import Status

AutoId = BigInteger().with_variant(Integer, "sqlite")


class Base(DeclarativeBase):
    pass


class Url(Base):
    """One row per canonical URL: its place in the crawl and what its last fetch found.

    On Postgres hash-partitioned by url_hash (migration 0010), its primary key (id, url_hash);
    id, from one sequence, stays unique and the mapping's key."""

    __tablename__ = "urls"
    # The re-crawl schedule's keyset pages (migration 0012).
    __table_args__ = (Index("ix_urls_next_crawl_at", "next_crawl_at", "id",
                            postgresql_where=text("next_crawl_at IS NOT NULL"),
                            sqlite_where=text("next_crawl_at IS NOT NULL")),)

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    url_hash: Mapped[str] = mapped_column(String(32), unique=True)
    url: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(255), index=True)
    depth: Mapped[int] = mapped_column(SmallInteger, default=0)
    # off-scope links in a row that led to it (crawlapp.core.scope), 0 in scope
    hops: Mapped[int] = mapped_column(SmallInteger, default=0, server_default="0")
    status: Mapped[str] = mapped_column(String(16), index=True, default=Status.QUEUED)
    priority: Mapped[float] = mapped_column(Float, default=0.0)  # core/priority.py
    authority: Mapped[float | None] = mapped_column(Float)  # its host's, when last scored
    link_context: Mapped[float | None] = mapped_column(Float)  # depth and the link that found it
    discovered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_fetched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    next_crawl_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    etag: Mapped[str | None] = mapped_column(String(512))
    last_modified: Mapped[str | None] = mapped_column(String(64))
    http_status: Mapped[int | None] = mapped_column(SmallInteger)
    content_type: Mapped[str | None] = mapped_column(String(255))
    content_length: Mapped[int | None] = mapped_column(Integer)
    content_hash: Mapped[str | None] = mapped_column(String(64), index=True)
    simhash: Mapped[int | None] = mapped_column(BigInteger)
    content_dedup: Mapped[bool] = mapped_column(Boolean, default=False)
    duplicate_of: Mapped[str | None] = mapped_column(String(32), index=True)
    storage_key: Mapped[str | None] = mapped_column(String(128))
    title: Mapped[str | None] = mapped_column(Text)
    redirect_to: Mapped[str | None] = mapped_column(Text)
    redirect_hops: Mapped[int | None] = mapped_column(SmallInteger)
    canonical_url: Mapped[str | None] = mapped_column(Text)  # <link rel=canonical>, if another
    noindex: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    rendered: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    render_error: Mapped[str | None] = mapped_column(String(32))  # why rendering failed
    raw_storage_key: Mapped[str | None] = mapped_column(String(128))  # body as fetched
    fail_count: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    # What its visits saw of its changes (core/freshness.py's ChangeRecord, packed), a digest
    # of its set of links, and the latest <lastmod> a sitemap gave for it (migration 0014).
    changes: Mapped[bytes | None] = mapped_column(LargeBinary)
    links_digest: Mapped[int | None] = mapped_column(BigInteger)
    sitemap_lastmod: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # A digest of its visible text as last fetched (core/freshness.py; migration 0016).
    text_digest: Mapped[int | None] = mapped_column(BigInteger)


class Fetch(Base):
    """One row per fetch whose answer is kept: a page whose body as fetched is stored, a 304
    to a conditional GET, a robots.txt answer, a redirect or an error answer. The history
    the WARC export writes, oldest first; header blocks are "Name: value" lines joined by
    CRLF, as sent and received.
    On Postgres a partition per month of fetched_at (migration 0010), primary key (id,
    fetched_at)."""

    __tablename__ = "fetches"
    # One fetch of a URL is one row, however often its batch is stored.
    __table_args__ = (UniqueConstraint("url_hash", "fetched_at",
                                       name="uq_fetches_url_hash_fetched_at"),)

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    url_hash: Mapped[str] = mapped_column(String(32))
    url: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(255), index=True)
    fetched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    http_status: Mapped[int] = mapped_column(SmallInteger)
    ip_address: Mapped[str | None] = mapped_column(String(45))
    request_headers: Mapped[str | None] = mapped_column(Text)  # None: fetched before 0009
    response_headers: Mapped[str | None] = mapped_column(Text)
    storage_key: Mapped[str | None] = mapped_column(String(128))  # None for a 304
    payload_digest: Mapped[str | None] = mapped_column(String(64))  # sha1:<base32>
    not_modified: Mapped[bool] = mapped_column(Boolean, default=False)
    robots: Mapped[bool] = mapped_column(Boolean, default=False)  # its origin's robots.txt
    # The body kept is the first CRAWL_ARCHIVE_ANSWER_BYTES of a longer one (migration 0012).
    truncated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    http_version: Mapped[str | None] = mapped_column(String(16))  # "HTTP/2"; None: unknown
    cipher_suite: Mapped[str | None] = mapped_column(String(64))  # over TLS, when known


class Host(Base):
    """Per-origin state: the robots.txt answer and its crawl delay."""

    __tablename__ = "hosts"

    origin: Mapped[str] = mapped_column(String(300), primary_key=True)
    robots_status: Mapped[int | None] = mapped_column(SmallInteger)
    robots_body: Mapped[str | None] = mapped_column(Text)
    robots_fetched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    crawl_delay: Mapped[float | None] = mapped_column(Float)


class Link(Base):
    """A link edge from one page to another, by URL hash (on Postgres hash-partitioned by
    source_hash, migration 0010)."""

    __tablename__ = "links"

    source_hash: Mapped[str] = mapped_column(String(32), primary_key=True)
    target_hash: Mapped[str] = mapped_column(String(32), primary_key=True, index=True)
    anchor: Mapped[str | None] = mapped_column(Text)
    nofollow: Mapped[bool] = mapped_column(Boolean, default=False)


class SeedScope(Base):
    """A rule of the crawl's scope a seed added (crawlapp.core.scope.seed_rule): kind 'any',
    'host', 'domain' or 'prefix' and its value ('' for any)."""

    __tablename__ = "scope_rules"

    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    value: Mapped[str] = mapped_column(String(2048), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Deny(Base):
    """A denylist entry: a host or *.domain pattern the crawler must never fetch (see denylist.py)."""

    __tablename__ = "denylist"

    pattern: Mapped[str] = mapped_column(String(512), primary_key=True)
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LinksUnread(Base):
    """A stored batch whose pages' links the links stage has not admitted yet: written with
    the batch's rows, deleted in the commit that admits its links. What is left here when
    the links stage's message was lost (a Redis that lost the broker's queues, a batch taken
    for lost after its store) names the pages to fetch again."""

    __tablename__ = "links_unread"

    batch_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    url_hashes: Mapped[str] = mapped_column(Text)  # the pages with links, space-separated
    stored_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class HostLink(Base):
    """An edge of the host graph: some page of `source_host` links to `target_host`."""

    __tablename__ = "host_links"

    source_host: Mapped[str] = mapped_column(String(255), primary_key=True)
    target_host: Mapped[str] = mapped_column(String(255), primary_key=True)


class HostAuthority(Base):
    """A host's authority in [0, 1], from the host graph (crawlapp/ops/authority.py)."""

    __tablename__ = "host_authority"

    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    score: Mapped[float] = mapped_column(Float)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class HostCount(Base):
    """How many URL rows of `host` have `status` (folded totals; see host_count_deltas), kept
    by triggers on urls (migration 0011)."""

    __tablename__ = "host_counts"

    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    n: Mapped[int] = mapped_column(BigInteger)


# On Postgres, what each statement on urls changed per host and status, not folded into
# host_counts yet (host_counts_fold(), migration 0011); empty on SQLite.
host_count_deltas = Table(
    "host_count_deltas", Base.metadata,
    Column("host", String(255), nullable=False),
    Column("status", String(16), nullable=False),
    Column("n", BigInteger, nullable=False))
