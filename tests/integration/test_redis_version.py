"""The start-time check of the Redis version (adapters/redis/client.py): a server, or any node
of a cluster, older than OLDEST_REDIS is refused with the version found and the one needed,
on the tests' real servers with the bar raised above them."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from crawlapp import app
from crawlapp.adapters.context import Context
from crawlapp.adapters.redis import client as redis_client
from crawlapp.adapters.redis.client import OLDEST_REDIS, connect
from crawlapp.adapters.redis.local import RedisClusterServers, free_port
from crawlapp.core.errors import InputError, ServerTooOld
from crawlapp.core.settings import load_settings

pytestmark = pytest.mark.integration


def _version_of(url: str) -> str:
    return str(redis.Redis.from_url(url).info("server")["redis_version"])


def test_a_server_as_new_as_the_oldest_accepted_is_taken(redis_url: str) -> None:
    found = _version_of(redis_url)
    assert tuple(map(int, found.split(".")[:3])) >= OLDEST_REDIS
    assert connect(redis_url, cluster=False).ping()


def test_an_older_server_is_refused_naming_both_versions(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _version_of(redis_url)
    monkeypatch.setattr(redis_client, "OLDEST_REDIS", (99, 0, 0))
    with pytest.raises(ServerTooOld) as refused:
        connect(redis_url, cluster=False)
    assert isinstance(refused.value, InputError)  # crawlctl: one line, exit status 2
    assert str(refused.value) == (f"Redis at {redis_url} is version {found}; the crawler needs "
                                  "Redis 99.0.0 or newer")


def test_every_node_of_a_cluster_is_checked(
        redis_cluster_url: str, redis_cluster: RedisClusterServers,
        monkeypatch: pytest.MonkeyPatch) -> None:
    found = _version_of(f"redis://127.0.0.1:{redis_cluster.ports[0]}")
    assert connect(redis_cluster_url, cluster=True).ping()
    monkeypatch.setattr(redis_client, "OLDEST_REDIS", (99, 0, 0))
    with pytest.raises(ServerTooOld, match=f"is version {found}; the crawler needs Redis 99"):
        connect(redis_cluster_url, cluster=True)


def test_a_server_that_does_not_answer_yet_fails_at_its_first_command() -> None:
    client = connect(f"redis://127.0.0.1:{free_port()}/0", cluster=False)
    with pytest.raises(redis.ConnectionError):
        client.ping()


def test_a_worker_stops_at_its_start_on_an_older_server(
        redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    ctx = Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url}))
    monkeypatch.setattr(app, "get_context", lambda: ctx)
    monkeypatch.setattr(redis_client, "OLDEST_REDIS", (99, 0, 0))
    with pytest.raises(SystemExit) as stopped:
        app._check_layout()
    assert stopped.value.code == 1
    assert "the crawler needs Redis 99.0.0 or newer" in caplog.text
