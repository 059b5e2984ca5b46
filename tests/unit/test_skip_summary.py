"""tests/skip_summary.py: a run ends with its skipped tests grouped by reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_skips_are_grouped_by_reason_with_their_files(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text(
        "import pytest\n"
        "def test_one(): pytest.skip('no Postgres server')\n"
        "def test_two(): pytest.skip('no Postgres server')\n"
        "def test_three(): pytest.skip('Chromium is not installed')\n"
        "def test_four(): pass\n")
    (tmp_path / "test_b.py").write_text(
        "import pytest\n"
        "@pytest.mark.skip(reason='no Postgres server')\n"
        "def test_five(): pass\n")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.skip_summary",
         "-p", "no:cacheprovider", "test_a.py", "test_b.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stdout + run.stderr
    section = run.stdout.split("skipped, by reason", 1)[1].splitlines()[1:3]
    assert section == ["   3 skipped: no Postgres server  [test_a.py, test_b.py]",
                       "   1 skipped: Chromium is not installed  [test_a.py]"]
