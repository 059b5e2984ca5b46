"""A crawl over HTTP/2 (CRAWL_HTTP2=true) of the test web behind TLS, whose servers offer h2 by
ALPN and trust a CA of the test's own (CRAWL_CA_BUNDLE): judged from the server's log, every
request came over h2 on one connection per host, and politeness is what it is over HTTP/1.1
(one request at a time per host, the delay counted from the end of the previous one)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import crawl_env
from tests.e2e.helpers import crawl_web
from testweb.serverlog import ROBOTS_PATH, fetched_urls, gap_violations, overlaps
from testweb.site import Web, WebSpec
from testweb.tls import Authority, web_certificate

pytestmark = pytest.mark.e2e
DELAY = 0.3


def test_a_crawl_over_http2_is_as_polite_as_over_http1(tmp_path: Path, redis_url: str) -> None:
    authority = Authority(tmp_path)
    spec = WebSpec(hosts=3, pages_per_host=6, port=0, crawl_delay_every=0, tls=True)
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY), CRAWL_HTTP2="true",
                    CRAWL_CA_BUNDLE=str(authority.cert_file))
    web, requests, output = crawl_web(tmp_path, env, spec,
                                      tls=web_certificate(authority, Web(spec)))

    assert set(fetched_urls(requests)) >= web.expected_pages(5), output
    assert all(url.startswith("https://") for url in fetched_urls(requests))
    assert {(r.proto, r.tls) for r in requests} == {("2", True)}
    connections: defaultdict[str, set[int]] = defaultdict(set)
    for request in requests:
        connections[request.host].add(request.conn)
    assert {host: len(conns) for host, conns in connections.items()} == dict.fromkeys(
        web.hosts(), 1)
    assert overlaps(requests) == []
    assert gap_violations(requests, lambda host: DELAY) == []
    first = {r.host: r.path for r in sorted(requests, key=lambda r: r.start)[::-1]}
    assert set(first.values()) == {ROBOTS_PATH}  # each host's first request
