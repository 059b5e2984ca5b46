"""The layering of crawlapp/ (pyproject.toml [tool.importlinter], README "Code map")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    assert "Only the database adapter imports SQLAlchemy KEPT" in result.stdout


def test_the_library_does_not_import_the_test_web() -> None:
    found = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "crawlapp").rglob("*.py")
                   if "testweb" in p.read_text(encoding="utf-8"))
    assert found == []
