"""Politeness per server and per registrable domain (CRAWL_POLITENESS_KEY), as the servers see
it: several names on one address (CRAWL_RESOLVE maps them, as curl's --resolve does), and
subdomains of one domain on several addresses."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import crawl_env
from tests.e2e.helpers import crawlctl

pytestmark = pytest.mark.e2e
DELAY = 0.3
PAGES = 4
Request = tuple[str, str, float, float]  # (server address, Host header, start, end)


@contextmanager
def _servers(addresses: list[str]) -> Iterator[tuple[dict[str, int], list[Request]]]:
    """A site on each address answering for any host name: / links to PAGES pages.
    Yields each address's port and the log of every request."""
    log: list[Request] = []
    lock = threading.Lock()

    def handler(address: str) -> type[BaseHTTPRequestHandler]:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                start = time.time()
                if self.path == "/robots.txt":
                    body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
                elif self.path == "/":
                    body = "".join(f"<a href='/p/{i}'>{i}</a>" for i in range(PAGES)).encode()
                    kind = "text/html"
                else:
                    body, kind = f"<p>{self.headers['Host']} {self.path}</p>".encode(), "text/html"
                time.sleep(0.05)  # a request takes a moment: overlaps would show
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with lock:
                    log.append((address, self.headers["Host"], start, time.time()))

            def log_message(self, *args: object) -> None:
                pass
        return Handler

    servers = {a: ThreadingHTTPServer((a, 0), handler(a)) for a in addresses}
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {a: s.server_address[1] for a, s in servers.items()}, log
    finally:
        for server in servers.values():
            server.shutdown()


def _crawl(tmp_path: Path, redis_url: str, names: dict[str, str], key: str
           ) -> list[Request]:
    """Crawl the home page of each name (name -> address) with CRAWL_POLITENESS_KEY=key."""
    with _servers(sorted(set(names.values()))) as (ports, log):
        env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY),
                        CRAWL_POLITENESS_KEY=key, CRAWL_SHARDS="4",
                        CRAWL_RESOLVE=",".join(f"{n}={a}" for n, a in names.items()))
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"http://{n}:{ports[a]}/\n" for n, a in names.items()))
        done = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
        assert done.returncode == 0, done.stdout + done.stderr
        return sorted(log, key=lambda r: r[2])


def _one_at_a_time(requests: list[Request]) -> None:
    """No two requests at once, and the delay between each and the next."""
    gaps = [(b[2] - a[3], a, b) for a, b in itertools.pairwise(requests)]
    assert all(gap >= DELAY for gap, _, _ in gaps), min(gaps)


def _every_page(requests: list[Request], names: list[str]) -> None:
    for name in names:
        assert sum(1 for r in requests if r[1].split(":")[0] == name) >= 1 + PAGES + 1, name


def test_names_on_one_address_share_its_politeness(tmp_path: Path, redis_url: str) -> None:
    shared = [f"{c}.one.test" for c in "abcde"]
    names = {**{n: "127.0.3.21" for n in shared}, "f.two.test": "127.0.3.22",
             "g.three.test": "127.0.3.22"}
    requests = _crawl(tmp_path, redis_url, names, "ip")
    _every_page(requests, list(names))
    on_shared = [r for r in requests if r[0] == "127.0.3.21"]
    on_other = [r for r in requests if r[0] == "127.0.3.22"]
    _one_at_a_time(on_shared)
    _one_at_a_time(on_other)
    # the other address is crawled meanwhile, not after
    assert on_other[0][2] < on_shared[-1][2] and on_shared[0][2] < on_other[-1][2]


def test_subdomains_share_their_domains_politeness(tmp_path: Path, redis_url: str) -> None:
    names = {"one.test": "127.0.3.31", "www.one.test": "127.0.3.32",
             "docs.one.test": "127.0.3.33", "two.test": "127.0.3.34"}
    requests = _crawl(tmp_path, redis_url, names, "domain")
    _every_page(requests, list(names))
    one = [r for r in requests if r[1].split(":")[0].endswith("one.test")]
    two = [r for r in requests if r[1].split(":")[0] == "two.test"]
    _one_at_a_time(one)
    assert two[0][2] < one[-1][2] and one[0][2] < two[-1][2]
