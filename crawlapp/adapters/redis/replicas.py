"""Writes that politeness rests on, acknowledged by replicas before we act on them
(CRAWL_REDIS_REPLICA_ACKS).

Redis replicates asynchronously: a master that dies may take its last writes with it, and
the replica promoted in its place never saw them. Politeness rests on four kinds of write:
a lease (DISPATCH: the host leaves the ready set before its batch is sent), its renewal at
the batch's start, its release (the host's next allowed time, end of request + delay) and a
politeness slot taken or given back. Lost, each breaks it:
  - a lease: the host is still ready on the promoted replica; another batch asks it while
    the first is asking it (two requests at once);
  - a renewal: the lease ends at its first deadline, perhaps while the batch still fetches;
  - a release: the lease stays until its deadline, and an expired lease makes its host ready
    at once (DISPATCH), not a delay after its last request ended: the gap is kept only while
    the lease outlasts the wait for not_before, the request and the delay (the default
    lease, 4 x the fetch timeout, does; a short CRAWL_LEASE_SECONDS or a long Crawl-delay
    does not), and a later time the host asked for (Retry-After, backoff) is lost;
  - a slot: free on the promoted replica (taken), or free at its holder's deadline with no
    time to wait (given back).

A fifth kind is what never losing a URL rests on: URLs queued (ENQUEUE), whose rows the
database already holds as 'queued' with nothing else to queue them again.

So, with `acks` > 0, each such write is followed by `WAIT acks timeout` on the master that
holds its keys, and we act on the write (send the batch, fetch, take the host for released)
only once WAIT answered. WAIT counts the replicas that acknowledged every earlier write *of
the connection it is sent on*, so it goes in the writes' own pipeline, pinned to the node
(target_nodes): redis-py's ClusterPipeline sends each node's commands on one connection, in
order, one round trip for all. A command the pipeline sent again on its own (a connection
lost, a slot moved: redis-py 8.1 counts these in the pipeline's reinitialize_counter) went
on another connection, which its WAIT does not cover; so when that happened, or when the
node of a key after the pipeline is not the one waited on, the write raises TransientError:
the caller acts on nothing (the batch is not sent, not fetched; a release not acknowledged
falls back to its lease's deadline, as for a worker that died). With `acks` = the replicas
per master (one in the tests' cluster), a failover can only promote a replica that
acknowledged, so a write we acted on is never lost with its master.

`acks` is a number, or None (CRAWL_REDIS_REPLICA_ACKS=auto, the default): the replicas
each master has (INFO replication's connected_slaves, read again every REPLICAS_SEEN_FOR
seconds), so that a write is on every replica that could take over, and a master without
replicas (one server, a cluster without replicas, a master promoted whose old master has not
come back as its replica) costs nothing.

WAIT waits at most REPLICA_WAIT_MS. Fewer acknowledgements than asked mean a replica is
down, cut off or far behind: we carry on (a crawl must not stop because a replica did) and
count it (`redis:replica_acks_short`, one per node short) with a warning. A replica that is
down cannot be promoted; one cut off from a live master cannot either; only one alive but
far behind when its master dies can, and the counter says when that risk was taken.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from redis.cluster import ClusterNode, RedisCluster

from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.counters import Counters
from crawlapp.core.errors import TransientError

log = logging.getLogger(__name__)
REPLICA_WAIT_MS = 1000  # longest WAIT for the replicas' acknowledgement
REPLICAS_SEEN_FOR = 10.0  # seconds a master's count of replicas is used before it is read again


class ReplicaAcks:
    """Executes a pipeline of writes, then waits for `acks` replicas (None: all it has) of
    each master written to (0, or no replica: a plain execute)."""

    def __init__(self, client: Client, acks: int | None = 0,
                 counters: Counters | None = None) -> None:
        self.client = client
        self.acks = acks
        self.counters = counters
        self._replicas: dict[str, tuple[float, int]] = {}  # node name -> (read at, replicas)

    def _nodes(self, keys: Iterable[str]) -> dict[str, ClusterNode | None]:
        """The master of each key's slot, by name (a plain Redis: itself, None)."""
        if not isinstance(self.client, RedisCluster):
            return {"": None}
        nodes = (self.client.get_node_from_key(key) for key in keys)
        return {node.name: node for node in nodes}

    def _wanted(self, name: str, node: ClusterNode | None) -> int:
        """Acknowledgements to wait for from the master `node`."""
        if self.acks is not None:
            return self.acks
        read_at, replicas = self._replicas.get(name, (-REPLICAS_SEEN_FOR, 0))
        if time.monotonic() - read_at >= REPLICAS_SEEN_FOR:
            server = self.client if node is None else self.client.get_redis_connection(node)  # type: ignore[union-attr]
            replicas = int(server.info("replication").get("connected_slaves", 0))
            self._replicas[name] = (time.monotonic(), replicas)
        return replicas

    def execute(self, pipe: Pipeline, keys: Iterable[str]) -> list[Any]:
        """`pipe.execute()` of a pipeline whose writes touch `keys` (one per slot written is
        enough), its writes acknowledged by the replicas."""
        keys = list(keys)
        if self.acks == 0 or not keys:
            return pipe.execute()
        nodes = self._nodes(keys)
        wanted = {name: self._wanted(name, node) for name, node in nodes.items()}
        waited = {name: node for name, node in nodes.items() if wanted[name]}
        if not waited:
            return pipe.execute()
        for name, node in waited.items():
            targets = {} if node is None else {"target_nodes": node}
            pipe.execute_command("WAIT", wanted[name], REPLICA_WAIT_MS, **targets)
        resent = getattr(pipe, "reinitialize_counter", 0)
        replies = pipe.execute()
        if (getattr(pipe, "reinitialize_counter", 0) != resent
                or self._nodes(keys).keys() != nodes.keys()):
            raise TransientError("Redis", "a write was sent again or its slot moved: its "
                                 "replicas' acknowledgement is unknown")
        own, acked = replies[:-len(waited)], replies[-len(waited):]
        short = sum(int(n) < wanted[name] for name, n in zip(waited, acked, strict=True))
        if short:
            log.warning("%d Redis master(s) had fewer replicas than they have acknowledge a "
                        "write within %d ms; carrying on", short, REPLICA_WAIT_MS)
            if self.counters is not None:
                self.counters.bump({"redis:replica_acks_short": short})
            self._replicas.clear()  # a replica gone: count them again
        return own
