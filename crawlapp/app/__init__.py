"""The Celery app of the crawler: its configuration (config.py), the stage tasks (stages.py),
beat's tasks (beat.py) and how a batch goes from one stage to the next (chain.py).

The library under crawlapp/ never imports this package; workers load it with
`celery -A crawlapp.app worker`.
"""

from __future__ import annotations

import importlib
import logging
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from celery import Celery, Task
from celery.concurrency import ALIASES, get_implementation
from celery.signals import task_postrun, worker_init
from celery.worker.request import Request

from crawlapp.adapters.blobstore import load_client
from crawlapp.adapters.context import get_context
from crawlapp.adapters.errors import transient_errors
from crawlapp.core.errors import FrontierLayoutError, ServerTooOld, TransientError
from crawlapp.core.settings import get_settings

if TYPE_CHECKING:
    from celery.worker import WorkController



class BatchRequest(Request):  # type: ignore[misc]
    """A task's request, without the arguments the worker decoded in what it hands its pool.

    The pool's process (or thread) decodes the message body itself before it runs the task
    (celery.app.trace.fast_trace_task) and takes the arguments from there: those in the
    request, a batch of pages, were pickled to a prefork process for nothing (the largest part
    of a prefork worker's CPU after the message's own decoding)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._request_dict["args"] = self._request_dict["kwargs"] = None


class BatchTask(Task):  # type: ignore[misc]
    Request = BatchRequest


app = Celery("crawlapp", include=["crawlapp.app.stages", "crawlapp.app.beat"], task_cls=BatchTask)
app.config_from_object("crawlapp.app.config")

REPORT_EVERY = 10.0
REPORT_GROWTH_MIB = 8.0
log = logging.getLogger(__name__)
_last = {"at": float("-inf"), "peak": 0.0}
_QUEUE_MODULES: defaultdict[str, list[str]] = defaultdict(list)  # see preload


def preload(modules_by_queue: Mapping[str, Iterable[str]]) -> None:
    """Have a worker import these modules when it starts, for the queues it consumes (a key
    `fetch` stands for every fetch.N): the modules its tasks import in their bodies."""
    for queue, modules in modules_by_queue.items():
        _QUEUE_MODULES[queue].extend(modules)


@worker_init.connect
def _load(sender: WorkController, **_: Any) -> None:
    """Import the modules of the worker's queues (see `preload`) before a prefork pool forks,
    so that its processes do not each import them again; with a prefork pool, also what each
    of its processes would import by itself: cffi's C parser (billiard sets a process's
    parent-death signal through cffi once it is loaded), the database driver and the S3
    client library."""
    try:
        for queue in sender.app.amqp.queues.consume_from:
            for module in _QUEUE_MODULES.get(queue.split(".")[0], ()):
                importlib.import_module(module)
    except Exception:  # a worker that cannot run its tasks stops now, not at its first task
        log.critical("cannot load the modules of this worker's tasks", exc_info=True)
        raise SystemExit(1) from None
    _check_layout()
    pool = get_implementation(sender.pool_cls)
    if f"{pool.__module__}:{pool.__qualname__}" != ALIASES["prefork"]:
        return
    if "cffi" in sys.modules:
        importlib.import_module("cffi.cparser")
    if "crawlapp.adapters.db.engine" in sys.modules:  # its tasks use the database and blobs
        from crawlapp.adapters.db.engine import load_driver
        settings = get_settings()
        load_driver(settings)
        load_client(settings)


def _check_layout() -> None:
    """Stop a worker whose CRAWL_SHARDS is not the number of shards the frontier is laid out
    in: the URLs it queued would wait in shards that no dispatcher reads; and one whose Redis
    is older than the crawler works with (the client's check when it connects)."""
    try:
        with transient_errors():
            layout = get_context().frontier.layout()
    except TransientError as exc:  # Redis restarting: its tasks retry until it is back
        log.warning("cannot read the frontier's layout (%s); starting anyway", exc)
        return
    except ServerTooOld as exc:
        log.critical("%s", exc)
        raise SystemExit(1) from None
    shards = get_settings().shards
    if layout and layout != shards:
        log.critical("%s", FrontierLayoutError(layout, shards))
        raise SystemExit(1)


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
