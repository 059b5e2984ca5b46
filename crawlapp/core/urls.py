"""The two forms of a URL, its politeness key, its hash and its shard. Pure: no I/O.

- The *request URL* (`request_url`): a link resolved against its page's base and serialized
  per the WHATWG URL Standard (ada-url, the parser browsers' behaviour is specified by),
  fragment dropped, nothing else rewritten. It is what is fetched, what robots.txt is matched
  against, what redirects resolve against, and what is stored and exported.
- The *dedup key* (`dedup_key`): the request URL normalised further (tracking and session
  parameters dropped, query sorted, case and escapes normalised by w3lib), used only to decide
  "seen before?". Two links with one key are one row, fetched once under the request URL of
  the first found. `url_hash` hashes the key.
- The *politeness key* (`host_of`): host (UTS #46, IPv4 in any numeric form as a dotted quad:
  the WHATWG host parser does both) and port when it is not the default.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from string import hexdigits
from urllib.parse import unquote_plus, urlsplit, urlunsplit

import ada_url
import mmh3
from w3lib.url import canonicalize_url

from crawlapp.core.errors import InputError

ALLOWED_SCHEMES = frozenset({"http", "https"})
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# The authority of an http(s) URL as the URL serializer writes it: lower-case scheme, no
# whitespace, no IPv6 brackets (urlsplit checks those) and nothing urlsplit would strip.
_SERIALIZED_AUTHORITY = re.compile(r"(https?)://([^/?#\[\]\t\r\n]*)(?=[/?#]|\Z)")
TRACKING_PARAMS = frozenset({
    "fbclid", "gclid", "msclkid", "dclid", "yclid", "mc_eid", "mc_cid", "_ga", "igshid",
    "sid", "sessionid", "session_id", "phpsessid", "jsessionid", "aspsessionid", "cfid", "cftoken",
})
REASONS = {
    "empty": "the URL is empty",
    "malformed": "not a valid URL (WHATWG URL Standard)",
    "scheme_missing": "not an absolute URL: no scheme such as http://",
    "too_long": "longer than CRAWL_MAX_URL_LENGTH",
}


class URLRejected(InputError):
    """A URL the crawler will not crawl; `reason` is a short, countable code."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"{reason}: {url[:200]!r}")
        self.reason = reason
        self.url = url

    @property
    def sentence(self) -> str:
        """The reason in words, for people."""
        return reason_sentence(self.reason)


def reason_sentence(reason: str) -> str:
    """A rejection's reason code in words."""
    if reason in REASONS:
        return REASONS[reason]
    if reason.startswith("scheme_"):
        return f"only http and https URLs are crawled, not {reason[7:]}:"
    return reason


def _encode_query(href: str, encoding: str) -> str:
    """`href` with the non-ASCII characters of its query percent-encoded in the page's
    `encoding`, as the WHATWG URL parser does for a document in a legacy encoding (a character
    the encoding lacks becomes an HTML numeric reference, "%26%23N%3B")."""
    head, hash_, fragment = href.partition("#")
    path, mark, query = head.partition("?")
    if not mark or query.isascii():
        return href
    out = []
    for char in query:
        if char.isascii():
            out.append(char)
            continue
        try:
            out.append("".join(f"%{b:02X}" for b in char.encode(encoding)))
        except UnicodeEncodeError:
            out.append(f"%26%23{ord(char)}%3B")
    return f"{path}?{''.join(out)}{hash_}{fragment}"


def request_url(href: str, base: str | None = None, *, max_length: int = 2048,
                encoding: str = "utf-8") -> str:
    """The URL to fetch for `href` found on a page whose base URL is `base` and whose
    encoding (for link queries: UTF-8 for UTF-8 and UTF-16 pages) is `encoding`: resolved and
    serialized per the WHATWG URL Standard, fragment dropped. Raises URLRejected."""
    if not base and not href.strip():
        raise URLRejected("empty", href)
    if encoding != "utf-8":
        try:
            href = _encode_query(href, encoding)
        except LookupError:
            pass  # not a codec here: UTF-8, like the parser's own fallback
    try:  # the serialized URL itself (a URL object and its attributes cost twice as much)
        serialized = ada_url.join_url(base, href) if base else ada_url.normalize_url(href)
    except ValueError:
        reason = "malformed" if base or _SCHEME.match(href.strip()) else "scheme_missing"
        raise URLRejected(reason, href) from None
    scheme = serialized.partition(":")[0]  # a serialized URL starts with its scheme and ":"
    if scheme not in ALLOWED_SCHEMES:
        raise URLRejected(f"scheme_{scheme}"[:32], href)
    url = serialized.partition("#")[0]  # a serialized URL has "#" only before its fragment
    if len(url) > max_length:
        raise URLRejected("too_long", href)
    return url


def request_urls(hrefs: Iterable[str], base: str | None = None, *, max_length: int = 2048
                 ) -> tuple[list[str], list[URLRejected]]:
    """The request URL of each href (in order, each once) and the rejections."""
    accepted: dict[str, None] = {}
    rejected: list[URLRejected] = []
    for href in hrefs:
        try:
            accepted.setdefault(request_url(href, base, max_length=max_length))
        except URLRejected as exc:
            rejected.append(exc)
    return list(accepted), rejected


# A URL is read again by several stages and batches (a host's links repeat on its pages): its
# parts, dedup key and hash are remembered per process, the most recent ones.
MEMO = 1 << 14


@lru_cache(maxsize=MEMO)
def _netloc(url: str) -> tuple[str, str, str]:
    """(scheme, host without trailing dots, ":port" or "") of a serialized URL. A request
    URL's authority is read with one regular expression (a quarter of urlsplit's time: the
    links stage reads it several times per link); any other URL goes through urlsplit."""
    serialized = _SERIALIZED_AUTHORITY.match(url)
    if serialized is not None and serialized.group(2).isascii():
        scheme, netloc = serialized.groups()
    else:
        parts = urlsplit(url)
        scheme, netloc = parts.scheme, parts.netloc
    hostport = netloc.rpartition("@")[2]
    split_at = hostport.rfind(":")
    if split_at > hostport.rfind("]"):
        host, port = hostport[:split_at], hostport[split_at:]
    else:
        host, port = hostport, ""
    stripped = host.rstrip(".")
    # "2.." is a domain, "2" an IPv4 address (the WHATWG host parser's "ends in a number"):
    # trailing dots go only where the name stays a name
    return scheme, stripped if stripped and not _ends_in_number(stripped) else host, port


def _ends_in_number(host: str) -> bool:
    last = host.rpartition(".")[2].lower()
    return last.isdigit() or (last.startswith("0x") and all(c in hexdigits for c in last[2:]))


def host_of(url: str) -> str:
    """The politeness key of a request URL: its host, with the port when not default."""
    _, host, port = _netloc(url)
    return host + port


def origin_of(url: str) -> str:
    """scheme://host[:port], the scope of a robots.txt file."""
    scheme, host, port = _netloc(url)
    return f"{scheme}://{host}{port}"


def _is_tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in TRACKING_PARAMS


def _drop_path_params(path: str) -> str:
    """Drop ";jsessionid=..."-style session parameters from a path."""
    if ";" not in path:
        return path
    kept = []
    for segment in path.split("/"):
        head, *params = segment.split(";")
        params = [p for p in params if not ("=" in p and _is_tracking(p.split("=", 1)[0]))]
        kept.append(";".join([head, *params]))
    return "/".join(kept)


# A request URL that w3lib's canonicalisation would give back as it is, but for the order of
# its query's pairs: a lower-case host of plain labels (no IDNA "xn--" label to re-encode), a
# path with no "%", ";", "|" or dot segment, a query of unreserved characters, "=" (one a
# pair at most) and "&".
# Most links are such; their key is built here in a tenth of w3lib's time.
_PLAIN_URL = re.compile(r"https?://[a-z0-9.-]+(?::[1-9][0-9]{0,4})?"
                        r"(/[A-Za-z0-9\-._~:/@!$&'()*+,=]*)?(?:\?([A-Za-z0-9\-._~=&]*))?")
_PLAIN_HOST = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*")


def _plain_dedup_key(url: str) -> str | None:
    """The dedup key of a URL that `_PLAIN_URL` matches (None for any other): what
    `_canonical_dedup_key` gives, without its parsing and re-encoding."""
    plain = _PLAIN_URL.fullmatch(url)
    if plain is None:
        return None
    scheme, host, port = _netloc(url)
    path, query = plain.group(1) or "/", plain.group(2)
    if (not _PLAIN_HOST.fullmatch(host) or "xn--" in host or "/." in path
            or (port and int(port[1:]) > 65535)):
        return None
    if query:
        pairs = [part.partition("=")[::2] for part in query.split("&") if part]
        if any("=" in value for _, value in pairs):  # w3lib escapes a value's "="
            return None
        query = "&".join(f"{name}={value}" for name, value in sorted(pairs)
                         if not _is_tracking(name))
    return f"{scheme}://{host}{port}{path}?{query}" if query else f"{scheme}://{host}{port}{path}"


def _canonical_dedup_key(url: str) -> str:
    """The dedup key of any request URL, by w3lib's canonicalize_url."""
    scheme, host, port = _netloc(url)
    parts = urlsplit(url)
    query = "&".join(part for part in parts.query.split("&")
                     if part and not _is_tracking(unquote_plus(part.split("=", 1)[0])))
    rebuilt = urlunsplit((scheme, host + port, _drop_path_params(parts.path) or "/", query, ""))
    try:
        return canonicalize_url(rebuilt)
    except (ValueError, UnicodeError):
        return rebuilt


@lru_cache(maxsize=1 << 16)
def dedup_key(url: str) -> str:
    """The dedup key of a request URL: no user info, fragment, tracking or session
    parameters; query sorted; case and percent-escapes normalised (w3lib)."""
    plain = _plain_dedup_key(url)
    return _canonical_dedup_key(url) if plain is None else plain


@lru_cache(maxsize=MEMO)
def url_hash(url: str) -> str:
    """The 128-bit MurmurHash3 of a URL's dedup key, as 32 hex characters: the row's id."""
    return mmh3.hash_bytes(dedup_key(url).encode("utf-8")).hex()


def shard_of(host: str, shards: int) -> int:
    """The fetch queue of a host: mmh3(host) % shards."""
    return mmh3.hash(host.encode("utf-8"), signed=False) % shards
