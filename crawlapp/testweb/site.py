"""Pure generator of the test web: hosts, pages, links and robots.txt from a WebSpec (no I/O).

Host i lives at ``127.0.{1 + i // 250}.{1 + i % 250}:port``. Every host has a home page ``/``,
pages ``/p/<j>.html``, a ``/robots.txt`` disallowing ``/private/`` and a 200 page under
``/private/`` that a polite crawler never asks for. Everything is a function of the WebSpec.
"""

from __future__ import annotations

import functools
import hashlib
import html
import random
import re
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from http import HTTPStatus
from urllib.parse import urldefrag, urljoin, urlsplit

HOSTS_PER_OCTET = 250
MAX_HOSTS = HOSTS_PER_OCTET * 255
HOME_FANOUT = 8  # the home page links to /p/0.html .. /p/7.html
CRAWL_DELAY = 2.0
DISALLOW = ("/private/",)
PARAGRAPH_WORDS = 60
LAST_MODIFIED_EPOCH = 1_700_000_000
HTML_TYPE = "text/html; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"

_NETLOC_RE = re.compile(r"127\.0\.([1-9][0-9]{0,2})\.([1-9][0-9]{0,2}):([0-9]{1,5})")
_ONSETS = ("b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
           "br", "ch", "cl", "dr", "fl", "gr", "pl", "qu", "sh", "st", "th", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou")
_CODAS = ("", "", "", "n", "r", "s", "l", "m", "nd", "st", "x")


@dataclass(frozen=True)
class WebSpec:
    """Parameters of a generated web."""

    hosts: int = 20
    pages_per_host: int = 10
    port: int = 8080  # 0 lets the server pick one; URLs are only meaningful once it is known
    seed: int = 1
    crawl_delay_every: int = 10  # host i has "Crawl-delay: 2" when i % N == N - 1; 0 = never
    words_per_page: int = 300

    def __post_init__(self) -> None:
        if not 1 <= self.hosts <= MAX_HOSTS:
            raise ValueError(f"hosts must be in 1..{MAX_HOSTS}")
        if self.pages_per_host < 1:
            raise ValueError("pages_per_host must be >= 1")
        if not 0 <= self.port <= 65535:
            raise ValueError("port must be in 0..65535")
        if self.crawl_delay_every < 0 or self.words_per_page < 0:
            raise ValueError("crawl_delay_every and words_per_page must be >= 0")


@dataclass(frozen=True)
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """Value of the first header called `name` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


@dataclass(frozen=True)
class Link:
    href: str  # as written in the page: absolute URL, absolute path or relative
    text: str


@dataclass(frozen=True)
class Page:
    """An HTML page before rendering; its body text is generated from `text_key` when rendered."""

    title: str
    text_key: str
    nav: tuple[Link, ...]
    links: tuple[Link, ...]


Handler = Callable[..., Page | Response | None]
_NAV = (Link("/", "Home"), Link("#content", "Skip to content"))


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


class Web:
    """The generated web of a WebSpec: addresses, content and the expected result of a crawl."""

    def __init__(self, spec: WebSpec = WebSpec()) -> None:
        self.spec = spec
        self._routes: tuple[tuple[re.Pattern[str], Handler], ...] = (
            (re.compile(r"/robots\.txt"), self._robots),
            (re.compile(r"/"), self._home),
            (re.compile(r"/p/(0|[1-9][0-9]*)\.html"), self._page),
            (re.compile(r"/private/(.+)"), self._private),
        )

    # --- addresses -------------------------------------------------------------------------

    def host_addr(self, i: int) -> str:
        """IP address of host i (never 127.0.0.1)."""
        return f"127.0.{1 + i // HOSTS_PER_OCTET}.{1 + i % HOSTS_PER_OCTET}"

    def netloc(self, i: int) -> str:
        return f"{self.host_addr(i)}:{self.spec.port}"

    def hosts(self) -> list[str]:
        """Netlocs ("127.0.1.1:8080") of all hosts, by index."""
        return [self.netloc(i) for i in range(self.spec.hosts)]

    def base_url(self, i: int) -> str:
        return f"http://{self.netloc(i)}"

    def seeds(self) -> list[str]:
        """Home page URL of every host."""
        return [self.base_url(i) + "/" for i in range(self.spec.hosts)]

    def host_index(self, netloc: str) -> int | None:
        """Index of the host at `netloc`, or None if it is not part of this web."""
        match = _NETLOC_RE.fullmatch(netloc)
        if match is None or int(match[3]) != self.spec.port:
            return None
        third, fourth = int(match[1]), int(match[2])
        if third > 255 or fourth > HOSTS_PER_OCTET:
            return None
        i = (third - 1) * HOSTS_PER_OCTET + fourth - 1
        return i if i < self.spec.hosts else None

    # --- politeness ------------------------------------------------------------------------

    def crawl_delay(self, i: int) -> float | None:
        """The Crawl-delay in host i's robots.txt, if any."""
        every = self.spec.crawl_delay_every
        return CRAWL_DELAY if every > 0 and i % every == every - 1 else None

    def robots_txt(self, i: int) -> str:
        lines = ["User-agent: *", *(f"Disallow: {prefix}" for prefix in DISALLOW)]
        delay = self.crawl_delay(i)
        if delay is not None:
            lines.append(f"Crawl-delay: {delay:g}")
        return "\n".join(lines) + "\n"

    def disallowed(self, url: str) -> bool:
        """True if the robots.txt of the URL's host disallows it for every user agent."""
        parts = urlsplit(url)
        if self.host_index(parts.netloc) is None:
            return False
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return target.startswith(DISALLOW)

    def delay_for(self, netloc: str, default_delay: float) -> float:
        """Minimum gap between requests to `netloc`: max(default, the host's Crawl-delay)."""
        i = self.host_index(netloc)
        delay = self.crawl_delay(i) if i is not None else None
        return default_delay if delay is None else max(default_delay, delay)

    # --- content ---------------------------------------------------------------------------

    def respond(self, netloc: str, path_and_query: str,
                request_headers: Mapping[str, str] | None = None) -> Response:
        """The response to GET `path_and_query` on `netloc`.

        `request_headers` (lower-case names) enables conditional requests: a matching
        If-None-Match, or else an If-Modified-Since not older than Last-Modified, gives 304.
        """
        i = self.host_index(netloc)
        if i is None:
            return error_response(404)
        path = path_and_query.split("?", 1)[0].split("#", 1)[0]
        result = self._resolve(i, path)
        response = self._render(i, result) if isinstance(result, Page) else result
        if response.status == 200 and _not_modified(response, request_headers or {}):
            validators = [(k, v) for k, v in response.headers if k in ("ETag", "Last-Modified")]
            return Response(304, validators, b"")
        return response

    def outlinks(self, url: str) -> list[str] | None:
        """Absolute, defragmented link targets of the HTML page at `url`; None if no 200 page."""
        parts = urlsplit(url)
        i = self.host_index(parts.netloc) if parts.scheme == "http" else None
        page = self._resolve(i, parts.path or "/") if i is not None else None
        if not isinstance(page, Page):
            return None
        return [urldefrag(urljoin(url, link.href)).url for link in page.nav + page.links]

    def expected_pages(self, max_depth: int) -> set[str]:
        """URLs of the 200 HTML pages that a robots-obeying crawl from seeds() reaches.

        Seeds have depth 0, each followed link adds 1; only URLs of depth <= max_depth are fetched.
        """
        depth = {(i, "/"): 0 for i in range(self.spec.hosts)}
        queue = deque(depth)
        pages: set[str] = set()
        while queue and max_depth >= 0:
            node = queue.popleft()
            links = self._node_links(*node)
            if links is None:
                continue
            pages.add(self.base_url(node[0]) + node[1])
            if depth[node] == max_depth:
                continue
            for link in links:
                if link not in depth:
                    depth[link] = depth[node] + 1
                    queue.append(link)
        return pages

    def _node_links(self, i: int, target: str) -> list[tuple[int, str]] | None:
        """Allowed links of the page `target` on host i as (host, path+query); None if no 200 page.

        A fast equivalent of outlinks() + disallowed() for expected_pages().
        """
        page = self._resolve(i, target.split("?", 1)[0])
        if not isinstance(page, Page):
            return None
        nodes = []
        for link in page.nav + page.links:
            netloc, path = _join(target, link.href)
            host = i if not netloc else self.host_index(netloc)
            if host is not None and not path.startswith(DISALLOW):
                nodes.append((host, path))
        return nodes

    def _resolve(self, i: int, path: str) -> Page | Response:
        """Dispatch `path` on host i to the first route whose handler accepts it."""
        for pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if match is not None:
                result = handler(i, *match.groups())
                if result is not None:
                    return result
        return error_response(404)

    def _robots(self, i: int) -> Response:
        return self._ok(i, TEXT_TYPE, self.robots_txt(i).encode())

    def _home(self, i: int) -> Page:
        n, hosts = self.spec.pages_per_host, self.spec.hosts
        links = [Link(f"/p/{k}.html", f"Page {k}") for k in range(min(n, HOME_FANOUT))]
        neighbours = dict.fromkeys(h for h in ((i + 1) % hosts, (i * 7 + 3) % hosts) if h != i)
        links += [Link(self.base_url(h) + "/", f"Host {h}") for h in neighbours]
        links.append(Link("/private/secret.html", "Staff only"))
        return Page(f"Host {i} home", f"{i}:home", _NAV, tuple(links))

    def _page(self, i: int, number: str) -> Page | None:
        j, n, hosts = int(number), self.spec.pages_per_host, self.spec.hosts
        if j >= n:
            return None
        links = [_sibling_link(j, (j + 1) % n, "Next"),
                 Link(f"/p/{(j * 7 + 3) % n}.html", "Related")]
        links += [Link(f"/p/{k}.html", f"More {k}") for k in (2 * j + 8, 2 * j + 9) if k < n]
        if hosts > 1 and j % 3 == 0:
            other = (i + 1 + j // 3) % hosts
            other = (other + 1) % hosts if other == i else other
            target = f"{self.base_url(other)}/p/{(j * 5 + 1) % n}.html"
            links.append(Link(target, f"Elsewhere {other}"))
        if j % 4 == 3:
            links.append(Link(f"/missing/{j}.html", "Lost"))
        return Page(f"Host {i} page {j}", f"{i}:page:{j}", _NAV, tuple(links))

    def _private(self, i: int, name: str) -> Page:
        return Page(f"Host {i} private {name}", f"{i}:private:{name}", _NAV, ())

    def _render(self, i: int, page: Page) -> Response:
        rng = random.Random(f"{self.spec.seed}:{page.text_key}")
        words = rng.choices(vocabulary(), k=self.spec.words_per_page)
        paragraphs = "".join(f"<p>{_sentence(words[k:k + PARAGRAPH_WORDS])}</p>\n"
                             for k in range(0, len(words), PARAGRAPH_WORDS))
        nav = " ".join(_anchor(link) for link in page.nav)
        items = "".join(f"<li>{_anchor(link)}</li>\n" for link in page.links)
        title = html.escape(page.title)
        document = (
            "<!DOCTYPE html>\n<html lang=\"en\">\n"
            f"<head><meta charset=\"utf-8\"><title>{title}</title></head>\n<body>\n"
            f"<nav>{nav}</nav>\n<main id=\"content\">\n<h1>{title}</h1>\n{paragraphs}"
            f"<ul>\n{items}</ul>\n</main>\n"
            f"<footer><p>Generated test web, host {i}.</p></footer>\n</body>\n</html>\n"
        )
        return self._ok(i, HTML_TYPE, document.encode())

    def _ok(self, i: int, content_type: str, body: bytes) -> Response:
        """A 200 response with validators (ETag from the body, a fixed per-host Last-Modified)."""
        return Response(200, [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("ETag", f"\"{hashlib.blake2b(body, digest_size=8).hexdigest()}\""),
            ("Last-Modified", formatdate(LAST_MODIFIED_EPOCH + i * 3600, usegmt=True)),
        ], body)


@functools.lru_cache(maxsize=4096)
def _join(target: str, href: str) -> tuple[str, str]:
    """`href` resolved against the page `target` as (netloc, path+query); netloc "" = same host."""
    parts = urlsplit(urldefrag(urljoin("http://_" + target, href)).url)
    netloc = "" if parts.netloc == "_" else parts.netloc
    return netloc, parts.path + (f"?{parts.query}" if parts.query else "")


def _sibling_link(j: int, k: int, text: str) -> Link:
    """A link from page j to page k, written absolute, bare-relative or parent-relative by j."""
    forms = (f"/p/{k}.html", f"{k}.html", f"../p/{k}.html")
    return Link(forms[j % 3], text)


def _anchor(link: Link) -> str:
    return f"<a href=\"{html.escape(link.href)}\">{html.escape(link.text)}</a>"


def _sentence(words: list[str]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:] + "."


def _not_modified(response: Response, request_headers: Mapping[str, str]) -> bool:
    """True if the conditional request headers say the client's copy is current."""
    if_none_match = request_headers.get("if-none-match")
    if if_none_match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in tags or response.header("ETag") in tags
    if_modified_since = request_headers.get("if-modified-since")
    last_modified = response.header("Last-Modified")
    if not if_modified_since or not last_modified:
        return False
    try:
        return parsedate_to_datetime(if_modified_since) >= parsedate_to_datetime(last_modified)
    except (TypeError, ValueError):
        return False
