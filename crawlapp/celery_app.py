"""The Celery app of the crawler; configuration lives in celeryconfig.py."""

from celery import Celery

app = Celery("crawlapp", include=["tasks.stages", "tasks.beat"])
app.config_from_object("celeryconfig")

import crawlapp.workers  # noqa: E402,F401 - connects the memory report to task_postrun
