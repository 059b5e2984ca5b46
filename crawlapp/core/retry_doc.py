"""docs/retries.md, generated from the retry rule's tables (core/retry.py):
`python -m crawlapp.core.retry_doc`."""

from __future__ import annotations

import sys
from pathlib import Path

from crawlapp.core.politeness import JITTER
from crawlapp.core.retry import FETCH, MET, SERVERS, HostTry, RobotsTry, UrlTry
from crawlapp.core.settings import load_settings
from crawlapp.core.settings_doc import write

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "retries.md"
HEADER = """# Retries

What the crawler tries again, how long it waits first, and when it stops: one rule,
`crawlapp/core/retry.py`, which the fetch stage, the lease ledger, the host schedule
(`crawlapp/core/politeness.py`), the Celery tasks, the Redis ride-out, the blob store, the
dispatcher and beat ask. This page is generated from it: change a rule there, then run
`make docs` (a unit test fails when the two differ). The settings named here are in
[settings.md](settings.md), with their defaults.

## A request to the web

What becomes of a request's URL, of its host and of a robots.txt request, by what the
request met (its error if it has one, else its status). *grace*: the response was abandoned
while the server may still be sending it, so the host's next time is {grace:g} s later.

| outcome | met | URL | host | robots.txt | grace |
|---|---|---|---|---|---|
"""

URL = {
    UrlTry.COUNTED: "queued again behind its host's other URLs, at most `CRAWL_MAX_RETRIES` "
                    "times; then recorded `failed`",
    UrlTry.UNCOUNTED: "queued again, never counted: **no limit**",
    UrlTry.FINAL: "recorded as it ended, not asked again before a re-crawl",
}
HOST = {
    HostTry.GOOD: "asked again after its delay (`CRAWL_DEFAULT_DELAY` or its Crawl-delay); "
                  "its failures in a row reset",
    HostTry.KEPT: "asked again after its delay; its failures in a row kept: never parked "
                  "or given up for it",
    HostTry.WAITS: "waits the `Retry-After` (at least its delay, at most "
                   "`CRAWL_MAX_RETRY_AFTER`); its failures in a row kept",
    HostTry.THROTTLED: "waits `CRAWL_THROTTLE_SECONDS`, doubling with each such answer up to "
                       "`CRAWL_THROTTLE_MAX`, plus up to {jitter:.0%} jitter; the doubling "
                       "forgiven `CRAWL_FORGIVE_AFTER` after the wait",
    HostTry.BACKED_OFF: "one failure more in a row, n: waits delay · 2^(n-1), at most "
                        "`CRAWL_MAX_BACKOFF`; at `CRAWL_PARK_AFTER` parked, "
                        "`CRAWL_PARK_SECONDS` at least",
    HostTry.UNREACHABLE: "one failure more in a row, n: waits delay · 2^n, at most "
                         "`CRAWL_MAX_BACKOFF`; at `CRAWL_GIVE_UP_AFTER` given up: parked "
                         "until `crawlctl frontier resume`, its waiting URL recorded failed",
}
ROBOTS = {
    RobotsTry.STANDS: "the answer is the origin's policy (2xx: its rules, 4xx: allow all), "
                      "cached",
    RobotsTry.BACKED_OFF: "the URL waits, the host deferred `CRAWL_ROBOTS_RETRY`, doubling "
                          "with each failure in a row (or a longer `Retry-After`), at most "
                          "`CRAWL_THROTTLE_MAX`; past `CRAWL_MAX_RETRIES` failures an answer "
                          "that allows nothing (5xx, none) stands, cached",
    RobotsTry.AGAIN: "the URL waits; robots.txt is asked again after the host's delay, "
                     "nothing cached: **no limit**",
    RobotsTry.GIVEN_UP: "given up with its host (nothing cached: a resume asks it again)",
}
SERVERS_HEADER = """
## A server the crawler needs

A call to Redis, the database, the blob store or the broker that fails in a way a later try
may not meet is tried again by the one who made it; a refusal that another try would meet
again (S3's wrong credentials or missing bucket: `ServerRefused`, an input error) is final,
as is a frontier laid out in another number of shards (`FrontierLayoutError`). The waits
double from the first up to the cap (*jitter*: each a random share of that). A loop that
tries again and again (the dispatcher, beat, `crawlctl crawl`'s look for the crawl's end, the
fetch's look for leases asked to end early) says an outage once when it begins (one line
naming the server; any other failure with its traceback), again each minute while it lasts,
and when it ends, with how long it lasted and the tries it took (`Outage`,
`crawlapp/adapters/errors.py`): ten seconds without Redis are a few lines of a crawl's output.
A worker whose broker goes away connects again; on a Redis broker the messages it had taken
go back to their queues as it does (`crawlapp/adapters/kombu_redis.py`), and a stage that ends
meanwhile sends its batch's next stage once the broker is back (*next stage's task* below).
beat's periodic tasks (the re-crawl drain, host authority, host counts) skip their ticks
through an outage, told once as it begins and once as it ends.

| who tries again | on | first wait | cap | jitter | tries again |
|---|---|---|---|---|---|
"""
FOOTER = """
## A render

A page whose render fails (the browser crashed or is missing, the render timed out) or one
of whose sub-requests' checks Redis could not answer through its ride-out is stored
unrendered with its `render_error`: final, not rendered again before a re-crawl. A
sub-request is not tried again either: the page's script gets its failure.

## Without a limit

The rows that say **no limit** are tried again as long as they fail: a URL whose name the
crawler's own resolver could not look up (`resolver`) goes back uncounted, since a fault of
ours is neither the page's failure nor its host's; and a robots.txt that met an outcome whose
robots.txt column says *again* (`resolver`, a 5xx but 500, 502, 503 and 504, `too_large`,
another error) is asked again after each delay.
"""


def _seconds(value: float) -> str:
    return f"{value:g} s"


def render() -> str:
    """The whole page as Markdown."""
    rows = [f"| `{outcome}` | {MET[outcome]} | {rule.url} | {rule.host} | {rule.robots} "
            f"| {'yes' if rule.grace else ''} |\n" for outcome, rule in FETCH.items()]
    servers = []
    for who, rule in SERVERS.items():
        if rule.tries_again is not None:
            tries = str(rule.tries_again)
        elif rule.for_setting:
            tries = f"for `{rule.for_setting}`"
        else:
            tries = "**no limit**"
        servers.append(f"| {who} | {rule.meets} | {_seconds(rule.first)} | "
                       f"{_seconds(rule.cap)} | {'yes' if rule.jitter else ''} | {tries} |\n")
    host = {value: meaning.format(jitter=JITTER) for value, meaning in HOST.items()}
    legends = [f"\n| {title} | means |\n|---|---|\n"
               + "".join(f"| {value} | {meaning} |\n" for value, meaning in table.items())
               for title, table in (("URL", URL), ("host", host), ("robots.txt", ROBOTS))]
    header = HEADER.format(grace=load_settings({}).backoff.abort_grace)
    return header + "".join(rows) + "".join(legends) + SERVERS_HEADER + "".join(servers) + FOOTER


def main(argv: list[str]) -> int:
    """Write docs/retries.md, or with --check exit 1 when it differs from the rule."""
    return write(DOC_PATH, render(), argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
