"""The Redis Cluster client (adapters/redis/client.py) on a real cluster when a master dies:
pipelines and scripts reach its replica once promoted, and the failures meanwhile are the
crawler's TransientError. The writes politeness and the URLs queued rest on wait for a replica
of each master written (adapters/redis/replicas.py)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from crawlapp.adapters.errors import server_error
from crawlapp.adapters.redis.client import Client, connect, ride_out
from crawlapp.adapters.redis.counters import Counters
from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.adapters.redis.local import RedisClusterServers
from crawlapp.adapters.redis.lua import Lua
from crawlapp.adapters.redis.replicas import ReplicaAcks
from crawlapp.adapters.redis.slots import PolitenessSlots
from crawlapp.core.errors import TransientError
from crawlapp.core.records import QueuedURL

INCR = Lua("return redis.call('incr', KEYS[1])  -- KEYS[1]: a counter")


def test_pipelines_reach_a_promoted_replica(redis_cluster_url: str,
                                            redis_cluster: RedisClusterServers) -> None:
    client = connect(redis_cluster_url, cluster=True)
    tags = [f"{{t:{i}}}:n" for i in range(30)]  # every master holds some of them

    def write() -> list[int]:
        pipe = client.pipeline(transaction=False)
        for key in tags:
            INCR(pipe, [key])
        return pipe.execute()

    assert write() == [1] * len(tags)
    port, pid = next(iter(redis_cluster.master_pids().items()))
    os.kill(pid, signal.SIGKILL)
    redis_cluster.nodes[port].wait()
    killed, failures = time.monotonic(), []
    while time.monotonic() - killed < 30:
        try:
            replies = write()
            break
        except Exception as exc:  # noqa: BLE001 - each must be transient
            failures.append(exc)
            time.sleep(0.2)
    else:
        raise AssertionError(f"no write reached the promoted replica: {failures[-1]!r}")
    assert failures and all(isinstance(server_error(exc), TransientError) for exc in failures)
    # at least once: a pipeline sent again (redis-py's cluster client resends the whole stack
    # after a connection error) counts again on the masters that were up; a count the dead
    # master had not replicated starts again
    assert min(replies) >= 1
    assert len(redis_cluster.master_pids()) == 3


def test_a_write_ridden_out_waits_for_the_promotion_and_succeeds(
        redis_cluster_url: str, redis_cluster: RedisClusterServers) -> None:
    """What a fetch must write once it has its answers: one call, no failure raised, done
    within seconds of the promotion (node timeout 2 s and an election)."""
    client = connect(redis_cluster_url, cluster=True)
    tags = [f"{{r:{i}}}:n" for i in range(30)]
    tries: list[float] = []

    def write() -> list[int]:
        tries.append(time.monotonic())
        pipe = client.pipeline(transaction=False)
        for key in tags:
            INCR(pipe, [key])
        return pipe.execute()

    port, pid = next(iter(redis_cluster.master_pids().items()))
    os.kill(pid, signal.SIGKILL)
    redis_cluster.nodes[port].wait()
    killed = time.monotonic()
    # at least once: a try that failed on the dead master's slots counted on the others
    # (redis-py's cluster pipeline sends every node's share before it reads a reply)
    assert min(ride_out(client, write, 30, "a test's write")) >= 1
    assert len(tries) > 1 and time.monotonic() - killed < 15
    assert max(b - a for a, b in zip(tries, tries[1:], strict=False)) < 1.5  # capped backoff


def _waits(cluster: RedisClusterServers) -> dict[int, int]:
    """Port -> WAIT commands each master has run so far."""
    def calls(port: int) -> int:
        stat = cluster.info(port, b"INFO commandstats").get("cmdstat_wait", "calls=0")
        return int(stat.split(",")[0].removeprefix("calls="))
    return {port: calls(port) for port in cluster.master_pids()}


def _frontier(client: Client, acks: ReplicaAcks) -> RedisFrontier:
    """A frontier of 8 shards, 40 hosts queued."""
    frontier = RedisFrontier(client, "t", 8, acks)
    frontier.add([QueuedURL(f"http://h{i}.test/", 0, 0.5) for i in range(40)], 0.0)
    return frontier


@pytest.mark.parametrize("wanted", [1, None], ids=["one", "auto"])
def test_queueing_leases_and_releases_wait_for_a_replica_of_each_master_written(
        redis_cluster_url: str, redis_cluster: RedisClusterServers, wanted: int | None) -> None:
    client = connect(redis_cluster_url, cluster=True)
    acks = ReplicaAcks(client, wanted, Counters(client, "t"))
    written = {client.get_node_from_key(f"{{t:f:{shard}}}").port for shard in range(8)}
    before_add = _waits(redis_cluster)
    frontier = _frontier(client, acks)
    before = _waits(redis_cluster)
    assert {port: before[port] - before_add[port] for port in before} == {
        port: int(port in written) for port in before}  # URLs queued: as for a lease
    leases, _ = frontier.dispatch(range(8), 1.0, max_hosts=10, lease_seconds=60.0, max_leased=100)
    after_dispatch = _waits(redis_cluster)
    assert sum(map(len, leases.values())) == 40
    assert {port: after_dispatch[port] - before[port] for port in before} == {
        port: int(port in written) for port in before}  # one WAIT per master written
    slots = PolitenessSlots(client, "t", acks)
    assert slots.take(["a.test", "b.test"], "me", 1.0, 60.0) == {"a.test": 0.0, "b.test": 0.0}
    slots.give_back({"a.test": 5.0, "b.test": 5.0}, "me")
    assert Counters(client, "t").read().get("redis:replica_acks_short", 0) == 0
    assert sum(_waits(redis_cluster).values()) > sum(after_dispatch.values())


def test_a_replica_that_does_not_acknowledge_is_counted_and_the_crawl_goes_on(
        redis_cluster_url: str, redis_cluster: RedisClusterServers) -> None:
    """A replica stopped: the dispatch waits its second, counts the master short and leases."""
    client = connect(redis_cluster_url, cluster=True)
    frontier = _frontier(client, ReplicaAcks(client, 1, Counters(client, "t")))
    master = client.get_node_from_key("{t:f:0}").port
    link = redis_cluster.info(master, b"INFO replication")["slave0"]
    replica = int(dict(f.split("=", 1) for f in link.split(","))["port"])
    os.kill(redis_cluster.nodes[replica].pid, signal.SIGSTOP)
    try:
        leases, _ = frontier.dispatch([0], 1.0, max_hosts=10, lease_seconds=60.0, max_leased=100)
    finally:
        os.kill(redis_cluster.nodes[replica].pid, signal.SIGCONT)
    assert leases[0]  # leased and handed out all the same
    assert Counters(client, "t").read()["redis:replica_acks_short"] == 1
