"""The live view of `crawlctl stats --watch`: its rate and what it draws."""

from __future__ import annotations

import io
import threading
from collections import deque
from typing import Any

import pytest
from rich.console import Console

from crawlapp.observe import stats
from crawlapp.observe.watch import error_kinds, rate, render, requests_done, run


def test_rate_is_over_the_last_minute() -> None:
    samples: deque[tuple[float, int]] = deque()
    assert rate(samples, 0.0, 0) is None
    assert rate(samples, 10.0, 50) == 5.0
    for t in range(20, 130, 10):
        rate(samples, float(t), 50)  # nothing more for two minutes
    assert rate(samples, 130.0, 50) == 0.0
    assert rate(samples, 140.0, 110) == 1.0  # 60 requests over the last 60 s
    assert samples[0][0] >= 140.0 - 60 - 10


def test_errors_by_kind_and_requests_come_from_the_counters() -> None:
    counts = {"pages:fetched": 7, "pages:failed": 2, "pages:redirected": 1, "http:5xx": 2,
              "http:error": 1, "refused:calendar": 4, "refused:denylist": 3, "rejected:binary": 1,
              "pages:blocked": 5, "bytes:fetched": 999}
    assert requests_done(counts) == 10
    assert error_kinds(counts) == {"not fetched (robots, denylist)": 5, "refused calendar": 4,
                                   "refused denylist": 3, "http 5xx": 2, "network": 1,
                                   "rejected binary": 1}


DATA: dict[str, Any] = {"queued": 0, "fetched": 0, "failed": 0, "stored": 0, "duplicates": 0,
                        "frontier": {"batches_in_flight": 0, "hosts_leased": 0, "hosts_ready": 0,
                                     "hosts_waiting": 0, "shards": []},
                        "queues": {}, "counters": {}}


def test_the_view_ends_when_its_stop_is_set_whatever_collecting_swallows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The signal handler sets `stop`: the view ends after the frame under way, even where a
    KeyboardInterrupt raised inside the figures' reads would have been caught there."""
    stop, drawn = threading.Event(), []

    def collect(_ctx: object) -> dict[str, Any]:
        drawn.append(1)
        if len(drawn) == 3:
            stop.set()  # the handler ran while the figures were read
        return DATA

    monkeypatch.setattr(stats, "collect", collect)
    monkeypatch.setattr(stats, "host_report", lambda _ctx, top: [])
    out = io.StringIO()
    run(object(), 0.0, stop, Console(file=out, width=120))  # type: ignore[arg-type]
    assert len(drawn) == 3 and out.getvalue().count("Ctrl-C to quit") == 3


def test_render_shows_every_part() -> None:
    shard = {"shard": 0, "urls_queued": 3, "hosts_ready": 1, "hosts_leased": 1, "hosts_parked": 0}
    data = {"queued": 3, "fetched": 7, "failed": 2, "stored": 6, "duplicates": 1,
            "frontier": {"batches_in_flight": 1, "hosts_leased": 1, "hosts_ready": 1,
                         "hosts_waiting": 0, "shards": [shard]},
            "queues": {"fetch.0": 2, "parse": 1}, "counters": {"http:5xx": 2}}
    hosts = [{"host": "a.com", "pages": 10, "fetched": 7, "failed": 2, "frontier_queued": 3,
              "frontier_state": "leased"}]
    console = Console(record=True, width=120)
    console.print(render(data, 1.5, hosts))
    text = console.export_text()
    for shown in ("1.50 pages/s", "in flight (batches)", "shards", "fetch queue", "parse",
                  "http 5xx", "top hosts", "a.com", "leased"):
        assert shown in text, shown
