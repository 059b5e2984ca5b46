"""The servers' failures reach the tasks and crawlctl as one class, TransientError."""

from __future__ import annotations

import botocore.exceptions
import kombu.exceptions
import pytest
import redis
import sqlalchemy.exc

from crawlapp.adapters.errors import transient, transient_errors
from crawlapp.core.errors import CrawlError, TransientError


@pytest.mark.parametrize(("exc", "service"), [
    (redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379."), "Redis"),
    (redis.exceptions.BusyLoadingError("loading"), "Redis"),
    (redis.TimeoutError("Timeout reading from socket"), "Redis"),
    # a Redis Cluster failing over
    (redis.exceptions.ClusterDownError("CLUSTERDOWN The cluster is down"), "Redis"),
    (redis.exceptions.MasterDownError("MASTERDOWN Link with MASTER is down"), "Redis"),
    (redis.exceptions.TryAgainError("TRYAGAIN Multiple keys request during rehashing"), "Redis"),
    (redis.exceptions.MovedError("3999 127.0.0.1:7101"), "Redis"),
    (redis.exceptions.SlotNotCoveredError("slot 3999 is not covered"), "Redis"),
    (redis.exceptions.ReadOnlyError("READONLY You can't write against a read only replica."),
     "Redis"),
    (sqlalchemy.exc.OperationalError("SELECT 1", {}, Exception("connection refused")),
     "the database"),
    (botocore.exceptions.EndpointConnectionError(endpoint_url="http://127.0.0.1:9"),
     "the blob store"),
    (kombu.exceptions.OperationalError("broker gone"), "the broker"),
])
def test_a_servers_failure_names_the_server(exc: Exception, service: str) -> None:
    error = transient(exc)
    assert isinstance(error, TransientError) and isinstance(error, CrawlError)
    assert error.service == service and str(error).startswith(f"{service} is unavailable: ")
    with pytest.raises(TransientError) as raised, transient_errors():
        raise exc
    assert raised.value.__cause__ is exc


def test_other_failures_pass_unchanged() -> None:
    for exc in (redis.ResponseError("WRONGTYPE"), ValueError("bad"), KeyError("k")):
        assert transient(exc) is None
        with pytest.raises(type(exc)), transient_errors():
            raise exc


def test_the_stage_tasks_retry_one_class_and_raise_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from crawlapp.app import stages

    def down() -> None:
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(stages, "get_context", down)
    monkeypatch.setattr("crawlapp.adapters.context.get_context", down)
    for task in (stages.render, stages.parse, stages.dedup, stages.store, stages.extract_links):
        assert task.autoretry_for == (TransientError,)
    with pytest.raises(TransientError, match="^Redis is unavailable"):
        stages.parse.run([], "batch-1")
