"""The progress line of `crawlctl crawl` (observe/progress.py), pure, and its reads failing."""

from __future__ import annotations

from typing import Any

import pytest

from crawlapp.observe import progress
from crawlapp.observe.progress import Progress, Sample, line


def test_the_line_tells_what_the_interval_fetched_new_and_again_and_what_waits() -> None:
    before = Sample(1000.0, {"pages:fetched": 100, "pages:failed": 2, "recrawl:discovery": 80,
                             "recrawl:refresh": 20, "recrawl:changed": 5,
                             "recrawl:unchanged": 15})
    now = Sample(1060.0, {"pages:fetched": 157, "pages:failed": 3, "pages:redirected": 2,
                          "recrawl:discovery": 90, "recrawl:refresh": 67, "recrawl:changed": 20,
                          "recrawl:unchanged": 47}, queued=1234, in_flight=3, freshness=0.7123)
    text = line(before, now)
    assert text.split("  ", 1)[1] == (
        "60 pages in 60 s (1.00/s): 10 new, 47 again (15 changed, 32 unchanged), 1 failed; "
        "157 fetched in all; 1234 URLs queued, 3 batches in flight; freshness 71.2% estimated")
    assert "freshness" not in line(before, Sample(1060.0, now.counts))  # nothing planned yet


def test_a_line_every_interval_after_the_first_read_and_a_failed_read_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    reads: list[Sample | Exception] = [Sample(0.0, {"pages:fetched": 1}),
                                       ConnectionError("Redis is away"),
                                       Sample(120.0, {"pages:fetched": 61})]

    def sample(_ctx: Any) -> Sample:
        read = reads.pop(0)
        if isinstance(read, Exception):
            raise read
        return read

    monkeypatch.setattr(progress, "sample", sample)
    clock = [0.0]
    shown = Progress(object(), 60.0, said.append, clock=lambda: clock[0])  # type: ignore[arg-type]
    for clock[0] in (0.0, 30.0, 60.0, 90.0, 120.0):
        shown()
    assert len(said) == 2 and "progress not read: ConnectionError: Redis is away" in said[0]
    assert "  60 pages in 120 s" in said[1], said
    reads.append(Sample(150.0, {"pages:fetched": 91}))
    shown.summary()
    assert "  this run: 90 pages in 150 s" in said[2], said
    assert not reads


def test_without_lines_the_run_is_still_summed_up(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    reads = [Sample(0.0, {"pages:fetched": 1}), Sample(30.0, {"pages:fetched": 11})]
    monkeypatch.setattr(progress, "sample", lambda _ctx: reads.pop(0))
    clock = [0.0]
    shown = Progress(object(), 0.0, said.append, clock=lambda: clock[0])  # type: ignore[arg-type]
    for clock[0] in (0.0, 60.0, 120.0):
        shown()
    shown.summary()
    assert len(said) == 1 and "this run: 10 pages in 30 s" in said[0]
