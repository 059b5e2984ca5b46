r"""Crawl scope: which found URLs a crawl follows. Pure.

Each seed adds one rule (`crawlctl seed add --scope`, default CRAWL_SCOPE):

- `any`: every URL;
- `host`: URLs on the seed's host name (any scheme or port);
- `domain`: URLs on the seed's registrable domain (Public Suffix List) or any of its subdomains;
- `prefix`: URLs under the seed's scheme://host[:port]/path up to its last `/`
  (wget --no-parent).

The crawl's scope is the union of its seeds' rules plus CRAWL_SCOPE_INCLUDE, minus
CRAWL_SCOPE_EXCLUDE (an exclude wins). A pattern is a SURT prefix as Heritrix writes it
(`http://(com,example,)/docs` for example.com's /docs, `http://(com,example,` for
example.com and its subdomains; a plain URL is turned into its SURT), or a regular expression
`re:...` searched in the request URL (Nutch style; it ends at whitespace: write `\s`).
A URL out of scope may still be fetched when at most CRAWL_SCOPE_HOPS off-scope links in a
row led to it.

SURT (Sort-friendly URI Reordering Transform) form used here: `scheme://(` the host's labels
reversed, each followed by a comma, then `:port` when the URL has one, `)` and the path and
query: `https://docs.example.com:8443/a?b` -> `https://(com,example,docs,:8443)/a?b`. An IP
address is not reversed: `http://(127.0.0.1,:8080)/`. The host is lowercased and its
trailing dot dropped; an international name is compared in its ASCII (xn--) form, as request
URLs carry it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

SCOPES = ("any", "host", "domain", "prefix")
RE_PREFIX = "re:"
# Reasons a link is refused for its scope (counted as refused:<reason>).
OUT_OF_SCOPE = "out_of_scope"
EXCLUDED = "excluded"



@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    """The list, read on first use (40 ms)."""
    return PublicSuffixList()


def hostname(host: str) -> str:
    """A host (`host_of`'s politeness key, with or without its port) as the scope compares
    it: lowercased, without its port, brackets or trailing dot."""
    host = host.lower()
    if host.startswith("["):
        return host[1:host.find("]")]
    return host.rpartition(":")[0].rstrip(".") if ":" in host else host.rstrip(".")


@lru_cache(maxsize=65536)
def is_address(host: str) -> bool:
    """Whether a host name is an IP address (without brackets or port); remembered, as the
    fetch stage asks it of every request."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=65536)
def registrable_domain(host: str) -> str:
    """The registrable domain of a host by the Public Suffix List (`www.example.co.uk` ->
    `example.co.uk`, `a.b.github.io` -> `b.github.io`). An IP address, a single label such
    as `localhost`, and a public suffix itself (`co.uk`) are their own domain."""
    name = hostname(host)
    if "." not in name or is_address(name):
        return name
    return _psl().privatesuffix(name) or name


def surt(url: str) -> str:
    """The SURT form of an http(s) URL (module docstring); the fragment is dropped."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc.rpartition("@")[2]
    port = ""
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        port = rest[1:]
    else:
        host, _, port = netloc.partition(":")
    host = host.lower().rstrip(".")
    labels = host if is_address(host) else ",".join(reversed(host.split(".")))
    path = parts.path or "/"
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://({labels},{':' + port if port else ''}){path}{query}"


def _surt_prefix(pattern: str) -> str:
    """A SURT prefix as written (`http://(com,example,)/docs`, host part lowercased), or the
    SURT of a plain URL."""
    if "://(" not in pattern:
        return surt(pattern)
    head, closed, tail = pattern.partition(")")
    return head.lower() + closed + tail


def _split(raw: str) -> list[str]:
    """Patterns separated by whitespace or commas; a comma inside a SURT's parentheses, or
    after one left open (`http://(com,example,` for example.com and its subdomains), is part
    of the pattern, and a `re:` pattern ends at whitespace only."""
    out = []
    for word in raw.split():
        token, depth = "", 0
        for char in word:
            if char == "," and depth == 0 and not token.startswith(RE_PREFIX):
                out.append(token)
                token = ""
                continue
            depth += (char == "(") - (char == ")")
            token += char
        out.append(token)
    return [token for token in out if token]


@dataclass(frozen=True)
class Patterns:
    """CRAWL_SCOPE_INCLUDE or CRAWL_SCOPE_EXCLUDE: SURT prefixes and regular expressions."""

    surts: tuple[str, ...] = ()
    regex: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, raw: str) -> Patterns:
        """Comma- or whitespace-separated patterns; ValueError names a bad one."""
        surts, exprs = [], []
        for part in _split(raw):
            if not part:
                continue
            if part.startswith(RE_PREFIX):
                try:
                    re.compile(part[len(RE_PREFIX):])
                except re.error as exc:
                    raise ValueError(f"{part!r} is not a regular expression: {exc}") from None
                exprs.append(part[len(RE_PREFIX):])
            elif re.match(r"https?://", part, re.IGNORECASE):
                surts.append(_surt_prefix(part))
            else:
                raise ValueError(f"{part!r} is neither a SURT prefix such as "
                                 "http://(com,example,)/docs, a URL, nor re:REGEX")
        return cls(tuple(surts), re.compile("|".join(f"(?:{e})" for e in exprs)) if exprs
                   else None)

    def __bool__(self) -> bool:
        return bool(self.surts) or self.regex is not None

    def match(self, url: str) -> bool:
        if self.regex is not None and self.regex.search(url):
            return True
        return bool(self.surts) and surt(url).startswith(self.surts)


def seed_rule(url: str, scope: str) -> tuple[str, str] | None:
    """The (kind, value) rule a seed adds for `scope`: ('host', name), ('domain', domain),
    ('prefix', URL up to its last '/'); None for 'any'."""
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r}: expected one of {', '.join(SCOPES)}")
    parts = urlsplit(url)
    if scope == "host":
        return "host", hostname(parts.netloc.rpartition("@")[2])
    if scope == "domain":
        return "domain", registrable_domain(parts.netloc.rpartition("@")[2])
    if scope == "prefix":
        path = parts.path or "/"
        return "prefix", f"{parts.scheme}://{parts.netloc}{path[:path.rfind('/') + 1]}"
    return None


@dataclass(frozen=True)
class ScopeRules:
    """The seeds' rules that matter for one batch's link hosts (as adapters/redis/scope.py
    reads them): everything in scope (`any`: a seed had scope any, or no seed has a rule),
    host names, registrable domains, and URL prefixes by host name."""

    any: bool = True
    hosts: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()
    prefixes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def covers(self, url: str, host: str) -> bool:
        """Whether a seed's rule covers `url` (whose politeness key is `host`)."""
        if self.any:
            return True
        name = hostname(host)
        if name in self.hosts or registrable_domain(name) in self.domains:
            return True
        prefixes = self.prefixes.get(name)
        return prefixes is not None and url.startswith(prefixes)


@dataclass(frozen=True)
class Scope:
    """The whole scope of a batch: the seeds' rules, the include and exclude patterns, and
    how many off-scope hops in a row are allowed."""

    rules: ScopeRules = ScopeRules()
    include: Patterns = Patterns()
    exclude: Patterns = Patterns()
    max_hops: int = 0

    def check(self, url: str, host: str, from_hops: int) -> tuple[str | None, int]:
        """(refusal reason or None, hops of `url`) for a link found on a page `from_hops`
        off-scope hops away: in scope -> 0 hops; off scope -> one more, refused past the
        limit; an exclude pattern refuses whatever the rest says."""
        if self.exclude and self.exclude.match(url):
            return EXCLUDED, 0
        if self.rules.covers(url, host) or (self.include and self.include.match(url)):
            return None, 0
        hops = from_hops + 1
        return (OUT_OF_SCOPE if hops > self.max_hops else None), hops


UNSCOPED = Scope()  # every URL in scope, no pattern

