"""One list of the crawl's queues: workers, `queues`/`queues purge --all`, stats and metrics."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_list_of_queues_is_the_one_from_core_queues() -> None:
    code = ("import json; from crawlapp.app import config; from crawlapp.cli import queues; "
            "print(json.dumps([list(config.ALL_QUEUES), queues.crawl_queues(),"
            " [q.name for q in config.task_queues]]))")
    env = {**os.environ, "CRAWL_RENDER": "true", "CRAWL_SHARDS": "2"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    every, listed, consumed = json.loads(out)
    assert every == ["fetch.0", "fetch.1", "render.0", "render.1", "parse", "dedup", "store",
                     "links", "control"]
    assert listed == every and consumed == every


def test_no_module_builds_its_own_list_of_queues() -> None:
    """Queue names are spelled in crawlapp/core/queues.py alone."""
    builders = re.compile(r"[\"'](fetch|render)\.[\"{]")
    found = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "crawlapp").rglob("*.py")
                   if builders.search(p.read_text(encoding="utf-8")))
    assert found == ["crawlapp/core/queues.py"]
