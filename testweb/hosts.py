"""The test web's hosts and what they answer, below the generator (site.py) and the case
hosts (cases.py, realweb.py) that both use them: the WebSpec, the hosts' addresses, and the
records of pages and responses. Pure: no I/O.
"""

from __future__ import annotations

import functools
import hashlib
import html
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus

HOSTS_PER_OCTET = 250
MAX_HOSTS = HOSTS_PER_OCTET * 255
DISALLOW = ("/private/",)
LAST_MODIFIED_EPOCH = 1_700_000_000
HTML_TYPE = "text/html; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"

_NETLOC_RE = re.compile(r"127\.0\.([1-9][0-9]{0,2})\.([1-9][0-9]{0,2}):([0-9]{1,5})")
_ONSETS = ("b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
           "br", "ch", "cl", "dr", "fl", "gr", "pl", "qu", "sh", "st", "th", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou")
_CODAS = ("", "", "", "n", "r", "s", "l", "m", "nd", "st", "x")

# Case groups (WebSpec.<group>_cases flags) and the case hosts of each, in host order.
CASE_GROUPS = ("robots", "heavy", "odd", "link", "trap", "sitemap", "dedup", "recrawl", "render",
               "realweb")
CASE_HOSTS: tuple[tuple[str, str], ...] = (
    ("robots", "robots-500"), ("robots", "robots-404"), ("robots", "robots-redirect"),
    ("heavy", "heavy"), ("heavy", "redirects"),
    ("odd", "odd"),
    ("link", "links"),
    ("trap", "traps"),
    ("sitemap", "sitemap-index"), ("sitemap", "sitemap-plain"),
    ("dedup", "dedup-0"), ("dedup", "dedup-1"), ("dedup", "dedup-2"), ("dedup", "dedup-3"),
    ("recrawl", "fresh-both"), ("recrawl", "fresh-etag"), ("recrawl", "fresh-lm"),
    ("recrawl", "fresh-none"),
    ("render", "render"), ("render", "render-assets"),
    ("realweb", "docbook"), ("realweb", "sphinx"), ("realweb", "cms"),
)
VALIDATORS = ("ETag", "Last-Modified")
# vary_validators: what normal host i sends, by i % 8
_VARIED_VALIDATORS: tuple[tuple[str, ...], ...] = (
    VALIDATORS, VALIDATORS, VALIDATORS, ("ETag",), VALIDATORS, ("Last-Modified",), VALIDATORS, ())
GENERATION_SECONDS = 86400  # a page changed in generation g is Last-Modified g days later


@dataclass(frozen=True)
class WebSpec:
    """Parameters of a generated web."""

    hosts: int = 20
    pages_per_host: int = 10
    port: int = 8080  # 0 lets the server pick one; URLs are only meaningful once it is known
    seed: int = 1
    crawl_delay_every: int = 10  # host i has "Crawl-delay: 2" when i % N == N - 1; 0 = never
    words_per_page: int = 300
    # --- opt-in cases (see cases.py); `cases` turns every group on
    cases: bool = False
    robots_cases: bool = False  # robots.txt 500 / 404 / 301
    heavy_cases: bool = False  # 20 MiB page, gzip bomb, drip, redirect loop and chain
    odd_cases: bool = False  # 10,000 links, deep DOM, bad UTF-8, charset clash, PNG and PDF
    link_cases: bool = False  # link spellings, <base>, nofollow, canonical, script/comment links
    trap_cases: bool = False  # calendar, session ids, repeating paths, endless chain
    sitemap_cases: bool = False  # robots.txt Sitemap: index + gzip child, plain /sitemap.xml
    dedup_cases: bool = False  # byte-identical mirrors, near-duplicate syndicated article
    recrawl_cases: bool = False  # hosts sending both, one or none of ETag / Last-Modified
    render_cases: bool = False  # app shells whose links only their scripts write; endless script
    realweb_cases: bool = False  # DocBook and Sphinx sites, a CMS: query routes, odd encodings
    vary_validators: bool = False  # normal hosts vary ETag / Last-Modified too (not in `cases`)
    generation: int = 0  # content generation: > 0 changes the text of some pages
    names: tuple[str, ...] = ()  # host names of hosts 0, 1, ... (links and seeds use them)
    tls: bool = False  # URLs are https (served over TLS); the plain web only, no case hosts
    change_fraction: float = 0.25  # share of pages whose text changes in each generation
    big_page_bytes: int = 20 * 1024 * 1024
    bomb_bytes: int = 1 << 30  # decompressed size of the gzip bomb
    drip_seconds: float = 10.0  # the drip page sends its 10 drip bytes over this long

    def __post_init__(self) -> None:
        if not 1 <= self.hosts <= MAX_HOSTS - len(self.case_kinds):
            raise ValueError(f"hosts (with the case hosts) must be in 1..{MAX_HOSTS}")
        if self.pages_per_host < 1:
            raise ValueError("pages_per_host must be >= 1")
        if not 0 <= self.port <= 65535:
            raise ValueError("port must be in 0..65535")
        if self.crawl_delay_every < 0 or self.words_per_page < 0:
            raise ValueError("crawl_delay_every and words_per_page must be >= 0")
        if self.tls and self.case_kinds:
            raise ValueError("tls: the case hosts' absolute URLs are http; no case with tls")
        if len(self.names) > self.hosts or any(
                not re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", name) for name in self.names):
            raise ValueError("names: at most one lowercase dotted host name per normal host")
        if self.generation < 0 or not 0.0 <= self.change_fraction <= 1.0:
            raise ValueError("generation must be >= 0 and change_fraction in [0, 1]")
        if self.big_page_bytes < 1024 or self.bomb_bytes < 1 or self.drip_seconds < 0:
            raise ValueError("big_page_bytes >= 1024, bomb_bytes >= 1, drip_seconds >= 0")

    @property
    def case_groups(self) -> tuple[str, ...]:
        """The enabled case groups, in CASE_GROUPS order."""
        return tuple(g for g in CASE_GROUPS if self.cases or getattr(self, f"{g}_cases"))

    @property
    def case_kinds(self) -> tuple[str, ...]:
        """The kinds of the enabled case hosts, in host order (after the normal hosts)."""
        groups = self.case_groups
        return tuple(kind for group, kind in CASE_HOSTS if group in groups)


StreamItem = bytes | float  # body bytes to send, or seconds to pause first


@dataclass(frozen=True)
class Response:
    """An HTTP response. If `stream` is set the body is not in `body` (which is b"") but comes
    from the iterator `stream()` returns: bytes to send and floats (seconds to pause), produced
    lazily, so huge or slow bodies are never held in memory. The generator does no I/O itself."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    stream: Callable[[], Iterator[StreamItem]] | None = None
    logged: tuple[tuple[str, object], ...] = ()  # more fields for the request's log line

    def header(self, name: str) -> str | None:
        """Value of the first header called `name` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    def chunks(self) -> Iterator[bytes]:
        """The body bytes in order (pauses left out)."""
        if self.stream is None:
            yield self.body
            return
        for item in self.stream():
            if isinstance(item, bytes):
                yield item


@dataclass(frozen=True)
class Link:
    href: str  # as written in the page: absolute URL, absolute path or relative
    text: str
    rel: str = ""  # the rel attribute; "nofollow" among its tokens: not to be followed
    target: str | None = None  # the canonical href a correct crawler ends up with (None: href)

    @property
    def followed(self) -> bool:
        return not self.rel or "nofollow" not in self.rel.lower().split()


@dataclass(frozen=True)
class Page:
    """An HTML page before rendering; its body text is generated from `text_key` when rendered.

    The optional fields are for the case pages: `base` (a <base href>), raw HTML added to the
    head or to the end of <main>, a <meta name=robots content=nofollow> (`nofollow`), and how
    expected_pages() treats the page's links: not at all (`expand` False) or only when asked to
    walk into traps (`trap`).
    """

    title: str
    text_key: str
    nav: tuple[Link, ...]
    links: tuple[Link, ...]
    base: str | None = None
    head_extra: str = ""
    body_extra: str = ""
    nofollow: bool = False
    expand: bool = True
    trap: bool = False

    def followed_links(self) -> list[Link]:
        """The links a correct crawler follows."""
        if self.nofollow:
            return []
        return [link for link in self.nav + self.links if link.followed]


@dataclass(frozen=True)
class Special:
    """A page answered with a ready-made response (odd bytes or headers) and known links.

    `html` False: not an HTML page (an image, a PDF), so never among expected_pages().
    """

    response: Response
    links: tuple[Link, ...] = ()
    html: bool = True
    expand: bool = True


@dataclass(frozen=True)
class RedirectCase:
    """A redirect case: `chain` are the URLs answering 3xx from `start` on, with `statuses`;
    `final` the 200 page at the end (None for a loop, whose last hop goes back to `chain[0]`)."""

    name: str
    start: str
    chain: tuple[str, ...]
    statuses: tuple[int, ...]
    final: str | None

    @property
    def loop(self) -> bool:
        return self.final is None

    @property
    def hops(self) -> int:
        return len(self.chain)


Handler = Callable[..., Page | Special | Response | None]
NAV = (Link("/", "Home"), Link("#content", "Skip to content"))  # every page's <nav>


@functools.cache
def vocabulary(size: int = 2000) -> tuple[str, ...]:
    """A fixed list of `size` distinct made-up words."""
    rng = random.Random("crawlapp-testweb-vocabulary")
    words: dict[str, None] = {}
    while len(words) < size:
        count = rng.randint(1, 3)
        syllables = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(count))
        words[syllables + rng.choice(_CODAS)] = None
    return tuple(words)


def error_response(status: int) -> Response:
    """A small HTML error page."""
    phrase = HTTPStatus(status).phrase
    body = (f"<!DOCTYPE html><html><head><title>{status} {phrase}</title></head>"
            f"<body><h1>{status} {phrase}</h1></body></html>\n").encode()
    return Response(status, [("Content-Type", HTML_TYPE), ("Content-Length", str(len(body)))], body)


def redirect(status: int, location: str) -> Response:
    phrase = HTTPStatus(status).phrase
    body = (f"<!DOCTYPE html><html><head><title>{status} {phrase}</title></head><body>"
            f"<a href=\"{html.escape(location)}\">{phrase}</a></body></html>\n").encode()
    return Response(status, [("Content-Type", HTML_TYPE), ("Content-Length", str(len(body))),
                             ("Location", location)], body)


class Hosts:
    """The hosts of a WebSpec's web: their addresses and names, their case kinds, and the
    validators of their 200 responses (what the case hosts' handlers need of the web)."""

    def __init__(self, spec: WebSpec) -> None:
        self.spec = spec
        self.case_kinds = spec.case_kinds
        self._named = {f"{name}:{spec.port}": i for i, name in enumerate(spec.names)}

    @property
    def host_count(self) -> int:
        """Number of hosts: the normal ones, then the case hosts."""
        return self.spec.hosts + len(self.case_kinds)

    def host_addr(self, i: int) -> str:
        """IP address of host i (never 127.0.0.1)."""
        return f"127.0.{1 + i // HOSTS_PER_OCTET}.{1 + i % HOSTS_PER_OCTET}"

    def netloc(self, i: int) -> str:
        return f"{self.host_addr(i)}:{self.spec.port}"

    def hosts(self) -> list[str]:
        """Netlocs ("127.0.1.1:8080") of all hosts, by index (case hosts included)."""
        return [self.netloc(i) for i in range(self.host_count)]

    def base_url(self, i: int) -> str:
        """The scheme and netloc URLs of host i use: its name if it has one."""
        names, scheme = self.spec.names, self.scheme
        return f"{scheme}://{names[i]}:{self.spec.port}" if i < len(names) else f"{scheme}://{self.netloc(i)}"

    @property
    def scheme(self) -> str:
        return "https" if self.spec.tls else "http"

    def name_addresses(self) -> dict[str, str]:
        """The address each host name (WebSpec.names) must resolve to."""
        return {name: self.host_addr(i) for i, name in enumerate(self.spec.names)}

    def seeds(self) -> list[str]:
        """Home page URL of every normal host (case hosts are reached by links from host 0)."""
        return [self.base_url(i) + "/" for i in range(self.spec.hosts)]

    def host_index(self, netloc: str) -> int | None:
        """Index of the host at `netloc` (its address or name), or None if it is not part of
        this web."""
        if netloc in self._named:
            return self._named[netloc]
        match = _NETLOC_RE.fullmatch(netloc)
        if match is None or int(match[3]) != self.spec.port:
            return None
        third, fourth = int(match[1]), int(match[2])
        if third > 255 or fourth > HOSTS_PER_OCTET:
            return None
        i = (third - 1) * HOSTS_PER_OCTET + fourth - 1
        return i if i < self.host_count else None

    def case_host(self, kind: str) -> int | None:
        """Index of the case host of `kind` ("robots-500", "links", ...), None if not enabled."""
        try:
            return self.spec.hosts + self.case_kinds.index(kind)
        except ValueError:
            return None

    def case_kind(self, i: int) -> str | None:
        """The kind of host i if it is a case host."""
        k = i - self.spec.hosts
        return self.case_kinds[k] if 0 <= k < len(self.case_kinds) else None

    def case_hosts(self) -> dict[str, str]:
        """Netloc of every enabled case host, by kind."""
        return {kind: self.netloc(self.spec.hosts + k) for k, kind in enumerate(self.case_kinds)}

    # --- responses -------------------------------------------------------------------------

    def ok(self, i: int, content_type: str, body: bytes, version: int = 0) -> Response:
        """A 200 response with the host's validators: ETag from the body, a fixed per-host
        Last-Modified (moved on by `version` days for a page changed in generation `version`)."""
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        sent = self._validators(i)
        if "ETag" in sent:
            headers.append(("ETag", f"\"{hashlib.blake2b(body, digest_size=8).hexdigest()}\""))
        if "Last-Modified" in sent:
            modified = LAST_MODIFIED_EPOCH + i * 3600 + version * GENERATION_SECONDS
            headers.append(("Last-Modified", formatdate(modified, usegmt=True)))
        return Response(200, headers, body)

    def _validators(self, i: int) -> tuple[str, ...]:
        if i >= self.spec.hosts:
            kind = self.case_kind(i) or ""
            return {"fresh-etag": ("ETag",), "fresh-lm": ("Last-Modified",),
                    "fresh-none": ()}.get(kind, VALIDATORS)
        return _VARIED_VALIDATORS[i % 8] if self.spec.vary_validators else VALIDATORS

    def validators(self, netloc: str) -> tuple[str, ...]:
        """Which of ETag and Last-Modified the host at `netloc` sends with its 200 responses."""
        i = self.host_index(netloc)
        return () if i is None else self._validators(i)
