"""The frontier's doorbell: a Redis pub/sub channel (`P:doorbell`, keys.DOORBELL) on which
the frontier announces that a host may be ready sooner than the dispatchers last saw (URLs
queued, a lease released), so that a dispatcher sleeps until its next host is due instead
of looking at the frontier every CRAWL_DISPATCH_INTERVAL.

A message carries nothing: a dispatcher woken by it looks at the frontier again. Messages
sent while a dispatcher is busy wait in its connection, so none is missed between two
looks; one lost with a connection costs at most a dispatcher's longest sleep.
"""

from __future__ import annotations

import logging
import time

import redis

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client

log = logging.getLogger(__name__)


class Doorbell:
    """Rings (`ring`) and waits for a ring (`wait`: the subscription is made at the first)."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.channel = keys.DOORBELL.of(prefix)
        self._pubsub: redis.client.PubSub | None = None

    def ring(self) -> None:
        """Ring (PUBLISH on its own: a cluster's pipeline cannot carry it)."""
        self.client.publish(self.channel, b"")

    def subscribe(self) -> None:
        """Hear the rings from now on; a Redis that does not answer is asked again by the
        next `wait`."""
        try:
            self._subscribe()
        except (redis.RedisError, OSError) as exc:
            log.warning("doorbell: %s; subscribing at the next wait", exc)
            self.close()

    def _subscribe(self) -> None:
        if self._pubsub is None:
            self._pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            self._pubsub.subscribe(self.channel)

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for a ring; whether one came (the rings waiting are
        taken with it). A lost connection counts as a ring: the caller looks again."""
        try:
            self._subscribe()
            assert self._pubsub is not None
            rung = self._pubsub.get_message(timeout=timeout) is not None
            while rung and self._pubsub.get_message(timeout=0) is not None:
                pass
            return rung
        except (redis.RedisError, OSError) as exc:
            log.warning("doorbell: %s; subscribing again", exc)
            self.close()
            time.sleep(min(timeout, 1.0))
            return True

    def close(self) -> None:
        if self._pubsub is not None:
            try:
                self._pubsub.close()
            finally:
                self._pubsub = None
