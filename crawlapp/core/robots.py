"""robots.txt decisions per RFC 9309. Pure: the fetch happens elsewhere.

The parser and matcher are our own rather than Protego's: Protego picks the group by prefix
(a `User-agent: crawl` group applied to `crawlapp`), lets any line between two User-agent
lines split a group, loses the first group after a partial UTF-8 BOM, and normalises paths
differently from RFC 9309 2.2.2 -- exactly the parts that decide what we may fetch, while
what would remain of it (a wildcard matcher) is a few lines.

- Lines end with \\n, \\r\\n or \\r; `#` starts a comment; keys are case-insensitive and
  the misspellings Google's reference parser accepts are accepted, as is a missing colon
  when the line is exactly a key and a value separated by whitespace.
- A group is one or more User-agent lines (other non-rule lines between them do not split
  it) and the rules after them; an Allow/Disallow line followed by a User-agent line starts
  the next group. Groups are chosen by the whole product token, case-insensitively; all the
  groups naming the token are merged, else all the `*` groups, else everything is allowed.
- Rules and URL paths are compared after the same RFC 9309 2.2.2 normalisation; `*` matches
  any run of characters and a final `$` anchors the end; the longest pattern wins, Allow on a
  tie. Matching is a greedy left-to-right search of the pieces between the `*`s, never a
  backtracking regex: `/*a*a*a*a*b` against a long path would stall a worker in `re`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from urllib.parse import urljoin, urlsplit

from cachetools import LRUCache, cached

MAX_ROBOTS_BYTES = 500 * 1024
# A process keeps the files it parsed, and the rules each product token gets of them, by
# the bytes they hold (an estimate: `_Robots.size`, `_Choice.size`), not by their count: a
# file of 500 KiB of one-character rules parses to some 10 MB.
PARSED_BYTES = 16 * 1024 * 1024
CHOSEN_BYTES = 16 * 1024 * 1024
MAX_REDIRECTS = 5

_BOM = b"\xef\xbb\xbf"
_LINES = re.compile(r"\r\n|\r|\n")
_SPACE = " \t\v\f"
_TOKEN = re.compile(r"[A-Za-z_-]*")

_USER_AGENT, _ALLOW, _DISALLOW, _CRAWL_DELAY, _SITEMAP = range(5)
_KEYS = {
    "user-agent": _USER_AGENT, "useragent": _USER_AGENT, "user agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW, "dissallow": _DISALLOW, "dissalow": _DISALLOW, "disalow": _DISALLOW,
    "diasllow": _DISALLOW, "disallaw": _DISALLOW,
    "crawl-delay": _CRAWL_DELAY, "crawldelay": _CRAWL_DELAY, "crawl delay": _CRAWL_DELAY,
    "sitemap": _SITEMAP, "site-map": _SITEMAP,
}
_DELAY = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")

# RFC 3986: unreserved characters are compared decoded; reserved ones are kept as they are
# (literal or %XX), except `*` and `$`, which robots.txt gives a meaning: literal in a URL
# they are encoded so that a rule can name them as %2A and %24 (RFC 9309 2.2.3).
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_LITERAL = _UNRESERVED | frozenset(b":/?#[]@!&'()+,;=")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_PLAIN = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=]*")  # already in normal form
REFUSAL = "robots: "  # how a URL's last_error that robots.txt refuses begins (`refusal`)


@dataclass(frozen=True)
class RobotsDecision:
    """What robots.txt says of one URL for one crawler, and why."""

    allowed: bool
    group: str | None        # the User-agent value(s) of the group applied, ", "-joined
    rule: str | None         # "Allow: /x" / "Disallow: /y" that decided; None: no rule matched
    crawl_delay: float | None


@dataclass(frozen=True)
class RobotsPolicy:
    """What one origin's robots.txt answer means for the crawler.

    `status` is the HTTP status of the robots.txt fetch, or 0 when it could not be fetched
    (timeout, connection error): then, like a 5xx, everything is disallowed for now.
    A 3xx is a redirect still being followed: `body` is then "hops<TAB>next URL", and
    nothing is fetched from the origin until the chain ends.
    `user_agent` arguments may be a product token or a whole User-Agent string.
    """

    status: int
    body: str = ""

    @cached_property
    def _digest(self) -> bytes:
        """What the parse caches know the body by (rather than by the body itself)."""
        return hashlib.blake2b(self.body.encode("utf-8", "surrogatepass"),
                               digest_size=16).digest()

    @property
    def mode(self) -> str:
        """'rules' for a 2xx, 'allow_all' for a 4xx, 'redirect' while following a 3xx,
        'disallow_all' for a 5xx or no answer."""
        if 200 <= self.status < 300:
            return "rules"
        if 300 <= self.status < 400:
            return "redirect"
        if 400 <= self.status < 500:
            return "allow_all"
        return "disallow_all"

    @property
    def redirect(self) -> tuple[int, str]:
        """(hops so far, URL to fetch next) of a redirect being followed."""
        hops, url = self.body.split("\t", 1)
        return int(hops), url

    def decide(self, url: str, user_agent: str) -> RobotsDecision:
        """Whether `url` (as requested: percent-encoded, no fragment) may be fetched."""
        mode = self.mode
        if mode != "rules":
            return RobotsDecision(mode == "allow_all", None, None, None)
        choice = _choose(self._digest, self.body, _product_token(user_agent))
        path = _normalise(_request_path(url))
        if path.partition("?")[0] == "/robots.txt":  # always allowed (RFC 9309 2.2.2)
            return RobotsDecision(True, choice.group, None, choice.delay)
        for rule in choice.rules:
            if rule.matches(path):
                return RobotsDecision(rule.allow, choice.group, rule.text, choice.delay)
        return RobotsDecision(True, choice.group, None, choice.delay)

    def allowed(self, url: str, user_agent: str) -> bool:
        return self.decide(url, user_agent).allowed

    def refusal(self, url: str, user_agent: str) -> str:
        """A URL's last_error when this file refuses it: REFUSAL, then `blocking_rule`."""
        return REFUSAL + self.blocking_rule(url, user_agent)

    def blocking_rule(self, url: str, user_agent: str) -> str:
        """Why `url` is not allowed, for the record: the rule of the group that matched
        ("Disallow: /private/"), or the file's status when it allows nothing."""
        if self.mode != "rules":
            return f"robots.txt {self.status or 'unreachable'}: nothing allowed"
        decision = self.decide(url, user_agent)
        return decision.rule or ("Allow" if decision.allowed else "Disallow")

    def crawl_delay(self, user_agent: str) -> float | None:
        if self.mode != "rules":
            return None
        return _choose(self._digest, self.body, _product_token(user_agent)).delay

    def sitemaps(self) -> list[str]:
        return list(_parse(self._digest, self.body).sitemaps) if self.mode == "rules" else []


def robots_url(origin: str, policy: RobotsPolicy | None) -> str:
    """The URL to fetch for an origin's robots.txt: the file, or the next hop of a redirect."""
    if policy is not None and policy.mode == "redirect":
        return policy.redirect[1]
    return origin + "/robots.txt"


def robots_answer(requested: str, status: int | None, error: str | None, body: bytes,
                  location: str | None, hops: int) -> RobotsPolicy:
    """The policy a robots.txt response gives. Redirects are followed up to 5 hops on the
    same host name; past that, or to another host, the file counts as unavailable (4xx:
    allow all), as RFC 9309 allows."""
    if error or status is None:
        return RobotsPolicy(0)
    if 300 <= status < 400:
        target = urljoin(requested, location.strip()) if location else ""
        same_host = urlsplit(target).hostname == urlsplit(requested).hostname
        if target.startswith(("http://", "https://")) and same_host and hops < MAX_REDIRECTS:
            return RobotsPolicy(status, f"{hops + 1}\t{target}")
        return RobotsPolicy(404)
    return RobotsPolicy(status, decode_robots(body) if 200 <= status < 300 else "")


def decode_robots(raw: bytes) -> str:
    """The text to parse: the first 500 KiB, a whole or partial UTF-8 BOM skipped, UTF-8 with
    bad bytes replaced."""
    raw = raw[:MAX_ROBOTS_BYTES]
    for bom in (_BOM, _BOM[:2], _BOM[:1]):
        if raw.startswith(bom):
            raw = raw[len(bom):]
            break
    return raw.decode("utf-8", errors="replace")


def effective_delay(crawl_delay: float | None, default_delay: float, max_crawl_delay: float
                    ) -> float:
    """The wait between two requests to a host: max(default, Crawl-delay capped)."""
    if crawl_delay is None:
        return default_delay
    return max(default_delay, min(crawl_delay, max_crawl_delay))


# --- matching ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Rule:
    allow: bool
    text: str                 # as written, with the field name capitalized
    length: int               # octets of the normalised pattern: the longest match wins
    head: str                 # the pattern is head*piece*...*piece[$]
    pieces: tuple[str, ...]   # after the first `*`; () when there is none
    anchored: bool            # ends with `$`

    def matches(self, path: str) -> bool:
        if not path.startswith(self.head):
            return False
        if not self.pieces:
            return not self.anchored or len(path) == len(self.head)
        pos = len(self.head)
        last = len(self.pieces) - 1
        for i, piece in enumerate(self.pieces):
            if i == last and self.anchored:  # the last piece sits at the very end
                return len(path) - len(piece) >= pos and path.endswith(piece)
            if piece:  # leftmost is best: it leaves the most room for what follows
                found = path.find(piece, pos)
                if found < 0:
                    return False
                pos = found + len(piece)
        return True


def _compile(allow: bool, value: str) -> _Rule:
    anchored = value.endswith("$")
    parts = [_normalise(p) for p in (value[:-1] if anchored else value).split("*")]
    length = sum(map(len, parts)) + len(parts) - 1 + anchored
    return _Rule(allow, f"{'Allow' if allow else 'Disallow'}: {value}", length,
                 parts[0], tuple(parts[1:]), anchored)


def _normalise(text: str) -> str:
    """RFC 9309 2.2.2: octets outside ASCII %-encoded as UTF-8, %XX of unreserved characters
    decoded, other %XX upper-cased, reserved characters left as they are (`*` and `$`
    encoded), anything else %-encoded."""
    if _PLAIN.fullmatch(text):
        return text
    raw = text.encode("utf-8", errors="surrogatepass")
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        byte = raw[i]
        if byte == 0x25 and i + 2 < n and raw[i + 1] in _HEX and raw[i + 2] in _HEX:
            value = int(raw[i + 1:i + 3], 16)
            out.append(chr(value) if value in _UNRESERVED else f"%{value:02X}")
            i += 3
            continue
        out.append(chr(byte) if byte in _LITERAL else f"%{byte:02X}")
        i += 1
    return "".join(out)


def _request_path(url: str) -> str:
    """Path and query of `url` as they go on the wire: from the first / ? or ; after the
    authority up to any #; "/" when there is none. A bare path is taken as it is."""
    start = url.find("://")
    early = len(url)
    for ch in "/?;":
        found = url.find(ch)
        if 0 <= found < early:
            early = found
    start = start + 3 if 0 <= start < early else 0
    path_start = len(url)
    for ch in "/?;":
        found = url.find(ch, start)
        if 0 <= found < path_start:
            path_start = found
    end = url.find("#", start)
    if end < 0:
        end = len(url)
    if path_start >= end:
        return "/"
    path = url[path_start:end]
    return path if path[0] == "/" else "/" + path


@lru_cache(maxsize=256)
def _product_token(user_agent: str) -> str:
    """The whole product token of a User-Agent, lower-cased: what comes before a version
    (`/`) or a comment (`(`): `crawlapp/1.0 (+http://x)` -> `crawlapp`. An agent that is not
    one token (`Foo Bar`) is kept whole, so it matches no group but `*` (as RFC 9309's
    reference parser does)."""
    return re.split(r"[/(]", user_agent, maxsplit=1)[0].strip(_SPACE).lower()


# --- parsing ----------------------------------------------------------------------------

@dataclass
class _Group:
    agents: list[tuple[str, str]]  # (value as written, product token or "*")
    rules: list[_Rule]
    delay: float | None = None
    closed: bool = False  # an Allow/Disallow line was seen: a User-agent line starts anew


@dataclass(frozen=True)
class _Robots:
    groups: tuple[_Group, ...]
    sitemaps: tuple[str, ...]
    size: int = field(default=0, compare=False)  # bytes held, about (PARSED_BYTES)


@dataclass(frozen=True)
class _Choice:
    group: str | None
    rules: tuple[_Rule, ...]  # longest first, Allow before Disallow of the same length
    delay: float | None

    @property
    def size(self) -> int:
        """Bytes held, about (CHOSEN_BYTES), its rules' included: they are the parse's, but
        kept alive by the choice once the parse is dropped."""
        return 200 + len(self.group or "") + sum(8 + _rule_size(rule) for rule in self.rules)


def _rule_size(rule: _Rule) -> int:
    """Bytes a parsed rule holds, about: the object, its text twice over (as written and as
    its head and pieces), each piece's own string (measured with tracemalloc: 270 B for a
    rule of 21 characters)."""
    return 200 + 2 * len(rule.text) + 64 * len(rule.pieces)


def _line(line: str) -> tuple[int, str] | None:
    """(key, value) of one line without its comment, or None for a blank or unknown line."""
    line = line.split("#", 1)[0].strip(_SPACE)
    if not line:
        return None
    key, colon, value = line.partition(":")
    if colon:
        kind = _KEYS.get(" ".join(key.split()).lower())
        if kind is not None:
            return kind, value.strip(_SPACE)
    words = line.split()  # a missing colon: "key value", "user agent value"
    if len(words) == 2 and (kind := _KEYS.get(words[0].lower())) is not None:
        return kind, words[1]
    if len(words) == 3 and (kind := _KEYS.get(f"{words[0]} {words[1]}".lower())) is not None:
        return kind, words[2]
    return None


def _agent(value: str) -> str:
    if value == "*" or (value[:1] == "*" and value[1:2].isspace()):
        return "*"
    match = _TOKEN.match(value)
    return match.group().lower() if match else ""


@cached(LRUCache(PARSED_BYTES, getsizeof=lambda robots: robots.size),
        key=lambda digest, body: digest, lock=threading.Lock())
def _parse(digest: bytes, body: str) -> _Robots:
    """The groups and sitemaps of the file `body` (whose digest is `digest`)."""
    groups: list[_Group] = []
    sitemaps: dict[str, None] = {}
    group: _Group | None = None
    for line in _LINES.split(body.lstrip("\ufeff\ufffd")):
        parsed = _line(line)
        if parsed is None:
            continue
        kind, value = parsed
        if kind == _USER_AGENT:
            if group is None or group.closed:
                group = _Group([], [])
                groups.append(group)
            group.agents.append((value, _agent(value)))
        elif kind == _SITEMAP:
            if value:
                sitemaps[value] = None
        elif group is None:
            continue  # a rule or delay before any User-agent line belongs to no group
        elif kind == _CRAWL_DELAY:
            if group.delay is None and _DELAY.fullmatch(value):
                group.delay = float(value)
        else:
            group.closed = True
            if value:  # an empty Disallow (or Allow) is no rule
                group.rules.append(_compile(kind == _ALLOW, value))
    size = (sum(100 + sum(190 + 2 * len(value) for value, _ in g.agents)
                + sum(map(_rule_size, g.rules)) for g in groups)
            + sum(60 + len(sitemap) for sitemap in sitemaps))
    return _Robots(tuple(groups), tuple(sitemaps), size)


@cached(LRUCache(CHOSEN_BYTES, getsizeof=lambda choice: choice.size),
        key=lambda digest, body, token: (digest, token), lock=threading.Lock())
def _choose(digest: bytes, body: str, token: str) -> _Choice:
    """The rules that apply to `token`: its groups merged, else the `*` groups merged."""
    groups = _parse(digest, body).groups
    for wanted in (token, "*"):
        if not wanted:
            continue
        chosen = [g for g in groups if any(t == wanted for _, t in g.agents)]
        if chosen:
            names = dict.fromkeys(v for g in chosen for v, t in g.agents if t == wanted)
            rules = sorted((r for g in chosen for r in g.rules),
                           key=lambda r: (-r.length, not r.allow))
            delay = next((g.delay for g in chosen if g.delay is not None), None)
            return _Choice(", ".join(names), tuple(rules), delay)
    return _Choice(None, (), None)
