"""Celery configuration for `celery --config celeryconfig`: the crawler's own lives in
crawlapp/app/config.py, which `crawlapp.app` loads."""

from crawlapp.app.config import *  # noqa: F403
