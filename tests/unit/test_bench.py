"""The benchmark's pure parts: politeness floor, medians of runs, table, process accounting."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import pytest

from bench import services
from bench.procs import Group, ProcStat, descendants, read_stat
from bench.report import aggregate, host_requests, politeness_floor, spread, table
from testweb.site import Web, WebSpec


def test_host_requests_count_robots_pages_and_dead_links() -> None:
    web = Web(WebSpec(hosts=3, pages_per_host=8, port=8080))
    counts = host_requests(web, max_depth=5)
    for i, host in enumerate(web.hosts()):
        pages = {u for u in web.expected_pages(5) if urlsplit(u).netloc == host}
        dead = {f"http://{host}/missing/{j}.html" for j in range(8) if j % 4 == 3}
        assert len(pages) == 9, i  # home and 8 pages; /private/ is never asked for
        assert counts[host] == 1 + len(pages) + len(dead)


def test_floor_is_the_busiest_host_at_its_delay() -> None:
    web = Web(WebSpec(hosts=3, pages_per_host=8, port=8080, crawl_delay_every=3))
    requests = host_requests(web, 5)
    slow = web.hosts()[2]  # Crawl-delay: 2
    assert web.delay_for(slow, 1.0) == 2.0
    assert politeness_floor(web, 5, 1.0) == (requests[slow] - 1) * 2.0
    assert politeness_floor(web, 5, 3.0) == (max(requests.values()) - 1) * 3.0


def test_depth_limits_the_requests() -> None:
    web = Web(WebSpec(hosts=2, pages_per_host=50, port=8080))
    assert sum(host_requests(web, 1).values()) < sum(host_requests(web, 5).values())


def test_spread_and_aggregate() -> None:
    assert spread([3.0, None, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0}
    assert spread([None]) == {"median": None, "min": None, "max": None}
    runs = [{"pages": 10, "log": {"gaps": 0}, "name": "x", "ok": True},
            {"pages": 30, "log": {"gaps": 2}, "name": "y", "ok": True}]
    stats = aggregate(runs)
    assert stats == {"pages": {"median": 20.0, "min": 10.0, "max": 30.0},
                     "log.gaps": {"median": 1.0, "min": 0.0, "max": 2.0}}


def test_table_shows_medians_ranges_and_gaps() -> None:
    ours = aggregate([{"pages": 100, "wall_seconds": 10.0, "stage_cpu_ms_per_page": {"fetch": 0.5}},
                      {"pages": 100, "wall_seconds": 12.0, "stage_cpu_ms_per_page": {"fetch": 0.7}}])
    peer = aggregate([{"pages": 90, "wall_seconds": 20.0}])
    text = table([{"web": "3x8", "crawler": "embedded", "runs": 2, "stats": ours},
                  {"web": "3x8", "crawler": "scrapy", "runs": 1, "stats": peer}])
    lines = text.splitlines()
    assert "wall s" in lines[0] and "svc ms/p" in lines[0]
    assert "11.0 (10.0-12.0)" in lines[2] and " 100 " in lines[2]
    assert lines[3].split()[:4] == ["3x8", "scrapy", "1", "90"] and " - " in lines[3]
    assert "0.600 (0.500-0.700)" in text and "fetch ms/p" in text
    assert not any("scrapy" in line for line in text.split("by pipeline stage")[1].splitlines())


def _stat(pid: int, ppid: int, cpu: float = 0.0, rss: int = 0) -> ProcStat:
    return ProcStat(pid, ppid, cpu, rss)


def test_descendants_and_group_accounting() -> None:
    stats = {p.pid: p for p in (_stat(1, 0), _stat(10, 1, 5.0, 100), _stat(11, 10, 1.0, 50),
                                _stat(12, 11, 2.0, 25), _stat(20, 1, 9.0, 999))}
    assert descendants(10, stats) == {10, 11, 12}
    group = Group(lambda s: descendants(10, s))
    group.sample(stats, first=True)
    later = {**stats, 10: _stat(10, 1, 6.5, 300), 13: _stat(13, 10, 0.25, 10)}
    del later[12]  # exited: what it used before counts no more than its start
    group.sample(later)
    assert group.cpu == pytest.approx(1.5 + 0.0 + 0.0 + 0.25)
    assert group.peak_rss == 360


def test_read_stat_of_this_process() -> None:
    me = read_stat(os.getpid())
    assert me is not None and me.ppid == os.getppid() and me.rss > 0 and me.cpu > 0
    assert read_stat(2**22 + 12345) is None


def test_postgres_pids_leave_out_other_databases(monkeypatch: pytest.MonkeyPatch) -> None:
    titles = {2: "postgres: 15/main: checkpointer", 3: "postgres: walwriter",
              4: "postgres: 15/main: postgres bench 127.0.0.1(5000) idle",
              5: "postgres: 15/main: postgres other 127.0.0.1(5001) idle",
              6: "postgres: app bench [local] SELECT", 7: "postgres: app other [local] idle"}
    monkeypatch.setattr(services, "cmdline", titles.__getitem__)
    stats = {pid: _stat(pid, 1) for pid in titles} | {9: _stat(9, 8)}
    assert sorted(services.postgres_pids(1, "bench", stats)) == [1, 2, 3, 4, 6]
