"""BatchRequest: what a worker hands its pool carries a batch once, in the message body."""

from __future__ import annotations

from kombu.message import Message
from kombu.serialization import dumps, loads

from crawlapp.app import BatchRequest, app
from crawlapp.app.stages import parse


def test_the_pool_gets_the_arguments_in_the_body_only() -> None:
    pages = [["http://a.test/", "x" * 100]] * 3
    task_message = app.amqp.as_task_v2("id-1", "crawl.parse", args=(pages, "batch-1"))
    content_type, encoding, body = dumps(task_message.body, serializer="msgpack")
    message = Message(body=body, headers=task_message.headers, content_type=content_type,
                      content_encoding=encoding, accept={content_type},
                      delivery_info={"exchange": "", "routing_key": "parse"})
    assert parse.Request is BatchRequest  # every task's, by the app's task class
    request = BatchRequest(message, app=app, task=parse, hostname="w")
    assert request.args == [pages, "batch-1"]  # the worker still knows them
    assert request.request_dict["args"] is None and request.request_dict["kwargs"] is None
    # what the pool's process decodes (celery.app.trace.fast_trace_task)
    args, kwargs, _ = loads(request.body, request.content_type, request.content_encoding,
                            accept={content_type})
    assert (args, kwargs) == ([pages, "batch-1"], {})
