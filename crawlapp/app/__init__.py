"""The Celery app of the crawler: its configuration (config.py), the stage tasks (stages.py),
beat's tasks (beat.py) and how a batch goes from one stage to the next (chain.py).

The library under crawlapp/ never imports this package; workers load it with
`celery -A crawlapp.app worker`.
"""

from __future__ import annotations

import logging
import resource
import time
from typing import Any

from celery import Celery
from celery.signals import task_postrun

from crawlapp.adapters.context import get_context
from crawlapp.adapters.errors import transient_errors
from crawlapp.core.errors import TransientError

app = Celery("crawlapp", include=["crawlapp.app.stages", "crawlapp.app.beat"])
app.config_from_object("crawlapp.app.config")

REPORT_EVERY = 10.0
REPORT_GROWTH_MIB = 8.0
log = logging.getLogger(__name__)
_last = {"at": float("-inf"), "peak": 0.0}


@task_postrun.connect
def _after_task(**_: Any) -> None:
    """Report this worker's memory every REPORT_EVERY seconds, and at once when its peak
    has grown."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if (time.monotonic() - _last["at"] < REPORT_EVERY
            and peak - _last["peak"] < REPORT_GROWTH_MIB):
        return
    _last.update(at=time.monotonic(), peak=peak)
    try:
        with transient_errors():
            get_context().workers.report()
    except TransientError as exc:
        log.warning("worker memory report failed: %s", exc)
