"""The report of the last `crawlctl verify`, kept for `crawlctl stats` and the metrics:
`P:verify:last`, one JSON string, replaced by each run."""

from __future__ import annotations

import json
from typing import Any

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client


class VerifyReport:
    """One string key."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.VERIFY.of(prefix)

    def save(self, report: dict[str, Any]) -> None:
        self.client.set(self.key, json.dumps(report))

    def last(self) -> dict[str, Any] | None:
        """The last report as saved; None if none ran."""
        raw = self.client.get(self.key)
        return json.loads(raw) if raw else None
