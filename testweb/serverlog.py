"""Reading the test web's request log and judging a crawl's politeness (and, for a web with
cases, its handling of them) from it."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields

from testweb.site import Web

ROBOTS_PATH = "/robots.txt"


@dataclass(frozen=True)
class Request:
    """One logged request; `start` is when its head was read, `end` when the response was sent."""

    host: str  # netloc of the listener, "127.0.1.1:8080"
    path: str  # path and query as requested
    start: float
    end: float
    status: int
    ua: str = ""
    inm: str | None = None  # If-None-Match
    ims: str | None = None  # If-Modified-Since
    conn: int = 0  # connection number: equal numbers mean one (keep-alive) connection
    bytes: int = 0  # body bytes sent
    gen: int = 0  # content generation that answered
    aborted: bool = False  # the client went away before the whole response was sent
    proto: str = "1.1"  # the HTTP version it came over: "1.1" or "2"
    tls: bool = False  # over TLS (an https URL)
    resumed: bool = False  # over a resumed TLS session
    ver: int | None = None  # the changing web's version of the page that answered

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}{self.path}"


_FIELDS = tuple(f.name for f in fields(Request))


def load(log_path: str) -> list[Request]:
    """All complete lines of the log (a last line still being written is left out)."""
    with open(log_path, encoding="utf-8") as file:
        lines = file.read().split("\n")[:-1]
    return [_request(json.loads(line)) for line in lines if line.strip()]


def _request(record: dict[str, object]) -> Request:
    return Request(**{name: record[name] for name in _FIELDS if name in record})  # type: ignore[arg-type]


def by_host(requests: Iterable[Request]) -> dict[str, list[Request]]:
    """Requests grouped by host, each group sorted by start."""
    groups: defaultdict[str, list[Request]] = defaultdict(list)
    for request in requests:
        groups[request.host].append(request)
    return {host: sorted(group, key=lambda r: (r.start, r.end)) for host, group in groups.items()}


def gap_violations(requests: Iterable[Request], delay_for: Callable[[str], float],
                   tolerance: float = 0.0) -> list[tuple[Request, Request, float]]:
    """(previous, next, gap) for requests that started too soon: gap < delay_for(host) - tolerance.

    Per host in order of start; `previous` is the earlier request that ended last, so for
    sequential requests it is the one just before, and an overlap gives a negative gap.
    """
    violations = []
    for host, group in by_host(requests).items():
        minimum = delay_for(host) - tolerance
        previous = group[0]
        for following in group[1:]:
            gap = following.start - previous.end
            if gap < minimum:
                violations.append((previous, following, gap))
            previous = max(previous, following, key=lambda r: r.end)
    return sorted(violations, key=lambda v: v[1].start)


def overlaps(requests: Iterable[Request]) -> list[tuple[Request, Request]]:
    """Pairs of requests to one host whose [start, end] intervals overlap (earlier one first)."""
    pairs = []
    for group in by_host(requests).values():
        in_flight: list[Request] = []
        for request in group:
            in_flight = [other for other in in_flight if other.end > request.start]
            pairs += [(other, request) for other in in_flight]
            in_flight.append(request)
    return sorted(pairs, key=lambda pair: pair[1].start)


def robots_first_violations(requests: Iterable[Request]) -> list[str]:
    """Hosts whose first request was not for /robots.txt."""
    return sorted(host for host, group in by_host(requests).items() if group[0].path != ROBOTS_PATH)


def fetched_urls(requests: Iterable[Request]) -> Counter[str]:
    """How often each absolute URL other than /robots.txt was requested."""
    return Counter(request.url for request in requests if request.path != ROBOTS_PATH)


def is_final(status: int) -> bool:
    """An answer a crawler does not ask again for: anything but 429, a 5xx or no answer."""
    return 0 < status < 500 and status != 429


def repeats(requests: Iterable[Request]) -> int:
    """Requests for a URL (robots.txt aside) that had already had a final answer: pages
    fetched again for nothing."""
    answered: set[str] = set()
    again = 0
    for request in sorted(requests, key=lambda r: r.start):
        if request.path == ROBOTS_PATH:
            continue
        if request.url in answered:
            again += 1
        elif is_final(request.status):
            answered.add(request.url)
    return again


def longest_quiet(requests: Iterable[Request], since: float) -> float:
    """The longest time without a request starting, from `since` to the last request."""
    starts = sorted(r.start for r in requests if r.start >= since)
    return max((b - a for a, b in zip([since, *starts], starts, strict=False)), default=0.0)


def summary(requests: list[Request], web: Web, default_delay: float,
            tolerance: float = 0.0) -> dict[str, int]:
    """Counts of requests, hosts and of each kind of politeness or efficiency violation."""
    urls = fetched_urls(requests)
    gaps = gap_violations(requests, lambda host: web.delay_for(host, default_delay), tolerance)
    return {
        "requests": len(requests),
        "hosts": len({request.host for request in requests}),
        "gap_violations": len(gaps),
        "overlaps": len(overlaps(requests)),
        "robots_first_violations": len(robots_first_violations(requests)),
        "disallowed_requests": sum(web.disallowed(request.url) for request in requests),
        "duplicate_fetches": sum(1 for count in urls.values() if count > 1),
    }


def never_fetch_violations(requests: Iterable[Request], web: Web) -> list[Request]:
    """Requests (other than for /robots.txt) that a correct crawler never makes: URLs under
    one of web.never_fetch()'s prefixes, disallowed by a robots.txt rule (wildcards too), or
    any spelling of a forbidden case URL (web.never_fetch_violations())."""
    requests = [r for r in requests if r.path != ROBOTS_PATH]
    bad = set(web.never_fetch_violations({r.url for r in requests}))
    return [r for r in requests if r.url in bad]


def must_fetch_misses(requests: Iterable[Request], web: Web) -> list[str]:
    """The URLs of web.must_fetch() never requested byte for byte as they are written there
    (path and query exactly; a reordered or re-encoded query does not count)."""
    asked = {r.url for r in requests}
    return [url for url in web.must_fetch() if url not in asked]


def trap_requests(requests: Iterable[Request], web: Web) -> dict[str, int]:
    """Number of requests into each trap of web.trap_prefixes()."""
    counts = dict.fromkeys(web.trap_prefixes(), 0)
    prefixes = web.trap_prefixes().items()
    for request in requests:
        url = request.url
        for name, prefix in prefixes:
            if url.startswith(prefix):
                counts[name] += 1
    return counts


def canonical_fetches(requests: Iterable[Request], web: Web) -> dict[str, int]:
    """For each canonical URL of web.spelling_groups(): requests for any of its spellings
    (1 each is right; more means the crawler did not see the spellings are one URL)."""
    from testweb.cases import canonical_url

    counts = dict.fromkeys(web.spelling_groups(), 0)
    for request in requests:
        canonical = canonical_url(request.url)
        if canonical in counts:
            counts[canonical] += 1
    return counts


def case_report(requests: list[Request], web: Web, max_depth: int = 5, *,
                sitemaps: bool = False) -> dict[str, object]:
    """How a crawl handled the web's cases: never-fetch violations, requests per trap,
    fetches per canonical page, expected pages missed (sitemap-only pages if `sitemaps`),
    must_fetch() URLs not requested exactly as written, and what happened on the big, bomb
    and drip pages (requests, bytes sent, aborted)."""
    violations = never_fetch_violations(requests, web)
    misses = must_fetch_misses(requests, web)
    expected = web.expected_pages(max_depth, sitemaps=sitemaps)
    missing = sorted(expected - set(fetched_urls(requests)))
    heavy = {}
    cases = web.case_urls()
    for name in ("big", "bomb", "drip"):
        if name in cases:
            hits = [r for r in requests if r.url == cases[name]]
            heavy[name] = {"requests": len(hits), "bytes": sum(r.bytes for r in hits),
                           "aborted": sum(r.aborted for r in hits)}
    return {
        "never_fetch_violations": {"count": len(violations),
                                   "first": [r.url for r in violations[:10]]},
        "trap_requests": trap_requests(requests, web),
        "canonical_fetches": canonical_fetches(requests, web),
        "expected_pages": len(expected),
        "missing": {"count": len(missing), "first": missing[:10]},
        "must_fetch_missing": {"count": len(misses), "first": misses[:10]},
        "heavy": heavy,
    }
