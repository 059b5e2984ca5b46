"""mypy, strict, on the core, the stages, the database adapter and the operations
(pyproject.toml [tool.mypy])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_core_the_stages_the_database_and_the_operations_type_check_strictly() -> None:
    venv = Path(sys.executable).parent
    result = subprocess.run([str(venv / "mypy"), "--cache-dir", str(venv.parent / ".mypy_cache"),
                             "-p", "crawlapp.core", "-p", "crawlapp.stages",
                             "-p", "crawlapp.adapters.db", "-p", "crawlapp.ops"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
