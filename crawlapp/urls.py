"""The canonical form of a URL, its hash, its host and its shard. Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote_plus, urljoin, urlsplit, urlunsplit

import mmh3
from w3lib.url import canonicalize_url

ALLOWED_SCHEMES = frozenset({"http", "https"})
_PATH_PARAM = re.compile(r";([^/;=?#]+)=[^/;?#]*")  # ";jsessionid=..." inside a path
_BAD_HOST = re.compile(r"[\s\x00-\x1f\x7f<>\"'`{}|\\^%/?#@]")
DEFAULT_PORTS = {"http": 80, "https": 443}
TRACKING_PARAMS = frozenset({
    "fbclid", "gclid", "msclkid", "dclid", "yclid", "mc_eid", "mc_cid", "_ga", "igshid",
    "sid", "sessionid", "session_id", "phpsessid", "jsessionid", "aspsessionid", "cfid", "cftoken",
})


class URLRejected(ValueError):
    """A URL the crawler will not crawl; `reason` is a short, countable code."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"{reason}: {url[:200]!r}")
        self.reason = reason
        self.url = url


def _is_tracking(name: str, extra: frozenset[str]) -> bool:
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in TRACKING_PARAMS or lowered in extra


def canonicalize(url: str, base: str | None = None, *, max_length: int = 2048,
                 drop_params: frozenset[str] = frozenset()) -> str:
    """Return the canonical form of `url` (resolved against `base`), or raise URLRejected.

    Lower-case scheme and host, IDNA host, no default port, no fragment, no user info,
    dot segments resolved, percent-encoding normalised, tracking and session parameters
    dropped (from the query, and `;jsessionid=...`-style from the path) and the query sorted.
    """
    raw = url.strip()
    if not raw:
        raise URLRejected("empty", url)
    if base is not None:
        raw = _resolve(base, raw)
    try:
        parts = urlsplit(raw)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError:
        raise URLRejected("malformed", url) from None
    if port == 0:
        raise URLRejected("malformed", url)
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise URLRejected(f"scheme_{scheme or 'missing'}"[:32], url)
    if not host:
        raise URLRejected("no_host", url)
    if _BAD_HOST.search(host):
        raise URLRejected("bad_host", url)
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    query = "&".join(part for part in parts.query.split("&")
                     if part and not _is_tracking(unquote_plus(part.split("=", 1)[0]),
                                                  drop_params))
    path = _PATH_PARAM.sub(lambda m: "" if _is_tracking(m.group(1), drop_params) else m.group(0),
                           parts.path)
    rebuilt = urlunsplit((scheme, netloc, path or "/", query, ""))
    try:
        canonical = canonicalize_url(rebuilt)
    except (ValueError, UnicodeError):
        raise URLRejected("malformed", url) from None
    if not urlsplit(canonical).netloc.isascii():
        raise URLRejected("bad_host", url)  # IDNA could not encode it
    if len(canonical) > max_length:
        raise URLRejected("too_long", url)
    return canonical


def _resolve(base: str, ref: str) -> str:
    """urljoin, except that a reference of only "?" drops the base's query (RFC 3986 5.2.2)."""
    if ref.startswith("?") and len(ref.split("#", 1)[0]) == 1:
        return urlunsplit(urlsplit(base)._replace(query="", fragment=""))
    return urljoin(base, ref)


def host_of(url: str) -> str:
    """The politeness key of a canonical URL: its host, with the port when not default."""
    return urlsplit(url).netloc


def origin_of(url: str) -> str:
    """scheme://host[:port], the scope of a robots.txt file."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def url_hash(url: str) -> str:
    """A 128-bit MurmurHash3 of the canonical URL, as 32 hex characters."""
    return mmh3.hash_bytes(url.encode("utf-8")).hex()


def shard_of(host: str, shards: int) -> int:
    """The fetch queue of a host: mmh3(host) % shards."""
    return mmh3.hash(host.encode("utf-8"), signed=False) % shards


def canonicalize_many(urls: Iterable[str], base: str | None = None, **kwargs: object
                      ) -> tuple[list[str], list[URLRejected]]:
    """Canonicalize each URL; return the accepted ones (in order, deduplicated) and rejections."""
    seen: set[str] = set()
    accepted: list[str] = []
    rejected: list[URLRejected] = []
    for url in urls:
        try:
            canonical = canonicalize(url, base, **kwargs)  # type: ignore[arg-type]
        except URLRejected as exc:
            rejected.append(exc)
            continue
        if canonical not in seen:
            seen.add(canonical)
            accepted.append(canonical)
    return accepted, rejected
