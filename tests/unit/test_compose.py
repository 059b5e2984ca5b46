"""docker/: the compose file is valid against the Compose Specification's JSON schema (offline:
the schema is vendored in docker/schema/), every compose service runs something that exists in
the project, the fetch services cover every shard, and the monitoring files point at what the
fleet serves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from crawlapp.app import app
from crawlapp.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
PIPELINE_QUEUES = {"parse", "dedup", "store", "links", "control"}


def _env_example() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (DOCKER / ".env.example").read_text().splitlines()
             if line.strip() and not line.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


ENV = _env_example()


def _interpolate(value: str) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error}, with the example settings."""
    def one(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if name in ENV:
            return ENV[name]
        assert op == ":-", f"${{{name}}} has no value in docker/.env.example"
        return arg

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value).replace("$$", "$")


def _services() -> dict[str, dict[str, Any]]:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]


def _interpolated(value: Any) -> Any:
    """The compose model as `docker compose config` validates it: variables replaced."""
    if isinstance(value, dict):
        return {k: _interpolated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolated(v) for v in value]
    return _interpolate(value) if isinstance(value, str) else value


def _schema_errors(model: dict[str, Any]) -> list[str]:
    import jsonschema

    schema = json.loads((DOCKER / "schema" / "compose-spec.json").read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in validator.iter_errors(model)]


def test_compose_file_is_valid_against_the_compose_specification() -> None:
    model = _interpolated(yaml.safe_load((DOCKER / "compose.yaml").read_text()))
    assert _schema_errors(model) == []


def test_the_schema_check_finds_mistakes() -> None:
    model = _interpolated(yaml.safe_load((DOCKER / "compose.yaml").read_text()))
    model["services"]["redis"]["restrat"] = "always"
    model["services"]["beat"]["depends_on"] = {"redis": {"condition": "service_happy"}}
    model["volumes"]["pgdata"] = {"driver": 3}
    errors = " | ".join(_schema_errors(model))
    for where in ("services.redis", "services.beat.depends_on",
                  "volumes.pgdata.driver"):
        assert where in errors, errors


def _ours(service: dict[str, Any]) -> bool:
    return service.get("image") in ("crawlapp:latest", "crawlapp-render:latest")


def _option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name:
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _check_crawlctl(args: list[str]) -> None:
    """The subcommand path exists and click accepts its options (nothing runs)."""
    command: click.Command = cli
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        assert args[0] in command.commands, f"crawlctl has no command {args[0]!r}"
        command, args = command.commands[args[0]], args[1:]
    assert not isinstance(command, click.Group), "a crawlctl group needs a subcommand"
    command.make_context("crawlctl", list(args))


def _check_celery(args: list[str], queues: set[str]) -> set[str]:
    """-A names our app, the subcommand is one we run, -Q names declared queues."""
    assert _option(args, "-A") == "crawlapp.app" and app.main == "crawlapp"
    sub = args[args.index("-A") + 2]
    assert sub in {"worker", "beat", "flower"}, sub
    consumed = set((_option(args, "-Q") or "").split(",")) - {""}
    assert consumed <= queues, consumed - queues
    if sub == "worker":
        assert consumed, "every worker names its queues"
    return consumed


@pytest.fixture(scope="module")
def queues() -> set[str]:
    shards = int(ENV["CRAWL_SHARDS"])
    return ({f"fetch.{n}" for n in range(shards)} | {f"render.{n}" for n in range(shards)}
            | PIPELINE_QUEUES)


def test_every_command_refers_to_something_that_exists(queues: set[str]) -> None:
    consumed: set[str] = set()
    services = _services()
    for name, service in services.items():
        command = [_interpolate(str(a)) for a in service.get("command") or []]
        if _ours(service):
            build = service["build"]
            assert (DOCKER / build["context"] / build["dockerfile"]).is_file(), name
            assert command, f"{name}: runs the image's default command"
            if command[0] == "crawlctl":
                _check_crawlctl(command[1:])
            else:
                assert command[0] == "celery", f"{name}: {command[0]}"
                consumed |= _check_celery(command, queues)
        for volume in service.get("volumes") or []:
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (DOCKER / source).exists(), f"{name}: {source}"
    assert consumed == queues, f"queues nobody consumes: {queues - consumed}"
    bucket = " ".join(services["minio-bucket"]["command"])
    assert "$$S3_BUCKET" in bucket and ENV["S3_BUCKET"]


def test_one_beat_and_basic_auth_on_flower() -> None:
    services = _services()
    beats = [n for n, s in services.items() if "beat" in (s.get("command") or [])]
    assert beats == ["beat"] and "deploy" not in services["beat"]
    flower = " ".join(services["flower"]["command"])
    assert "--basic-auth=${FLOWER_USER:?" in flower and "${FLOWER_PASSWORD:?" in flower
    assert {"prometheus", "grafana"} == {n for n, s in services.items()
                                         if "monitoring" in s.get("profiles", [])}
    for name in ("postgres", "redis", "minio", "fetch-a", "fetch-b", "pipeline", "metrics",
                 "flower", "prometheus", "grafana"):
        assert "healthcheck" in services[name], name


def test_dockerfile_copies_what_exists_and_runs_as_non_root() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    for line in text.splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
    assert "-c constraints.txt" in text and re.search(r"^USER (?!root)\w+", text, re.M)


def test_prometheus_scrapes_the_exporter_and_flower() -> None:
    config = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
    services = _services()
    targets = {t for job in config["scrape_configs"] for s in job["static_configs"]
               for t in s["targets"]}
    assert targets == {"metrics:9108", "flower:5555"}
    assert "9108" in " ".join(services["metrics"]["command"])
    assert "--port=5555" in services["flower"]["command"]


def test_dashboard_queries_only_series_that_are_exported() -> None:
    from crawlapp.observe.metrics import Snapshot, families

    exported = set()
    for family in families(Snapshot({}, [], 0, {}, {})):
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
        exported |= {family.name + s for s in suffixes.get(family.type, [""])}
    dashboard = json.loads((DOCKER / "grafana" / "dashboards" / "crawl.json").read_text())
    used = {name for panel in dashboard["panels"] for target in panel["targets"]
            for name in re.findall(r"\b((?:crawl|flower)_\w+)", target["expr"])}
    assert {n for n in used if n.startswith("crawl_")} <= exported, used - exported
    assert exported - {"crawl_fetch_retries_total", "crawl_parse_rejected_total",
                       "crawl_archive_truncated_total",
                       "crawl_stored_bodies_total"} <= used
