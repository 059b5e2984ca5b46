"""The broker's Redis transport: messages go through a real Redis with one client per channel,
in msgpack."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from kombu import Connection, Queue

from crawlapp.adapters.kombu_redis import Transport, unpack

TRANSPORT = "crawlapp.adapters.kombu_redis:Transport"


def test_messages_round_trip_and_the_channel_keeps_one_client(redis_url: str) -> None:
    queue = Queue("kombu-redis-test")
    with Connection(redis_url, transport=TRANSPORT) as conn:
        assert isinstance(conn.transport, Transport)
        channel = conn.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
        producer = conn.Producer(serializer="json")
        for n in range(3):
            producer.publish({"n": n}, routing_key=queue.name, declare=[queue])
        received = []
        simple = conn.SimpleQueue(queue)
        for _ in range(3):
            message = simple.get(timeout=5)
            received.append(message.payload["n"])
            message.ack()
        simple.close()
    assert received == [0, 1, 2]


def test_a_reopened_channel_gets_a_client_of_its_new_pool(redis_url: str) -> None:
    with Connection(redis_url, transport=TRANSPORT) as conn:
        channel = conn.channel()
        with channel.conn_or_acquire() as before:
            assert before.connection_pool is channel.pool
        channel._pool = None  # what closing a channel does to its pool
        with channel.conn_or_acquire() as after:
            assert after is not before and after.connection_pool is channel.pool
        assert after.ping()
        channel.close()


def test_the_celery_app_uses_it_for_a_redis_broker() -> None:
    from crawlapp.app import config

    assert config.broker_url.startswith("redis://")
    assert config.broker_transport == TRANSPORT


def test_a_message_and_its_kept_copy_are_msgpack_with_the_body_as_it_is(redis_url: str) -> None:
    """No base64, no JSON: the bytes of a batch go into Redis once a message, as they are."""
    queue = Queue("kombu-msgpack-test")
    body = bytes(range(256)) * 8  # not text in any encoding
    client = redis.Redis.from_url(redis_url)
    with Connection(redis_url, transport=TRANSPORT) as conn:
        conn.Producer(serializer="raw").publish(body, routing_key=queue.name, declare=[queue],
                                               content_type="application/data",
                                               content_encoding="binary")
        stored = client.lrange(queue.name, 0, -1)
        assert len(stored) == 1 and stored[0][:1] >= b"\x80" and body in stored[0]
        assert unpack(stored[0])["body"] == body
        simple = conn.SimpleQueue(queue)
        message = simple.get(timeout=5)
        assert message.body == body
        kept = client.hgetall("unacked")
        assert len(kept) == 1
        copy, exchange, routing_key = unpack(next(iter(kept.values())))
        assert copy["body"] == body and routing_key == queue.name
        message.ack()
        assert not client.hgetall("unacked")
        simple.close()


def test_a_message_kombu_wrote_in_json_is_still_read(redis_url: str) -> None:
    """A queue filled by kombu's own transport (an earlier release) drains through this one."""
    queue = Queue("kombu-json-test")
    with Connection(redis_url) as stock:  # kombu's Redis transport
        stock.Producer(serializer="json").publish({"n": 1}, routing_key=queue.name,
                                                  declare=[queue])
    assert redis.Redis.from_url(redis_url).lrange(queue.name, 0, -1)[0][:1] == b"{"
    with Connection(redis_url, transport=TRANSPORT) as conn:
        simple = conn.SimpleQueue(queue)
        message = simple.get(timeout=5)
        assert message.payload == {"n": 1}
        message.ack()
        simple.close()


def test_a_message_taken_and_not_acknowledged_comes_back(redis_url: str) -> None:
    """A consumer that goes away with a message unacknowledged: the kept copy (msgpack) goes
    back to its queue, whole, and is delivered again."""
    queue = Queue("kombu-restore-test")
    with Connection(redis_url, transport=TRANSPORT) as conn:
        conn.Producer(serializer="msgpack").publish({"pages": [b"\x00\xff" * 100]},
                                                    routing_key=queue.name, declare=[queue])
        channel = conn.channel()
        message = channel.basic_get(queue.name)
        assert message is not None
        channel.close()  # restores what it holds unacknowledged
        again = conn.SimpleQueue(queue, accept=["msgpack"]).get(timeout=5)
        assert again.payload == {"pages": [b"\x00\xff" * 100]} and again.delivery_info[
            "redelivered"]
        again.ack()


def test_a_channel_closed_after_its_connection_fails_as_a_connection_error(
        redis_url: str) -> None:
    """Celery's consumer, meeting a lost broker, collects its connection (which detaches the
    transport from it) and then closes it; a channel still open then holds messages taken and
    not acknowledged, which it restores with no address left to reach. That is a connection
    error, which the consumer rides out by connecting again (kombu's own transport raised an
    AttributeError there, which ended the worker); the next channel of the process puts the
    messages back in their queue at once, rather than after the visibility timeout (600 s),
    when their batch would have been taken for lost and fetched again. A message whose task
    ran on and acknowledged it meanwhile is acknowledged then, not delivered again."""
    queue = Queue("kombu-lost-broker-test")
    kept = redis.Redis.from_url(redis_url)
    with Connection(redis_url, transport=TRANSPORT) as conn:
        producer = conn.Producer(serializer="json")
        for n in (1, 2):
            producer.publish({"n": n}, routing_key=queue.name, declare=[queue])
        taken: list[Any] = []
        conn.Consumer(queue, callbacks=[lambda body, message: taken.append(message)],
                      prefetch_count=2).consume()
        while len(taken) < 2:
            conn.drain_events(timeout=5)
        channel = conn.default_channel
        channel.connection.client = None  # what collecting the connection leaves
        with pytest.raises(redis.exceptions.ConnectionError, match="broker connection is closed"):
            channel.close()
        assert channel.closed
        assert kept.hlen("unacked") == 2 and kept.llen(queue.name) == 0  # the copies are kept
        running = next(m for m in taken if m.payload == {"n": 1})
        running.ack()  # its task ran on and ended while the broker was away
    with Connection(redis_url, transport=TRANSPORT) as again:  # connected again
        simple = again.SimpleQueue(queue)
        message = simple.get(timeout=5)
        assert message.payload == {"n": 2} and message.delivery_info["redelivered"]
        message.ack()
        assert kept.llen(queue.name) == 0  # the message acknowledged meanwhile is not back
        simple.close()
    assert kept.hlen("unacked") == 0
    kept.delete("unacked", "unacked_index", queue.name)


def test_a_message_taken_as_the_broker_went_away_before_its_copy_was_kept_comes_back(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """kombu takes a message off its queue and then writes the copy it keeps until the
    acknowledgement: the broker gone in between, the message was neither delivered nor kept.
    The next channel of the process puts it back in its queue."""
    from crawlapp.adapters import kombu_redis

    real = kombu_redis._append

    def broker_gone(qos: Any, message: Any, delivery_tag: Any) -> None:
        monkeypatch.setattr(kombu_redis, "_append", real)
        raise redis.exceptions.ConnectionError("Connection closed by server.")

    monkeypatch.setattr(kombu_redis, "_append", broker_gone)
    queue = Queue("kombu-unkept-test")
    kept = redis.Redis.from_url(redis_url)
    with Connection(redis_url, transport=TRANSPORT) as conn:
        conn.Producer(serializer="json").publish({"n": 1}, routing_key=queue.name,
                                                 declare=[queue])
        taken: list[Any] = []
        conn.Consumer(queue, callbacks=[lambda body, message: taken.append(message)]).consume()
        with pytest.raises(redis.exceptions.ConnectionError):
            conn.drain_events(timeout=5)
        assert taken == [] and kept.llen(queue.name) == 0  # off its queue, not delivered
    with Connection(redis_url, transport=TRANSPORT) as again:
        message = again.SimpleQueue(queue).get(timeout=5)
        assert message.payload == {"n": 1} and message.delivery_info["redelivered"]
        message.ack()
    assert kept.hlen("unacked") == 0
    kept.delete("unacked", "unacked_index", queue.name)
