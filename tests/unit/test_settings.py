"""Settings: each variable parsed, a bad value named in one line."""

from __future__ import annotations

import pytest

from crawlapp.core.settings import SettingsError, load_settings


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
