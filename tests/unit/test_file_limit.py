"""A fetch process raises its soft limit on open files (a socket per host it fetches or keeps),
and keeps fewer connections where it cannot."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from crawlapp.adapters import http

SHOW = ("import resource; from crawlapp.adapters.http import files_for_connections as f; "
        "print(f(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])")


def _run_with_limits(soft: int, hard: int) -> list[int]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    out = subprocess.run([sys.executable, "-c", SHOW], preexec_fn=limit, check=True,
                         capture_output=True, text=True).stdout
    return [int(n) for n in out.split()]


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"this machine's hard limit ({hard}) leaves nothing to raise")
    want = http.WANTED_FILES if hard == resource.RLIM_INFINITY else min(hard, http.WANTED_FILES)
    assert _run_with_limits(1024, hard) == [want, want]


def test_a_hard_limit_is_kept() -> None:
    assert _run_with_limits(512, 512) == [512, 512]


def test_fewer_files_keep_fewer_connections(caplog: pytest.LogCaptureFixture) -> None:
    assert http._kept_origins(65536) == http.MAX_ORIGINS
    assert not caplog.records
    assert http._kept_origins(1024) == 256
    assert "keeps the connections of 256 hosts" in caplog.text
