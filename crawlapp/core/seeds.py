"""Reading seed URLs: every line checked, bad lines reported with their line number."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from crawlapp.core.urls import URLRejected, reason_sentence, request_url


@dataclass(frozen=True)
class SeedProblem:
    line: int
    text: str
    reason: str  # the code (URLRejected.reason)

    @property
    def sentence(self) -> str:
        """The reason in words."""
        return reason_sentence(self.reason)


def read_seeds(lines: Iterable[str], max_length: int = 2048
               ) -> tuple[list[str], list[SeedProblem]]:
    """Seed request URLs (deduplicated, in order) and the lines that are not URLs.

    Blank lines and lines starting with '#' are skipped.
    """
    seeds: dict[str, None] = {}
    problems: list[SeedProblem] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            seeds.setdefault(request_url(text, max_length=max_length))
        except URLRejected as exc:
            problems.append(SeedProblem(number, text[:200], exc.reason))
    return list(seeds), problems
