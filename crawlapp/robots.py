"""robots.txt decisions (RFC 9309) on top of Protego. Pure: the fetch happens elsewhere."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

from protego import Protego
from protego._utils import _quote_path  # Protego's own path normalisation, for blocking_rule

MAX_ROBOTS_BYTES = 500 * 1024
MAX_REDIRECTS = 5


@dataclass(frozen=True)
class RobotsPolicy:
    """What one origin's robots.txt answer means for the crawler.

    `status` is the HTTP status of the robots.txt fetch, or 0 when it could not be fetched
    (timeout, connection error): then, like a 5xx, everything is disallowed for now.
    A 3xx is a redirect still being followed: `body` is then "hops<TAB>next URL", and
    nothing is fetched from the origin until the chain ends.
    """

    status: int
    body: str = ""

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

    def allowed(self, url: str, user_agent: str) -> bool:
        mode = self.mode
        if mode == "rules":
            return _parsed(self.body).can_fetch(url, user_agent)
        return mode == "allow_all"

    def blocking_rule(self, url: str, user_agent: str) -> str:
        """Why `url` is not allowed, for the record: the Disallow line of the group that
        matched ("Disallow: /private/"), or the file's status when it allows nothing."""
        if self.mode != "rules":
            return f"robots.txt {self.status or 'unreachable'}: nothing allowed"
        try:  # Protego keeps the matched group's rules, longest pattern first, privately
            ruleset = _parsed(self.body)._get_matching_rule_set(user_agent)
            path = _quote_path(url)
            for rule in ruleset._rules if ruleset else ():
                if rule.value.match(path):
                    return f"{rule.field.capitalize()}: {rule.value._pattern}"
        except AttributeError:  # another Protego release: the rule text is not reachable
            pass
        return "Disallow"

    def crawl_delay(self, user_agent: str) -> float | None:
        if self.mode != "rules":
            return None
        delay = _parsed(self.body).crawl_delay(user_agent)
        return float(delay) if delay is not None else None

    def sitemaps(self) -> list[str]:
        return list(_parsed(self.body).sitemaps) if self.mode == "rules" else []


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
    """The text Protego parses: the first 500 KiB, UTF-8 with a BOM dropped, bad bytes replaced."""
    return raw[:MAX_ROBOTS_BYTES].decode("utf-8-sig", errors="replace")


@lru_cache(maxsize=4096)
def _parsed(body: str) -> Protego:
    return Protego.parse(body)


def effective_delay(crawl_delay: float | None, default_delay: float, max_crawl_delay: float
                    ) -> float:
    """The wait between two requests to a host: max(default, Crawl-delay capped)."""
    if crawl_delay is None:
        return default_delay
    return max(default_delay, min(crawl_delay, max_crawl_delay))
