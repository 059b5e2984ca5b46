"""CPU of the fetch stage's HTTP client, apart from the rest of the crawl.

`python -m bench.fetch_bench [HOSTS] [PAGES] [RUNS] [TRANSPORT]` serves a generated web of
HOSTS hosts (default 200) x PAGES pages (default 20) on loopback, over TRANSPORT (`http`, the
default; `https`: TLS with HTTP/1.1; `h2`: TLS with HTTP/2), and GETs every page with the crawler's
Fetcher on its fetch loop: all hosts at once, one request at a time per host, keep-alive
connections kept from one request to the next as in a crawl. Prints the median over RUNS
(default 3) of this process's CPU milliseconds per request, and the connections the server
saw per host.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.report import connections
from crawlapp.adapters.http import Fetcher
from crawlapp.adapters.redis.dnscache import DnsCache
from crawlapp.core.settings import load_settings
from testweb.server import start_in_background
from testweb.serverlog import load
from testweb.site import Web, WebSpec
from testweb.tls import Authority, web_certificate


async def _host(fetcher: Fetcher, urls: list[str]) -> int:
    ok = 0
    for url in urls:
        ok += (await fetcher.get(url)).status == 200
    return ok


async def _round(fetcher: Fetcher, by_host: dict[str, list[str]]) -> int:
    return sum(await asyncio.gather(*(_host(fetcher, urls) for urls in by_host.values())))


def main() -> None:
    args = sys.argv[1:] + ["200", "20", "3", "http"][len(sys.argv) - 1:]
    hosts, pages, runs, transport = int(args[0]), int(args[1]), int(args[2]), args[3]
    spec = WebSpec(hosts=hosts, pages_per_host=pages, port=0, tls=transport != "http")
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "requests.jsonl")
        env = {"CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8", "CRAWL_HTTP2": str(transport == "h2")}
        tls = None
        if spec.tls:
            authority = Authority(Path(tmp))
            tls = web_certificate(authority, Web(spec))
            env["CRAWL_CA_BUNDLE"] = str(authority.cert_file)
        settings = load_settings(env)
        with start_in_background(Web(spec), log, tls=tls) as server:
            web = server.web
            by_host = {root: [f"{root}/p/{i}.html" for i in range(pages)]
                       for root in (seed.rstrip("/") for seed in web.seeds())}
            loop = asyncio.new_event_loop()
            fetcher = Fetcher(settings, DnsCache(None, "bench", 60, 60))
            per_request, ok = [], 0
            for _ in range(runs):
                started = time.process_time()
                ok = loop.run_until_complete(_round(fetcher, by_host))
                per_request.append((time.process_time() - started) / max(ok, 1))
            loop.close()
        requests = load(log)
    conns = connections(requests)
    print(f"{ok} of {sum(map(len, by_host.values()))} pages fetched per run; "
          f"{1000 * statistics.median(per_request):.3f} CPU-ms per request (median of {runs}: "
          f"{', '.join(f'{1000 * s:.3f}' for s in per_request)}); connections per host: "
          f"median {conns['conns_per_host_median']}, max {conns['conns_per_host_max']}")


if __name__ == "__main__":
    main()
