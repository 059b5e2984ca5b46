"""The failures of the servers the crawler talks to, raised as the crawler's own
`TransientError` (core/errors.py) naming the server: callers above the adapters (the Celery
tasks' retries, crawlctl's exit status, the local fleet's idle check) catch one class. An S3
refusal that another try meets again (wrong credentials, no such bucket) is a
`ServerRefused` instead, an input error: no task retries it."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from crawlapp.core.errors import CrawlError, ServerRefused, TransientError

# Each server's exceptions that a later try may not meet (a connection refused or lost, a
# timeout, a Redis still loading its data set; a Redis Cluster failing over: slots without a
# master, a slot moved or migrating, a write reaching a demoted master, no node answering
# while the client asks for the slots again: RedisClusterException, which a command on keys
# of several slots raises too, a mistake the tests on a cluster catch), by the module that
# defines them. A module
# not imported yet raised nothing: nothing is imported to ask.
SERVERS = (
    ("redis.exceptions", ("ConnectionError", "TimeoutError", "ClusterDownError",
                          "TryAgainError", "AskError", "RedisClusterException", "ReadOnlyError"),
     "Redis"),
    ("sqlalchemy.exc", ("OperationalError", "InterfaceError"), "the database"),
    ("botocore.exceptions", ("BotoCoreError", "ClientError"), "the blob store"),
    ("kombu.exceptions", ("OperationalError",), "the broker"),
)

# S3's answers that a later try may not meet, besides any 5xx: throttling, and a request
# that timed out (S3 answers 400 RequestTimeout to a body sent too slowly).
S3_AGAIN = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestThrottled",
                      "TooManyRequestsException", "RequestLimitExceeded",
                      "BandwidthLimitExceeded", "RequestTimeout", "RequestTimeoutException",
                      "PriorRequestNotComplete", "InternalError", "ServiceUnavailable"})
_CREDENTIALS = ("the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the AWS "
                "profile) and their rights on S3_BUCKET")
_BUCKET = "S3_BUCKET: the store at S3_ENDPOINT_URL (else AWS) must have that bucket"
# What to check, by the status of S3's refusal (NoSuchBucket; AccessDenied,
# InvalidAccessKeyId, SignatureDoesNotMatch); for any other, both.
S3_CHECK = {404: _BUCKET, 403: _CREDENTIALS}


def server_error(exc: BaseException) -> CrawlError | None:
    """`exc` as a TransientError naming its server (a ServerRefused for S3's refusals), or
    None if no server raised it."""
    for module, names, service in SERVERS:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, tuple(getattr(loaded, n) for n in names)):
            return (s3_refusal(exc)
                    or TransientError(service, str(getattr(exc, "orig", None) or exc).strip()))
    return None


def s3_refusal(exc: BaseException) -> ServerRefused | None:
    """`exc` as a ServerRefused if it is S3's answer 4xx, and not one that another try may
    not meet (S3_AGAIN, 408, 429); else None."""
    botocore = sys.modules.get("botocore.exceptions")
    if botocore is None or not isinstance(exc, botocore.ClientError):
        return None
    code = str(exc.response.get("Error", {}).get("Code", ""))
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if (code in S3_AGAIN or not isinstance(status, int) or not 400 <= status < 500
            or status in (408, 429)):
        return None
    return ServerRefused("the blob store", str(exc),
                         S3_CHECK.get(status) or f"{_BUCKET}; and {_CREDENTIALS}")


@contextmanager
def transient_errors() -> Iterator[None]:
    """Raise a server's failure inside the block as a TransientError, or a ServerRefused
    (see server_error), also as a decorator."""
    try:
        yield
    except Exception as exc:
        error = server_error(exc)
        if error is None:
            raise
        raise error from exc


REMIND_SECONDS = 60.0  # an outage still on is told again after this long


class Outage:
    """What a loop that tries again and again says of a failure: the first try that fails
    (a server's failure in one line that names it, any other with its traceback), then
    nothing but a reminder every REMIND_SECONDS while tries go on failing, and how long it
    lasted once one works. A Redis away for ten seconds is then two lines from each loop that
    met it, not one traceback a try."""

    def __init__(self, logger: logging.Logger, doing: str, then: str) -> None:
        self.logger, self.doing, self.then = logger, doing, then
        self.since: float | None = None  # monotonic time of the first failure
        self.told = 0.0
        self.failures = 0

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        self.failures += 1
        if self.since is None:
            self.since = now
        elif now - self.told < REMIND_SECONDS:
            return
        self.told = now
        lasted = (f" for {now - self.since:.0f} s, {self.failures} tries"
                  if self.failures > 1 else "")
        error = _server_failure(exc)
        if error is None:
            self.logger.error("%s failed%s; %s", self.doing, lasted, self.then, exc_info=exc)
        else:
            self.logger.warning("%s failed%s (%s); %s", self.doing, lasted, error, self.then)

    def ended(self) -> None:
        """A try worked: the outage, if one was on, is over."""
        if self.since is None:
            return
        self.logger.warning("%s works again, after %.1f s and %d failed tries", self.doing,
                            time.monotonic() - self.since, self.failures)
        self.since, self.failures = None, 0


def _server_failure(exc: BaseException) -> CrawlError | None:
    """The server's failure `exc` is, or comes of (its causes and contexts: beat's
    SchedulingError wraps the broker's OperationalError), as server_error words it."""
    seen: BaseException | None = exc
    while seen is not None:
        error = seen if isinstance(seen, CrawlError) else server_error(seen)
        if error is not None:
            return error
        seen = seen.__cause__ or seen.__context__
    return None
