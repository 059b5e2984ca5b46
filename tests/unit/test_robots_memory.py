"""The robots.txt parse caches hold at most what they are given in bytes, whatever the files:
hostile ones (500 KiB of one-character rules, of wildcards, of User-agent lines) parse to
many times their size, and a cache bounded by count alone (4,096 files) would keep gigabytes."""

from __future__ import annotations

import gc
import tracemalloc

from crawlapp.core.robots import CHOSEN_BYTES, MAX_ROBOTS_BYTES, PARSED_BYTES, robots_answer

# The caches' bound, and what a process's parses may hold beyond their estimate.
BOUND = 1.25 * (PARSED_BYTES + CHOSEN_BYTES)


def _hostile(n: int) -> bytes:
    """A 500 KiB robots.txt, file `n` of three kinds, none like another."""
    kind = n % 3
    if kind == 0:  # one-character rules
        lines = (f"Disallow: /{n}{i % 10}\n" for i in range(10 ** 6))
        head = "User-agent: *\n"
    elif kind == 1:  # wildcards: a string object per piece
        lines = (f"Allow: /{n}" + "*a" * 40 + "\n" for _ in range(10 ** 6))
        head = "User-agent: crawlapp\n"
    else:  # agents
        lines = (f"User-agent: bot{n}x{i}\n" for i in range(10 ** 6))
        head = ""
    body = bytearray(head.encode())
    for line in lines:
        if len(body) + len(line) > MAX_ROBOTS_BYTES:
            break
        body += line.encode()
    return bytes(body) + b"Disallow: /private\n"


def test_hostile_robots_files_keep_the_parse_caches_within_their_bytes() -> None:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        peak_held = 0
        for n in range(12):  # some 110 MB of parses if all were kept
            policy = robots_answer("http://a.test/robots.txt", 200, None, _hostile(n), None, 0)
            assert policy.allowed("http://a.test/public", "crawlapp/1.0") in (True, False)
            assert policy.crawl_delay("crawlapp/1.0") is None
            assert policy.sitemaps() == []
            del policy  # what remains is the caches'
            gc.collect()
            peak_held = max(peak_held, tracemalloc.get_traced_memory()[0] - before)
    finally:
        tracemalloc.stop()
    print(f"parse caches held at most {peak_held / 2 ** 20:.1f} MiB")
    assert peak_held < BOUND, f"{peak_held / 2 ** 20:.0f} MiB held"
