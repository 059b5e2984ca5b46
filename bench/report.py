"""Pure parts of the benchmark: the politeness floor of a web, connections, start-up and time
to coverage read from its server log, the shutdown read from the crawl's output, the
median/min/max of runs and the tables printed on the terminal."""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from testweb.cases import canonical_url
from testweb.serverlog import Request
from testweb.site import Web

ROBOTS_REQUESTS = 1


def host_requests(web: Web, max_depth: int) -> Counter[str]:
    """Requests a correct crawl from the seeds makes to each host: robots.txt, every page it
    reaches within `max_depth` links and every dead link (404) those pages hold."""
    expected = web.expected_pages(max_depth)
    depth = {url: 0 for url in web.seeds()}
    queue = list(depth)
    for url in queue:
        links = web.outlinks(url) if url in expected and depth[url] < max_depth else None
        for link in links or ():
            if link not in depth and not web.disallowed(link) and web.host_index(
                    urlsplit(link).netloc) is not None:
                depth[link] = depth[url] + 1
                queue.append(link)
    counts = Counter(urlsplit(url).netloc for url in depth)
    return Counter({host: n + ROBOTS_REQUESTS for host, n in counts.items()})


def politeness_floor(web: Web, max_depth: int, default_delay: float) -> float:
    """Seconds the busiest host needs: its requests after the first, each one delay apart."""
    return max((n - 1) * web.delay_for(host, default_delay)
               for host, n in host_requests(web, max_depth).items())


def connections(requests: Iterable[Request]) -> dict[str, float | None]:
    """Keep-alive reuse in a server log: the distinct connections (Request.conn) each host
    served, their median and max over the hosts, and requests per connection (None if no
    request)."""
    conns: defaultdict[str, set[int]] = defaultdict(set)
    count = 0
    for request in requests:
        conns[request.host].add(request.conn)
        count += 1
    per_host = [len(numbers) for numbers in conns.values()]
    if not per_host:
        return {"conns_per_host_median": None, "conns_per_host_max": None,
                "requests_per_conn": None}
    return {"conns_per_host_median": statistics.median(per_host),
            "conns_per_host_max": max(per_host),
            "requests_per_conn": round(count / sum(per_host), 2)}


def first_request_seconds(requests: Iterable[Request], started: float) -> float | None:
    """Seconds from `started` (time.time(), the server log's clock) to the first request's
    start; None if there was none."""
    first = min((request.start for request in requests), default=None)
    return None if first is None else round(first - started, 3)


def covered_at(requests: Iterable[Request], expected: Collection[str]) -> tuple[float | None, int]:
    """When the last of the `expected` pages was first requested (the server log's clock; None
    if none was), and how many of them never were: every page of a crawl is covered then,
    whatever it asks later (robots.txt asked again is no work)."""
    wanted = {canonical_url(url) for url in expected}  # a session id spelled either way
    first: dict[str, float] = {}
    for request in requests:
        url = canonical_url(request.url)
        if url in wanted and request.start < first.get(url, float("inf")):
            first[url] = request.start
    return max(first.values(), default=None), len(wanted) - len(first)


_STOPPED = re.compile(r"\(stopped in (\d+(?:\.\d*)?) s\)")


def stop_seconds(output: str) -> float | None:
    """How long `crawl --until-idle` took to end once idle, from its output (None: not said)."""
    found = _STOPPED.search(output)
    return float(found[1]) if found else None


def spread(values: Sequence[float | None]) -> dict[str, float | None]:
    """Median, min and max of the values that are known (all None if none is)."""
    known = [v for v in values if v is not None]
    if not known:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(known), "min": min(known), "max": max(known)}


def aggregate(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every numeric field of the runs (nested dicts flattened with '.') as a spread."""
    flat = [_flatten(run) for run in runs]
    names = sorted({name for run in flat for name in run})
    return {name: spread([run.get(name) for run in flat]) for name in names}


def _flatten(run: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in run.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = float(value)
    return out


# (heading, field, format) of the table's columns
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("pages", "pages", "{:.0f}"),
    ("wall s", "wall_seconds", "{:.1f}"),
    ("cover s", "coverage_seconds", "{:.1f}"),
    ("tail s", "tail_seconds", "{:.1f}"),
    ("pages/s", "pages_per_second", "{:.1f}"),
    ("cpu ms/p", "crawler_cpu_ms_per_page", "{:.2f}"),
    ("cpu s/min", "cpu_s_per_minute", "{:.1f}"),
    ("svc ms/p", "services_cpu_ms_per_page", "{:.2f}"),
    ("rss MB", "peak_rss_mb", "{:.0f}"),
    ("floor s", "floor_seconds", "{:.0f}"),
    ("wall/floor", "wall_over_floor", "{:.2f}"),
    ("cover/floor", "coverage_over_floor", "{:.2f}"),
    ("missed", "log.expected_missed", "{:.0f}"),
    ("requests", "log.requests", "{:.0f}"),
    ("gaps", "log.gap_violations", "{:.0f}"),
    ("overlaps", "log.overlaps", "{:.0f}"),
    ("robots", "log.robots_violations", "{:.0f}"),
    ("dup fetch", "log.duplicate_fetches", "{:.0f}"),
)
CONNECTION_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("conn/host", "log.conns_per_host_median", "{:.1f}"),
    ("max conn/host", "log.conns_per_host_max", "{:.0f}"),
    ("req/conn", "log.requests_per_conn", "{:.1f}"),
    ("1st request s", "first_request_seconds", "{:.2f}"),
    ("stop s", "stop_seconds", "{:.2f}"),
)
STAGES = ("fetch", "parse", "dedup", "store", "extract_links")
PROCESSES = ("crawlctl crawl", "fetch worker", "pipeline worker", "render worker", "other")


def _cell(stats: dict[str, Any], name: str, fmt: str, runs: int) -> str:
    value = stats.get(name, {}).get("median")
    if value is None:
        return "-"
    text = fmt.format(value)
    low, high = stats[name]["min"], stats[name]["max"]
    if runs > 1 and fmt.format(low) != fmt.format(high):
        text += f" ({fmt.format(low)}-{fmt.format(high)})"
    return text


def table(results: Sequence[dict[str, Any]]) -> str:
    """The results as text: one row per web and crawler, medians with (min-max) over runs,
    then connections, start-up and shutdown, the CPU ms per page of each pipeline stage, Redis
    bytes per known URL by family, and the CPU ms per page of each process."""
    text = _grid(["web", "crawler", "runs", *(c[0] for c in COLUMNS)],
                 [[r["web"], r["crawler"], str(r["runs"]), *_cells(r, COLUMNS)] for r in results])
    text += ("\n\nConnections per host, start-up (the first request) and shutdown (once idle; "
             "medians)\n"
             + _grid(["web", "crawler", *(c[0] for c in CONNECTION_COLUMNS)],
                     [[r["web"], r["crawler"], *_cells(r, CONNECTION_COLUMNS)] for r in results]))
    stages = tuple((f"{s} ms/p", f"stage_cpu_ms_per_page.{s}", "{:.3f}") for s in STAGES)
    stage_rows = [[r["web"], r["crawler"], *_cells(r, stages)]
                  for r in results if "stage_cpu_ms_per_page.fetch" in r["stats"]]
    if stage_rows:
        text += ("\n\nCPU ms per page by pipeline stage (medians)\n"
                 + _grid(["web", "crawler", *(c[0] for c in stages)], stage_rows))
    families = sorted({name.removeprefix("redis.bytes_per_url_by_family.")
                       for r in results for name in r["stats"]
                       if name.startswith("redis.bytes_per_url_by_family.")})
    if families:
        redis_columns = (("known URLs", "redis.known_urls", "{:.0f}"),
                         ("B/URL", "redis.bytes_per_url", "{:.0f}"),
                         *((f, f"redis.bytes_per_url_by_family.{f}", "{:.0f}") for f in families))
        text += ("\n\nRedis bytes per known URL beyond the Bloom filter, right after the crawl, "
                 "by family (medians)\n"
                 + _grid(["web", "crawler", *(c[0] for c in redis_columns)],
                         [[r["web"], r["crawler"], *_cells(r, redis_columns)]
                          for r in results if "redis.bytes_per_url" in r["stats"]]))
    roles = [p for p in PROCESSES
             if any(f"process_cpu_ms_per_page.{p}" in r["stats"] for r in results)]
    if roles:
        processes = tuple((p, f"process_cpu_ms_per_page.{p}", "{:.3f}") for p in roles)
        text += ("\n\nCPU ms per page by process (medians; sampled every 0.5 s)\n"
                 + _grid(["web", "crawler", *roles],
                         [[r["web"], r["crawler"], *_cells(r, processes)] for r in results]))
    return text


def _cells(result: dict[str, Any], columns: Sequence[tuple[str, str, str]]) -> list[str]:
    return [_cell(result["stats"], name, fmt, result["runs"]) for _, name, fmt in columns]


def _grid(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True))
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def transport_table(results: Sequence[dict[str, Any]]) -> str:
    """The TLS regime side by side: CPU ms per page (medians) of the crawler and of its fetch
    stage over plain HTTP, over TLS with HTTP/1.1 and with HTTP/2, each against the one
    before it ("" if the bench ran no TLS regime: webs named "HOSTSxPAGES http|https|h2")."""
    cpu: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for result in results:
        size, _, transport = result["web"].partition(" ")
        for measure, field in (("crawler", "crawler_cpu_ms_per_page"),
                               ("fetch stage", "stage_cpu_ms_per_page.fetch")):
            median = result["stats"].get(field, {}).get("median")
            if transport and median is not None:
                cpu[(f"{size} {result['crawler']}", measure)][transport] = median
    rows = [[name, measure, *(f"{by[t]:.2f}" if t in by else "-" for t in ("http", "https", "h2")),
             _change(by.get("https"), by.get("http")), _change(by.get("h2"), by.get("https"))]
            for (name, measure), by in cpu.items()]
    if not rows:
        return ""
    return ("TLS regime: CPU ms per page by transport (medians)\n"
            + _grid(["web crawler", "cpu of", "http", "https", "h2", "https/http", "h2/https"],
                    rows))


def _change(value: float | None, base: float | None) -> str:
    return f"{100 * (value - base) / base:+.0f} %" if value is not None and base else "-"
