"""Beat as a thread of `crawlctl crawl` (BeatThread): beat's schedule without its dispatch
tick, its tasks sent to the real broker when due, and a stop that does not wait for the next
one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from crawlapp.adapters.kombu_redis import unpack
from tests.conftest import crawl_env

# In a process of its own: the Celery app reads its broker from the environment at import.
RUN = """
import json, sys, time
from pathlib import Path
import redis
from crawlapp.app.beat import BeatThread

beat = BeatThread(Path(sys.argv[1]))
beat.start()
broker = redis.Redis.from_url(sys.argv[2])
deadline = time.monotonic() + 15
while broker.llen("control") == 0 and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.2)
entries = sorted(beat.scheduler.schedule)
stopping = time.monotonic()
beat.stop()
print(json.dumps({"entries": entries, "stop_seconds": time.monotonic() - stopping,
                  "alive": beat.is_alive()}))
"""


def test_beat_thread_sends_its_schedule_but_dispatch_and_stops_at_once(tmp_path: Path,
                                                                      redis_url: str) -> None:
    env = {**os.environ, **crawl_env(tmp_path, redis_url, CRAWL_BEAT_DISPATCH="1")}
    schedule = tmp_path / "var" / "celerybeat-schedule"  # in a folder not made yet
    out = subprocess.run([sys.executable, "-c", RUN, str(schedule), redis_url], env=env,
                         text=True, capture_output=True, check=True, timeout=60).stdout
    seen = json.loads(out)
    assert "recrawl-due-pages" in seen["entries"]
    assert "dispatch-ready-hosts" not in seen["entries"]  # the crawl's dispatcher does that
    assert seen["stop_seconds"] < 1.0 and not seen["alive"]  # its next task was seconds away
    sent = [unpack(m)["headers"]["task"]
            for m in redis.Redis.from_url(redis_url).lrange("control", 0, -1)]
    assert sent == ["crawl.recrawl"]  # due 5 s after the start; nothing else within that
    assert list(schedule.parent.glob("celerybeat-schedule*"))  # kept on disk, as beat does


def test_beat_thread_outlives_a_tick_that_failed(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from crawlapp.app import beat as beat_module

    monkeypatch.setattr(beat_module, "RETRY_SECONDS", 0.05)
    beat = beat_module.BeatThread(tmp_path / "celerybeat-schedule")
    ticks: list[float] = []

    def tick() -> float:
        ticks.append(time.monotonic())
        if len(ticks) == 1:
            raise ConnectionError("broker gone")  # as a send to a broker that is down
        return 0.05

    monkeypatch.setattr(beat.scheduler, "tick", tick)
    beat.start()
    deadline = time.monotonic() + 10
    while len(ticks) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    beat.stop()
    assert len(ticks) >= 3 and not beat.is_alive()
