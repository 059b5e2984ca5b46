"""One typed settings object, read from the environment and validated at start."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, TypeVar

from crawlapp.core.errors import InputError
from crawlapp.core.politeness import POLITENESS_KEYS, Backoff
from crawlapp.core.priority import Weights
from crawlapp.core.recrawl import Bounds, RecrawlRules
from crawlapp.core.scope import SCOPES, Patterns
from crawlapp.core.setting_values import (
    IPNetwork,
    auto_or,
    boolean,
    bounded,
    directory,
    email_address,
    host_patterns,
    name_addresses,
    networks,
    one_of,
    pem_file,
    url_of,
)
from crawlapp.core.textchanges import VOLATILE_TEXT, IgnoredText
from crawlapp.core.traps import TrapRules

T = TypeVar("T")

MAX_SHARDS = 4096  # CRAWL_SHARDS at most
DEFAULT_USER_AGENT = "crawlapp/0.1 (+https://github.com/crawlapp/crawlapp; crawler@crawlapp.invalid)"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


class SettingsError(InputError):
    """A setting has a value the crawler cannot use; the message names the variable."""


def setting(env: str, meaning: str, *, default: Any, convert: Callable[[str], Any] = str,
            doc_default: str | None = None) -> Any:
    """A Settings field declared whole: its variable `env`; its `default`, a value or, when
    callable, a function of the settings read before it (by field name); `convert` of a value
    that is set (a ValueError refuses it); its `meaning`, and `doc_default`, its default in
    words where that is not a plain value, for docs/settings.md."""
    return field(metadata={"env": env, "meaning": meaning, "default": default,
                           "convert": convert, "doc_default": doc_default})


def _parse(env: Mapping[str, str], name: str, default: T, convert: Callable[[str], T]) -> T:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return convert(raw.strip())
    except (ValueError, TypeError) as exc:
        raise SettingsError(f"{name}={raw!r}: {exc}") from None


_REDIS_URL = url_of(("redis", "rediss", "unix"))


@dataclass(frozen=True)
class Settings:
    """Read in field order: a computed default sees the fields above it."""

    data_dir: Path = setting(
        "CRAWL_DATA_DIR", "SQLite file, local bodies, logs, beat schedule",
        default=lambda read: directory("./var"), convert=directory, doc_default="`./var`")
    database_url: str = setting(
        "DATABASE_URL", "`postgresql://user@host/db` for Postgres (psycopg 3)",
        default=lambda read: f"sqlite:///{read['data_dir'] / 'crawl.db'}",
        convert=url_of(("sqlite", "postgresql", "postgres")), doc_default="SQLite in the data dir")
    s3_endpoint_url: str | None = setting(
        "S3_ENDPOINT_URL", "S3, MinIO or any S3-compatible server; unset: bodies in the data dir",
        default=None, convert=url_of(("http", "https")))
    s3_bucket: str | None = setting(
        "S3_BUCKET", "bucket of the page bodies (required with `S3_ENDPOINT_URL`)", default=None)
    broker_url: str = setting(
        "CELERY_BROKER_URL", "Redis or RabbitMQ (`amqp://`)", default=DEFAULT_REDIS_URL,
        convert=url_of(("redis", "rediss", "amqp", "amqps", "pyamqp")))
    redis_url: str = setting(
        "CRAWL_REDIS_URL",
        "the hot, bounded state: frontier, leases, batch ledger, robots and DNS caches, counters "
        "(and the rest, unless CRAWL_DEDUP_REDIS_URL is set)",
        default=lambda read: (read["broker_url"] if read["broker_url"].startswith("redis")
                              else DEFAULT_REDIS_URL),
        convert=_REDIS_URL, doc_default="the broker, if Redis")
    dedup_redis_url: str = setting(
        "CRAWL_DEDUP_REDIS_URL",
        "what grows with the crawl: URL-seen filter, content claims and SimHash tables, canonical "
        "pointers, re-crawl sets",
        default=lambda read: read["redis_url"], convert=_REDIS_URL, doc_default="CRAWL_REDIS_URL")
    redis_cluster: bool = setting(
        "CRAWL_REDIS_CLUSTER",
        "`true`: CRAWL_REDIS_URL names any node of a Redis Cluster (redis-py's RedisCluster finds "
        "the others and follows failovers), or several, comma-separated (a process started while "
        "the first is down asks the next); the Celery broker stays a plain Redis or RabbitMQ (a "
        "cluster cannot be a kombu broker), so CELERY_BROKER_URL must then be set apart",
        default=False, convert=boolean)
    dedup_redis_cluster: bool = setting(
        "CRAWL_DEDUP_CLUSTER",
        "`true`: CRAWL_DEDUP_REDIS_URL names a node of a Redis Cluster; must equal "
        "CRAWL_REDIS_CLUSTER when both roles share one URL",
        default=lambda read: read["redis_cluster"], convert=boolean,
        doc_default="CRAWL_REDIS_CLUSTER")
    redis_parts: int = setting(
        "CRAWL_REDIS_PARTS",
        "keys each structure that grows with the crawl is cut into (URL-seen filter, re-crawl "
        "sets, validators, trap budgets), spread evenly over a cluster's slots: at least 4 x the "
        "masters; changing it on a crawl under way needs `crawlctl frontier rebuild`",
        default=lambda read: 32 if read["redis_cluster"] or read["dedup_redis_cluster"] else 1,
        convert=bounded(int, 1, 1024), doc_default="32 when either Redis role is a cluster, else 1")
    redis_replica_acks: int | None = setting(
        "CRAWL_REDIS_REPLICA_ACKS",
        "replicas that must acknowledge each lease, lease renewal, release and politeness slot "
        "(Redis `WAIT`, at most 1 s; fewer are counted, `redis:replica_acks_short`, and the "
        "crawl goes on) before it is acted on: `auto`, every replica the master has (none: no "
        "wait), so a failover loses no lease or release and no host is asked twice at once or "
        "before its delay; a number; `0`: none. Costs one replication round trip (well under a "
        "millisecond on a LAN) per master with replicas written in each dispatch, batch start "
        "and release",
        default=None, convert=auto_or(bounded(int, 0, 16)), doc_default="auto")
    redis_ride_out: float = setting(
        "CRAWL_REDIS_RIDE_OUT",
        "seconds a write that must not be lost (a fetch's releases and results, a batch's "
        "deadline and dispatch) is tried again while Redis fails, as during a failover "
        "(cluster-node-timeout and an election), before the fault is the task's; each try "
        "after at most 0.5 s",
        default=30.0, convert=bounded(float, 0, 600))
    redis_prefix: str = setting(
        "CRAWL_REDIS_PREFIX", "namespace of the crawler's Redis keys", default="crawl")
    user_agent: str = setting(
        "CRAWL_USER_AGENT", "its product token picks the robots.txt group", default=DEFAULT_USER_AGENT)
    from_address: str | None = setting(
        "CRAWL_FROM", "e-mail address sent in the `From` header",
        default=None, convert=email_address, doc_default="unset: no header")
    allowed_networks: tuple[IPNetwork, ...] = setting(
        "CRAWL_ALLOWED_NETWORKS",
        "CIDRs exempt from the private-address guard (`127.0.0.0/8` for local tests)",
        default=(), convert=networks, doc_default="empty")
    ca_bundle: Path | None = setting(
        "CRAWL_CA_BUNDLE",
        "a PEM file of root certificates trusted besides the system's (a private CA); the "
        "system's store is OpenSSL's default (`SSL_CERT_FILE`, `SSL_CERT_DIR` as OpenSSL reads "
        "them), certifi's bundle where the system has none",
        default=None, convert=pem_file, doc_default="unset: the system's roots only")
    tls_verify: bool = setting(
        "CRAWL_TLS_VERIFY",
        "`false`: TLS certificates are not verified at all (every process that fetches warns "
        "at start); for a test bench only", default=True, convert=boolean)
    http2: bool = setting(
        "CRAWL_HTTP2",
        "`true`: HTTP/2 with servers that offer it by ALPN (one TLS connection per origin, still "
        "one request at a time per host); HTTP/1.1 otherwise, and always over plain HTTP",
        default=False, convert=boolean)
    max_depth: int = setting(
        "CRAWL_MAX_DEPTH", "links deeper than this from a seed are not queued",
        default=5, convert=bounded(int, 0, 1000))
    scope: str = setting(
        "CRAWL_SCOPE", "the scope of a seed added without `--scope`: `any` (every link), `host` "
        "(the seed's host name), `domain` (its registrable domain and subdomains, Public Suffix "
        "List), `prefix` (its scheme://host/path up to the last `/`); the crawl's scope is the "
        "union of its seeds'", default="any", convert=one_of(SCOPES))
    scope_include: Patterns = setting(
        "CRAWL_SCOPE_INCLUDE", "URLs also in scope: SURT prefixes (`http://(com,example,)/docs`, "
        "or a URL) or `re:REGEX`, comma- or space-separated",
        default=Patterns(), convert=Patterns.parse, doc_default="empty")
    scope_exclude: Patterns = setting(
        "CRAWL_SCOPE_EXCLUDE", "URLs out of scope whatever else says (seeds excepted), refused as "
        "`excluded`; patterns as `CRAWL_SCOPE_INCLUDE`",
        default=Patterns(), convert=Patterns.parse, doc_default="empty")
    scope_hops: int = setting(
        "CRAWL_SCOPE_HOPS", "off-scope links in a row still followed (1: the pages a site links "
        "to, not their links)", default=0, convert=bounded(int, 0, 100))
    shards: int = setting(
        "CRAWL_SHARDS", "number of `fetch.N` queues, the same on every process (a fleet on a "
        "Redis Cluster: at least 4 x masters; a change: `crawlctl frontier reshard`)",
        default=2, convert=bounded(int, 1, MAX_SHARDS))
    default_delay: float = setting(
        "CRAWL_DEFAULT_DELAY", "seconds between the end of one request to a host and the start of the next",
        default=1.0, convert=bounded(float, 0, 3600))
    max_crawl_delay: float = setting(
        "CRAWL_MAX_CRAWL_DELAY", "cap on a robots.txt `Crawl-delay`",
        default=30.0, convert=bounded(float, 0, 86400))
    batch_size: int = setting(
        "CRAWL_BATCH_SIZE", "most URLs in one fetch batch (one per host while as many hosts are due)",
        default=200, convert=bounded(int, 1, 1000))
    urls_per_lease: int = setting(
        "CRAWL_URLS_PER_LEASE",
        "most URLs of one host in a batch, fetched one after the other a delay apart: a host "
        "takes more than one only while fewer hosts are due than a batch holds (1: one URL "
        "per host and batch); none well behind the lease's best (a new URL or a hub ahead of "
        "re-crawls is leased alone), and a URL queued meanwhile that goes well before one the "
        "lease holds ends it before its next request and goes with the next",
        default=8, convert=bounded(int, 1, 1000))
    max_batches_in_flight: int = setting(
        "CRAWL_MAX_BATCHES_IN_FLIGHT",
        "no new batch is dispatched while this many are between dispatch and their last stage",
        default=lambda read: 8 * read["shards"], convert=bounded(int, 1, 1_000_000),
        doc_default="8 x shards")
    max_leased_per_shard: int = setting(
        "CRAWL_MAX_LEASED_PER_SHARD", "most hosts of one shard leased at once",
        default=lambda read: 4 * read["batch_size"], convert=bounded(int, 1, 1_000_000),
        doc_default="4 x batch size")
    warm_hosts: int = setting(
        "CRAWL_WARM_HOSTS",
        "hosts of a shard leased lately (warm) that go first among those due, while a fetch "
        "worker keeps their connections (0: none, the earliest due go first)",
        default=lambda read: read["max_leased_per_shard"], convert=bounded(int, 0, 1_000_000),
        doc_default="max leased per shard")
    warm_seconds: float = setting(
        "CRAWL_WARM_SECONDS", "a warm host gives way to the others this long after its first lease",
        default=60.0, convert=bounded(float, 1, 86400))
    fetch_timeout: float = setting(
        "CRAWL_FETCH_TIMEOUT", "total seconds for one request, body included",
        default=30.0, convert=bounded(float, 0.1, 600))
    lease_seconds: float = setting(
        "CRAWL_LEASE_SECONDS", "a lease not renewed or released by then expires",
        default=lambda read: max(120.0, 4 * read["fetch_timeout"]),
        convert=bounded(float, 1, 86400), doc_default="max(120, 4 x fetch timeout)")
    max_body_bytes: int = setting(
        "CRAWL_MAX_BODY_BYTES", "larger bodies, as decoded (gzip, deflate, Brotli, zstd), are "
        "aborted and recorded `too_large`",
        default=10 * 1024 * 1024, convert=bounded(int, 1024, 1 << 34))
    max_url_length: int = setting(
        "CRAWL_MAX_URL_LENGTH", "longer URLs are refused",
        default=2048, convert=bounded(int, 32, 1 << 20))
    max_links_per_page: int = setting(
        "CRAWL_MAX_LINKS_PER_PAGE", "links taken from one page",
        default=1000, convert=bounded(int, 0, 1_000_000))
    robots_ttl: int = setting(
        "CRAWL_ROBOTS_TTL", "seconds a robots.txt answer is cached",
        default=86400, convert=bounded(int, 1, 365 * 86400))
    worker_concurrency: int = setting(
        "CRAWL_WORKER_CONCURRENCY", "pipeline worker processes started by `crawlctl crawl`",
        default=lambda read: os.cpu_count() or 1, convert=bounded(int, 1, 1024),
        doc_default="CPU count")
    fetch_concurrency: int = setting(
        "CRAWL_FETCH_CONCURRENCY", "fetch batches run at once by each fetch worker (threads)",
        default=16, convert=bounded(int, 1, 1024))
    fetch_processes: int = setting(
        "CRAWL_FETCH_PROCESSES", "fetch worker processes started by `crawlctl crawl` (fetching "
        "costs a third of a page's CPU, parsing and storing the rest)",
        default=lambda read: max(1, (os.cpu_count() or 1) // 3), convert=bounded(int, 1, 64),
        doc_default="CPU count / 3, at least 1")
    dispatch_interval: float = setting(
        "CRAWL_DISPATCH_INTERVAL",
        "shortest sleep of the dispatcher between two looks at the frontier (it sleeps until "
        "its next host is due, at most 2 s, or until URLs are queued or a lease released)",
        default=0.25, convert=bounded(float, 0.01, 60))
    beat_dispatch: float = setting(
        "CRAWL_BEAT_DISPATCH",
        "seconds between the dispatch tasks beat sends, the safety net of the dispatcher "
        "processes (a fleet without `crawlctl dispatcher` relies on it); 0: none. "
        "`crawlctl crawl`'s beat sends none: the crawl runs its own dispatcher",
        default=1.0, convert=bounded(float, 0, 3600))
    dispatch_lookahead: float = setting(
        "CRAWL_DISPATCH_LOOKAHEAD",
        "hosts ready within this many seconds may join a batch; each request still waits for its host's time",
        default=1.0, convert=bounded(float, 0, 60))
    idle_horizon: float = setting(
        "CRAWL_IDLE_HORIZON",
        "`crawl --until-idle` ends once nothing is due within this many seconds; hosts due "
        "later keep their URLs and time in the frontier for the next crawl (the crawl's tail "
        "after its last page is at most this and a few seconds to stop)",
        default=20.0, convert=bounded(float, 0, 86400))
    recrawl_window: float = setting(
        "CRAWL_RECRAWL_WINDOW",
        "seconds of the re-crawl schedule kept in Redis: pages due later wait in the database "
        "(urls.next_crawl_at) until the beat's drain loads them this long ahead",
        default=3600.0, convert=bounded(float, 60, 30 * 86400))
    recrawl_policy: str = setting(
        "CRAWL_RECRAWL_POLICY",
        "`optimal`: each page's change rate learned from its visits, revisits allocated to "
        "maximise freshness within its host's capacity (docs/freshness.md); `adaptive`: the "
        "interval halves on a change and grows by half otherwise",
        default="optimal", convert=one_of(("optimal", "adaptive")))
    recrawl_min_interval: float = setting(
        "CRAWL_RECRAWL_MIN_INTERVAL", "seconds a page waits at least between two fetches",
        default=3600.0, convert=bounded(float, 1, 365 * 86400))
    recrawl_max_interval: float = setting(
        "CRAWL_RECRAWL_MAX_INTERVAL",
        "seconds a page waits at most between two fetches (a page that never changes, or "
        "changes faster than any visit could follow)",
        default=60 * 86400.0, convert=bounded(float, 1, 10 * 365 * 86400))
    recrawl_first_interval: float = setting(
        "CRAWL_RECRAWL_FIRST_INTERVAL",
        "the prior of a page's change: a page without history changes about once this "
        "often, until its host's pages and its own visits teach better (`adaptive`: its "
        "first interval, seven times as long for a priority below 0.5)",
        default=86400.0, convert=bounded(float, 1, 10 * 365 * 86400))
    recrawl_share: float = setting(
        "CRAWL_RECRAWL_SHARE",
        "share of each host's capacity (one request per delay) that re-crawls may plan for; "
        "the rest is kept for new URLs while the host has some (all of it otherwise)",
        default=0.9, convert=bounded(float, 0.05, 1))
    recrawl_budget: float | None = setting(
        "CRAWL_RECRAWL_BUDGET",
        "re-crawls a second across the whole fleet at most (planned: pages of the most "
        "authoritative hosts and the best freshness per visit first); unset: no limit",
        default=None, convert=bounded(float, 0.001, 1e6))
    recrawl_rules: Path | None = setting(
        "CRAWL_RECRAWL_RULES",
        "a file of re-crawl rules per host or URL prefix, one a line: `PATTERN min=S max=S` "
        "or `PATTERN ttl=S` (docs/freshness.md); `crawlctl recrawl --rules URL` shows the one "
        "that applies", default=None, convert=Path)
    change_ignore: IgnoredText | None = setting(
        "CRAWL_CHANGE_IGNORE",
        "a regular expression (RE2's syntax, case ignored) over a page's visible text "
        "(whitespace folded): what it matches is no change for the re-crawl policy (a page "
        "whose text differs only there was not changed); `none`: every character counts",
        default=IgnoredText(VOLATILE_TEXT), convert=IgnoredText.parse,
        doc_default="the times of day and ages a page shows (`11:22:09`, `2026-11-28T11:22Z`, "
        "`5 minutes ago`, `just now`: core/textchanges.py `VOLATILE_TEXT`)")
    max_backoff: float = setting(
        "CRAWL_MAX_BACKOFF", "cap on a host's exponential backoff after 5xx, timeouts, connection errors",
        default=300.0, convert=bounded(float, 0, 86400))
    max_retry_after: float = setting(
        "CRAWL_MAX_RETRY_AFTER", "cap on a `Retry-After` (429, 503): the host waits that long",
        default=86400.0, convert=bounded(float, 0, 7 * 86400))
    throttle_seconds: float = setting(
        "CRAWL_THROTTLE_SECONDS",
        "a host answering 429 or 503 without `Retry-After` waits this long, doubling with each "
        "such answer (plus up to 10 % jitter)", default=60.0, convert=bounded(float, 0, 86400))
    throttle_max: float = setting(
        "CRAWL_THROTTLE_MAX", "cap on that doubling wait",
        default=86400.0, convert=bounded(float, 0, 7 * 86400))
    forgive_after: float = setting(
        "CRAWL_FORGIVE_AFTER",
        "quiet seconds after a throttle wait ends before the doubling starts again from "
        "CRAWL_THROTTLE_SECONDS", default=1800.0, convert=bounded(float, 0, 7 * 86400))
    robots_retry: float = setting(
        "CRAWL_ROBOTS_RETRY",
        "a host whose robots.txt answers 429 or 5xx, or does not answer, is deferred this long, "
        "doubling with each failure (or a longer `Retry-After`), before robots.txt is asked "
        "again, at most CRAWL_MAX_RETRIES times", default=60.0, convert=bounded(float, 0, 86400))
    park_after: int = setting(
        "CRAWL_PARK_AFTER", "a host failing this many times in a row is parked",
        default=8, convert=bounded(int, 1, 1000))
    park_seconds: float = setting(
        "CRAWL_PARK_SECONDS", "how long a failing host stays parked",
        default=600.0, convert=bounded(float, 1, 7 * 86400))
    max_retries: int = setting(
        "CRAWL_MAX_RETRIES", "tries again of a URL answered 429/5xx or refused connection",
        default=2, convert=bounded(int, 0, 100))
    give_up_after: int = setting(
        "CRAWL_GIVE_UP_AFTER",
        "a host whose requests fail this many times in a row for a reason that will not change "
        "soon (private-address guard, DNS, invalid host name, TLS) is given up: parked until "
        "`crawlctl frontier resume`", default=3, convert=bounded(int, 1, 100))
    max_pages_per_host: int = setting(
        "CRAWL_MAX_PAGES_PER_HOST", "URLs queued per host; the rest are recorded `over_budget`",
        default=100_000, convert=bounded(int, 1, 1 << 40))
    near_duplicate_bits: int = setting(
        "CRAWL_NEAR_DUPLICATE_BITS",
        "SimHash distance (0-3) under which a page is a near duplicate; the near-copy tables "
        "are shaped for it (a change needs the dedup Redis rebuilt: docs/sizing.md)",
        default=3, convert=bounded(int, 0, 3))
    trap_pattern_cap: int = setting(
        "CRAWL_TRAP_PATTERN_CAP",
        "URLs of one shape (digits and ids abstracted) per host; the rest are recorded `trap`",
        default=5000, convert=bounded(int, 1, 1 << 40))
    max_redirects: int = setting(
        "CRAWL_MAX_REDIRECTS", "redirect hops followed from a URL found by a link",
        default=5, convert=bounded(int, 0, 20))
    archive_answer_bytes: int = setting(
        "CRAWL_ARCHIVE_ANSWER_BYTES",
        "bytes kept, for the WARC export, of the body of a redirect or an error answer (4xx, "
        "5xx); a longer one is cut, counted `archive:truncated` and written `WARC-Truncated`",
        default=1024 * 1024, convert=bounded(int, 0, 1 << 34))
    archive_unstored: bool = setting(
        "CRAWL_ARCHIVE_UNSTORED",
        "keep the body as fetched of near copies and of noindex and canonicalized pages too, "
        "for the WARC export (the storage their dedup saves)",
        default=False, convert=boolean)
    expected_urls: int = setting(
        "CRAWL_EXPECTED_URLS",
        "URLs the Bloom filter of seen URLs, the content claims' buckets and the near-copy "
        "tables (for a quarter as many originals) are sized for (a change needs the dedup "
        "Redis rebuilt: docs/sizing.md)",
        default=10_000_000, convert=bounded(int, 1, 1 << 40))
    delay_margin: float = setting(
        "CRAWL_DELAY_MARGIN", "seconds added to every delay, for servers that log a response's end late",
        default=0.05, convert=bounded(float, 0, 10))
    bloom_fp_rate: float = setting(
        "CRAWL_BLOOM_FP_RATE", "false-positive rate of that Bloom filter at its expected size",
        default=0.001, convert=bounded(float, 1e-9, 0.5))
    fetch_binaries: bool = setting(
        "CRAWL_FETCH_BINARIES", "fetch links to images, media, archives and executables too",
        default=False, convert=boolean)
    dns_ttl: float = setting(
        "CRAWL_DNS_TTL", "seconds a host name's addresses are cached (Redis)",
        default=300.0, convert=bounded(float, 1, 86400))
    dns_negative_ttl: float = setting(
        "CRAWL_DNS_NEGATIVE_TTL", "seconds a failed lookup is cached",
        default=30.0, convert=bounded(float, 1, 86400))
    resolve: Mapping[str, tuple[str, ...]] = setting(
        "CRAWL_RESOLVE",
        "names answered without DNS, `name=address` separated by commas or spaces (a name "
        "given twice has both addresses), as curl's --resolve: several names on one test "
        "server", default=lambda read: {}, convert=name_addresses, doc_default="none")
    politeness_key: str = setting(
        "CRAWL_POLITENESS_KEY",
        "one request at a time, the delay between them, per `host` name, per registrable "
        "`domain` (Public Suffix List), or per server address (`ip`); robots.txt stays per "
        "origin", default="host", convert=one_of(POLITENESS_KEYS))
    task_events: bool = setting(
        "CRAWL_TASK_EVENTS",
        "workers send Celery task events from the start (Flower turns them on when it runs)",
        default=False, convert=boolean)
    quorum_queues: bool = setting(
        "CRAWL_QUORUM_QUEUES",
        "with a RabbitMQ broker, declare the crawl's queues as quorum queues (replicated; "
        "a stage's delayed retries go through Celery's native delayed delivery)",
        default=False, convert=boolean)
    metrics_port: int | None = setting(
        "CRAWL_METRICS_PORT", "`crawlctl crawl` serves the Prometheus metrics on this port",
        default=None, convert=bounded(int, 1, 65535), doc_default="unset: not served")
    metrics_addr: str = setting(
        "CRAWL_METRICS_ADDR", "address the metrics endpoint listens on", default="127.0.0.1")
    render: bool = setting(
        "CRAWL_RENDER", "render pages that need it in headless Chromium (`render.N` queues)",
        default=False, convert=boolean)
    render_hosts: tuple[str, ...] = setting(
        "CRAWL_RENDER_HOSTS", "hosts whose pages are always rendered (`example.com`, "
        "`*.example.com`, comma-separated); other pages only when they look like an app shell",
        default=(), convert=host_patterns, doc_default="empty")
    render_timeout: float = setting(
        "CRAWL_RENDER_TIMEOUT", "seconds one page may take to render; then it goes on unrendered",
        default=15.0, convert=bounded(float, 0.5, 600))
    render_recycle: int = setting(
        "CRAWL_RENDER_RECYCLE", "a browser is started again after this many pages",
        default=200, convert=bounded(int, 1, 1_000_000))
    render_max_memory_mb: int = setting(
        "CRAWL_RENDER_MAX_MEMORY_MB", "a browser using more memory (PSS, MiB) is started again",
        default=1024, convert=bounded(int, 64, 1 << 20))
    render_other_hosts: tuple[str, ...] = setting(
        "CRAWL_RENDER_OTHER_HOSTS",
        "patterns of other hosts a rendered page's scripts may load from (refused otherwise)",
        default=(), convert=host_patterns, doc_default="empty")
    render_store_raw: bool = setting(
        "CRAWL_RENDER_STORE_RAW", "keep the body as fetched too, next to the rendered one",
        default=False, convert=boolean)
    render_min_text: int = setting(
        "CRAWL_RENDER_MIN_TEXT", "visible characters under which a page with scripts may be a shell",
        default=200, convert=bounded(int, 0, 1 << 20))
    render_processes: int = setting(
        "CRAWL_RENDER_PROCESSES", "render worker processes (one browser each) started by `crawlctl crawl`",
        default=1, convert=bounded(int, 1, 64))
    chromium_path: str | None = setting(
        "CRAWL_CHROMIUM", "the browser to render with",
        default=None, doc_default="`chromium` on the PATH")
    priority_weights: Weights = setting(
        "CRAWL_PRIORITY_WEIGHTS",
        "weights of host authority, freshness and link context in a URL's priority "
        "(non-negative, sum above 0)", default=Weights(), convert=Weights.parse,
        doc_default="`0.4,0.3,0.3`")
    authority_interval: float = setting(
        "CRAWL_AUTHORITY_INTERVAL", "seconds between two computations of host authority "
        "from the host graph (beat)", default=600.0, convert=bounded(float, 1, 7 * 86400))

    @cached_property
    def product_token(self) -> str:
        """The User-Agent's product token, the name robots.txt groups are matched by."""
        return self.user_agent.split("/", 1)[0].split()[0]

    @property
    def blob_dir(self) -> Path:
        return self.data_dir / "blobs"

    @cached_property
    def traps(self) -> TrapRules:
        return TrapRules(max_length=self.max_url_length, pattern_cap=self.trap_pattern_cap,
                         skip_binaries=not self.fetch_binaries)

    @cached_property
    def recrawl_rule_set(self) -> RecrawlRules:
        """The re-crawl rules of CRAWL_RECRAWL_RULES (none without the file)."""
        if self.recrawl_rules is None:
            return RecrawlRules(())
        return RecrawlRules.parse(self.recrawl_rules.read_text(encoding="utf-8"))

    @cached_property
    def recrawl_bounds(self) -> Bounds:
        """The re-crawl interval's bounds where no rule applies (the three interval settings)."""
        return Bounds(self.recrawl_min_interval, self.recrawl_max_interval,
                      self.recrawl_first_interval)

    @cached_property
    def backoff(self) -> Backoff:
        return Backoff(max_backoff=self.max_backoff, max_retry_after=self.max_retry_after,
                       park_after=self.park_after, park_seconds=self.park_seconds,
                       max_retries=self.max_retries, give_up_after=self.give_up_after,
                       throttle_seconds=self.throttle_seconds, throttle_max=self.throttle_max,
                       forgive_after=self.forgive_after, robots_retry=self.robots_retry)


TLS_VERIFY_OFF = ("CRAWL_TLS_VERIFY=false: TLS certificates are NOT verified; any server, or "
                  "anyone between it and the crawler, can pose as any host")


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from `env` (default: os.environ); raise SettingsError on a bad value."""
    env = os.environ if env is None else env
    read: dict[str, Any] = {}
    for f in fields(Settings):
        meta = f.metadata
        default = meta["default"](read) if callable(meta["default"]) else meta["default"]
        read[f.name] = _parse(env, meta["env"], default, meta["convert"])
    settings = Settings(**read)
    if settings.render and settings.render_timeout >= settings.lease_seconds:
        raise SettingsError("CRAWL_RENDER_TIMEOUT: must be shorter than CRAWL_LEASE_SECONDS")
    if (settings.dedup_redis_cluster != settings.redis_cluster
            and settings.dedup_redis_url == settings.redis_url):
        raise SettingsError("CRAWL_DEDUP_CLUSTER: differs from CRAWL_REDIS_CLUSTER, but both "
                            "roles are on CRAWL_REDIS_URL (set CRAWL_DEDUP_REDIS_URL)")
    for url, cluster, variable in ((settings.redis_url, settings.redis_cluster, "CRAWL_REDIS_URL"),
                                   (settings.dedup_redis_url, settings.dedup_redis_cluster,
                                    "CRAWL_DEDUP_REDIS_URL")):
        if "," in url and not cluster:
            raise SettingsError(f"{variable}: several nodes, comma-separated, name a Redis "
                                "Cluster: set CRAWL_REDIS_CLUSTER (CRAWL_DEDUP_CLUSTER)=true")
    if settings.redis_cluster and settings.broker_url == settings.redis_url:
        raise SettingsError("CRAWL_REDIS_CLUSTER: a Redis Cluster cannot be the Celery "
                            "broker; set CELERY_BROKER_URL to a plain Redis or RabbitMQ")
    if settings.recrawl_min_interval > settings.recrawl_max_interval:
        raise SettingsError("CRAWL_RECRAWL_MIN_INTERVAL: must not exceed "
                            "CRAWL_RECRAWL_MAX_INTERVAL")
    if settings.recrawl_rules is not None:
        try:
            settings.recrawl_rule_set  # noqa: B018 - read now: a bad file stops the start
        except (OSError, InputError) as exc:
            raise SettingsError(f"CRAWL_RECRAWL_RULES={str(settings.recrawl_rules)!r}: {exc}"
                                ) from None
    if settings.s3_endpoint_url and not settings.s3_bucket:
        raise SettingsError("S3_BUCKET: must be set when S3_ENDPOINT_URL is set")
    return settings


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, loaded once."""
    return load_settings()
