"""Each process of a crawl imports what its role uses: a fetch worker and beat load neither the
database nor the parsers nor the browser; a prefork worker loads its stages before its pool forks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("sqlalchemy", "numpy", "lxml", "bs4", "rich")
# A worker as Celery starts one, up to its pool: the app's task modules, then worker_init.
STARTED = """
import json, sys
from celery.signals import worker_init
from crawlapp.app import app
app.loader.init_worker()
queues, pool = sys.argv[1], sys.argv[2]
class Worker:
    pool_cls = pool
if queues:
    app.amqp.queues.select(queues.split(","))
    Worker.app = app
    worker_init.send(sender=Worker())
print(json.dumps(sorted(sys.modules)))
"""


def loaded(tmp_path: Path, queues: str, pool: str = "threads") -> set[str]:
    env = {**os.environ, "CRAWL_DATA_DIR": str(tmp_path / "var")}
    out = subprocess.run([sys.executable, "-c", STARTED, queues, pool], env=env, text=True,
                         capture_output=True, check=True).stdout
    return set(json.loads(out))


@pytest.mark.parametrize("queues", ["fetch.0,fetch.1", ""], ids=["fetch-worker", "beat"])
def test_fetch_workers_and_beat_load_no_database_nor_parsers(tmp_path: Path,
                                                             queues: str) -> None:
    modules = loaded(tmp_path, queues)
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    assert sorted(m for m in modules if m.startswith("crawlapp.adapters.browser")) == []
    assert ("crawlapp.stages.fetching" in modules) == bool(queues)
    assert "crawlapp.stages.parsing" not in modules


def test_a_prefork_worker_loads_its_stages_and_driver_before_forking(tmp_path: Path) -> None:
    modules = loaded(tmp_path, "parse,dedup,store,links,control", "prefork")
    assert {"crawlapp.stages.parsing", "crawlapp.stages.dedup", "crawlapp.stages.storing",
            "crawlapp.stages.linking", "crawlapp.ops.authority", "crawlapp.ops.dispatcher",
            "crawlapp.adapters.db.engine", "sqlite3"} <= modules
    assert "crawlapp.stages.fetching" not in modules
