"""The benchmark's pure parts: politeness floor, medians of runs, table, process accounting."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bench import services
from bench.__main__ import Few, Regime, parse_few, parse_sizes, plan_from_env, tls_regimes
from bench.crawlers import Measured, figures, tidy
from bench.procs import Group, ProcStat, descendants, read_stat
from bench.report import (
    aggregate,
    connections,
    covered_at,
    first_request_seconds,
    host_requests,
    politeness_floor,
    spread,
    stop_seconds,
    table,
    transport_table,
)
from testweb.serverlog import Request
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


def test_parse_sizes() -> None:
    assert parse_sizes("300x50, 1000X10") == ((300, 50), (1000, 10))
    assert parse_sizes("") == ()


def test_parse_few() -> None:
    assert parse_few("4x300@1") == Few(4, 300, 1.0)
    assert parse_few(" 2X30@0.5 ") == Few(2, 30, 0.5)
    assert parse_few("") is None and parse_few("  ") is None
    for bad in ("4x300", "4x300@", "x300@1", "4x300@1,2x30@1", "4x300@-1"):
        with pytest.raises(SystemExit, match="BENCH_FEW"):
            parse_few(bad)
    assert Few(4, 300, 1.0).name == "4x300@1" and Few(2, 30, 0.5).name == "2x30@0.5"


def test_plan_few_defaults() -> None:
    assert plan_from_env(False, {}).few == Few(4, 300, 1.0)
    assert plan_from_env(True, {}).few == Few(2, 30, 1.0)
    assert plan_from_env(False, {"BENCH_FEW": ""}).few is None


def test_few_hosts_floor_is_its_delay_on_every_host() -> None:
    web = Web(Few(12, 30, 2.0).spec())  # without crawl_delay_every=0, host 9 would be slower
    requests = host_requests(web, 5)
    assert {web.delay_for(host, 2.0) for host in web.hosts()} == {2.0}
    assert politeness_floor(web, 5, 2.0) == (max(requests.values()) - 1) * 2.0


def _request(host: str, conn: int, start: float = 0.0) -> Request:
    return Request(host=host, path="/", start=start, end=start + 0.1, status=200, conn=conn)


def test_connections_per_host() -> None:
    log = [_request("a", 1), _request("a", 1), _request("a", 4), _request("b", 2),
           _request("b", 2), _request("b", 2), _request("c", 3), _request("c", 5),
           _request("c", 6)]
    assert connections(log) == {"conns_per_host_median": 2, "conns_per_host_max": 3,
                                "requests_per_conn": 1.5}
    assert connections([]) == dict.fromkeys(
        ("conns_per_host_median", "conns_per_host_max", "requests_per_conn"))


def test_first_request_seconds() -> None:
    log = [_request("a", 1, start=1005.25), _request("b", 2, start=1002.5)]
    assert first_request_seconds(log, 1000.0) == 2.5
    assert first_request_seconds(iter(log), 1002.5) == 0.0
    assert first_request_seconds([], 1000.0) is None


def test_figures_cpu_per_minute_and_first_request() -> None:
    measured = Measured(returncode=0, started=1000.0, wall=120.0, cpu=30.0, peak_rss=0,
                        services={}, processes={})
    result = figures(60, measured, {"busy_seconds": 100.0}, 100.0, 2.5)
    assert result["cpu_s_per_minute"] == 15.0 and result["crawler_cpu_ms_per_page"] == 500.0
    assert result["first_request_seconds"] == 2.5 and result["wall_over_floor"] == 1.2


def test_time_to_coverage_is_the_last_expected_page_first_fetched() -> None:
    web = Web(WebSpec(hosts=2, pages_per_host=3, port=8080))
    expected = sorted(web.expected_pages(5))
    log = [Request(host=url.split("/")[2], path="/" + url.split("/", 3)[3], start=1000.0 + n,
                   end=1000.1 + n, status=200) for n, url in enumerate(expected)]
    again = Request(host=log[0].host, path=log[0].path, start=2000.0, end=2000.1, status=200)
    robots = Request(host=log[0].host, path="/robots.txt", start=3000.0, end=3000.1, status=500)
    assert covered_at([*log, again, robots], set(expected)) == (999.0 + len(expected), 0)
    assert covered_at(log[1:], set(expected)) == (999.0 + len(expected), 1)
    assert covered_at([robots], set(expected)) == (None, len(expected))
    session = "http://a:1/sess/page.html;jsessionid=0123456789abcdef"
    assert covered_at([Request(host="a:1", path="/sess/page.html;jsessionid=0123456789abcdef",
                               start=5.0, end=5.1, status=200)], {session}) == (5.0, 0)


def test_figures_of_coverage_tail_and_shutdown() -> None:
    measured = Measured(returncode=0, started=1000.0, wall=100.0, cpu=30.0, peak_rss=0,
                        services={}, processes={})
    result = figures(60, measured, {"busy_seconds": 180.0}, 50.0, 2.5, covered=1075.0,
                     stopping=1.25)
    assert result["coverage_seconds"] == 75.0 and result["tail_seconds"] == 25.0
    assert result["coverage_over_floor"] == 1.5 and result["stop_seconds"] == 1.25
    scrapy = figures(60, measured, {"busy_seconds": 180.0}, 50.0, 2.5)
    assert scrapy["coverage_seconds"] is None and scrapy["stop_seconds"] is None


def test_shutdown_read_from_the_crawl_output() -> None:
    assert stop_seconds("3 new seed(s) queued\nidle after 81.4 s (stopped in 1.3 s): this "
                        "run 12 fetched") == 1.3
    assert stop_seconds("2024-05-01 INFO Spider closed (finished)") is None


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
    assert "wall s" in lines[0] and "svc ms/p" in lines[0] and "cpu s/min" in lines[0]
    assert "cover s" in lines[0] and "tail s" in lines[0] and "cover/floor" in lines[0]
    assert "11.0 (10.0-12.0)" in lines[2] and " 100 " in lines[2]
    assert lines[3].split()[:4] == ["3x8", "scrapy", "1", "90"] and " - " in lines[3]
    assert "0.600 (0.500-0.700)" in text and "fetch ms/p" in text
    assert not any("scrapy" in line for line in text.split("by pipeline stage")[1].splitlines())


def test_table_of_connections_and_first_request() -> None:
    few = aggregate([{"pages": 60, "cpu_s_per_minute": 4.2, "first_request_seconds": 2.25,
                      "stop_seconds": 1.5,
                      "log": {"conns_per_host_median": 1.5, "conns_per_host_max": 3,
                              "requests_per_conn": 20.0}}])
    text = table([{"web": "2x30@1", "crawler": "embedded", "runs": 1, "stats": few}])
    main, connection = text.split("\n\nConnections per host")[:2]
    assert main.splitlines()[2].split()[:4] == ["2x30@1", "embedded", "1", "60"]
    assert " 4.2 " in main.splitlines()[2]
    header, _, row = connection.splitlines()[1:4]
    assert "max conn/host" in header and "1st request s" in header and "stop s" in header
    assert row.split() == ["2x30@1", "embedded", "1.5", "3", "20.0", "2.25", "1.50"]


def test_the_tls_regime_is_one_plain_web_in_three_transports() -> None:
    assert plan_from_env(False, {}).tls == "100x10" and plan_from_env(True, {}).tls == "30x10"
    assert tls_regimes("", 1.0) == {}
    regimes = tls_regimes("20x5", 0.5)
    assert list(regimes) == ["20x5 http", "20x5 https", "20x5 h2"]
    assert [(r.transport, r.spec.tls, r.delay) for r in regimes.values()] == [
        ("http", False, 0.5), ("https", True, 0.5), ("h2", True, 0.5)]
    assert regimes["20x5 h2"] == Regime(
        WebSpec(hosts=20, pages_per_host=5, port=0, crawl_delay_every=0, tls=True), 0.5, "h2")
    assert Web(regimes["20x5 https"].spec).seeds()[0].startswith("https://")


def test_transport_table_sets_each_transport_against_the_one_before() -> None:
    def result(web: str, cpu: float, fetch: float) -> dict[str, object]:
        stats = aggregate([{"crawler_cpu_ms_per_page": cpu,
                            "stage_cpu_ms_per_page": {"fetch": fetch}}])
        return {"web": web, "crawler": "embedded", "runs": 1, "stats": stats}

    assert transport_table([result("100x10", 9.0, 1.0)]) == ""
    text = transport_table([result("20x5 http", 10.0, 2.0), result("20x5 https", 11.0, 2.5),
                            result("20x5 h2", 13.2, 4.0), result("100x10", 9.0, 1.0)])
    rows = [line.split() for line in text.splitlines()[3:]]
    assert rows == [["20x5", "embedded", "crawler", "10.00", "11.00", "13.20", "+10", "%", "+20",
                     "%"],
                    ["20x5", "embedded", "fetch", "stage", "2.00", "2.50", "4.00", "+25", "%",
                     "+60", "%"]]


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


def test_tidy_keeps_the_newest_run_of_each_web_and_crawler(tmp_path: Path) -> None:
    made = []
    for n, tag in enumerate(["300x50-embedded", "300x50-postgres-s3", "300x50-embedded",
                             "4x300@1-embedded", "300x50-postgres-s3"]):
        run = tmp_path / f"{tag}-run{n}"
        run.mkdir()
        os.utime(run, (n, n))
        made.append(run)
    tidy(tmp_path)
    assert [run.exists() for run in made] == [False, False, True, True, True]
