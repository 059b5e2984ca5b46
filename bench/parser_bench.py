"""Link extraction cost: lxml alone (the pipeline's parser) against BeautifulSoup on lxml.

`python bench/parser_bench.py [PAGES] [RUNS]` parses generated test-web pages with both and
prints CPU milliseconds per page (median of RUNS), and checks both find the same links.
"""

from __future__ import annotations

import statistics
import sys
import time

from bs4 import BeautifulSoup

from crawlapp.core.html import parse_html
from testweb.site import Web, WebSpec


def pages(count: int) -> list[tuple[str, bytes]]:
    """(URL, body) of up to `count` HTML pages of a generated test web."""
    web = Web(WebSpec(hosts=max(1, count // 50), pages_per_host=50, port=8000))
    found = []
    for url in sorted(web.expected_pages(5))[:count]:
        netloc, path = url.split("/", 3)[2:]
        response = web.respond(netloc, "/" + path)
        if response.status == 200 and response.body:
            found.append((url, response.body))
    return found


def with_bs4(body: bytes) -> list[tuple[str, str, bool]]:
    """What parse_html extracts of links, through BeautifulSoup's tree on the lxml parser."""
    soup = BeautifulSoup(body, "lxml")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    links = [(a["href"].strip(), " ".join(a.get_text(" ").split())[:256],
              "nofollow" in (a.get("rel") or []))
             for a in soup.find_all(["a", "area"], href=True) if a["href"].strip()]
    soup.get_text(" ")  # the visible text, as the pipeline takes it for SimHash
    return links


def with_lxml(body: bytes) -> list[tuple[str, str, bool]]:
    return [(link.url, link.anchor, link.nofollow) for link in parse_html(body, "text/html").links]


def cpu_ms_per_page(parse: object, bodies: list[bytes]) -> float:
    start = time.process_time()
    for body in bodies:
        parse(body)  # type: ignore[operator]
    return 1000 * (time.process_time() - start) / len(bodies)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    bodies = [body for _, body in pages(count)]
    same = sum(len(with_lxml(b)) == len(with_bs4(b)) for b in bodies)
    print(f"{len(bodies)} pages, mean {sum(map(len, bodies)) / len(bodies) / 1024:.1f} KiB; "
          f"same link count from both on {same}")
    for name, parse in (("lxml (pipeline)", with_lxml), ("bs4 on lxml", with_bs4)):
        times = [cpu_ms_per_page(parse, bodies) for _ in range(runs)]
        print(f"{name:>16}: {statistics.median(times):.2f} CPU-ms/page "
              f"(min {min(times):.2f}, max {max(times):.2f})")


if __name__ == "__main__":
    main()
