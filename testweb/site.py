"""Pure generator of the test web: hosts, pages, links and robots.txt from a WebSpec (no I/O).

Host i lives at ``127.0.{1 + i // 250}.{1 + i % 250}:port``; with WebSpec.names, the first
hosts are linked to by name (``http://docs.site1.test:port/``), served on the same addresses: a
crawler must resolve each name to its host's address (`name_addresses`). Every host has a home page ``/``,
pages ``/p/<j>.html``, a ``/robots.txt`` disallowing ``/private/`` and a 200 page under
``/private/`` that a polite crawler never asks for. Everything is a function of the WebSpec.

Opt-in "case hosts" (WebSpec.cases or the per-group flags, all off by default) come after the
normal hosts and are linked from host 0's home page; their handlers live in `cases.py`. The
hosts' addresses and the records of pages and responses are in `hosts.py`. With the
default flags the web is exactly the plain one. `generation` (default 0) mutates the text of a
deterministic subset of pages, for re-crawl tests.
"""

from __future__ import annotations

import functools
import hashlib
import html
import random
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import replace
from email.utils import parsedate_to_datetime
from urllib.parse import urldefrag, urljoin, urlsplit

from testweb.cases import Cases
from testweb.hosts import (
    DISALLOW,
    HTML_TYPE,
    NAV,
    TEXT_TYPE,
    VALIDATORS,
    Handler,
    Hosts,
    Link,
    Page,
    RedirectCase,
    Response,
    Special,
    WebSpec,
    error_response,
    vocabulary,
)

HOME_FANOUT = 8  # the home page links to /p/0.html .. /p/7.html
CRAWL_DELAY = 2.0
PARAGRAPH_WORDS = 60


class Web(Hosts):
    """The generated web of a WebSpec: addresses, content and the expected result of a crawl."""

    def __init__(self, spec: WebSpec = WebSpec()) -> None:  # noqa: B008 - a frozen record
        super().__init__(spec)
        self._routes: tuple[tuple[re.Pattern[str], Handler], ...] = (
            (re.compile(r"/robots\.txt"), self._robots),
            (re.compile(r"/"), self._home),
            (re.compile(r"/p/(0|[1-9][0-9]*)\.html"), self._page),
            (re.compile(r"/private/(.+)"), self._private),
        )
        self._cases = Cases(self) if self.case_kinds else None

    # --- politeness ------------------------------------------------------------------------

    def crawl_delay(self, i: int) -> float | None:
        """The Crawl-delay in host i's robots.txt, if any."""
        if i >= self.spec.hosts:
            return None
        every = self.spec.crawl_delay_every
        return CRAWL_DELAY if every > 0 and i % every == every - 1 else None

    def robots_txt(self, i: int) -> str:
        """The robots.txt rules of host i (for a case host: the rules in effect, see cases.py)."""
        if self._cases is not None and i >= self.spec.hosts:
            return self._cases.robots_txt(i)
        lines = ["User-agent: *", *(f"Disallow: {prefix}" for prefix in DISALLOW)]
        delay = self.crawl_delay(i)
        if delay is not None:
            lines.append(f"Crawl-delay: {delay:g}")
        return "\n".join(lines) + "\n"

    def disallow_prefixes(self, i: int) -> tuple[str, ...]:
        """The Disallow rules of host i's robots.txt for every agent ("/" = everything): path
        prefixes, which on case hosts may hold RFC 9309's "*" (any characters) and "$" (end)."""
        if self._cases is not None and i >= self.spec.hosts:
            return self._cases.disallow(i)
        return DISALLOW

    def _blocked(self, i: int, target: str) -> bool:
        """True if a Disallow rule of host i matches the request target (path and query)."""
        rules = self.disallow_prefixes(i)
        return target.startswith(rules) or any(_rule_matches(rule, target) for rule in rules
                                               if "*" in rule or rule.endswith("$"))

    def disallowed(self, url: str) -> bool:
        """True if the robots.txt of the URL's host disallows it for every user agent.

        /robots.txt itself is never disallowed; a robots.txt answering 5xx disallows the rest.
        """
        parts = urlsplit(url)
        i = self.host_index(parts.netloc)
        if i is None:
            return False
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return target != "/robots.txt" and self._blocked(i, target)

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
        path, sep, query = path_and_query.split("#", 1)[0].partition("?")
        result = self._resolve(i, path, query if sep else None)
        if isinstance(result, Page):
            response = self._render(i, result)
        elif isinstance(result, Special):
            response = result.response
        else:
            response = result
        if response.status == 200 and _not_modified(response, request_headers or {}):
            validators = [(k, v) for k, v in response.headers if k in VALIDATORS]
            return Response(304, validators, b"")
        return response

    def outlinks(self, url: str) -> list[str] | None:
        """Absolute, defragmented targets of the links a correct crawler follows on the HTML page
        at `url` (rel=nofollow and meta-robots-nofollow links left out, <base href> applied,
        spelling variants in their canonical form); None if `url` is no 200 HTML page."""
        parts = urlsplit(url)
        i = self.host_index(parts.netloc) if parts.scheme == self.scheme else None
        page = self._resolve(i, parts.path or "/", parts.query or None) if i is not None else None
        if isinstance(page, Page):
            base = urljoin(url, page.base) if page.base else url
            links: Iterable[Link] = page.followed_links()
        elif isinstance(page, Special) and page.html:
            base, links = url, page.links
        else:
            return None
        return [urldefrag(urljoin(base, link.target or link.href)).url for link in links]

    def expected_pages(self, max_depth: int, *, sitemaps: bool = False,
                       traps: bool = False) -> set[str]:
        """URLs of the 200 HTML pages that a robots-obeying crawl from seeds() reaches.

        Seeds have depth 0, each followed link adds 1; only URLs of depth <= max_depth are fetched.
        Links are followed as outlinks() gives them (canonical form, no nofollow). Case pages
        that a crawler may legitimately skip are left out: non-HTML resources, the 20 MiB page,
        the gzip bomb, the drip, redirect targets, the targets of the 10,000-link page and the
        pages inside traps (only each trap's first page counts, unless `traps`, which walks
        them like any page). With `sitemaps`, the pages listed in a host's sitemaps count too,
        at one more than the depth of the first page reached on that host.
        """
        depth = {(i, "/"): 0 for i in range(self.spec.hosts)}
        queue = deque(depth)
        pages: set[str] = set()
        seen_hosts: set[int] = set()
        while queue and max_depth >= 0:
            node = queue.popleft()
            links = self._node_links(*node, traps=traps)
            if links is None:
                continue
            pages.add(self.base_url(node[0]) + node[1])
            if depth[node] == max_depth:
                continue
            if sitemaps and self._cases is not None and node[0] not in seen_hosts:
                seen_hosts.add(node[0])
                links = links + [(node[0], path) for path in self._cases.sitemap_paths(node[0])]
            for link in links:
                if link not in depth:
                    depth[link] = depth[node] + 1
                    queue.append(link)
        return pages

    def _node_links(self, i: int, target: str,
                    traps: bool = False) -> list[tuple[int, str]] | None:
        """Allowed links of the page `target` on host i as (host, path+query); None if no 200 page.

        A fast equivalent of outlinks() + disallowed() for expected_pages().
        """
        path, sep, query = target.partition("?")
        page = self._resolve(i, path, query if sep else None)
        if isinstance(page, Page):
            if not page.expand or (page.trap and not traps):
                return []
            base = target if page.base is None else _join(target, page.base)[1]
            links: Iterable[Link] = page.followed_links()
        elif isinstance(page, Special) and page.html:
            if not page.expand:
                return []
            base, links = target, page.links
        else:
            return None
        nodes = []
        for link in links:
            netloc, path = _join(base, link.target or link.href)
            host = i if not netloc else self.host_index(netloc)
            if host is not None and (path == "/robots.txt" or not self._blocked(host, path)):
                nodes.append((host, path))
        return nodes

    def _resolve(self, i: int, path: str, query: str | None = None) -> Page | Special | Response:
        """Dispatch `path` on host i to the first route whose handler accepts it. A request
        with a query (`query` not None, "" for a bare "?") first tries the host's query
        routes, matched against "path?query" exactly as requested."""
        if query is not None and self._cases is not None and i >= self.spec.hosts:
            target = f"{path}?{query}"
            for pattern, handler in self._cases.query_routes(i):
                match = pattern.fullmatch(target)
                if match is not None:
                    result = handler(i, *match.groups())
                    if result is not None:
                        return result
        routes = self._routes if i < self.spec.hosts else self._case_routes(i)
        for pattern, handler in routes:
            match = pattern.fullmatch(path)
            if match is not None:
                result = handler(i, *match.groups())
                if result is not None:
                    return result
        return error_response(404)

    def _case_routes(self, i: int) -> tuple[tuple[re.Pattern[str], Handler], ...]:
        assert self._cases is not None
        return self._cases.routes(i)

    def _robots(self, i: int) -> Response:
        return self.ok(i, TEXT_TYPE, self.robots_txt(i).encode())

    def _home(self, i: int) -> Page:
        n, hosts = self.spec.pages_per_host, self.spec.hosts
        links = [Link(f"/p/{k}.html", f"Page {k}") for k in range(min(n, HOME_FANOUT))]
        neighbours = dict.fromkeys(h for h in ((i + 1) % hosts, (i * 7 + 3) % hosts) if h != i)
        links += [Link(self.base_url(h) + "/", f"Host {h}") for h in neighbours]
        links.append(Link("/private/secret.html", "Staff only"))
        if i == 0:
            links += [Link(f"http://{netloc}/", f"Case {kind}")
                      for kind, netloc in self.case_hosts().items()]
        return Page(f"Host {i} home", f"{i}:home", NAV, tuple(links))

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
        return Page(f"Host {i} page {j}", f"{i}:page:{j}", NAV, tuple(links))

    def _private(self, i: int, name: str) -> Page:
        return Page(f"Host {i} private {name}", f"{i}:private:{name}", NAV, ())

    def _render(self, i: int, page: Page) -> Response:
        version = self.version(page.text_key)
        key = page.text_key if version == 0 else f"{page.text_key}@{version}"
        rng = random.Random(f"{self.spec.seed}:{key}")
        words = rng.choices(vocabulary(), k=self.spec.words_per_page)
        paragraphs = "".join(f"<p>{_sentence(words[k:k + PARAGRAPH_WORDS])}</p>\n"
                             for k in range(0, len(words), PARAGRAPH_WORDS))
        nav = " ".join(_anchor(link) for link in page.nav)
        items = "".join(f"<li>{_anchor(link)}</li>\n" for link in page.links)
        title = html.escape(page.title)
        head = page.head_extra
        if page.base is not None:
            head = f"<base href=\"{html.escape(page.base)}\">{head}"
        if page.nofollow:
            head += "<meta name=\"robots\" content=\"nofollow\">"
        document = (
            "<!DOCTYPE html>\n<html lang=\"en\">\n"
            f"<head><meta charset=\"utf-8\"><title>{title}</title>{head}</head>\n<body>\n"
            f"<nav>{nav}</nav>\n<main id=\"content\">\n<h1>{title}</h1>\n{paragraphs}"
            f"<ul>\n{items}</ul>\n{page.body_extra}</main>\n"
            f"<footer><p>Generated test web, host {i}.</p></footer>\n</body>\n</html>\n"
        )
        return self.ok(i, HTML_TYPE, document.encode(), version)

    # --- generations (re-crawl) --------------------------------------------------------------

    def at_generation(self, generation: int) -> Web:
        """This web at another content generation (same pages and links, some texts changed)."""
        return Web(replace(self.spec, generation=generation))

    def version(self, text_key: str, generation: int | None = None) -> int:
        """The last generation <= `generation` (default: the spec's) in which the text of the
        page with `text_key` changed; 0 if it never did. Pages change independently, each with
        probability change_fraction per generation."""
        generation = self.spec.generation if generation is None else generation
        if generation == 0 or self.spec.change_fraction == 0.0:
            return 0
        return _version(self.spec.seed, self.spec.change_fraction, text_key, generation)

    def changed_pages(self, since: int, max_depth: int = 5, *,
                      sitemaps: bool = False) -> set[str]:
        """The expected_pages() whose body at this generation differs from generation `since`.

        Only the text (and so ETag and Last-Modified) changes; links stay the same, so
        expected_pages() is the same in every generation. Case pages with fixed bytes
        (mirrors, syndicated articles, odd encodings) never change.
        """
        changed = set()
        for url in self.expected_pages(max_depth, sitemaps=sitemaps):
            parts = urlsplit(url)
            i = self.host_index(parts.netloc)
            page = self._resolve(i, parts.path, parts.query or None) if i is not None else None
            if isinstance(page, Page) and (self.version(page.text_key)
                                           != self.version(page.text_key, since)):
                changed.add(url)
        return changed

    # --- case expectations (empty for a web without cases) -----------------------------------

    def never_fetch(self) -> list[str]:
        """URL prefixes that a correct crawler never requests: every robots.txt-disallowed
        prefix of every host (all of the host whose robots.txt answers 500), nofollow-only and
        meta-nofollow targets, links only inside <script> or comments, and the URLs that
        ignoring <base href> produces. /robots.txt itself is exempt (serverlog.fetched_urls()
        leaves it out); the sitemap files are not covered by any prefix. Rules with wildcards
        are no prefixes: disallowed() judges them, as never_fetch_violations() does."""
        prefixes = [self.base_url(i) + prefix for i in range(self.host_count)
                    for prefix in self.disallow_prefixes(i)
                    if "*" not in prefix and not prefix.endswith("$")]
        if self._cases is not None:
            prefixes += self._cases.never_fetch()
        return prefixes

    def never_fetch_violations(self, urls: Iterable[str]) -> list[str]:
        """The URLs (other than /robots.txt) that a correct crawler never requests: those
        starting with a never_fetch() prefix, those robots.txt disallows (wildcard rules
        too), and any spelling of a forbidden case URL (see must_not_fetch())."""
        prefixes = tuple(self.never_fetch())
        return [url for url in urls if urlsplit(url).path != "/robots.txt" and (
            url.startswith(prefixes) or self.disallowed(url)
            or (self._cases is not None and self._cases.forbidden(url)))]

    def must_fetch(self) -> list[str]:
        """URLs a correct crawl from seeds() (depth 5) requests, written exactly as they go on
        the wire: path and query as the link wrote them, resolved and serialized per the
        WHATWG URL Standard (query neither reordered nor re-encoded). Realweb hosts only."""
        return self._cases.must_fetch() if self._cases is not None else []

    def must_not_fetch(self) -> list[str]:
        """Spellings of URLs a correct crawler never requests that a careless one would: the
        links robots.txt disallows as written, reordered or re-encoded. never_fetch_violations()
        catches every other spelling too. Realweb hosts only."""
        return self._cases.must_not_fetch() if self._cases is not None else []

    def page_titles(self) -> dict[str, str]:
        """Realweb page URL (as in must_fetch()) -> the title a parser finds on it."""
        return self._cases.page_titles() if self._cases is not None else {}

    def page_problems(self) -> dict[str, str]:
        """Realweb page URL -> why a parser gets nothing out of it (crawlapp.core.html's
        ParsedPage.problem): the empty page and the page of bare markup."""
        return self._cases.page_problems() if self._cases is not None else {}

    def trap_prefixes(self) -> dict[str, str]:
        """URL prefix of each crawler trap, by name (calendar, session, repeat, deep)."""
        return self._cases.trap_prefixes() if self._cases is not None else {}

    def redirect_cases(self) -> list[RedirectCase]:
        """The redirect cases: loop, 8-hop chain, a single move, the robots.txt redirect."""
        return self._cases.redirect_cases() if self._cases is not None else []

    def render_pages(self) -> list[str]:
        """Pages linked only by what a page's script writes (found by rendering alone)."""
        return self._cases.render_pages() if self._cases is not None else []

    def sitemap_pages(self) -> set[str]:
        """Pages that only sitemaps list (nothing links to them)."""
        return self._cases.sitemap_pages() if self._cases is not None else set()

    def spelling_groups(self) -> dict[str, list[str]]:
        """Canonical URL -> the hrefs spelling it on the links host's /spellings.html."""
        return self._cases.spelling_groups() if self._cases is not None else {}

    def canonical_links(self) -> dict[str, str]:
        """Page URL -> the URL its <link rel=canonical> names."""
        return self._cases.canonical_links() if self._cases is not None else {}

    def duplicate_groups(self) -> dict[str, list[list[str]]]:
        """{"exact": groups of URLs with byte-identical bodies, "near": clusters of URLs with
        near-identical text}, among the 200 HTML pages; every other page's text is distinct."""
        if self._cases is None:
            return {"exact": [], "near": []}
        return self._cases.duplicate_groups()

    def case_urls(self) -> dict[str, str]:
        """URL of the entry page of every case, by name ("big", "bomb", "spellings", ...)."""
        return self._cases.case_urls() if self._cases is not None else {}


@functools.lru_cache(maxsize=4096)
def _join(target: str, href: str) -> tuple[str, str]:
    """`href` resolved against the page `target` as (netloc, path+query); netloc "" = same host."""
    parts = urlsplit(urldefrag(urljoin("http://_" + target, href)).url)
    netloc = "" if parts.netloc == "_" else parts.netloc
    return netloc, parts.path + (f"?{parts.query}" if parts.query else "")


@functools.lru_cache(maxsize=256)
def _rule_pattern(rule: str) -> re.Pattern[str]:
    """A robots.txt path rule as a regex: "*" any characters, a final "$" the end."""
    anchored = rule.endswith("$")
    body = ".*".join(re.escape(part) for part in (rule[:-1] if anchored else rule).split("*"))
    return re.compile(body + ("$" if anchored else ""), re.DOTALL)


def _rule_matches(rule: str, target: str) -> bool:
    return _rule_pattern(rule).match(target) is not None


@functools.lru_cache(maxsize=65536)
def _version(seed: int, fraction: float, text_key: str, generation: int) -> int:
    for g in range(generation, 0, -1):
        digest = hashlib.blake2b(f"{seed}:{text_key}:{g}".encode(), digest_size=8).digest()
        if int.from_bytes(digest, "big") < fraction * 2**64:
            return g
    return 0


def _sibling_link(j: int, k: int, text: str) -> Link:
    """A link from page j to page k, written absolute, bare-relative or parent-relative by j."""
    forms = (f"/p/{k}.html", f"{k}.html", f"../p/{k}.html")
    return Link(forms[j % 3], text)


def _anchor(link: Link) -> str:
    rel = f" rel=\"{html.escape(link.rel)}\"" if link.rel else ""
    return f"<a href=\"{html.escape(link.href)}\"{rel}>{html.escape(link.text)}</a>"


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
