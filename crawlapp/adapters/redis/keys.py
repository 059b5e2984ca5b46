"""Every Redis key of a crawl, spelled once. In a template, `P` is the crawl's prefix
(CRAWL_REDIS_PREFIX, `crawl` by default) and `<name>` a part filled in; the owner of each
key (named in its description) is the only module that reads or writes it.

Per frontier shard (`<shard>` = mmh3(host) % CRAWL_SHARDS): the FRONTIER keys, under the
hash tag `{P:f:<shard>}`, so that each shard is one Redis Cluster slot and every frontier
script touches one slot.

Cut into parts (`<part>` = the hash tag of part i of CRAWL_REDIS_PARTS, parts.py): the
structures that grow with the crawl, so that a cluster spreads them evenly; the keys of one
part share its slot (a re-crawl drain claims from every tier of a part in one script).

Global: every other key. The batch ledger shares a hash tag, `{P:batches}` (one MGET reads the
URLs of the lost batches). The others are touched one key per command (pipelines may mix
them): the content dedup index too, buckets of claims and the tables of near copies, which a batch files
under the dedup lock (dedup_index.py).

docs/sizing.md lists each key with its size per item and what deletes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Key:
    """One key or key template, its Redis type and what it holds."""

    template: str
    type: str
    about: str
    _format: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        escaped = self.template.replace("{", "{{").replace("}", "}}").replace("P", "{P}", 1)
        object.__setattr__(self, "_format", re.sub(r"<(\w+)>", r"{\1}", escaped))

    def of(self, prefix: str, **parts: object) -> str:
        """The key under `prefix`, with the template's parts filled in."""
        return self._format.format(P=prefix, **parts)

    def matches(self, prefix: str, key: str) -> bool:
        pattern = re.escape(self.template.replace("P", "\0", 1))
        pattern = re.sub(r"<\w+>", ".+", pattern).replace("\0", re.escape(prefix))
        return re.fullmatch(pattern, key, re.DOTALL) is not None


# The frontier (adapters/redis/frontier), per shard.
READY = Key("{P:f:<shard>}:ready", "zset", "host -> time it may next be fetched, for hosts "
            "with URLs queued")
IDLE = Key("{P:f:<shard>}:idle", "zset", "host -> next allowed time of a host with nothing "
           "queued (dropped once passed)")
LEASES = Key("{P:f:<shard>}:leases", "zset", "host -> lease deadline, for hosts handed to a "
             "fetch task")
TOKEN = Key("{P:f:<shard>}:token", "hash", "host -> token of its current lease")
LEASED = Key("{P:f:<shard>}:leased", "hash", "host -> the URLs handed out under its lease, a "
             "line \"score<TAB>member\" each")
PARKED = Key("{P:f:<shard>}:parked", "zset", "host -> time it comes back (inf while paused "
             "by an operator)")
WHY = Key("{P:f:<shard>}:why", "hash", "host -> why it is parked")
PAUSED = Key("{P:f:<shard>}:paused", "hash", "host -> 1 while paused by an operator")
FAILS = Key("{P:f:<shard>}:fails", "hash", "host -> failures in a row (absent after a success)")
QUEUED = Key("{P:f:<shard>}:queued", "string", "number of URLs in the shard's host queues")
QUEUE = Key("{P:f:<shard>}:q:<host>", "zset", "a host's URLs: \"depth[.hops]<TAB><h|s>path?query\" "
            "-> score, lowest first")
BOOST = Key("{P:f:<shard>}:boost", "hash", "host -> authority: the first hosts leased when more "
            "are due than a dispatch takes")
DISPATCHED = Key("{P:f:<shard>}:dispatched", "string", "the shard's last dispatch: its call "
                 "and its reply (MessagePack), replayed to that call tried again after its "
                 "reply was lost; expires after a lease period")
WARM = Key("{P:f:<shard>}:warm", "zset", "host -> when its warm session began: the hosts leased "
           "lately, first among those due while their connections are open")
YIELD = Key("{P:f:<shard>}:yield", "hash", "host -> token of its lease asked to end early: a URL "
            "queued meanwhile goes before one the lease still holds (dropped as it ends)")
FRONTIER = (READY, IDLE, LEASES, TOKEN, LEASED, PARKED, WHY, PAUSED, FAILS, QUEUED, QUEUE, BOOST,
            DISPATCHED, WARM, YIELD)

# The frontier, global.
ALIVE = Key("P:alive", "string", "time of the last rebuild (the first start's included): Redis "
            "holds the whole crawl state")
DEDUP_ALIVE = Key("P:dedup-alive", "string", "time of the last rebuild of the URL-seen filter, "
                  "content claims, canonical pointers and re-crawl sets: the dedup Redis "
                  "(CRAWL_DEDUP_REDIS_URL) holds them whole (urlseen.py)")

# The batch ledger (batches.py).
BATCHES = Key("{P:batches}:due", "zset", "batch id -> deadline, for batches between dispatch "
              "and extract_links")
BATCH_URLS = Key("{P:batches}:urls:<batch>", "string", "msgpack [[url, depth], ...] of a "
                 "batch's leases")
BATCH_RUN = Key("{P:batches}:run:<stage>:<batch>", "string", "the attempt that took a "
                "batch's fetch or render up; a message delivered again finds it (batches.py)")

# URL dedup, tier 1 (urlseen.py).
BLOOM = Key("P:bloom:<part>", "string", "one part of the Bloom filter of URLs seen, a bitmap "
            "(at least CRAWL_REDIS_PARTS parts)")

# Content dedup (dedup_index.py, canonicals.py).
DEDUP_BUCKET = Key("P:dedup:<bucket>", "hash", "\"c\" + 12 bytes of a content hash, or \"f\" + "
                   "a SimHash fingerprint (8 bytes) -> the 16-byte url_hash of the stored "
                   "original holding it; one hash per bucket of the hash or fingerprint")
NEAR_TABLE = Key("P:near:<table>:<bucket>", "zset", "the SimHash fingerprints of the stored "
                 "originals as one table of near copies files them (bits permuted), whose top "
                 "bits are <bucket>, each without the whole bytes <bucket> holds")
DEDUP_LOCK = Key("P:dedup-lock", "string", "token of the task filing a batch's originals, "
                 "expiring (dedup_index.py)")
CANONICAL = Key("P:canonical-of:<url_hash>", "string", "url_hash of the URL a page names as "
                "its canonical")

# Caches and per-URL state of the fetch stage.
ROBOTS = Key("P:robots:<origin>", "string", "msgpack [status, body] of the origin's "
             "robots.txt, expiring (robots_cache.py)")
DNS = Key("P:dns:<host>", "string", "a host's addresses, comma-separated, or \"!error\", "
          "expiring (dnscache.py)")
DNS_LOCK = Key("P:dns-lock:<host>", "string", "held by the worker resolving a host, expiring "
               "(dnscache.py)")
HOPS = Key("P:hops:<url_hash>", "string", "redirects that led to a URL waiting to be fetched, "
           "expiring (redirect_hops.py)")
VALIDATORS = Key("P:validators:<part>", "hash", "url -> ETag and Last-Modified a re-crawl "
                 "sends, one hash per part (validators.py)")
RETRIES = Key("{P:retries}", "hash", "url -> transient failures so far (retries.py)")
RETRIES_RUN = Key("{P:retries}:run:<run>", "string", "the counts a fetch batch's run got, "
                  "kept through a Redis fault's tries again, expiring (retries.py)")
SLOT = Key("P:slot:<key>", "string", "\"<holder> <time>\" of a politeness key (a domain or "
           "an address, CRAWL_POLITENESS_KEY): held by a batch, or free from that time "
           "(slots.py)")
THROTTLE = Key("P:throttle", "hash", "host -> \"level forgive_at\" of a host throttled by "
               "429/503 without Retry-After (throttles.py)")

# The re-crawl schedule (recrawl_sets.py).
RECRAWL_TIER = Key("P:recrawl:<part>:tier:<tier>", "zset", "url_hash -> next fetch time, one "
                   "set per part and tier")
RECRAWL_CLAIMED = Key("P:recrawl:<part>:claimed", "zset", "\"<tier>|<url_hash>\" -> deadline of "
                      "a drain's claim, one set per part")
RECRAWL_HORIZON = Key("P:recrawl:horizon", "hash", "until: the tiers hold every page due "
                      "before it (the rest waits in the database); from, lease: a load of the "
                      "database's pages still running")

# The re-crawl policy's sums per host (change_rates.py).
RATES = Key("P:rates:<host>", "hash", "bucket of change rate -> pages, and the host's pages, "
            "changes seen, seconds watched, hub visits, expected freshness, delay, multiplier")
RATES_ALL = Key("P:rates", "hash", "the same sums over every host")
SITEMAP_TRUST = Key("P:sitemap_trust", "hash", "host -> \"checks lies checked_at\" of its "
                    "sitemaps' lastmods (sitemap_trust.py)")

# Trap budgets (budgets.py).
HOSTCOUNT = Key("P:hostcount:<part>", "hash", "host -> URLs admitted "
                "(CRAWL_MAX_PAGES_PER_HOST), one hash per part")
PATTERNS = Key("P:patterns:<bucket>", "hash", "64-bit hash of \"host pattern\" -> URLs "
               "admitted (CRAWL_TRAP_PATTERN_CAP), one small hash per bucket of that hash")

# Counters (counters.py).
COUNTERS = Key("P:counters", "hash", "counter name -> value, summed over every worker")
REFUSED = Key("P:refused:<reason>", "hash", "host -> links refused for that reason")
STAGE_CPU = Key("P:stage_cpu", "hash", "stage -> CPU seconds, <stage>:batches -> batches")

# Host authority (authority.py).
AUTHORITY = Key("P:authority", "hash", "host -> authority in [0, 1] from the host graph, read "
                "by the links stage")

# Operations.
DENYLIST = Key("P:denylist", "set", "host patterns never fetched, a copy of the denylist "
               "table (denylist.py)")
SCOPE = Key("P:scope", "hash", "the seeds' scope rules, a copy of the scope_rules table "
            "(scope.py)")
WORKERS = Key("P:workers", "hash", "host:pid -> \"rss peak time\" of a worker process "
              "(workers.py)")
VERIFY = Key("P:verify:last", "string", "JSON report of the last crawlctl verify "
             "(verify_report.py)")

ALL: tuple[Key, ...] = (*FRONTIER, ALIVE, DEDUP_ALIVE, BATCHES, BATCH_URLS, BATCH_RUN, BLOOM,
                        DEDUP_BUCKET, NEAR_TABLE, DEDUP_LOCK, CANONICAL, ROBOTS, DNS, DNS_LOCK,
                        HOPS, VALIDATORS, RETRIES, RETRIES_RUN, THROTTLE, SLOT, RECRAWL_TIER,
                        RECRAWL_CLAIMED,
                        RECRAWL_HORIZON, RATES, RATES_ALL, SITEMAP_TRUST,
                        HOSTCOUNT, PATTERNS, COUNTERS, REFUSED, STAGE_CPU,
                        AUTHORITY, DENYLIST, SCOPE, WORKERS, VERIFY)


# Not a key: the pub/sub channel of the frontier's doorbell (doorbell.py), named like one.
DOORBELL = Key("P:doorbell", "channel", "rung when URLs are queued or a lease released")


def key_of(prefix: str, key: str) -> Key | None:
    """The registry's entry a key of the crawl under `prefix` is an instance of."""
    return next((k for k in ALL if k.matches(prefix, key)), None)
