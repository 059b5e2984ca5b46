"""Known vulnerabilities in the pinned dependencies, by pip-audit; skipped with the reason
when its vulnerability service cannot be reached or answers for none of the pins."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"
OFFLINE_SIGNS = ("ConnectionError", "ConnectTimeout", "ReadTimeout", "NameResolutionError",
                 "Max retries exceeded")


def test_pinned_dependencies_have_no_known_vulnerabilities() -> None:
    audit = shutil.which("pip-audit", path=str(Path(sys.executable).parent))
    assert audit, "pip-audit is installed with the dev extras"
    run = subprocess.run([audit, "-r", str(CONSTRAINTS), "--no-deps", "--disable-pip",
                          "--timeout", "10", "--progress-spinner", "off", "-f", "json"],
                         capture_output=True, text=True, timeout=300, check=False)
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        if any(sign in run.stderr for sign in OFFLINE_SIGNS):
            pytest.skip("pip-audit skipped: its vulnerability service cannot be reached")
        raise AssertionError(run.stderr) from None
    deps = report["dependencies"]
    audited = [d for d in deps if "skip_reason" not in d]
    if not audited:
        pytest.skip(f"pip-audit skipped: the vulnerability service knows none of the "
                    f"{len(deps)} pinned packages (a registry mirror without advisories?)")
    vulnerable = {d["name"]: [v["id"] for v in d["vulns"]] for d in audited if d["vulns"]}
    assert vulnerable == {}, vulnerable
