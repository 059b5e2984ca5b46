"""The records the layers pass each other: what the frontier hands out and takes in (`Lease`,
`QueuedURL`), what a request got (`Fetched`), the page record the stages pass on (`Page`,
with its `Link`s and, for a robots.txt answer, its `RobotsAnswer`), a page handed to the
render stage (`Handover`); and the names the stages and the database share: the status of a
URL row (and of a page record) and the errors of a fetch. Pure: no I/O.

`Status` and `FetchError` are `StrEnum`s: each member is its string, so rows, messages and
Redis keep the same text, and a comparison with a plain string still holds.

Records that travel between Celery tasks have a wire form for msgpack: a positional list
(`to_wire`, `from_wire`), the cheapest to build, pack and read. A field added to `Page` goes
last, with a default, so a message written before it still loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from math import inf
from operator import attrgetter
from typing import Any, NamedTuple


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
    RETRIED = "retried"          # a page record of a 429/5xx whose URL goes back to be tried
                                 # again: kept in the fetch history only (it has no row)


class FetchError(StrEnum):
    """Why a request got no HTTP answer (besides `http_<exception>` and `error_<exception>`,
    which name the unexpected exception that failed it: those are open-ended)."""

    TIMEOUT = "timeout"
    CONNECT = "connect"
    PROTOCOL = "protocol"
    DNS = "dns"
    # The crawler's own resolver failed (not the name's answer): tried again, never counted.
    RESOLVER = "resolver"
    INVALID_HOST = "invalid_host"
    INVALID_URL = "invalid_url"
    TLS = "tls"
    TLS_CERTIFICATE = "tls_certificate"
    TOO_LARGE = "too_large"
    UNSUPPORTED_ENCODING = "unsupported_encoding"
    # The private-address guard refused the host's address (CRAWL_ALLOWED_NETWORKS).
    ADDRESS_INVALID = "ssrf_bad_address"
    ADDRESS_LOOPBACK = "ssrf_loopback"
    ADDRESS_LINK_LOCAL = "ssrf_link_local"
    ADDRESS_MULTICAST = "ssrf_multicast"
    ADDRESS_UNSPECIFIED = "ssrf_unspecified"
    ADDRESS_PRIVATE = "ssrf_private"
    ADDRESS_RESERVED = "ssrf_reserved"
    ADDRESS_NOT_GLOBAL = "ssrf_not_global"


ADDRESS_REFUSED = frozenset({
    FetchError.ADDRESS_INVALID, FetchError.ADDRESS_LOOPBACK, FetchError.ADDRESS_LINK_LOCAL,
    FetchError.ADDRESS_MULTICAST, FetchError.ADDRESS_UNSPECIFIED, FetchError.ADDRESS_PRIVATE,
    FetchError.ADDRESS_RESERVED, FetchError.ADDRESS_NOT_GLOBAL})


@dataclass(frozen=True, slots=True)
class QueuedURL:
    """A URL to queue; `replaces_depth` is set when it is queued already at that depth;
    `hops`: off-scope links in a row that led to it (crawlapp.core.scope)."""

    url: str
    depth: int
    priority: float
    replaces_depth: int | None = None
    hops: int = 0

    def to_wire(self) -> list[Any]:
        return [self.url, self.depth, self.priority, self.replaces_depth, self.hops]

    @classmethod
    def from_wire(cls, raw: Sequence[Any]) -> QueuedURL:
        url, depth, priority, replaces_depth, hops = raw
        return cls(str(url), int(depth), float(priority),
                   None if replaces_depth is None else int(replaces_depth), int(hops))


class QueueEntry(NamedTuple):
    """A URL as a host's queue in the frontier holds it."""

    depth: int
    url: str
    hops: int = 0


@dataclass(frozen=True, slots=True)
class Lease:
    """One host handed to a fetch task, with a URL to fetch under it. A lease of several URLs
    of its host is one Lease per URL, all with its token and not_before.

    `not_before` is the host's next allowed time: the request must not start earlier.
    `hops`: off-scope links in a row that led to the URL.
    """

    shard: int
    host: str
    token: str
    url: str
    depth: int
    not_before: float = 0.0
    hops: int = 0

    def to_wire(self) -> list[Any]:
        return [self.shard, self.host, self.token, self.url, self.depth, self.not_before,
                self.hops]

    @classmethod
    def from_wire(cls, raw: Sequence[Any]) -> Lease:
        """A lease from its wire form (one written before `hops` has 6 fields)."""
        shard, host, token, url, depth, not_before, *hops = raw
        return cls(int(shard), str(host), str(token), str(url), int(depth), float(not_before),
                   int(hops[0]) if hops else 0)


class ParkKind(StrEnum):
    """Why a host is parked: it comes back by itself (FAILING) or when an operator resumes it."""

    FAILING = "failing"          # CRAWL_PARK_AFTER failures in a row: back after CRAWL_PARK_SECONDS
    UNREACHABLE = "unreachable"  # given up: an error of the host that will not change soon
    PAUSED = "paused"            # paused by an operator


def with_note(error: str, note: str | None) -> str:
    """An error with what its kind does not say, in parentheses: `tls_certificate
    (certificate has expired)`."""
    return f"{error} ({note})" if note else error


@dataclass(frozen=True, slots=True)
class ParkReason:
    """Why a host is parked: its kind and, but for a pause, the detail (the failures in a
    row and the last one; the error that gave the host up, and its note: what the error
    does not say, such as a TLS failure's reason). Its text (`str`) is what the frontier
    keeps and shows: `paused`, `unreachable: <error>` or `unreachable: <error> (<note>)`,
    or the detail of a failing host."""

    kind: ParkKind
    detail: str = ""
    note: str = ""

    def __str__(self) -> str:
        if self.kind is ParkKind.PAUSED:
            return "paused"
        if self.kind is ParkKind.UNREACHABLE:
            return f"unreachable: {with_note(self.detail, self.note)}"
        return self.detail

    @classmethod
    def parse(cls, text: str) -> ParkReason:
        """The reason from its text."""
        if text == "paused":
            return PAUSED
        kind, sep, detail = text.partition(": ")
        if sep and kind == ParkKind.UNREACHABLE:
            error, _, note = detail.partition(" (")  # an error's name has no space
            return cls(ParkKind.UNREACHABLE, error, note.removesuffix(")"))
        return cls(ParkKind.FAILING, text)


PAUSED = ParkReason(ParkKind.PAUSED)


@dataclass(frozen=True, slots=True)
class Release:
    """How a lease ends: the host's next allowed time, whether its URL goes back (`behind`:
    after the host's other URLs, for a URL to try again), the host's failures in a row, and
    why it is parked (if it is)."""

    lease: Lease
    next_time: float
    requeue: bool = False
    failures: int = 0
    park_reason: ParkReason | None = None
    behind: bool = False


@dataclass(frozen=True, slots=True)
class ShardStats:
    shard: int
    hosts_waiting: int
    hosts_ready: int
    hosts_leased: int
    hosts_parked: int
    urls_queued: int
    hosts_backing_off: int  # failed last time, so waiting out a backoff (parked or not)


class HostStatus(StrEnum):
    """Where a host stands in the frontier."""

    READY = "ready"      # due: a dispatcher may lease it
    WAITING = "waiting"  # queued URLs, due later
    LEASED = "leased"    # a fetch task holds it
    IDLE = "idle"        # nothing queued
    PARKED = "parked"    # failing, given up or paused (see its ParkReason)


@dataclass(frozen=True, slots=True)
class HostState:
    """One host in the frontier: URLs queued, where it stands, failures in a row, when it is
    next due or comes back, and why it is parked (if it is)."""

    queued: int
    status: HostStatus
    failures: int
    until: float | None
    park: ParkReason | None = None

    @property
    def label(self) -> str:
        """What `crawlctl hosts` shows of it: its status, or why it is parked."""
        return str(self.park) if self.park is not None else self.status

    @classmethod
    def of(cls, queued: int, ready: float | None, leased: bool, parked: float | None,
           why: str | None, failures: int, now: float) -> HostState:
        """A host's state from its frontier entries: its time in the ready set, whether it
        is leased, its time in the parked set and why it is parked (the reason's text)."""
        park = None
        if parked is not None:
            status = HostStatus.PARKED
            park = ParkReason.parse(why) if why else None
        elif leased:
            status = HostStatus.LEASED
        elif ready is not None:
            status = HostStatus.READY if ready <= now else HostStatus.WAITING
        else:
            status = HostStatus.IDLE
        until = parked if parked is not None else ready
        return cls(queued, status, failures, None if until is None or until == inf else until,
                   park)


@dataclass(slots=True)
class Fetched:
    """What one request got: an HTTP status and body, or an error code."""

    url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None
    started: float = 0.0
    ended: float = 0.0
    request_headers: str = ""   # header blocks as sent and received (see `Page`)
    response_headers: str = ""
    ip_address: str | None = None
    error_note: str | None = None  # what the error does not say: a TLS failure's reason
    http_version: str | None = None  # "HTTP/1.1", "HTTP/2": what the answer came over
    truncated: bool = False  # the body was cut at the request's cap (the bytes read kept)
    cipher_suite: str | None = None  # the TLS connection's, as OpenSSL names it


class Link(NamedTuple):
    """A link of a page: its URL (the request URL once resolved against the page; as written
    in the page when parse_html finds it), anchor text, rel=nofollow, and whether it sits in
    navigation, a header, footer or aside. Its wire form is the tuple itself."""

    url: str
    anchor: str = ""
    nofollow: bool = False
    boilerplate: bool = False


class RobotsAnswer(NamedTuple):
    """What the hosts row keeps of a robots.txt answer. Its wire form is the tuple itself."""

    origin: str
    status: int
    body: str
    crawl_delay: float | None


@dataclass(slots=True)
class Page:
    """The record of one fetched URL, filled in stage by stage (fetch, render, parse, dedup,
    store) and read by the last one (extract_links). A robots.txt answer travels as a record
    of status ROBOTS with `robots` set and its sitemaps as links; it has no URL row."""

    url: str = ""                       # the request URL
    url_hash: str = ""                  # of its dedup key
    host: str = ""
    depth: int = 0                      # -1 for a robots.txt record
    status: Status = Status.QUEUED
    http_status: int | None = None
    error: str | None = None            # also "unread: <why>" for a page that yielded nothing
    fetched_at: float = 0.0             # UNIX time (0: not fetched)
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    location: str | None = None
    x_robots: str | None = None
    redirect_hops: int = 0              # redirects that led to this URL
    not_modified: bool = False          # a 304 to a conditional GET
    content_hash: str | None = None     # SHA-256 of the body (the rendered one, if rendered)
    content_length: int | None = None
    # The page's bodies, gzip bytes until stored: its content, an exact copy's content, and
    # (`raw_*` below) its body as fetched when that is not its content. Written and read as
    # one record by crawlapp.core.bodies only, which decides what the store keeps of them.
    body_gz: bytes | None = None
    copy_gz: bytes | None = None
    render_reason: str | None = None    # why it was handed to the render stage
    rendered: bool = False
    render_error: str | None = None
    raw_gz: bytes | None = None
    raw_hash: str | None = None
    title: str | None = None
    simhash: int | None = None
    links: list[Link] = field(default_factory=list)
    canonical: str | None = None        # its <link rel=canonical> when it names another URL
    noindex: bool = False
    unstored: str | None = None         # 'canonical' or 'noindex': body not kept
    content_dedup: bool = False
    duplicate_of: str | None = None
    near_duplicate: bool = False
    storage_key: str | None = None
    raw_storage_key: str | None = None
    robots: RobotsAnswer | None = None  # on a ROBOTS record only
    hops: int = 0                       # off-scope links in a row that led to it
    # What the fetch history keeps for the WARC export: the request and response header
    # blocks as sent and received ("Name: value" lines joined by CRLF, order and case kept;
    # one string is cheaper to carry than a list of pairs), the server's address, the WARC
    # payload digest ("sha1:<base32>") of the body as fetched and the protocol it came over.
    request_headers: str = ""
    response_headers: str = ""
    ip_address: str | None = None
    payload_digest: str | None = None
    http_version: str | None = None     # "HTTP/1.1" or "HTTP/2" (WARC-Protocol)
    # The body kept for the archive was cut: a redirect's or an error answer's at
    # CRAWL_ARCHIVE_ANSWER_BYTES, a robots.txt at 500 KiB, an answer too large
    # (CRAWL_MAX_BODY_BYTES) where its reading stopped.
    truncated: bool = False
    lastmods: dict[str, float] | None = None  # a sitemap's: URL -> its <lastmod> (POSIX time)
    cipher_suite: str | None = None     # the TLS connection's (WARC-Cipher-Suite)
    text_digest: int | None = None      # of its visible text (core/textchanges.py), HTML only

    def to_wire(self) -> list[Any]:
        """The fields in declaration order (links and robots as arrays)."""
        return list(_PAGE_FIELDS(self))

    def copy(self) -> Page:
        """A shallow copy (dataclasses.replace, which reads the fields anew, costs five times
        as much)."""
        return Page(*_PAGE_FIELDS(self))

    @classmethod
    def from_wire(cls, raw: Sequence[Any]) -> Page:
        page = cls(*raw)
        page.status = Status(page.status)
        if page.links:
            page.links = [_as_link(Link, link) for link in page.links]
        if page.robots is not None:
            page.robots = RobotsAnswer(*page.robots)
        return page


_PAGE_FIELDS = attrgetter(*(f.name for f in fields(Page)))
# A Link from its wire form: Link._make without its length check, 60 % of the CPU of Link(*raw)
# (a page may have hundreds of links, read by three stages); to_wire always sends 4 fields.
_as_link = tuple.__new__


@dataclass(frozen=True, slots=True)
class Handover:
    """A fetched page to render under its still-held lease, with the host's next allowed time
    after the fetch and its failures in a row (what the fetch stage would have released)."""

    page: Page
    lease: Lease
    next_time: float
    failures: int

    def to_wire(self) -> list[Any]:
        return [self.page.to_wire(), self.lease.to_wire(), self.next_time, self.failures]

    @classmethod
    def from_wire(cls, raw: Sequence[Any]) -> Handover:
        page, lease, next_time, failures = raw
        return cls(Page.from_wire(page), Lease.from_wire(lease), float(next_time), int(failures))
