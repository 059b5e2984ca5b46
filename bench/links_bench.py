"""CPU of reading links: the parse stage and the link planner on generated test-web pages.

`python -m bench.links_bench [PAGES] [RUNS]` runs parse_pages then plan_links over PAGES
pages (default 800) RUNS times (default 5), each time with the dedup-key cache emptied, and
prints the median CPU milliseconds per page and the links found.
"""

from __future__ import annotations

import copy
import gzip
import statistics
import sys
import time
from datetime import UTC, datetime

from bench.parser_bench import pages
from crawlapp.core.records import Page, Status
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import dedup_key, url_hash
from crawlapp.stages.linking import plan_links
from crawlapp.stages.parsing import parse_pages


def fetched_pages(count: int) -> list[Page]:
    """Page records as the fetch stage hands them on, for `count` test-web pages."""
    return [Page(url=url, url_hash=url_hash(url), host=url.split("/")[2], depth=1,
                 status=Status.FETCHED, content_type="text/html",
                 body_gz=gzip.compress(body, 1)) for url, body in pages(count)]


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 800
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    settings = load_settings({})
    pages = fetched_pages(count)
    seconds, links = [], 0
    for _ in range(runs):
        dedup_key.cache_clear()
        batch = copy.deepcopy(pages)
        started = time.process_time()
        parsed, _ = parse_pages(batch, settings)
        plan_links(parsed, settings.max_depth, datetime.now(UTC), settings.traps)
        seconds.append(time.process_time() - started)
        links = sum(len(p.links) for p in parsed)
    print(f"{len(pages)} pages, {links} links: {1000 * statistics.median(seconds) / len(pages):.3f}"
          f" CPU-ms per page (parse + plan_links, median of {runs})")


if __name__ == "__main__":
    main()
