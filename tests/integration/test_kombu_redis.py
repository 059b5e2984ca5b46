"""The broker's Redis transport: messages go through a real Redis with one client per channel."""

from __future__ import annotations

from kombu import Connection, Queue

from crawlapp.adapters.kombu_redis import Transport

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
