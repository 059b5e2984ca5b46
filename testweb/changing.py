"""A web whose pages change while it is served, for measuring how fresh a crawl keeps its
copies (testweb/freshness.py judges it). Pure: every change is drawn up front from the spec and
its seed, and `respond` is told the time (`at`, seconds from the server's start t0).

Host i lives at 127.0.{1 + i // 250}.{1 + i % 250} (testweb/hosts.py), all hosts on one port.
Each has a home page `/` linking to all its pages `/p/<j>.html` (j < pages_per_host), to the
next host's home page and to `/private/secret.html`, which robots.txt disallows.

- **Changes.** Each page changes as a Poisson process: a `static_fraction` of the pages never
  do, the others with a mean interval between changes drawn log-uniform in [min_interval,
  max_interval]. A change is a new version: other words (so another content hash), the same
  links. A change drawn at time s happens at floor(s) + 0.5 (two in one second are one), so
  that Last-Modified and <lastmod>, whole seconds, tell exactly whether a page changed since
  (and an instant on a whole second never falls on a change).
- **News hosts** (`news_hosts` of them, spread over the hosts) publish an article
  `/a/<n>.html` on average every `article_interval` seconds (Poisson); the home page's
  "Latest" list links to the `latest` newest ones (and each article to the one before). An
  article never changes; before its publication it is a 404.
- **Sitemap hosts** (`sitemap_hosts`, half of them news hosts where possible): robots.txt names
  `/sitemap.xml`, which lists the home page, every page and every article published, each
  with its true <lastmod> (the second of its last change, or of its creation: t0).
- **Validators** by host i % 4: ETag and Last-Modified, ETag only, Last-Modified only, none.
  The ETag names the version; Last-Modified is the second of the last change (t0 for a page
  that never changed). A matching If-None-Match, or else an If-Modified-Since not older than
  Last-Modified, gets a 304.
- **robots.txt** disallows `/private/`; from `robots_change_at` on (none by default) also
  `/p/1` (pages 1, 10-19, 100-199...), a new version with its Last-Modified.
- **Dynamic hosts** (host i with i % dynamic_every == dynamic_every - 1; none by default) send
  no validators and write into every HTML answer a token of its request (a hidden form field,
  a timestamp in a script and in a comment) and, in its visible text, the time it was served
  and its version's age ("Updated 3 minutes ago. Served at 11:22:09 UTC."): its bytes differ at
  every request, its text but for those times only when its version does, as many a real
  site's pages.
- **Realism.** Page 1 of each host is XHTML (application/xhtml+xml), page 2 is ISO-8859-1,
  declared by the Content-Type header only, and pages 3, 13, 23... hold malformed or odd hrefs
  (none of which leads off loopback).

Changes are drawn over [0, duration + MARGIN]; nothing changes after. Every response for a
known URL carries its version in the server's log line (`ver`).
"""

from __future__ import annotations

import hashlib
import html
import math
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from email.utils import formatdate
from typing import NamedTuple
from urllib.parse import urlsplit

import numpy as np

from testweb.hosts import (
    HTML_TYPE,
    MAX_HOSTS,
    TEXT_TYPE,
    VALIDATORS,
    Hosts,
    Link,
    Response,
    WebSpec,
    error_response,
    vocabulary,
)
from testweb.site import _anchor, _not_modified, _sentence

MARGIN = 600.0  # seconds of changes drawn beyond the spec's duration
HALF = 0.5  # a change drawn within second n happens at n + HALF
PRIVATE = "/private/"  # disallowed by every host's robots.txt
LATER_DISALLOWED = "/p/1"  # disallowed too from `robots_change_at` on (/p/1.html, /p/10.html...)
PRIVATE_PAGE = "/private/secret.html"
SITEMAP = "/sitemap.xml"
XHTML_PAGE, LATIN1_PAGE = 1, 2  # page numbers
ODD_EVERY, ODD_FIRST = 10, 3  # pages 3, 13, 23... hold the odd hrefs
PARAGRAPH_WORDS = 60
XHTML_TYPE = "application/xhtml+xml; charset=utf-8"
LATIN1_TYPE = "text/html; charset=iso-8859-1"
XML_TYPE = "application/xml"
# What host i sends with its 200 responses, by i % 4.
VALIDATOR_KINDS: tuple[tuple[str, ...], ...] = (VALIDATORS, ("ETag",), ("Last-Modified",), ())
# hrefs a crawler must cope with: unparsable (an unclosed IPv6 address, a port out of range),
# not HTTP, a bad escape (a 404 on the same host), a relative one padded with spaces.
ODD_HREFS = ("http://[::1", "http://127.0.1.1:99999/", "javascript:void(0)", "/p/%zz.html",
             "  ../p/0.html  ", "")
LATIN1_TEXT = "Entrée du café à Zürich: façade élevée, naïve, déjà vue."
_PAGE = re.compile(r"/p/(0|[1-9][0-9]*)\.html")
_ARTICLE = re.compile(r"/a/(0|[1-9][0-9]*)\.html")


@dataclass(frozen=True)
class ChangingSpec:
    """Parameters of a changing web; every field is an int or a float (the command line of
    `python -m testweb serve-changing` is made of them)."""

    hosts: int = 20
    pages_per_host: int = 200
    port: int = 0  # 0 lets the server pick one; URLs are only meaningful once it is known
    seed: int = 1
    duration: float = 3600.0  # seconds from t0 whose changes are drawn (plus MARGIN)
    static_fraction: float = 0.2  # share of the pages that never change
    min_interval: float = 20.0  # the mean interval between changes of a changing page is
    max_interval: float = 3600.0  # drawn log-uniform between these (seconds)
    news_hosts: int = 7
    article_interval: float = 60.0  # mean seconds between two articles of a news host
    latest: int = 10  # articles the home page of a news host links to
    sitemap_hosts: int = 4
    crawl_delay_every: int = 0  # host i has "Crawl-delay: crawl_delay" when i % N == N - 1
    crawl_delay: float = 2.0
    words_per_page: int = 150
    dynamic_every: int = 0  # host i is dynamic (module docstring) when i % N == N - 1
    robots_change_at: float = 0.0  # from then on robots.txt also disallows /p/1 (0: never)

    def __post_init__(self) -> None:
        if not 1 <= self.hosts <= MAX_HOSTS or self.pages_per_host < 1:
            raise ValueError(f"hosts must be in 1..{MAX_HOSTS} and pages_per_host >= 1")
        if not 0 <= self.port <= 65535 or self.duration < 0:
            raise ValueError("port must be in 0..65535 and duration >= 0")
        if not 0.0 <= self.static_fraction <= 1.0:
            raise ValueError("static_fraction must be in [0, 1]")
        if not 0 < self.min_interval <= self.max_interval or self.article_interval <= 0:
            raise ValueError("need 0 < min_interval <= max_interval and article_interval > 0")
        if not (0 <= self.news_hosts <= self.hosts and 0 <= self.sitemap_hosts <= self.hosts):
            raise ValueError("news_hosts and sitemap_hosts must be in 0..hosts")
        if self.latest < 1 or self.crawl_delay_every < 0 or self.crawl_delay < 0:
            raise ValueError("latest >= 1, crawl_delay_every >= 0 and crawl_delay >= 0")
        if self.dynamic_every < 0 or self.robots_change_at < 0:
            raise ValueError("dynamic_every and robots_change_at must be >= 0")
        if self.words_per_page < 1:
            raise ValueError("words_per_page must be >= 1")

    @property
    def horizon(self) -> float:
        """Seconds from t0 over which changes are drawn."""
        return self.duration + MARGIN


class Tracked(NamedTuple):
    """A page whose freshness is judged: host, path, true change rate (changes a second; 0
    for one that never changes), its changes (offsets from t0, sorted: version v is live from
    changes[v - 1] on) and the offset it exists from (0, or an article's publication)."""

    host: int
    path: str
    rate: float
    changes: np.ndarray
    born: float


@dataclass(frozen=True)
class Schedule:
    """Every change of a web, drawn from its spec (the port aside)."""

    rates: np.ndarray  # (hosts, pages): changes a second, 0 for a static page
    changes: tuple[tuple[np.ndarray, ...], ...]  # [host][page]: offsets of its changes
    articles: tuple[np.ndarray, ...]  # [host]: offsets of its articles' publications
    host_events: tuple[np.ndarray, ...]  # [host]: every change and publication, sorted

    @classmethod
    def draw(cls, spec: ChangingSpec) -> Schedule:
        """Each page from a generator of its own (seeded by the spec's seed, host and page),
        so that a longer duration or more pages keep every change drawn for fewer."""
        rates = np.zeros((spec.hosts, spec.pages_per_host))
        news = set(news_hosts(spec))
        changes, articles = [], []
        low, high = math.log(spec.min_interval), math.log(spec.max_interval)
        for i in range(spec.hosts):
            pages = []
            for j in range(spec.pages_per_host):
                rng = random.Random(f"{spec.seed}:{i}:{j}")
                if rng.random() >= spec.static_fraction:
                    rates[i, j] = math.exp(-rng.uniform(low, high))  # 1 / the mean interval
                pages.append(_poisson(rng, rates[i, j], spec.horizon, merge=True))
            changes.append(tuple(pages))
            rng = random.Random(f"{spec.seed}:{i}:articles")
            rate = 1.0 / spec.article_interval if i in news else 0.0
            articles.append(_poisson(rng, rate, spec.horizon, merge=False))
        events = tuple(np.sort(np.concatenate([*pages, published]))
                       for pages, published in zip(changes, articles, strict=True))
        return cls(rates, tuple(changes), tuple(articles), events)


def _poisson(rng: random.Random, rate: float, horizon: float, *, merge: bool) -> np.ndarray:
    """Times of a Poisson process of `rate` over [0, horizon], each moved to the middle of its
    second; with `merge`, two in one second are one."""
    times: list[float] = []
    t = 0.0
    while rate > 0:
        t += rng.expovariate(rate)
        if t > horizon:
            break
        times.append(math.floor(t) + HALF)
    array = np.array(times, dtype=float)
    return np.unique(array) if merge else array


def _spread(count: int, among: Sequence[int]) -> list[int]:
    """`count` of `among`, evenly spaced."""
    return [among[k * len(among) // count] for k in range(count)]


def news_hosts(spec: ChangingSpec) -> list[int]:
    """The news hosts, evenly spaced over the hosts."""
    return _spread(spec.news_hosts, range(spec.hosts))


def sitemap_hosts(spec: ChangingSpec) -> list[int]:
    """The sitemap hosts: half of them (rounded down) news hosts, the rest not, as far as
    there are such hosts; each kind evenly spaced."""
    news = news_hosts(spec)
    others = [i for i in range(spec.hosts) if i not in set(news)]
    from_news = max(spec.sitemap_hosts - len(others), min(len(news), spec.sitemap_hosts // 2))
    return sorted(_spread(from_news, news) + _spread(spec.sitemap_hosts - from_news, others))


class ChangingWeb:
    """The changing web of a spec, with its clock's origin `t0` (time.time() of offset 0;
    the server's). `schedule`: reuse the changes drawn for an equal spec (another port)."""

    def __init__(self, spec: ChangingSpec = ChangingSpec(),  # noqa: B008 - a frozen record
                 t0: float = 0.0, schedule: Schedule | None = None) -> None:
        self.spec = spec
        self.t0 = t0
        self.schedule = schedule or Schedule.draw(spec)
        self._hosts = Hosts(WebSpec(hosts=spec.hosts, pages_per_host=1, port=spec.port,
                                    crawl_delay_every=0))
        self.news_hosts = tuple(news_hosts(spec))
        self.sitemap_hosts = tuple(sitemap_hosts(spec))

    def at_port(self, port: int) -> ChangingWeb:
        """This web served on `port` (same changes, same t0)."""
        return ChangingWeb(replace(self.spec, port=port), self.t0, self.schedule)

    # --- hosts -------------------------------------------------------------------------------

    @property
    def host_count(self) -> int:
        return self.spec.hosts

    def host_addr(self, i: int) -> str:
        return self._hosts.host_addr(i)

    def netloc(self, i: int) -> str:
        return self._hosts.netloc(i)

    def base_url(self, i: int) -> str:
        return self._hosts.base_url(i)

    def hosts(self) -> list[str]:
        """Netloc of every host, by index."""
        return self._hosts.hosts()

    def host_index(self, netloc: str) -> int | None:
        return self._hosts.host_index(netloc)

    def seeds(self) -> list[str]:
        """The home page URL of every host."""
        return self._hosts.seeds()

    def validators(self, i: int) -> tuple[str, ...]:
        """Which of ETag and Last-Modified host i sends (none if it is dynamic)."""
        return () if self.dynamic(i) else VALIDATOR_KINDS[i % len(VALIDATOR_KINDS)]

    def dynamic(self, i: int) -> bool:
        """Whether host i writes a token of each request into its pages (module docstring)."""
        every = self.spec.dynamic_every
        return every > 0 and i % every == every - 1

    def crawl_delay(self, i: int) -> float | None:
        """The Crawl-delay of host i's robots.txt, if any."""
        every = self.spec.crawl_delay_every
        return self.spec.crawl_delay if every > 0 and i % every == every - 1 else None

    def delay_for(self, netloc: str, default_delay: float) -> float:
        """Minimum gap between requests to `netloc`: max(default, the host's Crawl-delay)."""
        i = self.host_index(netloc)
        delay = self.crawl_delay(i) if i is not None else None
        return default_delay if delay is None else max(default_delay, delay)

    # --- changes -----------------------------------------------------------------------------

    def pages(self) -> list[Tracked]:
        """Every regular page /p/<j>.html, host by host."""
        rates, changes = self.schedule.rates, self.schedule.changes
        return [Tracked(i, f"/p/{j}.html", float(rates[i, j]), changes[i][j], 0.0)
                for i in range(self.spec.hosts) for j in range(self.spec.pages_per_host)]

    def articles(self) -> list[Tracked]:
        """Every article of the news hosts (published within the horizon), never changing."""
        none = np.zeros(0)
        return [Tracked(i, f"/a/{n}.html", 0.0, none, float(born))
                for i in range(self.spec.hosts) for n, born in enumerate(self.schedule.articles[i])]

    def published(self, i: int, at: float) -> int:
        """How many articles host i has published by `at` (offset from t0)."""
        return int(np.searchsorted(self.schedule.articles[i], at, side="right"))

    def latest_articles(self, i: int, at: float) -> list[int]:
        """The numbers of the articles host i's home page lists at `at`, newest first."""
        count = self.published(i, at)
        return list(range(count - 1, max(count - self.spec.latest, 0) - 1, -1))

    def state(self, i: int, path: str, at: float) -> tuple[int, float] | None:
        """(version, offset of its last change or creation) of the URL `path` of host i at
        `at`; None where it answers 404 (an unknown path, an article not yet published)."""
        if (page := _PAGE.fullmatch(path)) is not None:
            j = int(page[1])
            return _last(self.schedule.changes[i][j], at) if j < self.spec.pages_per_host else None
        if (article := _ARTICLE.fullmatch(path)) is not None:
            n = int(article[1])
            return (0, float(self.schedule.articles[i][n])) if n < self.published(i, at) else None
        if path == "/":
            return _last(self.schedule.articles[i], at)
        if path == SITEMAP:
            return _last(self.schedule.host_events[i], at) if i in self.sitemap_hosts else None
        if path == "/robots.txt":
            return (1, self.spec.robots_change_at) if self.robots_changed(at) else (0, 0.0)
        if path == PRIVATE_PAGE:
            return (0, 0.0)
        return None

    def version(self, i: int, path: str, at: float) -> int | None:
        """The version of `path` on host i live at `at` (None: a 404 then)."""
        state = self.state(i, path, at)
        return None if state is None else state[0]

    # --- responses ---------------------------------------------------------------------------

    def respond(self, netloc: str, path_and_query: str,
                request_headers: Mapping[str, str] | None = None,
                at: float | None = None) -> Response:
        """The response to GET `path_and_query` on `netloc` at `at` (offset from t0; default:
        now by time.time()). A URL with a query is a 404."""
        at = time.time() - self.t0 if at is None else at
        i = self.host_index(netloc)
        path = path_and_query.split("#", 1)[0]
        state = self.state(i, path, at) if i is not None and "?" not in path else None
        if i is None or state is None:
            return error_response(404)
        version, changed = state
        content_type, body = self._content(i, path, version, at)
        if self.dynamic(i):  # into an HTML page's body (robots.txt and sitemaps have none)
            body = body.replace(b"</body>", _token(at, self.t0 + at, at - changed) + b"</body>", 1)
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        sent = self.validators(i)
        if "ETag" in sent:
            tag = hashlib.blake2b(f"{self.spec.seed}:{i}:{path}:{version}".encode(), digest_size=8)
            headers.append(("ETag", f"\"{tag.hexdigest()}\""))
        if "Last-Modified" in sent:
            headers.append(("Last-Modified", formatdate(self.t0 + changed, usegmt=True)))
        logged = (("ver", version),)
        response = Response(200, headers, body, logged=logged)
        if _not_modified(response, request_headers or {}):
            return Response(304, [(k, v) for k, v in headers if k in VALIDATORS], b"",
                            logged=logged)
        return response

    def _content(self, i: int, path: str, version: int, at: float) -> tuple[str, bytes]:
        if path == "/robots.txt":
            return TEXT_TYPE, self.robots_txt(i, at).encode()
        if path == SITEMAP:
            return XML_TYPE, self.sitemap(i, at).encode()
        if path == "/":
            return HTML_TYPE, self._home(i, at).encode()
        if path == PRIVATE_PAGE:
            return HTML_TYPE, _document(f"Host {i} staff only", "", [], []).encode()
        if (article := _ARTICLE.fullmatch(path)) is not None:
            n = int(article[1])
            links = [Link("/", "Home"), *([Link(f"/a/{n - 1}.html", "Previous")] if n else [])]
            text = _paragraphs(f"{self.spec.seed}:{i}:a:{n}", self.spec.words_per_page)
            return HTML_TYPE, _document(f"Host {i} article {n}", text, links, []).encode()
        page = _PAGE.fullmatch(path)
        assert page is not None  # state() knows no other path
        j = int(page[1])
        text = _paragraphs(f"{self.spec.seed}:{i}:{j}:{version}", self.spec.words_per_page)
        links = self.page_links(j)
        title = f"Host {i} page {j}"
        if j == XHTML_PAGE:
            return XHTML_TYPE, _xhtml(title, text, links).encode()
        if j == LATIN1_PAGE:
            return LATIN1_TYPE, _document(title, f"<p>{LATIN1_TEXT}</p>\n{text}", links, [],
                                          charset="").encode("latin-1")
        odd = list(ODD_HREFS) if j % ODD_EVERY == ODD_FIRST else []
        return HTML_TYPE, _document(title, text, links, odd).encode()

    def page_links(self, j: int) -> list[Link]:
        """The links of page j, the same in every version: home, next (relative), related."""
        n = self.spec.pages_per_host
        return [Link("/", "Home"), Link(f"{(j + 1) % n}.html", "Next"),
                Link(f"/p/{(j * 7 + 3) % n}.html", "Related")]

    def home_links(self, i: int, at: float) -> list[Link]:
        """The links of host i's home page at `at`: the latest articles (news hosts), every
        page, the next host's home page and the disallowed page."""
        links = [Link(f"/a/{n}.html", f"Article {n}") for n in self.latest_articles(i, at)]
        links += [Link(f"/p/{j}.html", f"Page {j}") for j in range(self.spec.pages_per_host)]
        if self.spec.hosts > 1:
            other = (i + 1) % self.spec.hosts
            links.append(Link(self.base_url(other) + "/", f"Host {other}"))
        links.append(Link(PRIVATE_PAGE, "Staff only"))
        return links

    def _home(self, i: int, at: float) -> str:
        links = self.home_links(i, at)
        count = len(self.latest_articles(i, at))
        latest = "".join(f"<li>{_anchor(link)}</li>\n" for link in links[:count])
        section = f"<section><h2>Latest</h2>\n<ol>\n{latest}</ol></section>\n" if count else ""
        text = _paragraphs(f"{self.spec.seed}:{i}:home", PARAGRAPH_WORDS)
        return _document(f"Host {i} home", section + text, links[count:], [])

    def robots_changed(self, at: float) -> bool:
        """Whether robots.txt disallows LATER_DISALLOWED too at `at` (`robots_change_at`)."""
        return 0 < self.spec.robots_change_at <= at

    def robots_txt(self, i: int, at: float) -> str:
        lines = ["User-agent: *", f"Disallow: {PRIVATE}"]
        if self.robots_changed(at):
            lines.append(f"Disallow: {LATER_DISALLOWED}")
        delay = self.crawl_delay(i)
        if delay is not None:
            lines.append(f"Crawl-delay: {delay:g}")
        if i in self.sitemap_hosts:
            lines.append(f"Sitemap: {self.base_url(i)}{SITEMAP}")
        return "\n".join(lines) + "\n"

    def sitemap(self, i: int, at: float) -> str:
        """Host i's sitemap at `at`: its home page, pages and published articles, each with
        the second of its last change (or creation) as <lastmod>."""
        paths = ["/", *(f"/p/{j}.html" for j in range(self.spec.pages_per_host)),
                 *(f"/a/{n}.html" for n in range(self.published(i, at)))]
        entries = []
        for path in paths:
            state = self.state(i, path, at)
            assert state is not None
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.t0 + state[1]))
            entries.append(f"<url><loc>{self.base_url(i)}{path}</loc>"
                           f"<lastmod>{stamp}</lastmod></url>\n")
        return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns="
                f"\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{''.join(entries)}</urlset>\n")

    def disallowed(self, url: str, at: float | None = None) -> bool:
        """True if robots.txt disallows the URL: a path under /private/, and from
        `robots_change_at` on (`at`, given) one under LATER_DISALLOWED."""
        path = urlsplit(url).path
        return path.startswith(PRIVATE) or (
            at is not None and self.robots_changed(at) and path.startswith(LATER_DISALLOWED))


def _last(changes: np.ndarray, at: float) -> tuple[int, float]:
    """(version at `at`, offset of the change that made it; 0 for version 0) of `changes`."""
    version = int(np.searchsorted(changes, at, side="right"))
    return version, float(changes[version - 1]) if version else 0.0


def _paragraphs(key: str, count: int) -> str:
    words = random.Random(key).choices(vocabulary(), k=count)
    return "".join(f"<p>{_sentence(words[k:k + PARAGRAPH_WORDS])}</p>\n"
                   for k in range(0, len(words), PARAGRAPH_WORDS))


def _items(links: Sequence[Link], odd: Sequence[str]) -> str:
    items = [_anchor(link) for link in links]
    items += [f"<a href=\"{html.escape(href)}\">Odd {k}</a>" for k, href in enumerate(odd)]
    return "".join(f"<li>{item}</li>\n" for item in items)


def _document(title: str, text: str, links: Sequence[Link], odd: Sequence[str],
              charset: str = "<meta charset=\"utf-8\">") -> str:
    title = html.escape(title)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n"
            f"<head>{charset}<title>{title}</title></head>\n<body>\n"
            f"<main id=\"content\">\n<h1>{title}</h1>\n{text}<ul>\n{_items(links, odd)}</ul>\n"
            "</main>\n</body>\n</html>\n")


def _token(at: float, now: float, age: float) -> bytes:
    """What a dynamic host writes into a page at each request: a form's token, a timestamp in
    a script and in a comment, and in its visible text the time it was served (POSIX `now`)
    and how long ago its version was made (`age` seconds), as many a site's footer does
    (well-formed XHTML too)."""
    token = f"{int(at * 1e6):x}"
    minutes = int(age // 60)
    ago = "just now" if minutes < 1 else f"{minutes} minute{'s' if minutes > 1 else ''} ago"
    served = time.strftime("%H:%M:%S", time.gmtime(now))
    return (f"<form action=\"/\"><div><input type=\"hidden\" name=\"token\" value=\"{token}\" />"
            f"</div></form>\n<script>var served = {at:.6f};</script><!-- {token} -->\n"
            f"<p class=\"served\">Updated {ago}. Served at {served} UTC.</p>\n").encode()


def _xhtml(title: str, text: str, links: Sequence[Link]) -> str:
    title = html.escape(title)
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Strict//EN\" "
            "\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd\">\n"
            "<html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" lang=\"en\">\n"
            f"<head><title>{title}</title></head>\n<body>\n<div id=\"content\">\n"
            f"<h1>{title}</h1>\n{text}<ul>\n{_items(links, [])}</ul>\n<hr />\n</div>\n"
            "</body>\n</html>\n")
