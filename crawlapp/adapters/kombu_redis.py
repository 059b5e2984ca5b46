"""kombu's Redis transport with one Redis client per channel, and queue messages in msgpack.

kombu builds a new `redis.Redis` (and its table of response callbacks) for every message a
worker publishes, takes in and acknowledges; the client holds no connection of its own (its
pool does, and the pool is the channel's), so one client per channel serves them all
(0.4 ms of CPU less per message published, taken in and acknowledged, measured here).

kombu writes a queue message as JSON text, its body (a batch in msgpack) in base64 inside it,
and the copy it keeps of each message taken and not yet acknowledged as JSON again: a batch's
bytes go through base64 and JSON five times between two stages. Here a queue message and its
kept copy are msgpack, the body as it is (`pack`): the same methods of kombu's, reading and
writing with `pack` and `unpack` in place of its JSON (`_in_msgpack`). A queue written by
kombu's own transport is still read: msgpack starts a map or an array with a byte of 0x80 or
more, JSON text never does (`unpack`). Broadcasts (the pidbox's fanout) stay in JSON. A worker
of an older release reads none of these messages: a fleet moves to this one at once, or after
its queues are empty.

A broker that goes away loses no message a worker had taken: those of the channel it closed
(kombu restores them as it closes, with no broker to reach) and one taken off its queue
before its kept copy was written go back to their queues through the process's next
channel, rather than after the visibility timeout or never (`QoS`, `Channel.__init__`).

`crawlapp.app.config` uses it for a redis:// broker.
"""

from __future__ import annotations

import logging
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgpack
import redis
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads as json_loads

log = logging.getLogger(__name__)


def pack(message: Any) -> bytes:
    """A queue message (or the kept copy of one) as this transport writes it."""
    return msgpack.packb(message, use_bin_type=True)


def unpack(raw: bytes | str) -> Any:
    """A queue message as this transport (msgpack) or kombu's (JSON text) wrote it."""
    if isinstance(raw, bytes):
        return msgpack.unpackb(raw, raw=False)
    return json_loads(raw)


def _text_but_msgpack(value: Any) -> Any:
    """kombu's bytes_to_str for a name, the bytes themselves for a message in msgpack."""
    if isinstance(value, bytes) and value[:1] >= b"\x80":
        return value
    return bytes_to_str(value)


def _in_msgpack(function: Callable[..., Any]) -> Callable[..., Any]:
    """kombu's `function` itself, its module's `dumps`, `loads` and `bytes_to_str` these."""
    scope = {**function.__globals__, "dumps": pack, "loads": unpack,
             "bytes_to_str": _text_but_msgpack}
    copy = types.FunctionType(function.__code__, scope, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    return copy


# Messages taken and not acknowledged by a channel closed while the broker was away (this
# process's), by delivery tag: True once their task acknowledged them meanwhile. The next
# channel of the process that reaches the broker restores the others and forgets those.
_stranded: dict[str, bool] = {}
# Messages taken whose kept copy the broker never got (it went away between the two): the
# message (kombu's payload), its exchange and routing key, by delivery tag; the next channel
# puts them back in their queues.
_unkept: dict[str, tuple[Any, str, str]] = {}
_stranded_lock = threading.Lock()
_append = _in_msgpack(kombu_redis.QoS.append)


class QoS(kombu_redis.QoS):  # type: ignore[misc]
    restore_by_tag = _in_msgpack(kombu_redis.QoS.restore_by_tag)

    def append(self, message: Any, delivery_tag: Any) -> None:
        """kombu's: keep a copy of a message taken, until it is acknowledged. kombu takes a
        message off its queue (BRPOP) and then writes the copy: a broker gone in between
        would lose it (never delivered, no copy to restore), so it is held for the next
        channel (`Channel.__init__`)."""
        try:
            _append(self, message, delivery_tag)
        except redis.exceptions.ConnectionError:
            delivery = message.delivery_info
            with _stranded_lock:
                _unkept[str(delivery_tag)] = (message._raw, delivery["exchange"],
                                              delivery["routing_key"])
            raise

    def restore_unacked(self, client: Any = None) -> None:
        """kombu's: a closed channel's messages taken and not acknowledged go back to their
        queues. With the broker away they would wait out the visibility timeout (600 s),
        long after their batch was taken for lost, and then be delivered stale (Celery drops
        what it took and had not started yet when its connection went); they are left to the
        process's next channel instead (`Channel.__init__`), once it reaches the broker. A
        message still running then comes back too, as kombu's restore does (a fetch taken up
        is dropped, a stage runs again), unless its task has acknowledged it by then."""
        try:
            super().restore_unacked(client)
        except redis.exceptions.ConnectionError:
            delivered: Any = self._delivered  # kombu's: tag -> message
            with _stranded_lock:
                _stranded.update((str(tag), False) for tag in delivered)
            delivered.clear()
            raise

    def ack(self, delivery_tag: Any) -> None:
        """kombu's; a message of a channel closed while the broker was away (its task ran on)
        is acknowledged by the next channel (Celery would log the failure as critical, and
        the copy would come back)."""
        try:
            super().ack(delivery_tag)
        except redis.exceptions.ConnectionError:
            with _stranded_lock:
                if str(delivery_tag) not in _stranded:
                    raise
                _stranded[str(delivery_tag)] = True


class Channel(kombu_redis.Channel):  # type: ignore[misc]
    QoS = QoS
    body_encoding = None  # type: ignore[assignment]  # msgpack carries bytes: no base64
    _shared: Any = None
    _shared_pool: Any = None

    _put = _in_msgpack(kombu_redis.Channel._put)
    _get = _in_msgpack(kombu_redis.Channel._get)
    _brpop_read = _in_msgpack(kombu_redis.Channel._brpop_read)
    _restore = _in_msgpack(kombu_redis.Channel._restore)
    _do_restore_message = _in_msgpack(kombu_redis.Channel._do_restore_message)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # kombu's pings the broker: it answers
        with _stranded_lock:
            if _stranded or _unkept:
                log.warning("the broker is back: %d message(s) taken when it went away go back "
                            "to their queues, %d acknowledged since", len(_unkept) + sum(
                                not acked for acked in _stranded.values()),
                            sum(_stranded.values()))
            while _stranded:
                tag, acked = _stranded.popitem()
                try:
                    if acked:
                        self.qos._remove_from_indices(tag).execute()
                    else:
                        self.qos.restore_by_tag(tag, leftmost=True)
                except redis.exceptions.ConnectionError:
                    _stranded[tag] = acked
                    raise
            while _unkept:
                tag, (payload, exchange, routing_key) = _unkept.popitem()
                try:  # (a copy the broker did get goes: the message is queued once)
                    with self.conn_or_acquire() as client:
                        pipe = self.qos._remove_from_indices(tag, client.pipeline())
                        self._do_restore_message(payload, exchange, routing_key, pipe, True)
                        pipe.execute()
                except redis.exceptions.ConnectionError:
                    _unkept[tag] = (payload, exchange, routing_key)
                    raise

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        if self._pool is None and self.connection.client is None:
            # A channel closed after its connection: Celery's consumer, meeting a lost
            # broker, collects the connection (which detaches its transport) and then closes
            # it, whose channel then restores its unacknowledged messages with no address to
            # reach. kombu's own transport fails there with an AttributeError, which ends the
            # worker; a connection error lets the consumer connect again, and the process's
            # next channel restores the messages (QoS.restore_unacked).
            raise redis.exceptions.ConnectionError("the broker connection is closed")
        pool = self.pool  # a new one after the channel was closed: a new client for it
        if self._shared_pool is not pool:
            self._shared, self._shared_pool = self._create_client(), pool
        yield self._shared


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    Channel = Channel
