"""The five stages of the crawl, as plain functions the Celery tasks call.

A batch travels between stages as a list of page dicts (msgpack on the wire); see pages.py.
"""
