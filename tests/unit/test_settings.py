"""Settings: each variable parsed, a bad value named in one line."""

from __future__ import annotations

from dataclasses import Field, fields
from typing import Any

import certifi
import pytest

from crawlapp.core.settings import Settings, SettingsError, load_settings
from crawlapp.core.settings_doc import DOC_PATH

# Other settings every sample is read with, so that a sample passes the checks across settings
# (a cluster apart from the broker, both Redis roles apart, a bucket for an S3 endpoint).
BASE = {"CRAWL_REDIS_URL": "redis://hot.test:6379/0", "CRAWL_DEDUP_REDIS_URL": "redis://grow.test:6379/0",
        "S3_BUCKET": "bodies"}
# Each setting: a value it takes (not its default), and one it refuses (None: any text).
SAMPLES = {
    "data_dir": ("/srv/crawl", None),
    "database_url": ("postgresql://crawl@db.test/crawl", "mysql://db.test/crawl"),
    "s3_endpoint_url": ("http://s3.test:9000", "s3.test"),
    "s3_bucket": ("pages", None),
    "broker_url": ("amqp://mq.test//", "http://mq.test"),
    "redis_url": ("redis://other.test:6379/1", "http://redis.test"),
    "dedup_redis_url": ("redis://dedup.test:6379/2", "redis.test"),
    "redis_cluster": ("true", "maybe"),
    "dedup_redis_cluster": ("true", "maybe"),
    "redis_parts": ("64", "0"),
    "redis_replica_acks": ("2", "17"),
    "redis_ride_out": ("5", "-1"),
    "redis_prefix": ("crawl2", None),
    "user_agent": ("testbot/1.0", None),
    "from_address": ("ops@example.com", "ops"),
    "allowed_networks": ("10.0.0.0/8", "10.0.0.0/33"),
    "ca_bundle": (certifi.where(), "/nonexistent/roots.pem"),
    "tls_verify": ("false", "maybe"),
    "http2": ("true", "sometimes"),
    "max_depth": ("9", "-1"),
    "scope": ("domain", "planet"),
    "scope_include": ("http://(com,example,)/docs", "ftp://example.com"),
    "scope_exclude": ("re:/private/", "re:("),
    "scope_hops": ("1", "101"),
    "shards": ("8", "0"),
    "default_delay": ("2.5", "soon"),
    "max_crawl_delay": ("10", "86401"),
    "batch_size": ("50", "1001"),
    "urls_per_lease": ("4", "0"),
    "max_batches_in_flight": ("3", "0"),
    "max_leased_per_shard": ("99", "1.5"),
    "warm_hosts": ("0", "-1"),
    "warm_seconds": ("30", "0"),
    "fetch_timeout": ("12", "0"),
    "lease_seconds": ("300", "0.5"),
    "max_body_bytes": ("2048", "1023"),
    "max_url_length": ("512", "31"),
    "max_links_per_page": ("10", "-1"),
    "robots_ttl": ("3600", "0"),
    "worker_concurrency": ("1000", "0"),
    "fetch_concurrency": ("4", "0"),
    "fetch_processes": ("50", "65"),
    "dispatch_interval": ("0.5", "0"),
    "beat_dispatch": ("0", "3601"),
    "dispatch_lookahead": ("2", "61"),
    "idle_horizon": ("5", "-1"),
    "recrawl_window": ("600", "30"),
    "recrawl_policy": ("adaptive", "fastest"),
    "recrawl_min_interval": ("5", "0"),
    "recrawl_max_interval": ("7200", "0"),
    "recrawl_first_interval": ("120", "0"),
    "recrawl_share": ("0.5", "2"),
    "recrawl_budget": ("100", "0"),
    "recrawl_rules": ("/dev/null", "/nonexistent/recrawl-rules"),
    "change_ignore": (r"\d+ views", "(("),
    "max_backoff": ("60", "-1"),
    "max_retry_after": ("3600", "a day"),
    "throttle_seconds": ("30", "-1"),
    "throttle_max": ("3600", "-1"),
    "forgive_after": ("60", "-1"),
    "robots_retry": ("120", "-1"),
    "park_after": ("3", "0"),
    "park_seconds": ("60", "0"),
    "max_retries": ("5", "101"),
    "give_up_after": ("5", "0"),
    "max_pages_per_host": ("10", "0"),
    "near_duplicate_bits": ("1", "4"),
    "trap_pattern_cap": ("200", "0"),
    "max_redirects": ("2", "21"),
    "archive_answer_bytes": ("0", "-1"),
    "archive_unstored": ("true", "maybe"),
    "expected_urls": ("1000", "0"),
    "delay_margin": ("0", "11"),
    "bloom_fp_rate": ("0.01", "0.6"),
    "fetch_binaries": ("true", "maybe"),
    "dns_ttl": ("60", "0"),
    "dns_negative_ttl": ("5", "0"),
    "resolve": ("a.test=127.0.0.2", "a.test"),
    "politeness_key": ("ip", "port"),
    "task_events": ("true", "maybe"),
    "quorum_queues": ("yes", "maybe"),
    "metrics_port": ("9100", "0"),
    "metrics_addr": ("0.0.0.0", None),
    "render": ("true", "maybe"),
    "render_hosts": ("*.example.com", "a b"),
    "render_timeout": ("30", "0.1"),
    "render_recycle": ("50", "0"),
    "render_max_memory_mb": ("512", "63"),
    "render_other_hosts": ("cdn.example.com", "cdn.example.com:0"),
    "render_store_raw": ("on", "maybe"),
    "render_min_text": ("50", "-1"),
    "render_processes": ("2", "0"),
    "chromium_path": ("/usr/bin/chromium", None),
    "priority_weights": ("1,0,0", "0,0,0"),
    "authority_interval": ("60", "0"),
}


@pytest.mark.parametrize(("env", "field", "value"), [
    ({"CRAWL_FROM": "ops@example.com"}, "from_address", "ops@example.com"),
    ({}, "from_address", None),
    ({"CRAWL_FETCH_BINARIES": "yes"}, "fetch_binaries", True),
    ({"CRAWL_FETCH_BINARIES": "0"}, "fetch_binaries", False),
    ({}, "fetch_binaries", False),
    ({"CRAWL_DNS_TTL": "60"}, "dns_ttl", 60.0),
])
def test_values(env: dict[str, str], field: str, value: object) -> None:
    assert getattr(load_settings(env), field) == value


@pytest.mark.parametrize(("env", "message"), [
    ({"CRAWL_FROM": "not an address"}, "CRAWL_FROM='not an address': expected an e-mail"),
    ({"CRAWL_FROM": "a@b.com\r\nX-Evil: 1"}, "CRAWL_FROM="),
    ({"CRAWL_FETCH_BINARIES": "maybe"}, "CRAWL_FETCH_BINARIES='maybe': expected true or false"),
    ({"CRAWL_DNS_TTL": "0"}, "CRAWL_DNS_TTL='0': must be between 1 and 86400"),
])
def test_bad_values_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(env)
    assert str(err.value).startswith(message)


def test_every_setting_has_samples() -> None:
    assert list(SAMPLES) == [f.name for f in fields(Settings)]


@pytest.mark.parametrize("f", fields(Settings), ids=lambda f: f.name)
def test_every_setting_is_documented_and_parsed(f: Field[Any]) -> None:
    env, (good, bad) = f.metadata["env"], SAMPLES[f.name]
    assert f"| `{env}` |" in DOC_PATH.read_text()
    value = getattr(load_settings(BASE | {env: good}), f.name)
    assert value == f.metadata["convert"](good) != getattr(load_settings(BASE), f.name)
    if bad is not None:
        with pytest.raises(SettingsError) as err:
            load_settings(BASE | {env: bad})
        assert str(err.value).startswith(f"{env}={bad!r}: ")


def test_change_ignore_none_counts_every_character() -> None:
    assert load_settings({"CRAWL_CHANGE_IGNORE": "None"}).change_ignore is None
    ignore = load_settings({"CRAWL_CHANGE_IGNORE": "Served at"}).change_ignore
    assert ignore is not None and ignore.strip(b"served at 11:22") == b"\x00 11:22"
    with pytest.raises(SettingsError, match="RE2 reads.*lookahead|RE2 reads.*perl"):
        load_settings({"CRAWL_CHANGE_IGNORE": "a(?!b)"})  # no lookaround


def test_binaries_setting_reaches_the_trap_rules() -> None:
    assert load_settings({}).traps.skip_binaries
    assert not load_settings({"CRAWL_FETCH_BINARIES": "true"}).traps.skip_binaries


def test_render_timeout_must_fit_in_a_lease_only_when_rendering() -> None:
    short_lease = {"CRAWL_LEASE_SECONDS": "4", "CRAWL_RENDER_TIMEOUT": "15"}
    assert not load_settings(short_lease).render
    with pytest.raises(SettingsError, match="CRAWL_RENDER_TIMEOUT"):
        load_settings(short_lease | {"CRAWL_RENDER": "true"})


def test_redis_cluster_settings() -> None:
    nodes = "redis://10.0.0.1:7000,redis://10.0.0.2:7000"
    broker = {"CELERY_BROKER_URL": "redis://10.0.0.9:6379/0"}
    both = load_settings({**broker, "CRAWL_REDIS_URL": nodes, "CRAWL_REDIS_CLUSTER": "true"})
    assert both.redis_cluster and both.dedup_redis_cluster and both.dedup_redis_url == nodes
    apart = load_settings({**broker, "CRAWL_REDIS_URL": nodes, "CRAWL_REDIS_CLUSTER": "true",
                           "CRAWL_DEDUP_REDIS_URL": "redis://10.0.0.3:6379/0",
                           "CRAWL_DEDUP_CLUSTER": "false"})
    assert apart.redis_cluster and not apart.dedup_redis_cluster
    assert not load_settings(broker).redis_cluster
    with pytest.raises(SettingsError, match="CRAWL_REDIS_URL: several nodes"):
        load_settings({**broker, "CRAWL_REDIS_URL": nodes})
    with pytest.raises(SettingsError, match="CRAWL_DEDUP_CLUSTER: differs"):
        load_settings({**broker, "CRAWL_REDIS_URL": nodes, "CRAWL_REDIS_CLUSTER": "true",
                       "CRAWL_DEDUP_CLUSTER": "false"})
    with pytest.raises(SettingsError, match="cannot be the Celery broker"):
        load_settings({"CELERY_BROKER_URL": "redis://10.0.0.1:7000",
                       "CRAWL_REDIS_CLUSTER": "true"})
