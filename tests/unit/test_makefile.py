"""`make test` and `make demo` need no docker client and start no shared server: they start a
redis-server of their own and create their own Postgres database (tests/conftest.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("target", ["test", "test-integration", "test-e2e", "demo"])
def test_target_needs_no_docker_and_starts_no_shared_server(target: str) -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    dry = subprocess.run([make, "-n", target], cwd=ROOT, capture_output=True, text=True,
                         check=False)
    assert dry.returncode == 0, dry.stderr
    for needle in ("docker", "compose", "redis-server --daemonize", "pg_ctlcluster"):
        assert needle not in dry.stdout, f"make {target} runs {needle!r}:\n{dry.stdout}"


def test_compose_config_stays_an_extra_check() -> None:
    text = (ROOT / "Makefile").read_text()
    assert "compose-config:" in text
    prerequisites = {line.split(":", 1)[0]: line.split(":", 1)[1].split()
                     for line in text.splitlines() if line and not line[0].isspace()
                     and ":" in line and "=" not in line.split(":", 1)[0]}
    assert "compose-config" not in prerequisites["test"]
