"""RabbitMQ as the broker: the five-stage chain, beat and the dispatcher on `amqp://`, with
classic and quorum queues, and a crawl whose broker connections are all cut mid-crawl.

Each test runs in a RabbitMQ virtual host of its own, made with rabbitmqctl and deleted
afterwards (the tests touch nothing else on the broker). Skipped, with the reason, where no
RabbitMQ answers on 127.0.0.1:5672 or rabbitmqctl cannot manage it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import crawl_env, rabbitmqctl
from tests.e2e.helpers import by_name, crawl_web, crawlctl, hosts_file_namespace, named
from testweb.serverlog import fetched_urls, load, longest_quiet, repeats, summary
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
DELAY = 0.2
SPEC = WebSpec(hosts=6, pages_per_host=8, port=0)


def _crawl(tmp_path: Path, redis_url: str, broker: str, during=lambda crawl: None,  # type: ignore[no-untyped-def]
           names: bool = False, **extra: str
           ) -> tuple[dict[str, int], set[str], set[str], dict[str, object]]:
    """The server log's verdict (with `repeats`), the pages expected and fetched, stats; with
    `names`, the hosts are names in a hosts file of the test's own (kept a second in the DNS
    cache)."""
    env = crawl_env(tmp_path, redis_url, CELERY_BROKER_URL=broker,
                    CRAWL_DEFAULT_DELAY=str(DELAY), **extra)
    spec = named(SPEC) if names else SPEC
    wrap = hosts_file_namespace(tmp_path, Web(spec).name_addresses()) if names else []
    web, requests, _ = crawl_web(tmp_path, {**env, "CRAWL_DNS_TTL": "1"} if names else env,
                                 spec, during=during, wrap=wrap)
    requests = by_name(requests, web)
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    verdict = summary(requests, web, DELAY) | {"repeats": repeats(requests)}
    return verdict, web.expected_pages(5), set(fetched_urls(requests)), stats


@pytest.mark.parametrize("quorum", [False, True], ids=["classic", "quorum"])
def test_a_crawl_on_rabbitmq(tmp_path: Path, redis_url: str, amqp_url: str,
                             quorum: bool) -> None:
    verdict, expected, fetched, stats = _crawl(
        tmp_path, redis_url, amqp_url, CRAWL_QUORUM_QUEUES="true" if quorum else "false")
    assert verdict["gap_violations"] == 0 and verdict["overlaps"] == 0, verdict
    assert verdict["duplicate_fetches"] == 0, verdict
    assert expected <= fetched
    # stats read the queue depths from RabbitMQ: every crawl queue, empty once idle
    assert stats["queues"] and set(stats["queues"].values()) == {0}, stats["queues"]
    vhost = amqp_url.rsplit("/", 1)[1]
    listed = rabbitmqctl("list_queues", "-p", vhost, "name", "type", "--formatter", "json")
    types = {q["name"]: q["type"] for q in json.loads(listed.stdout)}
    assert set(stats["queues"]) <= set(types)
    assert {types[name] for name in stats["queues"]} == {"quorum" if quorum else "classic"}


@pytest.mark.parametrize("names", [False, True], ids=["addresses", "names"])
def test_broker_connections_cut_mid_crawl(tmp_path: Path, redis_url: str,
                                          amqp_url: str, names: bool) -> None:
    """Every connection to the crawl's virtual host is closed twice while it runs: the
    workers, beat and the dispatcher reconnect, and no URL is lost or fetched twice."""
    vhost = amqp_url.rsplit("/", 1)[1]
    log = tmp_path / "requests.jsonl"
    cuts = []

    def cut(crawl: subprocess.Popen[bytes]) -> None:
        for _ in range(2):
            deadline = time.time() + 60
            while time.time() < deadline and (not log.exists() or log.stat().st_size < 2000
                                              * (len(cuts) + 1)):
                time.sleep(0.2)
            closed = rabbitmqctl("close_all_connections", "--vhost", vhost, "test: cut")
            assert closed.returncode == 0, closed.stderr
            cuts.append(time.time())
            time.sleep(2)

    verdict, expected, fetched, _ = _crawl(tmp_path, redis_url, amqp_url, during=cut,
                                           names=names)
    assert len(cuts) == 2
    quiet = longest_quiet(load(str(log)), cuts[0])
    print(f"broker cut: {verdict['repeats']} repeats, longest quiet {quiet:.1f} s after "
          "the first cut")
    # A stage whose acknowledgement was cut runs again (its message redelivered); a fetch
    # redelivered while taken up is dropped: no page is fetched again. Requests go on within
    # seconds: a fetch worker whose consumer waited on a basic.qos reply its task thread had
    # read stood still until RabbitMQ closed the connection for missed heartbeats, 12-16 s
    # (app/config.py: worker_enable_prefetch_count_reduction).
    assert verdict["repeats"] == 0 and quiet <= 8, (verdict, quiet)
    assert verdict["gap_violations"] == 0 and verdict["overlaps"] == 0, verdict
    assert expected <= fetched, sorted(expected - fetched)[:10]
