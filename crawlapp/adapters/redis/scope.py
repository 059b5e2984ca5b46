"""The seeds' scope rules for the link path (crawlapp.core.scope).

The table `scope_rules` is the record; the Redis hash `P:scope` holds the same rules for the
hot path, which asks about a whole batch's link hosts in one HMGET:

  *            "1" if a seed has scope any, "0" otherwise (absent: no seed has a rule, as in a
               crawl seeded before scopes existed: everything is in scope)
  h:<host>     a seed has scope host on that host name
  d:<domain>   a seed has scope domain on that registrable domain
  p:<host>     the URL prefixes of seeds with scope prefix on that host name, one a line
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply
from crawlapp.core.scope import ScopeRules, hostname, registrable_domain

ANY = "*"
_FIELD = {"host": "h:", "domain": "d:"}


def fields_of(rules: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The hash's fields for the (kind, value) rules of every seed. Pure."""
    rules = list(rules)
    if not rules:
        return {}
    out = {ANY: "1" if any(kind == "any" for kind, _ in rules) else "0"}
    prefixes: dict[str, list[str]] = defaultdict(list)
    for kind, value in rules:
        if kind == "prefix":
            prefixes[hostname(value.split("://", 1)[1].split("/", 1)[0])].append(value)
        elif kind in _FIELD:
            out[_FIELD[kind] + value] = "1"
    out.update((f"p:{host}", "\n".join(sorted(values))) for host, values in prefixes.items())
    return out


class SeedScopes:
    """The Redis copy of the scope_rules table: one hash."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.SCOPE.of(prefix)

    def rules_for(self, hosts: Iterable[str]) -> ScopeRules:
        """The rules that cover any of `hosts` (politeness keys), in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        rules = self.read(hosts, pipe)
        return rules(pipe.execute())

    def read(self, hosts: Iterable[str], pipe: Pipeline) -> Reply[ScopeRules]:
        """`rules_for`, in the caller's round trip."""
        names = sorted({hostname(h) for h in hosts})
        domains = sorted({registrable_domain(n) for n in names})
        fields = [ANY, *(f"h:{n}" for n in names), *(f"p:{n}" for n in names),
                  *(f"d:{d}" for d in domains)]
        at = len(pipe)
        pipe.hmget(self.key, fields)

        def rules(replies: Sequence[Any]) -> ScopeRules:
            got = replies[at]
            if got[0] != b"0":
                return ScopeRules()
            n = len(names)
            return ScopeRules(
                any=False,
                hosts=frozenset(name for name, v in zip(names, got[1:1 + n], strict=True) if v),
                prefixes={name: tuple(v.decode().split("\n"))
                          for name, v in zip(names, got[1 + n:1 + 2 * n], strict=True) if v},
                domains=frozenset(d for d, v in zip(domains, got[1 + 2 * n:], strict=True) if v))
        return rules

    def load(self, rules: Iterable[tuple[str, str]]) -> int:
        """Replace the Redis copy with the (kind, value) rules (the table's); returns how
        many rules."""
        rules = list(rules)
        fields: dict[Any, Any] = fields_of(rules)  # redis-py's hset wants its own key types
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(self.key)
        if fields:
            pipe.hset(self.key, mapping=fields)
        pipe.execute()
        return len(rules)
