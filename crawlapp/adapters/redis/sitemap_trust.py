"""Whether a host's sitemaps tell the truth about its pages' changes (stages/sitemapping.py):

  P:sitemap_trust   HASH host -> "checks lies checked_at": changes of its pages that a sitemap
                    fetched later could confirm, those whose <lastmod> it did not move past
                    the visit before the change, and the sitemap fetch they were checked by

A host is trusted until its lies reach LIES and a tenth of its checks; it then stays
distrusted (its pages keep their own schedules) until this hash is lost, when it is learned
again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply

LIES = 3  # lies before a host's sitemaps are distrusted...
LIE_SHARE = 0.1  # ...when they are this share of its checks too


class Trust(NamedTuple):
    checks: int = 0
    lies: int = 0
    checked_at: float = 0.0

    @property
    def trusted(self) -> bool:
        return self.lies < LIES or self.lies < LIE_SHARE * self.checks

    @classmethod
    def parse(cls, raw: bytes | str | None) -> Trust:
        if not raw:
            return cls()
        checks, lies, at = raw.split()  # type: ignore[misc]  # bytes or str alike
        return cls(int(checks), int(lies), float(at))


class SitemapTrust:
    """The trust of every host that has a sitemap with lastmods."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.SITEMAP_TRUST.of(prefix)

    def load(self, hosts: Iterable[str]) -> dict[str, Trust]:
        """Each host's trust (one HMGET; none for no host)."""
        pipe = self.client.pipeline(transaction=False)
        trust = self.read(hosts, pipe)
        return trust(pipe.execute())

    def read(self, hosts: Iterable[str], pipe: Pipeline) -> Reply[dict[str, Trust]]:
        """`load`, in the caller's round trip."""
        names = list(dict.fromkeys(hosts))
        if not names:
            return lambda replies: {}
        at = len(pipe)
        pipe.hmget(self.key, names)

        def trust(replies: Sequence[Any]) -> dict[str, Trust]:
            return {h: Trust.parse(raw) for h, raw in zip(names, replies[at], strict=True)}
        return trust

    def write(self, trust: Mapping[str, Trust]) -> None:
        if trust:
            self.client.hset(self.key, mapping={h: f"{t.checks} {t.lies} {t.checked_at!r}"
                                                for h, t in trust.items()})
