"""Tests of the generated test web: the pure site generator, the log checks and the server."""

from __future__ import annotations

import argparse
import http.client
import json
import re
import socket
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin

import pytest

from testweb import serverlog
from testweb.__main__ import main
from testweb.server import (
    BadRequest,
    add_spec_arguments,
    free_port,
    parse_head,
    spec_argv,
    spec_from_args,
    start_in_background,
)
from testweb.serverlog import Request
from testweb.site import Web, WebSpec

SMALL = WebSpec(hosts=20, pages_per_host=10)
H0, H9 = "127.0.1.1:8080", "127.0.1.10:8080"  # host 9 has Crawl-delay: 2 at the default spec


class _Anchors(HTMLParser):
    """Collects the href of every <a> and the text of the <p>s in <main>."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.paragraphs: list[str] = []
        self._in_p = self._in_main = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_main = self._in_main or tag == "main"
        self._in_p = self._in_main and tag == "p"
        if tag == "a":
            self.hrefs.append(dict(attrs)["href"] or "")

    def handle_endtag(self, tag: str) -> None:
        self._in_main = self._in_main and tag != "main"

    def handle_data(self, data: str) -> None:
        if self._in_p:
            self.paragraphs.append(data)


def _parse(body: bytes) -> _Anchors:
    parser = _Anchors()
    parser.feed(body.decode())
    return parser


def _all_page_urls(web: Web) -> set[str]:
    return set(web.seeds()) | _page_urls(web, web.spec.pages_per_host)


def _page_urls(web: Web, first_pages: int) -> set[str]:
    """URLs of /p/0.html .. /p/<first_pages - 1>.html on every host."""
    hosts = range(web.spec.hosts)
    return {f"{web.base_url(i)}/p/{j}.html" for i in hosts for j in range(first_pages)}


# --- site.py ----------------------------------------------------------------------------------

def test_host_addresses_and_urls() -> None:
    web = Web(WebSpec(hosts=600))
    assert [web.host_addr(i) for i in (0, 249, 250, 599)] == [
        "127.0.1.1", "127.0.1.250", "127.0.2.1", "127.0.3.100"]
    assert len(set(web.hosts())) == 600
    assert not any(netloc.startswith("127.0.0.") for netloc in web.hosts())
    assert web.base_url(0) == "http://127.0.1.1:8080"
    assert web.seeds()[1] == "http://127.0.1.2:8080/"
    assert [web.host_index(n) for n in web.hosts()] == list(range(600))
    for foreign in ("127.0.0.1:8080", "127.0.1.1:8081", "127.0.3.101:8080", "127.0.1.251:8080",
                    "example.com:8080"):
        assert web.host_index(foreign) is None


def test_spec_is_validated() -> None:
    for bad in ({"hosts": 0}, {"pages_per_host": 0}, {"port": 70000}, {"words_per_page": -1}):
        with pytest.raises(ValueError):
            WebSpec(**bad)  # type: ignore[arg-type]


def test_responses_are_deterministic_and_page_texts_distinct() -> None:
    first, second = Web(SMALL), Web(SMALL)
    targets = [(netloc, f"/p/{j}.html") for netloc in first.hosts()[:3] for j in range(10)]
    bodies = [first.respond(*target).body for target in targets]
    assert bodies == [second.respond(*target).body for target in targets]
    texts = [" ".join(_parse(body).paragraphs) for body in bodies]
    assert len(set(texts)) == len(texts)
    other_seed = Web(WebSpec(hosts=20, pages_per_host=10, seed=2))
    assert other_seed.respond(H0, "/p/0.html").body != bodies[0]


def test_page_is_well_formed_html() -> None:
    response = Web(SMALL).respond(H0, "/p/4.html")
    text = response.body.decode()
    assert response.status == 200
    assert response.header("content-type") == "text/html; charset=utf-8"
    assert response.header("Content-Length") == str(len(response.body))
    assert text.startswith("<!DOCTYPE html>\n<html") and text.rstrip().endswith("</html>")
    assert "<title>Host 0 page 4</title>" in text and "<nav>" in text and "<footer>" in text
    assert len(" ".join(_parse(response.body).paragraphs).split()) == SMALL.words_per_page


def test_rendered_links_are_the_outlinks_and_cover_all_forms() -> None:
    web = Web(SMALL)
    hrefs: list[str] = []
    for url in _all_page_urls(web):
        response = web.respond(url.split("/")[2], "/" + url.split("/", 3)[3])
        page_hrefs = _parse(response.body).hrefs
        hrefs += page_hrefs
        assert [urldefrag(urljoin(url, href)).url for href in page_hrefs] == web.outlinks(url)
    assert any(h.startswith("../p/") for h in hrefs)
    assert any(re.fullmatch(r"\d+\.html", h) for h in hrefs)
    assert any(h.startswith("http://") and h.endswith(".html") for h in hrefs)  # cross-host pages
    assert any(h.startswith("/missing/") for h in hrefs) and "#content" in hrefs


def test_home_page_links() -> None:
    web = Web(SMALL)
    links = web.outlinks(web.seeds()[5])
    assert links is not None
    assert {f"{web.base_url(5)}/p/{k}.html" for k in range(8)} <= set(links)
    assert f"{web.base_url(5)}/private/secret.html" in links
    other_homes = {link for link in links if link.endswith("/") and web.base_url(5) not in link}
    assert len(other_homes) == 2


def test_statuses() -> None:
    web = Web(SMALL)
    for path in ("/missing/3.html", "/p/10.html", "/p/05.html", "/nope", "/p/"):
        assert web.respond(H0, path).status == 404, path
    assert web.respond("127.0.9.9:8080", "/").status == 404
    assert web.respond(H0, "/private/secret.html").status == 200
    assert web.respond(H0, "/p/1.html?x=1").body == web.respond(H0, "/p/1.html").body
    assert web.outlinks(f"{web.base_url(0)}/missing/3.html") is None


def test_robots_and_delays() -> None:
    web = Web(SMALL)
    assert web.respond(H0, "/robots.txt").body == b"User-agent: *\nDisallow: /private/\n"
    assert web.respond(H9, "/robots.txt").body == (
        b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n")
    assert web.respond(H9, "/robots.txt").header("Content-Type") == "text/plain; charset=utf-8"
    delays = (web.delay_for(H0, 1.0), web.delay_for(H9, 1.0), web.delay_for(H9, 3.0))
    assert delays == (1.0, 2.0, 3.0)
    assert Web(WebSpec(crawl_delay_every=0)).delay_for(H9, 1.0) == 1.0
    assert web.disallowed(f"http://{H0}/private/secret.html")
    for allowed in (f"http://{H0}/p/1.html", f"http://{H0}/private", "http://example.com/private/x"):
        assert not web.disallowed(allowed)


@pytest.mark.parametrize(("rule", "target", "matches"), [
    ("/private/", "/private/x", True), ("/private/", "/privatex", False),
    ("/*?sort=", "/list?sort=price&color=red", True), ("/*?sort=", "/list?color=red&sort=price", False),
    ("/*?sort=", "/?sort=", True), ("/*.php$", "/index.php", True), ("/*.php$", "/index.php?x", False),
    ("/?q=user/login/", "/?q=user/login/", True), ("/?q=user/login/", "/?q=user%2Flogin%2F", False),
    ("/a*b*c", "/a-x-b-y-c-z", True), ("/a*b*c", "/a-c-b", False), ("/x.y", "/x-y", False),
])
def test_robots_rules_with_wildcards(rule: str, target: str, matches: bool) -> None:
    """RFC 9309 on the target as requested: "*" any characters, a final "$" the end, "?" and
    "." themselves."""
    from testweb.site import _rule_matches

    assert (target.startswith(rule) or _rule_matches(rule, target)) is matches


def test_query_routes_see_the_query_as_sent() -> None:
    web = Web(WebSpec(hosts=1, realweb_cases=True))
    cms = web.case_hosts()["cms"]
    assert web.respond(cms, "/p?print").status == 200
    assert web.respond(cms, "/p?print#top").status == 200  # a fragment never reaches a server
    assert web.respond(cms, "/p?").status == 404 and web.respond(cms, "/p").status == 404
    assert web.respond(H0, "/p/1.html?x=1") == Web(WebSpec(hosts=1)).respond(H0, "/p/1.html")


def test_conditional_requests() -> None:
    web = Web(SMALL)
    full = web.respond(H0, "/p/2.html")
    etag, last_modified = full.header("ETag"), full.header("Last-Modified")
    assert etag and last_modified
    not_modified = web.respond(H0, "/p/2.html", {"if-none-match": etag})
    assert (not_modified.status, not_modified.body, not_modified.header("ETag")) == (304, b"", etag)
    assert web.respond(H0, "/p/2.html", {"if-modified-since": last_modified}).status == 304
    for headers in ({"if-none-match": '"other"'},
                    {"if-modified-since": "Mon, 01 Jan 2001 00:00:00 GMT"},
                    {"if-modified-since": "garbage"}):
        assert web.respond(H0, "/p/2.html", headers).status == 200


@pytest.mark.parametrize(("hosts", "pages"), [(20, 10), (300, 50)])
def test_every_page_is_reachable_within_depth_5(hosts: int, pages: int) -> None:
    web = Web(WebSpec(hosts=hosts, pages_per_host=pages))
    assert web.expected_pages(5) == _all_page_urls(web)


def _naive_expected(web: Web, max_depth: int) -> set[str]:
    """BFS over the public outlinks(), fetching only allowed URLs, keeping the 200 pages."""
    frontier, seen, pages = set(web.seeds()), set(web.seeds()), set()
    for _ in range(max_depth + 1):
        found = set()
        for url in frontier:
            links = web.outlinks(url)
            if links is not None:
                pages.add(url)
                found |= {link for link in links if link not in seen and not web.disallowed(link)}
        seen |= found
        frontier = found
    return pages


def test_expected_pages_follows_depth() -> None:
    web = Web(WebSpec(hosts=5, pages_per_host=40))
    for depth in range(5):
        assert web.expected_pages(depth) == _naive_expected(web, depth)
    assert web.expected_pages(0) == set(web.seeds())
    assert web.expected_pages(1) == set(web.seeds()) | _page_urls(web, 8)
    assert len(web.expected_pages(2)) < len(web.expected_pages(3)) == 5 * 41


# --- serverlog.py -----------------------------------------------------------------------------

def _request(host: str, path: str, start: float, end: float, status: int = 200) -> Request:
    return Request(host=host, path=path, start=start, end=end, status=status)


def test_load_reads_complete_lines(tmp_path: Path) -> None:
    record = {"host": H0, "path": "/", "start": 1.0, "end": 1.5, "status": 200, "ua": "bot",
              "inm": '"x"', "ims": None, "conn": 3}
    log = tmp_path / "log"
    second = {**record, "path": "/robots.txt"}
    log.write_text(json.dumps(record) + "\n" + json.dumps(second) + "\n{\"host\": ")
    assert serverlog.load(str(log)) == [
        Request(H0, "/", 1.0, 1.5, 200, "bot", '"x"', None, 3),
        Request(H0, "/robots.txt", 1.0, 1.5, 200, "bot", '"x"', None, 3)]


def test_gap_violations_use_each_hosts_delay() -> None:
    web = Web(SMALL)
    short = _request(H0, "/p/0.html", 1.9, 2.0)
    slow_host = _request(H9, "/", 1.5, 1.6)
    requests = [short, _request(H0, "/", 1.1, 1.2), _request(H0, "/robots.txt", 0.0, 0.1),
                _request(H9, "/robots.txt", 0.0, 0.1), slow_host]
    def delay(host: str) -> float:
        return web.delay_for(host, 1.0)

    violations = serverlog.gap_violations(requests, delay)
    pairs = [(prev.path, nxt.path) for prev, nxt, _ in violations]
    assert pairs == [("/robots.txt", "/"), ("/", "/p/0.html")]
    assert [nxt for _, nxt, _ in violations] == [slow_host, short]
    assert [round(gap, 6) for *_, gap in violations] == [1.4, 0.7]
    assert serverlog.gap_violations(requests, delay, tolerance=0.7) == []


def test_overlaps_are_per_host_and_counted_as_gap_violations() -> None:
    a, b = _request(H0, "/a", 0.0, 1.0), _request(H0, "/b", 0.5, 0.6)
    c, touching = _request(H0, "/c", 0.9, 1.5), _request(H0, "/d", 1.5, 2.0)
    requests = [touching, c, _request(H9, "/e", 0.2, 0.3), b, a]
    assert serverlog.overlaps(requests) == [(a, b), (a, c)]
    violations = serverlog.gap_violations(requests, lambda host: 0.0)  # touching is no violation
    assert [(prev, nxt, round(gap, 6)) for prev, nxt, gap in violations] == [
        (a, b, -0.5), (a, c, -0.1)]


def test_robots_first_fetched_urls_and_summary() -> None:
    web = Web(SMALL)
    requests = [_request(H0, "/robots.txt", 0.0, 0.1), _request(H0, "/", 1.2, 1.3),
                _request(H0, "/", 2.5, 2.6), _request(H0, "/private/secret.html", 3.0, 3.1),
                _request(H9, "/", 0.0, 0.1), _request(H9, "/robots.txt", 3.0, 3.1)]
    assert serverlog.robots_first_violations(requests) == [H9]
    assert serverlog.fetched_urls(requests) == {
        f"http://{H0}/": 2, f"http://{H0}/private/secret.html": 1, f"http://{H9}/": 1}
    assert serverlog.summary(requests, web, 1.0) == {
        "requests": 6, "hosts": 2, "gap_violations": 1, "overlaps": 0, "robots_first_violations": 1,
        "disallowed_requests": 1, "duplicate_fetches": 1,
    }


# --- server.py --------------------------------------------------------------------------------

def test_parse_head() -> None:
    head = parse_head([b"GET /p/1.html?x=1 HTTP/1.1", b"Host: a", b"User-Agent:  bot/1.0 ",
                       b"Accept: a", b"accept: b"])
    assert (head.method, head.target, head.version) == ("GET", "/p/1.html?x=1", (1, 1))
    assert head.headers["user-agent"] == "bot/1.0" and head.headers["accept"] == "a, b"
    assert head.keep_alive
    assert parse_head([b"GET http://127.0.1.1:8080/x?y HTTP/1.1"]).target == "/x?y"
    assert not parse_head([b"GET / HTTP/1.0"]).keep_alive
    assert parse_head([b"GET / HTTP/1.0", b"Connection: Keep-Alive"]).keep_alive
    assert not parse_head([b"GET / HTTP/1.1", b"Connection: close"]).keep_alive
    malformed = (([b"garbage"], 400), ([b"GET nohttp HTTP/1.1"], 400), ([b"GET / HTTP/2.0"], 505),
                 ([b"GET / HTTP/1.1", b"NoColon"], 400), ([b"GET / HTTP/1.1", b" folded: x"], 400))
    for lines, status in malformed:
        with pytest.raises(BadRequest) as caught:
            parse_head(lines)
        assert caught.value.status == status


def test_spec_command_line_round_trip() -> None:
    parser = argparse.ArgumentParser()
    add_spec_arguments(parser)
    spec = WebSpec(hosts=3, pages_per_host=7, port=0, seed=9, crawl_delay_every=2,
                   words_per_page=50)
    assert spec_from_args(parser.parse_args(spec_argv(spec))) == spec


def _raw_exchange(address: str, port: int, data: bytes) -> bytes:
    """Send `data` and read until the server closes the connection."""
    with socket.create_connection((address, port), timeout=5) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_live_server_serves_and_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert 0 < free_port() < 65536
    log = tmp_path / "requests.jsonl"
    with start_in_background(Web(WebSpec(hosts=3, pages_per_host=5, port=0)), str(log)) as server:
        web = server.web
        assert server.port > 0 and web.spec.port == server.port
        connection = http.client.HTTPConnection(web.host_addr(1), server.port, timeout=5)
        agent: dict[str, str] = {"User-Agent": "testbot/1.0"}
        for path in ("/robots.txt", "/p/2.html"):
            connection.request("GET", path, headers=agent)
            assert connection.getresponse().read() == web.respond(web.netloc(1), path).body
        connection.request("HEAD", "/p/2.html", headers=agent)
        head = connection.getresponse()
        assert (head.status, head.read()) == (200, b"")
        etag = head.getheader("ETag", "")
        connection.request("GET", "/p/2.html", headers={**agent, "If-None-Match": etag})
        assert connection.getresponse().status == 304
        connection.close()
        with urllib.request.urlopen(web.seeds()[2], timeout=5) as reply:
            assert reply.read() == web.respond(web.netloc(2), "/").body
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{web.base_url(2)}/missing/1.html", timeout=5)
        assert missing.value.code == 404
        garbage = _raw_exchange(web.host_addr(0), server.port, b"garbage\r\n\r\n")
        assert garbage.startswith(b"HTTP/1.1 400 ")
        pipelined = _raw_exchange(web.host_addr(0), server.port, b"GET / HTTP/1.1\r\n\r\n"
                                  b"GET /robots.txt HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert pipelined.count(b"HTTP/1.1 200 OK") == 2
        assert pipelined.endswith(web.respond(web.netloc(0), "/robots.txt").body)

    requests = serverlog.load(str(log))
    kept_alive = [r for r in requests if r.host == web.netloc(1)]
    assert [(r.path, r.status, r.ua, r.inm) for r in kept_alive] == [
        ("/robots.txt", 200, "testbot/1.0", None), ("/p/2.html", 200, "testbot/1.0", None),
        ("/p/2.html", 200, "testbot/1.0", None), ("/p/2.html", 304, "testbot/1.0", etag)]
    assert len({r.conn for r in kept_alive}) == 1
    page_bytes = len(web.respond(web.netloc(1), "/p/2.html").body)
    assert [r.bytes for r in kept_alive] == [
        len(web.respond(web.netloc(1), "/robots.txt").body), page_bytes, 0, 0]  # HEAD, 304
    assert {(r.gen, r.aborted) for r in requests} == {(0, False)}
    assert all(r.start <= r.end for r in requests) and all(r.ims is None for r in requests)
    assert all(a.end <= b.start for a, b in zip(kept_alive, kept_alive[1:], strict=False))
    host2 = [r for r in requests if r.host == web.netloc(2)]
    assert [(r.path, r.status) for r in host2] == [("/", 200), ("/missing/1.html", 404)]
    assert host2[0].ua.startswith("Python-urllib/")
    host0 = [(r.path, r.status) for r in requests if r.host == web.netloc(0)]
    assert host0 == [("", 400), ("/", 200), ("/robots.txt", 200)]

    check = ["check", "--log", str(log), "--hosts", "3", "--pages", "5", "--port", "0",
             "--max-depth", "1"]
    assert main(check) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["requests"] == len(requests) == 9 and report["hosts"] == 3
    assert report["robots_first_violations"] == 2 and report["duplicate_fetches"] == 1
    assert report["expected_pages"] == 3 * 6 and report["missing"]["count"] == 3 * 6 - 3


def test_repeats_count_requests_after_a_final_answer_only() -> None:
    log = [_request("h:1", "/robots.txt", 0.0, 0.1), _request("h:1", "/robots.txt", 5.0, 5.1),
           _request("h:1", "/a", 1.0, 1.1, 503), _request("h:1", "/a", 2.0, 2.1),  # a retry
           _request("h:1", "/a", 3.0, 3.1), _request("h:1", "/b", 4.0, 4.1, 404),
           _request("h:1", "/b", 6.0, 6.1, 500)]
    assert serverlog.repeats(log) == 2


def test_longest_quiet_runs_from_the_time_given_to_the_last_request() -> None:
    log = [_request("h:1", "/", t, t + 0.1) for t in (1.0, 2.0, 9.0, 10.0)]
    assert serverlog.longest_quiet(log, 1.5) == 7.0
    assert serverlog.longest_quiet(log, 0.0) == 7.0
    assert serverlog.longest_quiet([], 1.0) == 0.0
