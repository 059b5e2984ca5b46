"""What the re-crawl policy knows of each host's pages (crawlapp.core.freshness), summed so that
planning a host costs the same whatever its size:

  P:rates:<host>   HASH  b<k> -> pages in bucket k of lambda / w; n -> pages; c, t -> changes
                         seen and seconds watched (the host's prior); kc<k>, kt<k> -> the same
                         of the pages of kind k (core/freshness.py: kind_of, the prior of a
                         page without history; no kc<k> while none changed: a zero delta is
                         not written); h -> visits a second its
                         hubs take; F -> the summed expected freshness of its pages; d -> its
                         delay (robots.txt's Crawl-delay or the default); mu, mu_at -> its
                         Lagrange multiplier and when it was solved
  P:rates          HASH  the same sums over every host (the fleet's budget, `crawlctl stats`),
                         and wi -> its pages' mean importance (ops/authority.py: fleet_importance)

The store stage adds each batch's deltas after its commit (one HINCRBYFLOAT per host and
field). A delta lost to a crash between the commit and the write leaves a host's sums off by a
page until `crawlctl frontier rebuild` sums them again from the rows; they only steer the
planning, and every page's own record is in its row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply

ALL_HOSTS = ""  # the fleet's sums, in P:rates


class ChangeRates:
    """Every host's summed change rates, and the fleet's."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.fleet = keys.RATES_ALL.of(prefix)

    def _key(self, host: str) -> str:
        return self.fleet if host == ALL_HOSTS else keys.RATES.of(self.prefix, host=host)

    def load(self, hosts: Iterable[str]) -> dict[str, dict[str, float]]:
        """The sums of each host, and of the fleet under ALL_HOSTS (one round trip;
        crawlapp.core.freshness.HostRates reads them)."""
        pipe = self.client.pipeline(transaction=False)
        sums = self.read(hosts, pipe)
        return sums(pipe.execute())

    def read(self, hosts: Iterable[str], pipe: Pipeline) -> Reply[dict[str, dict[str, float]]]:
        """`load`, in the caller's round trip."""
        names = [ALL_HOSTS, *dict.fromkeys(hosts)]
        at = len(pipe)
        for host in names:
            pipe.hgetall(self._key(host))

        def sums(replies: Sequence[Any]) -> dict[str, dict[str, float]]:
            return {host: {k.decode(): float(v) for k, v in raw.items()}
                    for host, raw in zip(names, replies[at:at + len(names)], strict=True)}
        return sums

    def add(self, deltas: Mapping[str, Mapping[str, float]],
            settings: Mapping[str, Mapping[str, float]], pipe: Pipeline) -> None:
        """Add `deltas` (host -> field -> amount; ALL_HOSTS: the fleet's) and set `settings`
        (host -> field -> value: a delay, a multiplier solved), in the caller's round trip."""
        for host, fields in deltas.items():
            key = self._key(host)
            for name, amount in fields.items():
                if amount:
                    pipe.hincrbyfloat(key, name, amount)
        for host, values in settings.items():
            if values:
                pipe.hset(self._key(host), mapping={k: v for k, v in values.items()})

    def restore(self, sums: Mapping[str, Mapping[str, float]]) -> None:
        """Replace the sums of these hosts and of the fleet (a rebuild's, from the rows)."""
        pipe = self.client.pipeline(transaction=False)
        for host, fields in sums.items():
            pipe.delete(self._key(host))
            if fields:
                pipe.hset(self._key(host), mapping={k: v for k, v in fields.items()})
        pipe.execute()
