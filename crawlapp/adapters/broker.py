"""The Celery broker's queues, read and purged through kombu (Redis or AMQP), without the
Celery app."""

from __future__ import annotations

from collections.abc import Iterable

from kombu import Connection


def queue_lengths(broker_url: str, names: Iterable[str]) -> dict[str, int]:
    """Messages waiting in each queue; a queue nobody declared yet is empty."""
    out: dict[str, int] = {}
    with Connection(broker_url) as conn:
        channel = conn.channel()
        for name in names:
            try:
                out[name] = int(channel.queue_declare(queue=name, passive=True).message_count)
            except conn.channel_errors:  # no such queue: AMQP closes the channel, so reopen it
                out[name] = 0
                channel.close()
                channel = conn.channel()
        channel.close()
    return out


def purge(broker_url: str, names: Iterable[str]) -> dict[str, int]:
    """Delete the waiting messages of each queue; how many each held."""
    with Connection(broker_url) as conn:
        channel = conn.default_channel
        return {name: int(channel.queue_purge(name) or 0) for name in names}
