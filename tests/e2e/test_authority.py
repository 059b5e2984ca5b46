"""Host authority end to end: hub hosts that many leaf hosts link to score highest, and once
the host graph has been scored they are preferred when hosts compete for fetch slots."""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import crawl_env
from tests.e2e.helpers import crawlctl

pytestmark = pytest.mark.e2e
HUBS, LEAVES = 2, 10
HUB_PAGES, LEAF_PAGES = 6, 4
ANSWER_SECONDS = 0.1  # each page takes this long: fetch slots stay scarce


class _Web:
    """Hosts on 127.0.9.<n>, one server each. A leaf's home links to every hub's home and to
    its own /p/1..4 (depth 1), each of which links to its /q/<j> (depth 2); a hub's home
    (depth 1, found through the leaves) links to its /p/1..6 (depth 2)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, float]] = []  # (host, path, time)
        self.lock = threading.Lock()
        self.servers = [ThreadingHTTPServer((f"127.0.9.{n + 1}", 0), self.handler())
                        for n in range(HUBS + LEAVES)]
        names = [f"127.0.9.{n + 1}:{s.server_address[1]}" for n, s in enumerate(self.servers)]
        self.hubs, self.leaves = names[:HUBS], names[HUBS:]

    def page(self, host: str, path: str) -> bytes | None:
        def links(hrefs: list[str]) -> str:
            return "".join(f"<li><a href='{h}'>Story {n} of the day</a></li>"
                           for n, h in enumerate(hrefs))

        if host in self.hubs:
            hrefs = ([f"/p/{j}" for j in range(1, HUB_PAGES + 1)] if path == "/" else
                     [] if path.startswith("/p/") else None)
        elif path == "/":
            hrefs = ([f"http://{hub}/" for hub in self.hubs]
                     + [f"/p/{j}" for j in range(1, LEAF_PAGES + 1)])
        elif path.startswith("/p/"):
            hrefs = [f"/q/{path[3:]}"]
        elif path.startswith("/q/"):
            hrefs = []
        else:
            hrefs = None
        if hrefs is None:
            return None
        return (f"<html><head><title>{host}{path}</title></head><body><main><p>Page {path} "
                f"of {host}, with words enough to be read.</p><ul>{links(hrefs)}</ul>"
                "</main></body></html>").encode()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                host = self.headers["Host"]
                with web.lock:
                    web.log.append((host, self.path, time.time()))
                body = web.page(host, self.path)
                if self.path == "/robots.txt":
                    status, kind, body = 200, "text/plain", b"User-agent: *\nAllow: /\n"
                else:
                    time.sleep(ANSWER_SECONDS)
                    status, kind = (200, "text/html") if body is not None else (404, "text/plain")
                    body = body if body is not None else b"not found"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> _Web:
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.servers:
            server.shutdown()


@pytest.fixture
def web() -> Iterator[_Web]:
    with _Web() as served:
        yield served


def test_hubs_score_highest_and_are_fetched_first_once_scored(tmp_path: Path, redis_url: str,
                                                              web: _Web) -> None:
    env = crawl_env(tmp_path, redis_url, CRAWL_SHARDS="1", CRAWL_BATCH_SIZE="4",
                    CRAWL_MAX_LEASED_PER_SHARD="2", CRAWL_DEFAULT_DELAY="0.2",
                    CRAWL_AUTHORITY_INTERVAL="2", CRAWL_MAX_DEPTH="3")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://{leaf}/\n" for leaf in web.leaves))
    started = time.time()
    done = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
    assert done.returncode == 0, done.stdout + done.stderr
    elapsed = time.time() - started

    order = [(host, path) for host, path, _ in sorted(web.log, key=lambda r: r[2])
             if path == "/" or path[:3] in ("/p/", "/q/")]  # not robots.txt nor sitemaps
    assert len(order) == len(set(order)) == HUBS * (1 + HUB_PAGES) + LEAVES * (1 + 2 * LEAF_PAGES)
    position = {item: n for n, item in enumerate(order)}
    # the depth-2 pages: a hub's /p/<j>, a leaf's /q/<j>
    hub_deep = sorted(position[(h, f"/p/{j}")] for h in web.hubs for j in range(1, HUB_PAGES + 1))
    leaf_deep = sorted(position[(h, f"/q/{j}")] for h in web.leaves
                       for j in range(1, LEAF_PAGES + 1))
    print(f"crawl {elapsed:.1f} s; hub depth-2 positions {hub_deep}; leaf {leaf_deep}")
    assert statistics.median(hub_deep) < statistics.median(leaf_deep)
    # Without the authority computation (CRAWL_AUTHORITY_INTERVAL=3600) hosts take turns:
    # 36 of the 40 leaf depth-2 pages came before the last hub one; with it, none did.
    before_last_hub = sum(p < hub_deep[-1] for p in leaf_deep)
    assert before_last_hub <= len(leaf_deep) // 4, (hub_deep, leaf_deep)

    hosts = {h["host"]: h for h in json.loads(crawlctl(env, "hosts", "--top", "50",
                                                       "--json").stdout)}
    print({h: hosts[h]["authority"] for h in hosts})
    assert {hosts[hub]["authority"] for hub in web.hubs} == {1.0}
    assert max(hosts[leaf]["authority"] for leaf in web.leaves) < 0.5
    page = json.loads(crawlctl(env, "page", "show", f"http://{web.hubs[0]}/p/1",
                               "--json").stdout)
    assert page["authority"] == 1.0 and page["link_context"] > 0
