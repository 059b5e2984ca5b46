"""The servers' failures reach the tasks and crawlctl as one class, TransientError."""

from __future__ import annotations

import logging

import botocore.exceptions
import kombu.exceptions
import pytest
import redis
import sqlalchemy.exc

from crawlapp.adapters.errors import Outage, server_error, transient_errors
from crawlapp.core.errors import CrawlError, InputError, ServerRefused, TransientError


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
    error = server_error(exc)
    assert isinstance(error, TransientError) and isinstance(error, CrawlError)
    assert error.service == service and str(error).startswith(f"{service} is unavailable: ")
    with pytest.raises(TransientError) as raised, transient_errors():
        raise exc
    assert raised.value.__cause__ is exc


def test_other_failures_pass_unchanged() -> None:
    for exc in (redis.ResponseError("WRONGTYPE"), ValueError("bad"), KeyError("k")):
        assert server_error(exc) is None
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


def _s3_answer(status: int, code: str) -> botocore.exceptions.ClientError:
    return botocore.exceptions.ClientError(
        {"Error": {"Code": code, "Message": "..."}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutObject")


@pytest.mark.parametrize(("status", "code"), [
    (503, "SlowDown"), (400, "Throttling"), (400, "RequestTimeout"), (500, "InternalError"),
    (503, "ServiceUnavailable"), (502, "BadGateway"), (429, "TooManyRequests"),
    (408, "408"), (400, "ThrottlingException"),
])
def test_an_s3_answer_another_try_may_not_meet_is_transient(status: int, code: str) -> None:
    error = server_error(_s3_answer(status, code))
    assert isinstance(error, TransientError) and error.service == "the blob store"


@pytest.mark.parametrize(("status", "code", "check"), [
    (403, "AccessDenied", "AWS_ACCESS_KEY_ID"), (403, "InvalidAccessKeyId", "AWS_ACCESS_KEY_ID"),
    (403, "SignatureDoesNotMatch", "AWS_SECRET_ACCESS_KEY"), (403, "403", "credentials"),
    (404, "NoSuchBucket", "S3_BUCKET: the store"), (400, "ExpiredToken", "credentials"),
    (400, "InvalidBucketName", "S3_BUCKET"),
])
def test_an_s3_refusal_is_an_input_error_saying_what_to_check(
        status: int, code: str, check: str) -> None:
    exc = _s3_answer(status, code)
    error = server_error(exc)
    assert isinstance(error, ServerRefused) and isinstance(error, InputError)
    assert not isinstance(error, TransientError)
    assert str(error).startswith(f"the blob store refused a request: {exc}; check ")
    assert check in str(error)
    with pytest.raises(ServerRefused) as raised, transient_errors():
        raise exc
    assert raised.value.__cause__ is exc


@pytest.mark.parametrize(("exc", "retried"), [
    (_s3_answer(403, "InvalidAccessKeyId"), False), (_s3_answer(503, "SlowDown"), True)])
def test_a_stage_task_retries_a_transient_error_not_a_refusal(
        monkeypatch: pytest.MonkeyPatch, exc: Exception, retried: bool) -> None:
    from crawlapp.app import stages

    calls = []

    def failing() -> None:
        calls.append(1)
        raise exc

    monkeypatch.setattr(stages, "get_context", failing)
    monkeypatch.setattr(stages, "get_exponential_backoff_interval", lambda *_, **__: 0)
    result = stages.store.apply(args=([], "batch-1"))
    assert result.failed() and len(calls) == 1 + retried * stages.RETRY["max_retries"]


class Tries:
    """An Outage on a clock of the test's own, and what it logged."""

    def __init__(self, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
                 doing: str, then: str) -> None:
        self.now, self.caplog = 0.0, caplog
        monkeypatch.setattr("crawlapp.adapters.errors.time.monotonic", lambda: self.now)
        caplog.set_level(logging.WARNING, "outage-test")
        self.outage = Outage(logging.getLogger("outage-test"), doing, then)

    def fail(self, exc: Exception, times: int, every: float) -> None:
        for _ in range(times):
            self.outage.failed(exc)
            self.now += every

    def messages(self) -> list[str]:
        return [r.getMessage() for r in self.caplog.records]


def test_an_outage_is_told_when_it_begins_and_when_it_ends(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    tries = Tries(caplog, monkeypatch, "dispatch", "trying again")
    tries.outage.ended()  # nothing was on
    tries.fail(redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379."), 30, 0.5)
    tries.outage.ended()
    tries.outage.ended()
    try:  # what beat raises: its SchedulingError, raised while the broker's failure is handled
        try:
            raise kombu.exceptions.OperationalError("Connection closed by server.")
        except kombu.exceptions.OperationalError:
            raise RuntimeError("Couldn't apply scheduled task")  # noqa: B904 - as beat does
    except RuntimeError as wrapped:
        tries.outage.failed(wrapped)
    assert tries.messages() == [
        "dispatch failed (Redis is unavailable: Error 111 connecting to 127.0.0.1:6379.); "
        "trying again",
        "dispatch works again, after 15.0 s and 30 failed tries",
        "dispatch failed (the broker is unavailable: Connection closed by server.); "
        "trying again"]
    assert tries.outage.failures == 1 and all(r.exc_info is None for r in caplog.records)


def test_an_outage_that_lasts_is_told_again_every_minute_and_a_bug_with_its_traceback(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    tries = Tries(caplog, monkeypatch, "reading the frontier", "asking again")
    tries.fail(TransientError("Redis", "Connection closed by server."), 150, 1.0)
    tries.outage.ended()
    tries.outage.failed(KeyError("shard"))  # not a server's failure: a bug, shown whole
    assert tries.messages() == [
        "reading the frontier failed (Redis is unavailable: Connection closed by server.); "
        "asking again",
        "reading the frontier failed for 60 s, 61 tries (Redis is unavailable: Connection "
        "closed by server.); asking again",
        "reading the frontier failed for 120 s, 121 tries (Redis is unavailable: Connection "
        "closed by server.); asking again",
        "reading the frontier works again, after 150.0 s and 150 failed tries",
        "reading the frontier failed; asking again"]
    assert caplog.records[4].levelno == logging.ERROR and caplog.records[4].exc_info


def test_a_periodic_task_skips_its_ticks_through_an_outage_and_says_so_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """beat's periodic tasks (the re-crawl drain every second or two): a server away skips a
    tick (0 done) with one line when it begins and one when it ends, not a traceback a tick;
    any other failure is raised as it is."""
    from crawlapp.app.beat import periodic
    answers: list[Exception | int] = [
        sqlalchemy.exc.OperationalError("SELECT 1", {}, Exception("connection refused"))] * 5
    answers += [3, ValueError("a bug")]

    @periodic("queueing due re-crawls")
    def drain() -> int:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    caplog.set_level(logging.WARNING, "crawlapp.app.beat")
    assert [drain() for _ in range(6)] == [0, 0, 0, 0, 0, 3]
    with pytest.raises(ValueError, match="a bug"):
        drain()
    messages = [r.getMessage() for r in caplog.records if r.name == "crawlapp.app.beat"]
    assert len(messages) == 2, messages
    assert messages[0].startswith("queueing due re-crawls failed (the database is unavailable:")
    assert messages[0].endswith("skipped until its next tick")
    assert messages[1].startswith("queueing due re-crawls works again, after ")
    assert messages[1].endswith(" and 5 failed tries")
