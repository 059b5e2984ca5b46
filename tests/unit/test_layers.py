"""The layering of crawlapp/ (pyproject.toml [tool.importlinter], README "Code map"), and no
import cycle anywhere in the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("crawlapp", "testweb", "tasks", "bench", "tests")


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


def test_no_module_imports_itself_through_others() -> None:
    """No import cycle among the repository's modules (imports for type checking and in
    function bodies included): each package's modules stand in layers too."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    ours = {module for module in graph.modules if module.split(".")[0] in PACKAGES}
    cycles = [" -> ".join((module, *graph.find_shortest_chain(importer=imported, imported=module)))
              for module in sorted(ours)
              for imported in sorted(graph.find_modules_directly_imported_by(module) & ours)
              if graph.chain_exists(importer=imported, imported=module)]
    assert cycles == []
