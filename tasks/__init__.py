"""Thin Celery tasks: each calls one stage of crawlapp.pipeline."""
