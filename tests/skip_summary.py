"""A pytest plugin (loaded by tests/conftest.py): at the end of a run, the groups of skipped
tests, one line per reason with how many and in which files, so that "3 skipped" says what
was never tested and why (Postgres, RabbitMQ, Chromium, a Redis Cluster...)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)  # the outermost: after pytest's own summary
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Iterator[None]:
    yield
    groups: defaultdict[str, list[str]] = defaultdict(list)
    for report in terminalreporter.stats.get("skipped", []):
        if isinstance(report.longrepr, tuple):
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
            groups[reason].append(report.nodeid.split("::")[0])
    if not groups:
        return
    terminalreporter.section("skipped, by reason", sep="-")
    for reason, paths in sorted(groups.items(), key=lambda group: -len(group[1])):
        files = sorted(set(paths))
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        terminalreporter.write_line(f"{len(paths):4d} skipped: {reason}  [{shown}]")
