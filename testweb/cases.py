"""The opt-in case hosts of the test web: their route handlers and what a correct crawl does there.

Each case host has one kind (hosts.CASE_HOSTS); a Web with cases enabled builds one `Cases` and
routes every request to a case host here. Pages are hosts.Page (rendered like every other page),
hosts.Special (fixed bytes plus the links a crawler should find) or hosts.Response. Big, bomb and
drip bodies are lazy streams. Everything is a pure function of the WebSpec.

Kinds and what they serve (all also have /robots.txt and a home page / linking to their cases):

robots-500       /robots.txt answers 500: nothing else on the host may be fetched.
robots-404       /robots.txt answers 404: everything is allowed, /private/open.html included.
robots-redirect  /robots.txt 301 -> /robots-real.txt, which disallows /blocked/ (only).
heavy            /big.html (big_page_bytes of HTML, streamed), /bomb.html (gzip bomb expanding to
                 bomb_bytes of zeros), /drip.html (10 bytes dripped over drip_seconds), /ok.html.
redirects        /loop/a <-> /loop/b (301), /hop/1 .. /hop/8 -> /hop/final.html, /moved.html.
odd              /links-10k.html (10,000 links to /many/<k>.html, only k < 100 exist),
                 /deep-dom.html (5,000 nested divs), /bad-utf8.html (invalid UTF-8, then a link),
                 /charset.html (header windows-1252, <meta charset=utf-8>; its link only comes out
                 right when the header wins), /img/x.png, /files/report.pdf.
links            /spellings.html (many spellings of four canonical pages under /canon/),
                 /based/index.html (<base href>), /nofollow.html, /meta-nofollow.html,
                 /canonical/{article,print,amp}.html (<link rel=canonical>), /hidden.html (links
                 only inside <script> and a comment).
traps            /cal/<yyyy>/<m>, /sess/page.html;jsessionid=<hex>, /r/a/b/a/..., /deep/<n>.
sitemap-index    robots.txt names /sitemap_index.xml -> /sitemap-pages.xml.gz (gzip urlset)
                 listing /sitemap-only/<0..4>.html, linked from nowhere.
sitemap-plain    robots.txt names /sitemap.xml, a plain urlset listing /listed/<0..2>.html.
dedup-0..3       /articles/mirror.html byte-identical on dedup-0..2; /articles/syndicated.html on
                 all four with small edits (a word changed, a byline added, a sentence removed).
fresh-both, fresh-etag, fresh-lm, fresh-none
                 /v/<0..7>.html, sending both validators, only ETag, only Last-Modified, none.
render           /app.html, an app shell: /static/app.js fetches /api/items.json and writes links
                 to /js/<1..3>.html (found only by rendering); it also asks for /img/logo.png
                 and host 0's /api/leak.json (never to fetch: an image, another host).
                 /loop.html, a shell whose script never ends. /slow.html, a shell whose
                 /static/slow.js is answered after SLOW_SCRIPT_SECONDS (a client that goes away
                 ends it). /apps/<1..3>.html, shells whose script fetches render-assets'
                 /api/routes-<k>.json (cross-origin, CORS allowed) and links /xo/<k>.html.
render-assets    another host a rendered page may load from, crawled too: Crawl-delay
                 ASSETS_DELAY, /docs/<1..12>.html, /api/routes-<k>.json (Access-Control-Allow-
                 Origin: *).
docbook, sphinx, cms
                 pages as real sites write them (see realweb.py): a DocBook XHTML manual, a
                 Sphinx site, a CMS with query-routed URLs, wildcard robots.txt rules, odd
                 encodings, malformed links, an empty page. must_fetch() lists the request
                 targets byte for byte; forbidden() judges every spelling of the forbidden ones.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import html
import json
import random
import re
import struct
import zlib
from collections.abc import Iterator
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from testweb import realweb
from testweb.hosts import (
    DISALLOW,
    HTML_TYPE,
    NAV,
    TEXT_TYPE,
    Handler,
    Hosts,
    Link,
    Page,
    RedirectCase,
    Response,
    Special,
    StreamItem,
    error_response,
    redirect,
    vocabulary,
)

MANY_LINKS = 10_000
MANY_EXISTING = 100  # /many/<k>.html exists for k < MANY_EXISTING, the rest are 404
DOM_DEPTH = 5_000
DRIP_BYTES = 10
HOPS = 8
HOP_STATUSES = (301, 302, 303, 307, 308, 301, 302, 303)
ARTICLE_WORDS = 600
STREAM_CHUNK = 64 * 1024
BOMB_BLOCK = 1 << 20
SITEMAP_ONLY = 5  # /sitemap-only/<k>.html on sitemap-index
LISTED_ONLY = 3  # /listed/<k>.html on sitemap-plain
FRESH_PAGES = 8
CHARSET = "windows-1252"
CHARSET_TEXT = "Café «naïve» – 5 € “quoted”"  # what /charset.html says, read as windows-1252
CHARSET_LINK = "/caf%C3%A9.html"  # its link "/café.html", percent-encoded as UTF-8
REAL_ROBOTS = "User-agent: *\nDisallow: /blocked/\n"
SESSION_START = "0123456789abcdef"
LASTMOD = "2023-11-14"
TRACKING = re.compile(r"utm_.*|(j|php)?sessionid|sid", re.IGNORECASE)

_HOME = (Link("/", "Home"),)
_HOME_LINKS: dict[str, tuple[tuple[str, str], ...]] = {
    "robots-500": (("/page-1.html", "One"), ("/page-2.html", "Two")),
    "robots-404": (("/page.html", "A page"), ("/private/open.html", "Open private page")),
    "robots-redirect": (("/open.html", "Open"), ("/blocked/secret.html", "Blocked"),
                        ("/private/visible.html", "Private but allowed here")),
    "heavy": (("/big.html", "Big page"), ("/bomb.html", "Compressed page"),
              ("/drip.html", "Slow page"), ("/ok.html", "Ordinary page")),
    "redirects": (("/loop/a", "Loop"), ("/hop/1", "Eight hops"), ("/moved.html", "Moved")),
    "odd": (("/links-10k.html", "Many links"), ("/deep-dom.html", "Deep document"),
            ("/bad-utf8.html", "Bad bytes"), ("/charset.html", "Charset"),
            ("/img/x.png", "Image"), ("/files/report.pdf", "Report (PDF)")),
    "links": (("/spellings.html", "Spellings"), ("/based/index.html", "Base"),
              ("/nofollow.html", "Nofollow"), ("/meta-nofollow.html", "Meta nofollow"),
              ("/canonical/article.html", "Article"), ("/canonical/print.html", "Print"),
              ("/canonical/amp.html", "AMP"), ("/hidden.html", "Hidden links")),
    "traps": (("/cal/2026/11", "Calendar"), (f"/sess/page.html;jsessionid={SESSION_START}",
                                             "Session"), ("/r/a/", "Repeat"), ("/deep/1", "Deep")),
    "sitemap-index": (("/linked.html", "Linked"),),
    "sitemap-plain": (("/linked.html", "Linked"),),
    **{f"fresh-{v}": tuple((f"/v/{j}.html", f"Page {j}") for j in range(FRESH_PAGES))
       for v in ("both", "etag", "lm", "none")},
    "render": (("/app.html", "App"), ("/loop.html", "Endless script"), ("/slow.html", "Slow"),
               *((f"/apps/{k}.html", f"App {k}") for k in range(1, 4))),
    "render-assets": tuple((f"/docs/{k}.html", f"Doc {k}") for k in range(1, 13)),
    "docbook": ((realweb.DOCBOOK_ROOT + "index.html", realweb.DOCBOOK_BOOK),),
    "sphinx": ((realweb.SPHINX_ROOT + "index.html", realweb.SPHINX_PROJECT),),
}
JS_PAGES = 3  # /js/<1..JS_PAGES>.html, linked only by what /static/app.js writes
XO_PAGES = 3  # /apps/<k>.html and /xo/<k>.html: routes only a cross-origin JSON fetch gives
SLOW_SCRIPT_SECONDS = 20.0  # /static/slow.js waits this long before its body
ASSETS_DELAY = 1.0  # render-assets' Crawl-delay
SLOW_JS = b"document.getElementById('root').textContent = 'late';\n"
XO_SCRIPT = """\
fetch("{routes}").then(r => r.json()).then(items => {{
  for (const item of items) {{
    const a = document.createElement("a");
    a.href = item.href;
    a.textContent = item.title;
    document.getElementById("root").appendChild(a);
  }}
}});
"""
LEAK_PATH = "/api/leak.json"  # on host 0: the app's request to another host
SHELL_HTML = (
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>{head}</head>\n"
    "<body><noscript>This application needs JavaScript.</noscript><div id=\"root\"></div>\n"
    "{body}</body></html>\n")
APP_JS = """\
fetch("/api/items.json").then(r => r.json()).then(items => {{
  const root = document.getElementById("root");
  for (const item of items) {{
    const a = document.createElement("a");
    a.href = item.href;
    a.textContent = item.title;
    root.appendChild(a);
  }}
}});
fetch("{leak}").catch(() => {{}});
const logo = new Image();
logo.src = "/img/logo.png";
"""
# (href as written on /spellings.html, with {netloc}; the canonical path+query it means)
SPELLINGS: tuple[tuple[str, str], ...] = (
    ("canon/a.html", "/canon/a.html"),
    ("/canon/a.html", "/canon/a.html"),
    ("http://{netloc}/canon/a.html", "/canon/a.html"),
    ("//{netloc}/canon/a.html", "/canon/a.html"),
    ("HTTP://{netloc}/canon/a.html", "/canon/a.html"),
    ("/canon/./x/../a.html", "/canon/a.html"),
    ("./canon/b/../a.html", "/canon/a.html"),
    ("  /canon/a.html\n  ", "/canon/a.html"),
    ("/canon/a.html#part-2", "/canon/a.html"),
    ("/canon/q.html?a=1&b=2", "/canon/q.html?a=1&b=2"),
    ("/canon/q.html?b=2&a=1", "/canon/q.html?a=1&b=2"),
    ("/canon/q.html?a=1&b=2&utm_source=news&utm_medium=email", "/canon/q.html?a=1&b=2"),
    ("/canon/q.html?utm_campaign=spring&b=2&a=1", "/canon/q.html?a=1&b=2"),
    ("/canon/s.html", "/canon/s.html"),
    ("/canon/s.html;jsessionid=0F1E2D3C4B5A6978", "/canon/s.html"),
    ("/canon/s.html?sessionid=5f4dcc3b5aa765d6", "/canon/s.html"),
    ("/canon/s.html?jsessionid=7C0FFEE", "/canon/s.html"),
    ("/canon/~user.html", "/canon/~user.html"),
    ("/canon/%7Euser.html", "/canon/~user.html"),
    ("/canon/%7euser.html", "/canon/~user.html"),
)
# links-host paths a correct crawler never asks for (all but the last two answer 200)
LINKS_NEVER = ("/nofollow-only.html", "/nofollow-only-2.html", "/meta-nofollow-target.html",
               "/script-only.html", "/script-written.html", "/comment-only.html",
               "/based/page.html", "/a.html")
HIDDEN_HTML = (
    "<script>\nvar next = \"/script-only.html\";\n"
    "document.write('<a href=\"/script-written.html\">More</a>');\n</script>\n"
    "<!-- Old navigation: <a href=\"/comment-only.html\">Archive</a> -->\n"
)


class Cases:
    """Routes and expectations of the case hosts of `web`."""

    def __init__(self, web: Hosts) -> None:
        self.web = web
        self.spec = web.spec
        self.realweb = realweb.RealWeb(web)
        self._routes = {kind: self._build_routes(kind) for kind in web.case_kinds}
        self._query_routes = {
            kind: tuple((re.compile(pattern), handler)
                        for pattern, handler in self.realweb.query_routes(kind))
            for kind in web.case_kinds if kind in realweb.KINDS}

    def _kind(self, i: int) -> str:
        kind = self.web.case_kind(i)
        assert kind is not None
        return kind

    def _host(self, kind: str) -> int:
        i = self.web.case_host(kind)
        assert i is not None
        return i

    def _url(self, kind: str, path: str) -> str:
        return self.web.base_url(self._host(kind)) + path

    def routes(self, i: int) -> tuple[tuple[re.Pattern[str], Handler], ...]:
        return self._routes[self._kind(i)]

    def query_routes(self, i: int) -> tuple[tuple[re.Pattern[str], Handler], ...]:
        """Routes matched against "path?query" as requested, for requests with a query."""
        return self._query_routes.get(self._kind(i), ())

    def _realweb_kinds(self) -> list[str]:
        return [kind for kind in realweb.KINDS if kind in self.web.case_kinds]

    # --- robots.txt --------------------------------------------------------------------------

    def robots_txt(self, i: int) -> str:
        """The robots.txt rules in effect on case host i (the redirect target's, "" if 404)."""
        kind = self._kind(i)
        if kind == "robots-500":
            return "User-agent: *\nDisallow: /\n"  # RFC 9309: unreachable = complete disallow
        if kind == "robots-404":
            return ""
        if kind == "robots-redirect":
            return REAL_ROBOTS
        lines = ["User-agent: *", *(f"Disallow: {prefix}" for prefix in self.disallow(i))]
        if self.crawl_delay(i) is not None:
            lines.append(f"Crawl-delay: {self.crawl_delay(i):g}")
        if kind == "sitemap-index":
            lines.append(f"Sitemap: {self.web.base_url(i)}/sitemap_index.xml")
        elif kind == "sitemap-plain":
            lines.append(f"Sitemap: {self.web.base_url(i)}/sitemap.xml")
        return "\n".join(lines) + "\n"

    def crawl_delay(self, i: int) -> float | None:
        """The Crawl-delay in case host i's robots.txt, if any."""
        return ASSETS_DELAY if self._kind(i) == "render-assets" else None

    def disallow(self, i: int) -> tuple[str, ...]:
        kind = self._kind(i)
        if kind in realweb.KINDS:
            return self.realweb.disallow(kind)
        return {"robots-500": ("/",), "robots-404": (),
                "robots-redirect": ("/blocked/",)}.get(kind, DISALLOW)

    def _robots(self, i: int) -> Response:
        kind = self._kind(i)
        if kind == "robots-500":
            return error_response(500)
        if kind == "robots-404":
            return error_response(404)
        if kind == "robots-redirect":
            return redirect(301, f"{self.web.base_url(i)}/robots-real.txt")
        return self.web.ok(i, TEXT_TYPE, self.robots_txt(i).encode())

    # --- routes ------------------------------------------------------------------------------

    def _build_routes(self, kind: str) -> tuple[tuple[re.Pattern[str], Handler], ...]:
        routes: list[tuple[str, Handler]] = [(r"/robots\.txt", self._robots), (r"/", self._home)]
        if kind.startswith("dedup-"):
            routes += [(r"/articles/mirror\.html", self._mirror),
                       (r"/articles/syndicated\.html", self._syndicated)]
        elif kind.startswith("fresh-"):
            routes.append((r"/v/([0-9])\.html", self._fresh))
        elif kind == "render":
            routes += [(r"/app\.html", self._app), (r"/loop\.html", self._loop),
                       (r"/static/app\.js", self._app_js), (r"/api/items\.json", self._items),
                       (r"/js/([0-9]+)\.html", self._js_page), (r"/slow\.html", self._slow),
                       (r"/static/slow\.js", self._slow_js), (r"/apps/([0-9]+)\.html", self._xo_app),
                       (r"/xo/([0-9]+)\.html", self._xo_page)]
        elif kind == "render-assets":
            routes += [*self._leaves(*(f"/docs/{k}.html" for k in range(1, 13))),
                       (r"/api/routes-([0-9]+)\.json", self._routes_json)]
        elif kind in realweb.KINDS:
            routes += self.realweb.routes(kind)
        else:
            routes += getattr(self, f"_routes_{kind.replace('-', '_')}")()
        return tuple((re.compile(pattern), handler) for pattern, handler in routes)

    def _leaf(self, i: int, path: str, title: str, links: tuple[Link, ...] = (),
              nav: tuple[Link, ...] = NAV, **fields: object) -> Page:
        """An ordinary page of case host i (text keyed by kind and path)."""
        kind = self._kind(i)
        return Page(title, f"case:{kind}:{path}", nav, links, **fields)  # type: ignore[arg-type]

    def _leaves(self, *paths: str) -> list[tuple[str, Handler]]:
        """Routes for ordinary leaf pages at literal `paths`."""
        def handler(path: str) -> Handler:
            return lambda i: self._leaf(i, path, f"{self._kind(i)} {path}")
        return [(re.escape(path), handler(path)) for path in paths]

    def _home(self, i: int) -> Page | Special:
        kind = self._kind(i)
        own = self.realweb.home(i, kind) if kind in realweb.KINDS else None
        if own is not None:
            return own
        if kind.startswith("dedup-"):
            pairs = [("/articles/syndicated.html", "Syndicated story")]
            if kind != "dedup-3":
                pairs.insert(0, ("/articles/mirror.html", "Mirrored story"))
        else:
            pairs = list(_HOME_LINKS.get(kind, ()))
        extra = "<p><img src=\"/img/x.png\" alt=\"A pixel\"></p>\n" if kind == "odd" else ""
        links = tuple(Link(href, text) for href, text in pairs)
        return Page(f"Case host {kind}", f"case:{kind}:/", NAV, links, body_extra=extra)

    def _routes_robots_500(self) -> list[tuple[str, Handler]]:
        return self._leaves("/page-1.html", "/page-2.html")

    def _routes_robots_404(self) -> list[tuple[str, Handler]]:
        return self._leaves("/page.html", "/private/open.html")

    def _routes_robots_redirect(self) -> list[tuple[str, Handler]]:
        real: Handler = lambda i: self.web.ok(i, TEXT_TYPE, REAL_ROBOTS.encode())  # noqa: E731
        return [(r"/robots-real\.txt", real),
                *self._leaves("/open.html", "/blocked/secret.html", "/private/visible.html")]

    # --- heavy: big page, gzip bomb, drip ----------------------------------------------------

    def _routes_heavy(self) -> list[tuple[str, Handler]]:
        return [(r"/big\.html", self._big), (r"/bomb\.html", self._bomb),
                (r"/drip\.html", self._drip), *self._leaves("/ok.html")]

    def _big(self, i: int) -> Response:
        size = self.spec.big_page_bytes
        return Response(200, [("Content-Type", HTML_TYPE), ("Content-Length", str(size))], b"",
                        functools.partial(big_stream, size))

    def _bomb(self, i: int) -> Response:
        size = self.spec.bomb_bytes
        headers = [("Content-Type", HTML_TYPE), ("Content-Encoding", "gzip"),
                   ("Content-Length", str(bomb_length(size)))]
        return Response(200, headers, b"", functools.partial(bomb_stream, size))

    def _drip(self, i: int) -> Response:
        length = len(_DRIP_HEAD) + DRIP_BYTES + len(_DRIP_TAIL)
        return Response(200, [("Content-Type", HTML_TYPE), ("Content-Length", str(length))], b"",
                        functools.partial(drip_stream, self.spec.drip_seconds))

    # --- redirects ---------------------------------------------------------------------------

    def _routes_redirects(self) -> list[tuple[str, Handler]]:
        def loop(i: int, end: str) -> Response:
            return redirect(301, "/loop/b" if end == "a" else "/loop/a")

        def moved(i: int) -> Response:
            return redirect(301, "/moved-target.html")

        return [(r"/loop/([ab])", loop), (r"/hop/([1-8])", self._hop), (r"/moved\.html", moved),
                *self._leaves("/hop/final.html", "/moved-target.html")]

    def _hop(self, i: int, number: str) -> Response:
        k = int(number)
        path = f"/hop/{k + 1}" if k < HOPS else "/hop/final.html"
        location = self.web.base_url(i) + path if k % 2 == 0 else path  # absolute and relative
        return redirect(HOP_STATUSES[k - 1], location)

    # --- odd pages ---------------------------------------------------------------------------

    def _routes_odd(self) -> list[tuple[str, Handler]]:
        def many(i: int, number: str) -> Page | None:
            return self._leaf(i, f"/many/{number}.html", f"Item {number}") \
                if int(number) < MANY_EXISTING else None

        return [
            (r"/links-10k\.html", lambda i: self._leaf(
                i, "/links-10k.html", "Ten thousand links", _many_links(), expand=False)),
            (r"/many/(0|[1-9][0-9]*)\.html", many),
            (r"/deep-dom\.html", lambda i: self._leaf(
                i, "/deep-dom.html", "A deep document", body_extra=_deep_dom())),
            (r"/bad-utf8\.html", lambda i: Special(
                self.web.ok(i, HTML_TYPE, _BAD_UTF8), (_HOME[0], Link("/after-bad-utf8.html",
                                                                       "After")))),
            (r"/charset\.html", lambda i: Special(
                self.web.ok(i, f"text/html; charset={CHARSET}", _charset_page()),
                (_HOME[0], Link("/café.html", "Café", target=CHARSET_LINK)))),
            (r"/caf(?:é|%[cC]3%[aA]9)\.html", lambda i: self._leaf(i, CHARSET_LINK, "Café")),
            (r"/img/x\.png", lambda i: self.web.ok(i, "image/png", _png())),
            (r"/files/report\.pdf", lambda i: self.web.ok(i, "application/pdf", _pdf())),
            *self._leaves("/after-bad-utf8.html"),
        ]

    # --- links -------------------------------------------------------------------------------

    def _routes_links(self) -> list[tuple[str, Handler]]:
        canon = [(r"/canon/a\.html", "/canon/a.html"), (r"/canon/q\.html", "/canon/q.html"),
                 (r"/canon/s\.html(?:;jsessionid=[0-9A-Za-z]*)?", "/canon/s.html"),
                 (r"/canon/(?:~|%7[eE])user\.html", "/canon/~user.html"),
                 (r"/canon/sub/page\.html", "/canon/sub/page.html")]

        def canonical_page(name: str, title: str) -> Handler:
            def handler(i: int) -> Page:
                href = "/canonical/article.html"
                link = f"{self.web.base_url(i)}{href}" if name != "amp" else href
                links = (Link("/canonical/print.html", "Print"), Link("/canonical/amp.html", "AMP"))
                return Page(title, "case:links:canonical-article", NAV,
                            links if name == "article" else (),
                            head_extra=f"<link rel=\"canonical\" href=\"{html.escape(link)}\">")
            return handler

        routes: list[tuple[str, Handler]] = [
            (pattern, functools.partial(lambda i, p: self._leaf(i, p, f"Canonical {p}"), p=p))
            for pattern, p in canon]
        routes += [
            (r"/spellings\.html", self._spellings),
            (r"/based/index\.html", lambda i: self._leaf(
                i, "/based/index.html", "Based", (Link("page.html", "Sub page"),
                                                  Link("../a.html", "Up one"),
                                                  Link("/based/real.html", "Absolute")),
                nav=_HOME, base="/canon/sub/")),
            (r"/nofollow\.html", lambda i: self._leaf(
                i, "/nofollow.html", "Nofollow", (
                    Link("/nofollow-only.html", "Sponsored", rel="nofollow"),
                    Link("/nofollow-only-2.html", "Advert", rel="sponsored NoFollow"),
                    Link("/followed.html", "Followed")))),
            (r"/meta-nofollow\.html", lambda i: self._leaf(
                i, "/meta-nofollow.html", "Meta nofollow",
                (Link("/meta-nofollow-target.html", "Target"),), nofollow=True)),
            (r"/hidden\.html", lambda i: self._leaf(
                i, "/hidden.html", "Hidden links", body_extra=HIDDEN_HTML)),
            (r"/canonical/article\.html", canonical_page("article", "Article")),
            (r"/canonical/print\.html", canonical_page("print", "Article (print)")),
            (r"/canonical/amp\.html", canonical_page("amp", "Article (AMP)")),
            *self._leaves("/based/real.html", "/followed.html", *LINKS_NEVER[:6]),
        ]
        return routes

    def _spellings(self, i: int) -> Page:
        netloc = self.web.netloc(i)
        links = tuple(Link(href.format(netloc=netloc), f"Spelling {k}", target=target)
                      for k, (href, target) in enumerate(SPELLINGS))
        return self._leaf(i, "/spellings.html", "Spellings", links)

    # --- traps -------------------------------------------------------------------------------

    def _routes_traps(self) -> list[tuple[str, Handler]]:
        return [(r"/cal/([1-9][0-9]{3})/(1[0-2]|[1-9])", self._calendar),
                (r"/sess/page\.html(?:;jsessionid=([0-9a-f]{16}))?", self._session),
                (r"/r/((?:[ab]/)+)", self._repeat),
                (r"/deep/([1-9][0-9]{0,17})", self._deep)]

    def _trap(self, i: int, path: str, title: str, *links: Link) -> Page:
        return self._leaf(i, path, title, links, trap=True)

    def _calendar(self, i: int, year: str, month: str) -> Page:
        y, m = int(year), int(month)
        before = (y, m - 1) if m > 1 else (y - 1, 12)
        after = (y, m + 1) if m < 12 else (y + 1, 1)
        return self._trap(i, f"/cal/{y}/{m}", f"Calendar {y}-{m:02d}",
                          Link(f"/cal/{before[0]}/{before[1]}", "Previous month"),
                          Link(f"/cal/{after[0]}/{after[1]}", "Next month"))

    def _session(self, i: int, sid: str | None) -> Page:
        following = hashlib.blake2b((sid or "").encode(), digest_size=8).hexdigest()
        return self._trap(i, f"/sess/page.html;jsessionid={sid or ''}", "Session page",
                          Link(f"/sess/page.html;jsessionid={following}", "This page"))

    def _repeat(self, i: int, segments: str) -> Page:
        step = "b/" if segments.endswith("a/") else "a/"
        return self._trap(i, f"/r/{segments}", "Repeating path", Link(step, "Further"))

    def _deep(self, i: int, number: str) -> Page:
        n = int(number)
        return self._trap(i, f"/deep/{n}", f"Deep {n}", Link(f"/deep/{n + 1}", "Deeper"))

    # --- sitemaps ----------------------------------------------------------------------------

    def _routes_sitemap_index(self) -> list[tuple[str, Handler]]:
        def index(i: int) -> Response:
            loc = f"{self.web.base_url(i)}/sitemap-pages.xml.gz"
            body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns="
                    f"\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n<sitemap><loc>{loc}</loc>"
                    f"<lastmod>{LASTMOD}</lastmod></sitemap>\n</sitemapindex>\n")
            return self.web.ok(i, "application/xml", body.encode())

        def child(i: int) -> Response:
            data = gzip.compress(self._urlset(i), mtime=0)
            return self.web.ok(i, "application/gzip", data)

        return [(r"/sitemap_index\.xml", index), (r"/sitemap-pages\.xml\.gz", child),
                *self._leaves("/linked.html",
                              *(f"/sitemap-only/{k}.html" for k in range(SITEMAP_ONLY)))]

    def _routes_sitemap_plain(self) -> list[tuple[str, Handler]]:
        def plain(i: int) -> Response:
            return self.web.ok(i, "application/xml", self._urlset(i))

        return [(r"/sitemap\.xml", plain),
                *self._leaves("/linked.html", *(f"/listed/{k}.html" for k in range(LISTED_ONLY)))]

    def _urlset(self, i: int) -> bytes:
        urls = "".join(f"<url><loc>{self.web.base_url(i)}{path}</loc><lastmod>{LASTMOD}"
                       f"</lastmod></url>\n" for path in self.sitemap_paths(i))
        return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns="
                f"\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{urls}</urlset>\n").encode()

    def sitemap_paths(self, i: int) -> list[str]:
        """Paths the sitemaps of host i list (only the sitemap hosts have any)."""
        kind = self.web.case_kind(i)
        if kind == "sitemap-index":
            return ["/", "/linked.html", *(f"/sitemap-only/{k}.html" for k in range(SITEMAP_ONLY))]
        if kind == "sitemap-plain":
            return ["/", "/linked.html", *(f"/listed/{k}.html" for k in range(LISTED_ONLY))]
        return []

    # --- dedup -------------------------------------------------------------------------------

    def _mirror(self, i: int) -> Special | None:
        if self._kind(i) == "dedup-3":
            return None
        return Special(self.web.ok(i, HTML_TYPE, article("mirror", self.spec.seed)), _HOME)

    def _syndicated(self, i: int) -> Special:
        variant = int(self._kind(i).removeprefix("dedup-"))
        body = article("syndicated", self.spec.seed, variant)
        return Special(self.web.ok(i, HTML_TYPE, body), _HOME)

    # --- recrawl -----------------------------------------------------------------------------

    def _fresh(self, i: int, number: str) -> Page | None:
        j = int(number)
        if j >= FRESH_PAGES:
            return None
        return self._leaf(i, f"/v/{j}.html", f"Version page {j}",
                          (Link(f"/v/{(j + 1) % FRESH_PAGES}.html", "Next"),))

    # --- render ------------------------------------------------------------------------------

    def _app(self, i: int) -> Special:
        body = SHELL_HTML.format(title="App", head="<script src=\"/static/app.js\" defer></script>",
                                 body="")
        return Special(self.web.ok(i, HTML_TYPE, body.encode()), expand=False)

    def _loop(self, i: int) -> Special:
        body = SHELL_HTML.format(title="Busy app", head="",
                                 body="<script>for (;;) {}</script>\n"
                                      "<script src=\"/static/app.js\"></script>\n")
        return Special(self.web.ok(i, HTML_TYPE, body.encode()), expand=False)

    def _app_js(self, i: int) -> Response:
        script = APP_JS.format(leak=self.web.base_url(0) + LEAK_PATH)
        return self.web.ok(i, "text/javascript; charset=utf-8", script.encode())

    def _items(self, i: int) -> Response:
        items = [{"href": f"/js/{k}.html", "title": f"Script page {k}"}
                 for k in range(1, JS_PAGES + 1)]
        return self.web.ok(i, "application/json", json.dumps(items).encode())

    def _js_page(self, i: int, number: str) -> Page | None:
        k = int(number)
        if not 1 <= k <= JS_PAGES:
            return None
        return self._leaf(i, f"/js/{k}.html", f"Script page {k}")

    def _slow(self, i: int) -> Special:
        body = SHELL_HTML.format(title="Slow app", head="",
                                 body="<script src=\"/static/slow.js\"></script>\n")
        return Special(self.web.ok(i, HTML_TYPE, body.encode()), expand=False)

    def _slow_js(self, i: int) -> Response:
        def stream() -> Iterator[StreamItem]:
            yield SLOW_SCRIPT_SECONDS
            yield SLOW_JS
        return Response(200, [("Content-Type", "text/javascript"),
                              ("Content-Length", str(len(SLOW_JS)))], b"", stream)

    def _xo_app(self, i: int, number: str) -> Special | None:
        k = int(number)
        if not 1 <= k <= XO_PAGES:
            return None
        routes = self._url("render-assets", f"/api/routes-{k}.json")
        body = SHELL_HTML.format(title=f"App {k}", head="",
                                 body=f"<script>{XO_SCRIPT.format(routes=routes)}</script>\n")
        return Special(self.web.ok(i, HTML_TYPE, body.encode()), expand=False)

    def _xo_page(self, i: int, number: str) -> Page | None:
        k = int(number)
        if not 1 <= k <= XO_PAGES:
            return None
        return self._leaf(i, f"/xo/{k}.html", f"Cross-origin route {k}")

    def _routes_json(self, i: int, number: str) -> Response | None:
        k = int(number)
        if not 1 <= k <= XO_PAGES:
            return None
        items = [{"href": self._url("render", f"/xo/{k}.html"), "title": f"Route {k}"}]
        ok = self.web.ok(i, "application/json", json.dumps(items).encode())
        return Response(ok.status, [*ok.headers, ("Access-Control-Allow-Origin", "*")], ok.body)

    def render_pages(self) -> list[str]:
        """Pages a crawler finds only by running a page's script (/app.html's, and the
        cross-origin ones: `cross_origin_pages`)."""
        if "render" not in self.web.case_kinds:
            return []
        return ([self._url("render", f"/js/{k}.html") for k in range(1, JS_PAGES + 1)]
                + self.cross_origin_pages())

    def cross_origin_pages(self) -> list[str]:
        """Pages linked only by the JSON that /apps/<k>.html fetches from another host."""
        if "render" not in self.web.case_kinds:
            return []
        return [self._url("render", f"/xo/{k}.html") for k in range(1, XO_PAGES + 1)]

    # --- expectations ------------------------------------------------------------------------

    def never_fetch(self) -> list[str]:
        """Case URL prefixes never to fetch, besides the robots.txt-disallowed ones."""
        never = []
        if "links" in self.web.case_kinds:
            never += [self._url("links", path) for path in LINKS_NEVER]
        if "render" in self.web.case_kinds:
            never += [self._url("render", "/img/"), self.web.base_url(0) + LEAK_PATH]
        for kind in self._realweb_kinds():
            never += [self._url(kind, prefix) for prefix in self.realweb.never_prefixes(kind)]
        return never

    def forbidden(self, url: str) -> bool:
        """Whether `url` is any spelling of a request a correct crawler never makes on a
        realweb host (robots.txt rules read on the link as written, dot segments left in)."""
        netloc, _, target = url.partition("://")[2].partition("/")
        i = self.web.host_index(netloc)
        kind = self.web.case_kind(i) if i is not None else None
        return kind in realweb.KINDS and self.realweb.forbidden(kind, "/" + target)

    def must_fetch(self) -> list[str]:
        return [self._url(kind, target) for kind in self._realweb_kinds()
                for target in self.realweb.must_fetch(kind)]

    def must_not_fetch(self) -> list[str]:
        return [self._url(kind, target) for kind in self._realweb_kinds()
                for target in self.realweb.must_not_fetch(kind)]

    def page_titles(self) -> dict[str, str]:
        return {self._url(kind, target): title for kind in self._realweb_kinds()
                for target, title in self.realweb.titles(kind).items()}

    def page_problems(self) -> dict[str, str]:
        return {self._url(kind, target): problem for kind in self._realweb_kinds()
                for target, problem in self.realweb.problems(kind).items()}

    def trap_prefixes(self) -> dict[str, str]:
        if "traps" not in self.web.case_kinds:
            return {}
        return {name: self._url("traps", path) for name, path in (
            ("calendar", "/cal/"), ("session", "/sess/"), ("repeat", "/r/"), ("deep", "/deep/"))}

    def redirect_cases(self) -> list[RedirectCase]:
        cases = []
        if "redirects" in self.web.case_kinds:
            def url(path: str) -> str:
                return self._url("redirects", path)

            cases += [
                RedirectCase("loop", url("/loop/a"), (url("/loop/a"), url("/loop/b")),
                             (301, 301), None),
                RedirectCase("hops", url("/hop/1"),
                             tuple(url(f"/hop/{k}") for k in range(1, HOPS + 1)), HOP_STATUSES,
                             url("/hop/final.html")),
                RedirectCase("moved", url("/moved.html"), (url("/moved.html"),), (301,),
                             url("/moved-target.html")),
            ]
        if "robots-redirect" in self.web.case_kinds:
            start = self._url("robots-redirect", "/robots.txt")
            cases.append(RedirectCase("robots", start, (start,), (301,),
                                      self._url("robots-redirect", "/robots-real.txt")))
        return cases

    def sitemap_pages(self) -> set[str]:
        pages = set()
        for kind, prefix, count in (("sitemap-index", "/sitemap-only/", SITEMAP_ONLY),
                                    ("sitemap-plain", "/listed/", LISTED_ONLY)):
            if kind in self.web.case_kinds:
                pages |= {self._url(kind, f"{prefix}{k}.html") for k in range(count)}
        return pages

    def spelling_groups(self) -> dict[str, list[str]]:
        if "links" not in self.web.case_kinds:
            return {}
        netloc = self.web.netloc(self._host("links"))
        groups: dict[str, list[str]] = {}
        for href, target in SPELLINGS:
            groups.setdefault(self._url("links", target), []).append(href.format(netloc=netloc))
        return groups

    def canonical_links(self) -> dict[str, str]:
        if "links" not in self.web.case_kinds:
            return {}
        article_url = self._url("links", "/canonical/article.html")
        return {self._url("links", f"/canonical/{name}.html"): article_url
                for name in ("article", "print", "amp")}

    def duplicate_groups(self) -> dict[str, list[list[str]]]:
        exact: list[list[str]] = []
        near: list[list[str]] = []
        if "dedup-0" in self.web.case_kinds:
            exact.append([self._url(f"dedup-{k}", "/articles/mirror.html") for k in range(3)])
            near.append([self._url(f"dedup-{k}", "/articles/syndicated.html") for k in range(4)])
        if "links" in self.web.case_kinds:
            near.append(list(self.canonical_links()))
        return {"exact": exact, "near": near}

    def case_urls(self) -> dict[str, str]:
        names = {
            "robots-500": (("robots-500", "/"),), "robots-404": (("robots-404", "/"),),
            "robots-redirect": (("robots-redirect", "/"),),
            "heavy": (("big", "/big.html"), ("bomb", "/bomb.html"), ("drip", "/drip.html")),
            "redirects": (("loop", "/loop/a"), ("hops", "/hop/1"), ("moved", "/moved.html")),
            "odd": (("links-10k", "/links-10k.html"), ("deep-dom", "/deep-dom.html"),
                    ("bad-utf8", "/bad-utf8.html"), ("charset", "/charset.html"),
                    ("charset-link", CHARSET_LINK), ("image", "/img/x.png"),
                    ("pdf", "/files/report.pdf")),
            "links": (("spellings", "/spellings.html"), ("base", "/based/index.html"),
                      ("nofollow", "/nofollow.html"), ("meta-nofollow", "/meta-nofollow.html"),
                      ("canonical", "/canonical/print.html"), ("hidden", "/hidden.html")),
            "traps": (("calendar", "/cal/2026/11"),
                      ("session", f"/sess/page.html;jsessionid={SESSION_START}"),
                      ("repeat", "/r/a/"), ("deep", "/deep/1")),
            "sitemap-index": (("sitemap-index", "/sitemap_index.xml"),),
            "sitemap-plain": (("sitemap-plain", "/sitemap.xml"),),
            "dedup-0": (("mirror", "/articles/mirror.html"),
                        ("syndicated", "/articles/syndicated.html")),
            **{f"fresh-{v}": ((f"fresh-{v}", "/"),) for v in ("both", "etag", "lm", "none")},
            "render": (("app", "/app.html"), ("loop", "/loop.html"),
                       ("app-js", "/static/app.js"), ("slow", "/slow.html"),
                       ("slow-js", "/static/slow.js")),
            "render-assets": (("assets", "/"),),
            **{kind: self.realweb.case_urls(kind) for kind in realweb.KINDS},
        }
        return {name: self._url(kind, path) for kind in self.web.case_kinds
                for name, path in names.get(kind, ())}


def canonical_target(path_and_query: str) -> str:
    """The canonical form of a request target for the /canon/ spellings: no ;path parameters,
    %7E as ~, no tracking or session parameters, the query sorted."""
    path, _, query = path_and_query.partition("?")
    path = re.sub(r"%7[eE]", "~", path.split(";", 1)[0])
    pairs = sorted((k, v) for k, v in parse_qsl(query, keep_blank_values=True)
                   if not TRACKING.fullmatch(k))
    return path + (f"?{urlencode(pairs)}" if pairs else "")


def canonical_url(url: str) -> str:
    """canonical_target() of an absolute URL, scheme and host lower-cased, fragment dropped,
    characters outside ASCII percent-encoded as UTF-8."""
    url = re.sub(r"[^\x21-\x7e]", lambda m: quote(m[0]), url.strip())
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    return f"http://{parts.netloc.lower()}{canonical_target(target)}"


# --- bodies ---------------------------------------------------------------------------------------

_BIG_HEAD = (b"<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
             b"<title>A big page</title></head>\n<body>\n<nav><a href=\"/\">Home</a></nav>\n"
             b"<main>\n")
_BIG_TAIL = b"</main>\n</body>\n</html>\n"
_DRIP_HEAD = (b"<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
              b"<title>A slow page</title></head>\n<body>\n<p>")
_DRIP_TAIL = b"</p>\n</body>\n</html>\n"
_BAD_UTF8 = (b"<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
             b"<title>Bad bytes</title></head>\n<body>\n<nav><a href=\"/\">Home</a></nav>\n"
             b"<p>Stray bytes \xff\xfe, a broken pair \xc3\x28, a lone continuation \x80, "
             b"a surrogate \xed\xa0\x80, beyond Unicode \xf4\x90\x80\x80, truncated \xe2\x82.</p>\n"
             b"<p><a href=\"/after-bad-utf8.html\">After the bad bytes</a></p>\n</body>\n</html>\n")


@functools.cache
def _filler() -> bytes:
    """STREAM_CHUNK bytes of paragraphs for the big page."""
    words = vocabulary()[:40]
    line = ("<p>" + " ".join(words) + ".</p>\n").encode()
    chunk = line * (STREAM_CHUNK // len(line))
    return chunk + b"\n" * (STREAM_CHUNK - len(chunk))


def big_stream(size: int) -> Iterator[StreamItem]:
    """The big page: `size` bytes of HTML in STREAM_CHUNK pieces (one shared chunk object)."""
    middle = size - len(_BIG_HEAD) - len(_BIG_TAIL)
    yield _BIG_HEAD
    full, rest = divmod(middle, STREAM_CHUNK)
    chunk = _filler()
    for _ in range(full):
        yield chunk
    if rest:
        yield b"\n" * rest
    yield _BIG_TAIL


def drip_stream(seconds: float) -> Iterator[StreamItem]:
    """The drip page: its head at once, then DRIP_BYTES bytes one per seconds / DRIP_BYTES."""
    yield _DRIP_HEAD
    pause = seconds / DRIP_BYTES
    for _ in range(DRIP_BYTES):
        yield pause
        yield b"."
    yield _DRIP_TAIL


_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # deflate, no name, mtime 0, max level


@functools.cache
def _bomb_parts(size: int) -> tuple[bytes, int, bytes, bytes]:
    """(unit, count, tail, trailer): a gzip member of `size` zeros is _GZIP_HEADER, `count`
    copies of `unit` (BOMB_BLOCK zeros, compressed and fully flushed: no references to
    earlier data, so copies may follow each other), `tail` (the rest and the final block),
    then `trailer` (CRC-32 and length). About 1 KiB per MiB; computed in milliseconds."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    unit = compressor.compress(bytes(BOMB_BLOCK)) + compressor.flush(zlib.Z_FULL_FLUSH)
    count, rest = divmod(size, BOMB_BLOCK)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    tail = compressor.compress(bytes(rest)) + compressor.flush()
    trailer = struct.pack("<II", crc32_zeros(size), size & 0xFFFFFFFF)
    return unit, count, tail, trailer


def bomb_length(size: int) -> int:
    """Length of the compressed bomb of `size` zeros."""
    unit, count, tail, trailer = _bomb_parts(size)
    return len(_GZIP_HEADER) + count * len(unit) + len(tail) + len(trailer)


def bomb_stream(size: int) -> Iterator[StreamItem]:
    """The gzip bomb in pieces of about STREAM_CHUNK bytes."""
    unit, count, tail, trailer = _bomb_parts(size)
    yield _GZIP_HEADER
    batch = max(1, STREAM_CHUNK // len(unit))
    block = unit * batch
    full, rest = divmod(count, batch)
    for _ in range(full):
        yield block
    if rest:
        yield unit * rest
    yield tail + trailer


def _gf2_times(matrix: list[int], vector: int) -> int:
    total, row = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, matrix[row]) for row in range(32)]


def crc32_zeros(length: int) -> int:
    """zlib.crc32(bytes(length)) without the bytes: the register 0xFFFFFFFF run through
    `length` zero bytes (zlib's crc32_combine operator, by repeated squaring)."""
    crc = 0xFFFFFFFF
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four zero bits
    while length:
        even = _gf2_square(odd)  # 8, 32, 128 ... zero bits
        if length & 1:
            crc = _gf2_times(even, crc)
        length >>= 1
        if not length:
            break
        odd = _gf2_square(even)
        if length & 1:
            crc = _gf2_times(odd, crc)
        length >>= 1
    return crc ^ 0xFFFFFFFF


@functools.cache
def _many_links() -> tuple[Link, ...]:
    return tuple(Link(f"/many/{k}.html", f"Item {k}") for k in range(MANY_LINKS))


@functools.cache
def _deep_dom() -> str:
    return ("<div>" * DOM_DEPTH + "<p>The bottom of a deep document.</p>"
            + "</div>" * DOM_DEPTH + "\n")


@functools.cache
def _charset_page() -> bytes:
    text = html.escape(CHARSET_TEXT, quote=False)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
            "<title>Charset</title></head>\n<body>\n<nav><a href=\"/\">Home</a></nav>\n"
            f"<p>{text}</p>\n<p><a href=\"/café.html\">Café</a></p>\n</body>\n</html>\n"
            ).encode(CHARSET)


@functools.cache
def _png() -> bytes:
    """A 1x1 RGB PNG."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data)))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x80\x00")) + chunk(b"IEND", b""))


@functools.cache
def _pdf() -> bytes:
    """A one-page PDF saying "Test report"."""
    content = b"BT /F1 18 Tf 20 50 Td (Test report) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


@functools.cache
def _article_sentences(name: str, seed: int) -> tuple[tuple[str, ...], ...]:
    """ARTICLE_WORDS words of prose in sentences of 8 to 16 words."""
    rng = random.Random(f"{seed}:article:{name}")
    words = vocabulary()
    sentences: list[tuple[str, ...]] = []
    total = 0
    while total < ARTICLE_WORDS:
        n = min(rng.randint(8, 16), ARTICLE_WORDS - total)
        sentences.append(tuple(rng.choices(words, k=n)))
        total += n
    return tuple(sentences)


@functools.cache
def article(name: str, seed: int, variant: int = 0) -> bytes:
    """An article page with no host-specific bytes. Variants of the syndicated article:
    0 the original, 1 one word changed, 2 a byline added, 3 a sentence removed."""
    sentences = list(_article_sentences(name, seed))
    byline = ""
    if variant == 1:
        words = list(sentences[20])
        vocab = vocabulary()
        words[3] = vocab[(vocab.index(words[3]) + 1) % len(vocab)]
        sentences[20] = tuple(words)
    elif variant == 2:
        byline = "<p class=\"byline\">By Mara Quillon, staff writer</p>\n"
    elif variant == 3:
        del sentences[30]
    paragraphs = "".join(
        "<p>" + " ".join(_sentence(s) for s in sentences[k:k + 5]) + "</p>\n"
        for k in range(0, len(sentences), 5))
    title = f"The {name} story"
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
            f"<title>{title}</title></head>\n<body>\n<nav><a href=\"/\">Home</a></nav>\n"
            f"<article>\n<h1>{title}</h1>\n{byline}{paragraphs}</article>\n</body>\n</html>\n"
            ).encode()


def _sentence(words: tuple[str, ...]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:] + "."
