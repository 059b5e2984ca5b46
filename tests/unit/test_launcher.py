"""`crawlctl crawl` starts its workers with `python -m crawlapp.app` (without Celery's
command line): every command it builds is one that launcher reads, with the same meaning."""

from __future__ import annotations

from pathlib import Path

from crawlapp.adapters.context import Context
from crawlapp.app.__main__ import _arguments
from crawlapp.core.settings import load_settings
from crawlapp.ops.runner import child_commands


def test_every_worker_command_of_a_crawl_is_read_by_the_launcher(tmp_path: Path) -> None:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_RENDER": "true",
                              "CRAWL_TASK_EVENTS": "true", "CRAWL_SHARDS": "2",
                              "CRAWL_FETCH_PROCESSES": "2", "CRAWL_FETCH_CONCURRENCY": "8"})
    commands = child_commands(Context(settings), 3)
    read = {name: _arguments().parse_args(command[3:]) for name, command in commands.items()
            if command[1:3] == ["-m", "crawlapp.app"]}
    assert sorted(read) == ["fetch-worker-0", "fetch-worker-1", "pipeline-worker",
                            "render-worker"]
    fetch = read["fetch-worker-1"]
    assert (fetch.queues, fetch.pool, fetch.concurrency, fetch.task_events) == (
        "fetch.0,fetch.1", "threads", 8, True)
    assert read["fetch-worker-0"].hostname != fetch.hostname
    pipeline = read["pipeline-worker"]
    assert (pipeline.pool, pipeline.concurrency) == ("prefork", 3)
    assert "parse" in pipeline.queues.split(",") and "control" in pipeline.queues.split(",")
