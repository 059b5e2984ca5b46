"""crawlapp: a polite, distributed web crawler built as a Celery task pipeline."""

__version__ = "0.1.0"
