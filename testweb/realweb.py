"""The "realweb" case hosts: pages as documentation generators and a CMS write them. Pure.

docbook  /docs/: a manual as DocBook's XSL writes it: an XML declaration with an encoding,
         the XHTML 1.0 Transitional doctype, <html xmlns=...>, navigation header and footer
         tables with <a accesskey="p|u|h|n">, <link rel="prev|next|up|home">, a table of
         contents on the book, part and chapter pages. Served as text/html without a charset,
         except: preface.html (an XML declaration without encoding), tutorial-arch.html (UTF-8,
         header charset=utf-8, declaration and <meta> say ISO-8859-1: the header wins),
         release.xhtml (application/xhtml+xml), release-1-0.html (ISO-8859-1 bytes named only
         by the XML declaration). stylesheet.css and images/ are referenced, never linked.
sphinx   /en/latest/: a Sphinx 7 HTML5 site (Alabaster): toctree, genindex.html, search.html,
         headerlinks (#fragment), ../ links from guide/, _static/ assets (stylesheets, scripts)
         and a rel=nofollow "Page source" link to _sources/; never fetched: _static/,
         _sources/, searchindex.js and the search form's search.html?q=.
cms      a CMS theme: query-routed URLs (/index.php?/blog/post-1, /?p=12, /p?print,
         /list?color=red, /thumb?w=200&h=100&sig=abc: 403 unless the query comes in exactly
         that order); robots.txt with "Disallow: /*?sort=" and "Disallow: /?q=user/login/",
         linked from every page (never fetched, in any spelling); a windows-1252, a Shift_JIS
         (<meta http-equiv>) and a UTF-16 (BOM) page, each linking a non-ASCII path and a
         query in its own encoding (WHATWG: the query is percent-encoded in the page's
         encoding, the path in UTF-8); /malformed.html (hrefs no URL parser accepts, then a
         good link and one with spaces and tabs); /go/bad-redirect (Location: http://[::1);
         /empty.html (0 bytes) and /bare.html (markup, no text, no links).

Request targets are written here exactly as they must go on the wire (MUST_FETCH); every
page's HTML is written together with the list of links a correct parser finds on it.
"""

from __future__ import annotations

import functools
import html
import posixpath
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from testweb.hosts import (
    DISALLOW,
    Handler,
    Hosts,
    Link,
    Response,
    Special,
    error_response,
    redirect,
    vocabulary,
)

KINDS = ("docbook", "sphinx", "cms")

# --- docbook ----------------------------------------------------------------------------------

DOCBOOK_ROOT = "/docs/"
DOCBOOK_BOOK = "The Widget Manual"
# (file, element, label, title, parent file) in reading order
DOCBOOK: tuple[tuple[str, str, str, str, str], ...] = (
    ("index.html", "book", "", DOCBOOK_BOOK, ""),
    ("preface.html", "preface", "", "Preface — Read Me First", "index.html"),
    ("tutorial.html", "part", "Part I. ", "Tutorial", "index.html"),
    ("tutorial-start.html", "chapter", "Chapter 1. ", "Getting Started", "tutorial.html"),
    ("tutorial-install.html", "sect1", "1.1. ", "Installation", "tutorial-start.html"),
    ("tutorial-arch.html", "sect1", "1.2. ", "Architecture — Überblick", "tutorial-start.html"),
    ("tutorial-sql.html", "chapter", "Chapter 2. ", "The Query Language", "tutorial.html"),
    ("tutorial-sql-intro.html", "sect1", "2.1. ", "Introduction", "tutorial-sql.html"),
    ("appendixes.html", "part", "Part II. ", "Appendixes", "index.html"),
    ("release.xhtml", "appendix", "Appendix A. ", "Release Notes", "appendixes.html"),
    ("release-1-0.html", "sect1", "A.1. ", "Release 1.0 (Größe)", "release.xhtml"),
)
_UTF8_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="no"?>'
_LATIN_DECL = '<?xml version="1.0" encoding="ISO-8859-1" standalone="no"?>'
# file -> (XML declaration, <meta http-equiv> charset or None, Content-Type, bytes in)
_DOCBOOK_DEFAULT = (_UTF8_DECL, "UTF-8", "text/html", "utf-8")
_DOCBOOK_CHARSETS = {
    "preface.html": ('<?xml version="1.0"?>', None, "text/html", "utf-8"),
    "tutorial-arch.html": (_LATIN_DECL, "ISO-8859-1", "text/html; charset=utf-8", "utf-8"),
    "release.xhtml": (_UTF8_DECL, "UTF-8", "application/xhtml+xml; charset=utf-8", "utf-8"),
    "release-1-0.html": (_LATIN_DECL, None, "text/html", "iso-8859-1"),
}
_XHTML_DOCTYPE = ('<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" '
                  '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">')

# --- sphinx -----------------------------------------------------------------------------------

SPHINX_ROOT = "/en/latest/"
SPHINX_PROJECT = "Widget 2.1 documentation"
SPHINX_TOC = ("intro.html", "install.html", "guide/index.html", "guide/usage.html",
              "guide/config.html", "api.html")
SPHINX_HEADINGS = {
    "index.html": "Welcome to Widget’s documentation!", "intro.html": "Introduction",
    "install.html": "Installation", "guide/index.html": "User guide",
    "guide/usage.html": "Usage", "guide/config.html": "Configuration",
    "api.html": "API reference", "genindex.html": "Index", "search.html": "Search",
}
# page -> (section id, heading) of its second section, and the links its prose makes
_SPHINX_SECTIONS = {
    "index.html": ("indices-and-tables", "Indices and tables"),
    "intro.html": ("getting-started", "Getting started"),
    "install.html": ("from-source", "From source"),
    "guide/index.html": ("overview", "Overview"),
    "guide/usage.html": ("running", "Running"),
    "guide/config.html": ("glossary", "Glossary"),
    "api.html": ("widget.open", "widget.open(path)"),
}
_SPHINX_XREFS: dict[str, tuple[tuple[str, str], ...]] = {
    "intro.html": (("install.html", "Installation"),),
    "install.html": (("intro.html#getting-started", "Getting started"),
                     ("guide/usage.html#running", "Running")),
    "guide/index.html": (("api.html#widget.open", "widget.open()"),),
    "guide/usage.html": (("intro.html#getting-started", "Getting started"),
                         ("guide/config.html#term-option", "option"),
                         ("genindex.html", "Index")),
    "guide/config.html": (("guide/usage.html", "Usage"), ("install.html", "Installation")),
    "api.html": (("guide/usage.html", "Usage"),),
    "genindex.html": (("api.html#widget.close", "widget.close() (in module widget)"),
                      ("api.html#widget.open", "widget.open() (in module widget)"),
                      ("guide/config.html#term-option", "option")),
}
_SPHINX_ASSETS = (("_static/pygments.css?v=d1102ebc", "css"),
                  ("_static/alabaster.css?v=12dfc556", "css"),
                  ("_static/documentation_options.js?v=2709fde1", "js"),
                  ("_static/doctools.js?v=9a2dae69", "js"),
                  ("_static/sphinx_highlight.js?v=dc90522c", "js"))

# --- cms --------------------------------------------------------------------------------------

CMS_SITE = "Widget News"
CMS_ROBOTS = ("/private/", "/wp-admin/", "/*?sort=", "/?q=user/login/")
LOGIN = "/?q=user/login/"
SORTED_LIST = "/list?sort=price&color=red"
THUMB = "/thumb?w=200&h=100&sig=abc"
THUMB_QUERY = "w=200&h=100&sig=abc"
BAD_LOCATION = "http://[::1"
# hrefs no URL parser accepts (and javascript:, mailto:, empty): a crawler skips them all
MALFORMED_HREFS = ("http://[oops/", "//[::1/x", "http://a]b/", "http://evil.com\uff0fx",
                   "javascript:void(0)", "mailto:editor@example.com", "")
SPACED_HREF = "  /tabbed\t/page one.html\n "
SPACED_TARGET = "/tabbed/page%20one.html"  # tabs and newlines dropped, the space encoded
# page -> (Content-Type, codec of the bytes, BOM, <meta>, title, links as (href, wire target))
ENCODED_PAGES: dict[str, tuple[str, str, bytes, str, str, tuple[tuple[str, str], ...]]] = {
    "/enc/cp1252.html": (
        "text/html; charset=windows-1252", "cp1252", b"",
        '<meta charset="windows-1252">', "Café prices – “today”",
        (("après.html", "/enc/apr%C3%A8s.html"), ("find?q=café", "/enc/find?q=caf%E9"))),
    "/enc/sjis.html": (
        "text/html", "cp932", b"",
        '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">',
        "日本語のページ①",
        (("日本.html", "/enc/%E6%97%A5%E6%9C%AC.html"),
         ("find?q=日本", "/enc/find?q=%93%FA%96%7B"))),
    "/enc/utf16.html": (
        "text/html", "utf-16-le", b"\xff\xfe",
        '<meta http-equiv="Content-Type" content="text/html; charset=unicode">',
        "Ünïcödé — sixteen bits",
        (("after-utf16.html", "/enc/after-utf16.html"), ("find?q=ü", "/enc/find?q=%C3%BC"))),
}
FIND_QUERIES = {"q=caf%E9": "café", "q=%93%FA%96%7B": "日本", "q=%C3%BC": "ü"}
# leaf pages of the cms host: path (as on the wire) -> title
CMS_LEAVES = {
    "/enc/apr%C3%A8s.html": "Après", "/enc/%E6%97%A5%E6%9C%AC.html": "日本",
    "/enc/after-utf16.html": "After the UTF-16 page", "/after-malformed.html": "After the bad links",
    SPACED_TARGET: "Page one",
}
EMPTY = "/empty.html"
BARE = "/bare.html"
BARE_HTML = (b'<!DOCTYPE html>\n<html lang="en-US"><head><meta charset="UTF-8"></head>\n'
             b'<body><div class="wrapper"><div class="spacer"></div>'
             b'<img src="/wp-content/uploads/spacer.gif" alt=""></div></body></html>\n')

# Exact request targets a correct crawl sends, by host kind.
MUST_FETCH: dict[str, tuple[str, ...]] = {
    "docbook": ("/", *(DOCBOOK_ROOT + page[0] for page in DOCBOOK)),
    "sphinx": ("/", *(SPHINX_ROOT + path for path in SPHINX_HEADINGS)),
    "cms": tuple(dict.fromkeys((
        "/", "/index.php?/blog/post-1", "/index.php?/blog/post-2", "/?p=12", "/p?print",
        "/list?color=red", THUMB, *ENCODED_PAGES,
        *(target for page in ENCODED_PAGES.values() for _, target in page[5]),
        "/malformed.html", *CMS_LEAVES, "/go/bad-redirect", EMPTY, BARE))),
}
# Spellings of forbidden targets a careless crawler sends (forbidden() catches all others).
MUST_NOT_FETCH: dict[str, tuple[str, ...]] = {
    "docbook": (),
    "sphinx": (SPHINX_ROOT + "guide/../intro.html",),
    "cms": (LOGIN, "/?q=user%2Flogin%2F", "/?q=user/login/=", SORTED_LIST,
            "/list?color=red&sort=price"),
}
# Prefixes of targets never to fetch: assets only <link>, <script> and <img> name, the paths
# a resolver that takes a malformed href for a relative path makes, a search form's results.
NEVER_PREFIXES: dict[str, tuple[str, ...]] = {
    "docbook": (DOCBOOK_ROOT + "stylesheet.css", DOCBOOK_ROOT + "images/"),
    "sphinx": (SPHINX_ROOT + "_static/", SPHINX_ROOT + "_sources/",
               SPHINX_ROOT + "searchindex.js", SPHINX_ROOT + "search.html?"),
    "cms": ("/wp-content/", "/wp-includes/", "/http:", "/[", "//", "/javascript:", "/mailto:",
            "/evil.com", "/?feed="),
}
PROBLEMS = {EMPTY: "empty body", BARE: "no text and no links"}
_REF = ' class="reference internal"'
_HEADERLINK = ' class="headerlink" title="Link to this heading"'


@dataclass
class Markup:
    """The links a correct parser finds on a page, collected while its HTML is written."""

    links: list[Link] = field(default_factory=list)

    def a(self, href: str, text: str, attrs: str = "", *, target: str | None = None,
          follow: bool = True) -> str:
        """An <a> (text is HTML); recorded unless `follow` is False (nofollow, unparsable)."""
        if follow:
            self.links.append(Link(href, html.unescape(text), target=target))
        return f'<a{attrs} href="{html.escape(href)}">{text}</a>'


@functools.cache
def prose(seed: int, key: str, paragraphs: int = 2, words: int = 40) -> str:
    """Paragraphs of made-up words, a function of `key`."""
    rng = random.Random(f"{seed}:realweb:{key}")
    out = []
    for _ in range(paragraphs):
        text = " ".join(rng.choices(vocabulary(), k=words))
        out.append(f"<p>{text[:1].upper()}{text[1:]}.</p>\n")
    return "".join(out)


class RealWeb:
    """Routes, bodies and expectations of the realweb hosts of `web`."""

    def __init__(self, web: Hosts) -> None:
        self.web = web
        self.seed = web.spec.seed

    # --- routes -----------------------------------------------------------------------------

    def routes(self, kind: str) -> list[tuple[str, Handler]]:
        """(regex, handler) on the path, tried after /robots.txt and the home page."""
        if kind == "docbook":
            return [(r"/docs/([a-z0-9-]+\.x?html)", self._docbook)]
        if kind == "sphinx":
            return [(r"/en/latest/((?:guide/)?[a-z]+\.html)", self._sphinx)]
        leaves: list[tuple[str, Handler]] = [
            (re.escape(path), functools.partial(self._cms_leaf, path=path)) for path in CMS_LEAVES]
        return [
            (r"/enc/(cp1252|sjis|utf16)\.html", self._encoded),
            (r"/malformed\.html", self._malformed),
            (r"/go/bad-redirect", lambda i: redirect(302, BAD_LOCATION)),
            (re.escape(EMPTY), self._empty), (re.escape(BARE), self._bare),
            (r"/thumb", lambda i: error_response(403)),  # no query: not signed
            *leaves,
        ]

    def query_routes(self, kind: str) -> list[tuple[str, Handler]]:
        """(regex, handler) on "path?query" exactly as requested (cms only)."""
        if kind != "cms":
            return []
        return [
            (r"/\?(.*)", self._root_query),
            (r"/index\.php\?/blog/post-([12])", self._post),
            (r"/p\?print", lambda i: self._cms(i, "/p?print", "Printable page")),
            (r"/list\?(.*)", self._list),
            (r"/thumb\?(.*)", self._thumb),
            (r"/enc/find\?(.*)", self._find),
        ]

    def home(self, i: int, kind: str) -> Special | None:
        """The cms host's home page (None: the others have the usual case home page)."""
        return self._cms_home(i) if kind == "cms" else None

    def home_links(self, kind: str) -> tuple[tuple[str, str], ...]:
        return {"docbook": ((DOCBOOK_ROOT + "index.html", DOCBOOK_BOOK),),
                "sphinx": ((SPHINX_ROOT + "index.html", SPHINX_PROJECT),)}.get(kind, ())

    # --- robots.txt and expectations ----------------------------------------------------------

    def disallow(self, kind: str) -> tuple[str, ...]:
        return CMS_ROBOTS if kind == "cms" else DISALLOW

    def must_fetch(self, kind: str) -> tuple[str, ...]:
        return MUST_FETCH[kind]

    def must_not_fetch(self, kind: str) -> tuple[str, ...]:
        return MUST_NOT_FETCH[kind]

    def never_prefixes(self, kind: str) -> tuple[str, ...]:
        return NEVER_PREFIXES[kind]

    def forbidden(self, kind: str, target: str) -> bool:
        """Whether any spelling of `target` is a request a correct crawler never makes: the
        login page and the sorted list (robots.txt), however the query is ordered or encoded;
        dot segments a resolver should have removed."""
        path, _, query = target.partition("?")
        if "/../" in path or "/./" in path or path.endswith(("/..", "/.")):
            return True
        if kind != "cms":
            return False
        pairs = parse_qsl(query, keep_blank_values=True)
        if path == "/" and any(k == "q" and v.startswith("user/login") for k, v in pairs):
            return True
        return path == "/list" and any(k == "sort" for k, _ in pairs)

    def titles(self, kind: str) -> dict[str, str]:
        """Target (no query) -> the title on that page."""
        if kind == "docbook":
            return {DOCBOOK_ROOT + name: label + title for name, _, label, title, _ in DOCBOOK}
        if kind == "sphinx":
            return {SPHINX_ROOT + path: _sphinx_title(path) for path in SPHINX_HEADINGS}
        titles = {path: page[4] for path, page in ENCODED_PAGES.items()}
        titles.update({path: f"{title} – {CMS_SITE}" for path, title in CMS_LEAVES.items()})
        titles["/malformed.html"] = f"Links that go nowhere – {CMS_SITE}"
        return titles

    def problems(self, kind: str) -> dict[str, str]:
        return PROBLEMS if kind == "cms" else {}

    def case_urls(self, kind: str) -> tuple[tuple[str, str], ...]:
        return {
            "docbook": (("docbook", DOCBOOK_ROOT + "index.html"),
                        ("docbook-xhtml", DOCBOOK_ROOT + "release.xhtml"),
                        ("docbook-latin1", DOCBOOK_ROOT + "release-1-0.html"),
                        ("docbook-header-wins", DOCBOOK_ROOT + "tutorial-arch.html")),
            "sphinx": (("sphinx", SPHINX_ROOT + "index.html"),
                       ("sphinx-usage", SPHINX_ROOT + "guide/usage.html"),
                       ("sphinx-genindex", SPHINX_ROOT + "genindex.html")),
            "cms": (("cms", "/"), ("cms-post", "/index.php?/blog/post-1"), ("cms-about", "/?p=12"),
                    ("cms-print", "/p?print"), ("cms-list", "/list?color=red"),
                    ("cms-sorted", SORTED_LIST), ("cms-login", LOGIN), ("cms-thumb", THUMB),
                    ("cms-cp1252", "/enc/cp1252.html"), ("cms-sjis", "/enc/sjis.html"),
                    ("cms-utf16", "/enc/utf16.html"), ("cms-malformed", "/malformed.html"),
                    ("cms-bad-redirect", "/go/bad-redirect"), ("cms-empty", EMPTY),
                    ("cms-bare", BARE)),
        }[kind]

    # --- docbook ------------------------------------------------------------------------------

    def _docbook(self, i: int, name: str) -> Special | None:
        k = next((k for k, page in enumerate(DOCBOOK) if page[0] == name), None)
        if k is None:
            return None
        _, element, label, title, parent = DOCBOOK[k]
        full = label + title
        before = DOCBOOK[k - 1] if k > 0 else None
        after = DOCBOOK[k + 1] if k + 1 < len(DOCBOOK) else None
        up = next((page for page in DOCBOOK if page[0] == parent), None)
        declaration, meta, content_type, codec = _DOCBOOK_CHARSETS.get(name, _DOCBOOK_DEFAULT)
        m = Markup()

        def full_of(page: tuple[str, str, str, str, str]) -> str:
            return html.escape(page[2] + page[3])

        head = [f"<title>{html.escape(full)}</title>",
                '<link rel="stylesheet" type="text/css" href="stylesheet.css" />',
                '<meta name="generator" content="DocBook XSL Stylesheets V1.79.2" />']
        if meta:
            head.insert(0, f'<meta http-equiv="Content-Type" content="text/html; charset={meta}" />')
        if k:
            head.append(f'<link rel="home" href="index.html" title="{DOCBOOK_BOOK}" />')
        for rel, page in (("up", up), ("prev", before), ("next", after)):
            if page is not None:
                head.append(f'<link rel="{rel}" href="{page[0]}" title="{full_of(page)}" />')

        def nav_link(page: tuple[str, str, str, str, str] | None, key: str, text: str) -> str:
            return m.a(page[0], text, f' accesskey="{key}"') if page is not None else ""

        header = (
            '<div class="navheader"><table width="100%" summary="Navigation header">'
            f'<tr><th colspan="3" align="center">{html.escape(full)}</th></tr>'
            f'<tr><td width="20%" align="left">{nav_link(before, "p", "Prev")}\u00a0</td>'
            f'<th width="60%" align="center">{full_of(up) if up else chr(0xa0)}</th>'
            f'<td width="20%" align="right">\u00a0{nav_link(after, "n", "Next")}</td></tr>'
            '</table><hr /></div>\n')
        ident = name.rsplit(".", 1)[0].upper()
        level = 1 if element in ("book", "part") else 2
        body = [f'<div class="{element}" id="{ident}"><div class="titlepage"><div><div>'
                f'<h{level} class="title"><a id="id-{ident.lower()}"></a>{html.escape(full)}'
                f'</h{level}></div></div></div>\n']
        children = _docbook_children(name)
        if children:
            body.append('<div class="toc"><p><strong>Table of Contents</strong></p>'
                        + self._docbook_toc(m, children) + "</div>\n")
        body.append(prose(self.seed, f"docbook:{name}", paragraphs=2 if children else 3))
        if element == "sect1":
            other = DOCBOOK[(k + 3) % len(DOCBOOK)]
            number = other[2].strip().rstrip(".")
            text = (f"Section {number}" if other[1] == "sect1" else number) or other[3]
            xref = m.a(f"{other[0]}#{other[0].rsplit('.', 1)[0].upper()}", html.escape(text),
                       f' class="xref" title="{full_of(other)}"')
            body.append(f"<p>See {xref} for more.</p>\n"
                        '<div class="note"><table border="0" summary="Note"><tr>'
                        '<td rowspan="2" align="center" valign="top" width="25">'
                        '<img alt="[Note]" src="images/note.png" /></td><th align="left">Note'
                        '</th></tr><tr><td align="left" valign="top"><p>'
                        f'{html.escape(title)}.</p></td></tr></table></div>\n')
        body.append("</div>\n")
        footer_row = (
            f'<tr><td width="40%" align="left">{nav_link(before, "p", "Prev")}\u00a0</td>'
            f'<td width="20%" align="center">{nav_link(up, "u", "Up")}</td>'
            f'<td width="40%" align="right">\u00a0{nav_link(after, "n", "Next")}</td></tr>')
        home = m.a("index.html", "Home", ' accesskey="h"') if k else ""
        footer = (
            '<div class="navfooter"><hr /><table width="100%" summary="Navigation footer">'
            f'{footer_row}<tr><td width="40%" align="left" valign="top">'
            f'{full_of(before) if before else ""}\u00a0</td>'
            f'<td width="20%" align="center">{home}</td>'
            f'<td width="40%" align="right" valign="top">\u00a0'
            f'{full_of(after) if after else ""}</td></tr></table></div>')
        document = (f"{declaration}\n{_XHTML_DOCTYPE}\n"
                    '<html xmlns="http://www.w3.org/1999/xhtml"><head>' + "".join(head)
                    + '</head><body class="' + element + '">' + header + "".join(body) + footer
                    + "</body></html>\n")
        return Special(self.web.ok(i, content_type, document.encode(codec)), tuple(m.links))

    def _docbook_toc(self, m: Markup, pages: list[tuple[str, str, str, str, str]]) -> str:
        items = []
        for page in pages:
            entry = m.a(page[0], html.escape(page[2] + page[3]))
            children = _docbook_children(page[0])
            nested = f"<dd><dl>{self._docbook_toc(m, children)}</dl></dd>" if children else ""
            items.append(f'<dt><span class="{page[1]}">{entry}</span></dt>{nested}')
        return '<dl class="toc">' + "".join(items) + "</dl>"

    # --- sphinx -------------------------------------------------------------------------------

    def _sphinx(self, i: int, path: str) -> Special | None:
        if path not in SPHINX_HEADINGS:
            return None
        m = Markup()

        def rel(target: str) -> str:
            """`target` (a path under the root, maybe with a #fragment) relative to `path`."""
            page, hash_, fragment = target.partition("#")
            here = posixpath.dirname(path) or "."
            return posixpath.relpath(page, here) + hash_ + fragment

        order = ("index.html", *SPHINX_TOC)
        k = order.index(path) if path in order else None
        before = order[k - 1] if k else None
        after = order[k + 1] if k is not None and k + 1 < len(order) else None
        root = rel("index.html").removesuffix("index.html")
        assets = "".join(
            f'    <link rel="stylesheet" type="text/css" href="{root}{href}" />\n' if kind == "css"
            else f'    <script src="{root}{href}"></script>\n' for href, kind in _SPHINX_ASSETS)
        related = "".join(
            f'    <link rel="{name}" title="{html.escape(title)}" href="{rel(target)}" />\n'
            for name, title, target in (
                ("index", "Index", "genindex.html"), ("search", "Search", "search.html"),
                ("next", SPHINX_HEADINGS.get(after or "", ""), after),
                ("prev", SPHINX_HEADINGS.get(before or "", ""), before)) if target)
        heading = SPHINX_HEADINGS[path]
        anchor = heading.lower().replace("’", "-").replace("!", "").replace(" ", "-")
        body = [f'  <section id="{anchor}">\n<h1>{html.escape(heading)}'
                + m.a(f"#{anchor}", "¶", _HEADERLINK)
                + "</h1>\n", prose(self.seed, f"sphinx:{path}")]
        if path == "index.html":
            body.append(self._sphinx_toctree(m, rel, "toctree-wrapper compound"))
        elif path == "guide/index.html":
            body.append('<div class="toctree-wrapper compound"><ul>\n' + "".join(
                f'<li class="toctree-l1">{m.a(rel(p), SPHINX_HEADINGS[p], _REF)}</li>\n'
                for p in ("guide/usage.html", "guide/config.html")) + "</ul></div>\n")
        elif path == "search.html":
            body.append('<noscript><div class="admonition warning"><p>Please activate JavaScript '
                        'to enable the search functionality.</p></div></noscript>\n'
                        '<form action="" method="get"><input type="text" name="q" value="" />'
                        '<input type="submit" value="search" /></form>\n')
        xrefs = "".join(m.a(rel(target), html.escape(text), _REF) + " "
                        for target, text in _SPHINX_XREFS.get(path, ()))
        if xrefs:
            body.append(f"<p>See also: {xrefs.strip()}.</p>\n")
        if path in _SPHINX_SECTIONS:
            ident, title = _SPHINX_SECTIONS[path]
            body.append(f'<section id="{ident}">\n<h2>{html.escape(title)}'
                        + m.a(f"#{ident}", "¶", _HEADERLINK)
                        + "</h2>\n" + prose(self.seed, f"sphinx:{path}#{ident}", paragraphs=1))
            if path == "index.html":
                body.append("<ul>\n" + "".join(
                    f"<li><p>{m.a(target, _std_ref(text), _REF)}</p></li>\n"
                    for target, text in (("genindex.html", "Index"),
                                         ("search.html", "Search Page"))) + "</ul>\n")
            body.append("</section>\n")
        body.append("</section>\n")
        sidebar = ('<div class="sphinxsidebar" role="navigation" aria-label="Main">'
                   '<div class="sphinxsidebarwrapper">\n<h1 class="logo">'
                   + m.a(rel("index.html"), "Widget") + "</h1>\n<h3>Navigation</h3>\n"
                   + self._sphinx_toctree(m, rel, "current") + '<div class="relations">\n'
                   "<h3>Related Topics</h3>\n<ul>\n  <li>"
                   + m.a(rel("index.html"), "Documentation overview") + "<ul>\n" + "".join(
                       f"      <li>{label}: {m.a(rel(target), SPHINX_HEADINGS[target])}</li>\n"
                       for label, target in (("Previous", before), ("Next", after)) if target)
                   + "  </ul></li>\n</ul>\n</div>\n"
                   '<search id="searchbox" style="display: none" role="search">\n'
                   '  <h3 id="searchlabel">Quick search</h3>\n'
                   f'  <form class="search" action="{rel("search.html")}" method="get">\n'
                   '    <input type="text" name="q" aria-labelledby="searchlabel" />\n'
                   '    <input type="submit" value="Go" />\n  </form>\n</search>\n'
                   "<script>document.getElementById('searchbox').style.display = \"block\""
                   "</script>\n</div></div>\n")
        source = ""
        if path in order:
            source = ("\n      |\n      " + m.a(f"{root}_sources/{path.removesuffix('.html')}"
                                               ".rst.txt", "Page source", ' rel="nofollow"',
                                               follow=False))
        search_scripts = ""
        if path == "search.html":
            search_scripts = (f'    <script src="{root}_static/searchtools.js"></script>\n'
                              f'    <script src="{root}searchindex.js" defer="defer"></script>\n')
        document = (
            f'<!DOCTYPE html>\n\n<html lang="en" data-content_root="{root or "./"}">\n  <head>\n'
            '    <meta charset="utf-8" />\n'
            '    <meta name="viewport" content="width=device-width, initial-scale=1.0" />\n'
            f"    <title>{html.escape(_sphinx_title(path))}</title>\n{assets}{search_scripts}"
            f'{related}  </head><body>\n  <div class="document">\n'
            '    <div class="documentwrapper"><div class="bodywrapper">'
            '<div class="body" role="main">\n' + "".join(body) + "    </div></div></div>\n"
            + sidebar + '    <div class="clearer"></div>\n  </div>\n'
            '    <div class="footer">\n      &#169;2024, Widget authors.' + source
            + "\n    </div>\n  </body>\n</html>\n")
        return Special(self.web.ok(i, "text/html", document.encode()), tuple(m.links))

    def _sphinx_toctree(self, m: Markup, rel: Callable[[str], str], css: str) -> str:
        items = []
        for page in SPHINX_TOC:
            if page.startswith("guide/") and page != "guide/index.html":
                continue
            entry = m.a(rel(page), SPHINX_HEADINGS[page], _REF)
            nested = ""
            if page == "guide/index.html":
                nested = "<ul>" + "".join(
                    f'<li class="toctree-l2">{m.a(rel(sub), SPHINX_HEADINGS[sub], _REF)}</li>'
                    for sub in ("guide/usage.html", "guide/config.html")) + "</ul>"
            elif page == "intro.html":
                nested = ('<ul><li class="toctree-l2">'
                          + m.a(rel("intro.html#getting-started"), "Getting started",
                                _REF) + "</li></ul>")
            items.append(f'<li class="toctree-l1">{entry}{nested}</li>\n')
        return f'<div class="{css}"><ul>\n' + "".join(items) + "</ul></div>\n"

    # --- cms ----------------------------------------------------------------------------------

    def _cms_document(self, m: Markup, title: str, main: Callable[[Markup], str], key: str,
                      css: str = "page") -> str:
        """A page of the CMS theme: header with the site title, About and Log in, then what
        `main` writes (called after the header, so `m` has the links in document order)."""
        header = (
            '<!DOCTYPE html>\n<html lang="en-US">\n<head>\n'
            '<meta charset="UTF-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n"
            "<link rel='stylesheet' id='plain-style-css' "
            "href='/wp-content/themes/plain/style.css?ver=6.4.2' media='all' />\n"
            '<link rel="alternate" type="application/rss+xml" title="Widget News &raquo; Feed" '
            'href="/?feed=rss2" />\n'
            '<script src="/wp-includes/js/jquery/jquery.min.js?ver=3.7.1" id="jquery-core-js">'
            "</script>\n</head>\n"
            f'<body class="{css}">\n<header class="site-header"><p class="site-title">'
            + m.a("/", html.escape(CMS_SITE), ' rel="home"') + "</p>\n"
            '<nav class="main-navigation"><ul><li>' + m.a("/?p=12", "About") + "</li><li>"
            + m.a(LOGIN, "Log in") + "</li></ul></nav></header>\n")
        return (
            header + '<main id="main" class="site-main">\n' + main(m)
            + prose(self.seed, f"cms:{key}", paragraphs=1, words=30)
            + '</main>\n<footer class="site-footer"><p>Proudly powered by a CMS.</p></footer>\n'
            "</body>\n</html>\n")

    def _cms(self, i: int, key: str, title: str, main: str = "",
             extra: Callable[[Markup], str] | None = None) -> Special:
        def write(m: Markup) -> str:
            heading = f'<h1 class="entry-title">{html.escape(title)}</h1>\n'
            return heading + main + (extra(m) if extra is not None else "")

        m = Markup()
        document = self._cms_document(m, f"{title} – {CMS_SITE}", write, key)
        return Special(self.web.ok(i, "text/html; charset=UTF-8", document.encode()),
                       tuple(m.links))

    def _cms_home(self, i: int) -> Special:
        def main(m: Markup) -> str:
            article = ('<article class="post"><h2 class="entry-title">'
                       + m.a("index.php?/blog/post-1", "First post", ' rel="bookmark"')
                       + "</h2>\n" + prose(self.seed, "cms:post-1:excerpt", paragraphs=1)
                       + "</article>\n")
            items = [m.a("/p?print", "Print this page"), m.a("/list?color=red", "Red widgets"),
                     m.a(SORTED_LIST, "Red widgets, cheapest first"),
                     m.a(THUMB, '<img src="/wp-content/uploads/widget-200x100.png" alt="">'
                                "Widget thumbnail"),
                     m.a("/enc/cp1252.html", "Western European"),
                     m.a("/enc/sjis.html", "日本語"), m.a("/enc/utf16.html", "UTF-16"),
                     m.a("/malformed.html", "Broken links"),
                     m.a("/go/bad-redirect", "Moved somewhere"),
                     m.a(EMPTY, "Nothing here"), m.a(BARE, "Only markup")]
            return article + "<ul>\n" + "".join(f"<li>{item}</li>\n" for item in items) + "</ul>\n"

        m = Markup()
        document = self._cms_document(m, f"{CMS_SITE} – Just another site", main, "home",
                                      css="home blog")
        return Special(self.web.ok(i, "text/html; charset=UTF-8", document.encode()),
                       tuple(m.links))

    def _root_query(self, i: int, query: str) -> Special | None:
        """/?p=12 is the About page, /?q=user/login/ (any spelling) the login form."""
        if query == "p=12":
            return self._cms(i, "/?p=12", "About us", main="<p>We make widgets.</p>\n")
        if self.forbidden("cms", f"/?{query}"):
            return self._cms(i, LOGIN, "Log in", main=(
                '<form method="post" action="/?q=user/login/"><input name="name">'
                '<input name="pass" type="password"></form>\n'))
        return None  # the home page

    def _post(self, i: int, number: str) -> Special:
        n = int(number)

        def extra(m: Markup) -> str:
            if n == 1:  # a query-only relative reference: resolved against /index.php
                return f'<nav class="post-navigation">{m.a("?/blog/post-2", "Next post")}</nav>\n'
            return f'<nav class="post-navigation">{m.a("index.php?/blog/post-1", "Previous post")}</nav>\n'

        title = ("First post", "Second post")[n - 1]
        return self._cms(i, f"post-{n}", title, extra=extra)

    def _list(self, i: int, query: str) -> Special | Response:
        pairs = dict(parse_qsl(query, keep_blank_values=True))
        if pairs.get("color") != "red" or set(pairs) - {"color", "sort"}:
            return error_response(404)
        if "sort" in pairs:
            return self._cms(i, SORTED_LIST, "Red widgets by price", main="<p>Cheapest first.</p>\n")
        return self._cms(i, "/list?color=red", "Red widgets",
                         extra=lambda m: f"<p>{m.a('list?sort=price&color=red', 'Sort by price')}</p>\n")

    def _thumb(self, i: int, query: str) -> Special | Response:
        if query != THUMB_QUERY:  # the signature covers the query as written
            return error_response(403)
        return self._cms(i, THUMB, "Thumbnail 200×100", main="<p>A signed thumbnail.</p>\n")

    def _find(self, i: int, query: str) -> Special | Response:
        if query not in FIND_QUERIES:
            return error_response(404)
        return self._cms(i, f"find:{query}", f"Search: {FIND_QUERIES[query]}",
                         main="<p>One result.</p>\n")

    def _cms_leaf(self, i: int, path: str) -> Special:
        return self._cms(i, path, CMS_LEAVES[path], main="<p>A page of its own.</p>\n")

    def _encoded(self, i: int, name: str) -> Special:
        path = f"/enc/{name}.html"
        content_type, codec, bom, meta, title, links = ENCODED_PAGES[path]
        m = Markup()
        items = "".join(f"<li>{m.a(href, html.escape(href), target=target)}</li>\n"
                        for href, target in links)
        # the whole page in one encoding: no theme chrome, whose entities would not care
        lang = {"cp1252": "fr", "cp932": "ja", "utf-16-le": "de"}[codec]
        document = (f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>{meta}\n'
                    f"<title>{html.escape(title)}</title>\n</head>\n<body>\n"
                    f"<h1>{html.escape(title)}</h1>\n<p>{html.escape(title)}: "
                    + {"cp1252": "Crème brûlée, 5 € — «déjà vu».", "cp932": "東京の天気は晴れ。",
                       "utf-16-le": "Grüße aus Köln, ½ ≠ ¼."}[codec]
                    + "</p>\n" + prose(self.seed, f"cms:{path}", paragraphs=1)
                    + f"<ul>\n{items}</ul>\n</body>\n</html>\n")
        return Special(self.web.ok(i, content_type, bom + document.encode(codec)), tuple(m.links))

    def _malformed(self, i: int) -> Special:
        def extra(m: Markup) -> str:
            bad = [m.a(href, f"Broken {k}", follow=False) for k, href in enumerate(MALFORMED_HREFS)]
            good = [m.a(SPACED_HREF, "Spaces and tabs", target=SPACED_TARGET),
                    m.a("/after-malformed.html", "After the broken links")]
            return "<ul>\n" + "".join(f"<li>{a}</li>\n" for a in bad + good) + "</ul>\n"

        return self._cms(i, "/malformed.html", "Links that go nowhere", extra=extra)

    def _empty(self, i: int) -> Special:
        return Special(self.web.ok(i, "text/html", b""))

    def _bare(self, i: int) -> Special:
        return Special(self.web.ok(i, "text/html", BARE_HTML))


def _docbook_children(name: str) -> list[tuple[str, str, str, str, str]]:
    return [page for page in DOCBOOK if page[4] == name]


def _sphinx_title(path: str) -> str:
    return f"{SPHINX_HEADINGS[path]} — {SPHINX_PROJECT}"


def _std_ref(text: str) -> str:
    return f'<span class="std std-ref">{text}</span>'



