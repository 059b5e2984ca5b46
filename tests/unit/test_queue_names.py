"""One list of the crawl's queues: workers, `queues`/`queues purge --all`, stats and metrics."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_list_of_queues_is_celeryconfigs_all_queues() -> None:
    code = ("import json, celeryconfig; from crawlapp import cli; print(json.dumps("
            "[list(celeryconfig.ALL_QUEUES), cli._celery_queues(),"
            " [q.name for q in celeryconfig.task_queues]]))")
    env = {**os.environ, "CRAWL_RENDER": "true", "CRAWL_SHARDS": "2"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    every, listed, consumed = json.loads(out)
    assert every == ["fetch.0", "fetch.1", "render.0", "render.1", "parse", "dedup", "store",
                     "links", "control"]
    assert listed == every and consumed == every


def test_no_module_builds_its_own_list_of_queues() -> None:
    """Only the worker launcher picks queues by kind; the rest use ALL_QUEUES."""
    builders = re.compile(r"\*(FETCH|RENDER|PIPELINE)_QUEUES")
    found = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "crawlapp").rglob("*.py")
                   if builders.search(p.read_text(encoding="utf-8")))
    assert found == []
