"""The failures of the servers the crawler talks to, raised as the crawler's own
`TransientError` (core/errors.py) naming the server: callers above the adapters (the Celery
tasks' retries, crawlctl's exit status, the local fleet's idle check) catch one class."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from crawlapp.core.errors import TransientError

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


def transient(exc: BaseException) -> TransientError | None:
    """`exc` as a TransientError naming its server, or None if no server raised it."""
    for module, names, service in SERVERS:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, tuple(getattr(loaded, n) for n in names)):
            return TransientError(service, str(getattr(exc, "orig", None) or exc).strip())
    return None


@contextmanager
def transient_errors() -> Iterator[None]:
    """Raise a server's failure inside the block as a TransientError (also a decorator)."""
    try:
        yield
    except Exception as exc:
        error = transient(exc)
        if error is None:
            raise
        raise error from exc
