"""The Redis Cluster client (adapters/redis/client.py) on a real cluster when a master dies:
pipelines and scripts reach its replica once promoted, and the failures meanwhile are the
crawler's TransientError."""

from __future__ import annotations

import os
import signal
import time

from crawlapp.adapters.errors import transient
from crawlapp.adapters.redis.client import connect
from crawlapp.adapters.redis.local import RedisClusterServers
from crawlapp.adapters.redis.lua import Lua

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
    assert failures and all(transient(exc) is not None for exc in failures)
    assert set(replies) <= {1, 2}  # a count the dead master had not replicated starts again
    assert len(redis_cluster.master_pids()) == 3
