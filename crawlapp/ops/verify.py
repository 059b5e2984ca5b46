"""`crawlctl verify`: is every body a row names in the blob store, do the content claims and
SimHash tables in Redis name stored originals (a table member is a "band entry" in the
report, as before the tables), does every copy's duplicate_of chain end at one
(no cycle)? With `repair`, what cannot be trusted is cleared and its pages are queued again,
so that the next crawl stores them.

Rows are read in id order, CHUNK at a time (or a random sample), and their keys checked with
the blob store's batched existence check (on S3, HEADs in parallel; a whole run lists the
bucket instead, up to LISTED_KEYS keys). Claims and table members are read
with SCAN and their owners looked up in the database a chunk at a time. The report of the last
run stays in Redis for `crawlctl stats` and the metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import dedup_rows
from crawlapp.core.records import Status
from crawlapp.core.rows import PageRow
from crawlapp.stages import dedup
from crawlapp.stages.admission import send_back

PROBLEMS = ("missing_body", "broken_chain", "stale_claim", "stale_band")
CHUNK = 1000  # rows checked (their bodies looked up in one batch), claims and bands read, at a time
EXAMPLES = 5
MAX_HOPS = 32
OWNERS_KEPT = 100_000
LISTED_KEYS = 1_000_000  # a whole run lists the bucket up to this many keys (~100 MB)


@dataclass
class Report:
    """What one run checked and found; `examples` names a few of each problem."""

    scope: str
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    rows: int = 0
    bodies: int = 0
    claims: int = 0
    band_entries: int = 0
    problems: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROBLEMS, 0))
    examples: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in PROBLEMS})
    repaired: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def found(self, kind: str, example: str) -> None:
        self.problems[kind] += 1
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(example)

    def fixed(self, what: str, n: int) -> None:
        self.repaired[what] = self.repaired.get(what, 0) + n

    @property
    def total(self) -> int:
        return sum(self.problems.values())


def host_known(ctx: Context, host: str) -> bool:
    with ctx.sessions() as session:
        return dedup_rows.host_known(session, host)


def rows_to_check(ctx: Context, host: str | None, sample: int | None) -> int:
    with ctx.sessions() as session:
        n = dedup_rows.count_to_check(session, host)
    return min(n, sample) if sample else n


def _row_chunks(ctx: Context, host: str | None, sample: int | None
                ) -> Iterator[list[PageRow]]:
    ids = None
    if sample:
        with ctx.sessions() as session:
            ids = dedup_rows.sample_to_check(session, host, sample)
    return dedup_rows.rows_to_check(ctx.sessions, host, ids, CHUNK)


def _chain_ends(ctx: Context, rows: list[PageRow]) -> dict[str, PageRow | None]:
    """Where each copy's duplicate_of chain ends: the first row that is not a copy (None for
    a missing row, a cycle, or a chain longer than MAX_HOPS)."""
    known = {r.url_hash: r for r in rows}
    ends: dict[str, PageRow | None] = {}
    at = {r.url_hash: r for r in rows if r.content_dedup}
    seen = {h: {h} for h in at}
    with ctx.sessions() as session:
        for _ in range(MAX_HOPS):
            if not at:
                break
            known.update(dedup_rows.rows_by_hash(session, {
                r.duplicate_of for r in at.values() if r.duplicate_of and r.duplicate_of not in known}))
            following: dict[str, PageRow] = {}
            for start, row in at.items():
                target = known.get(row.duplicate_of or "")
                if target is None or target.url_hash in seen[start]:
                    ends[start] = None
                elif target.content_dedup and target.status != Status.DELETED:
                    seen[start].add(target.url_hash)
                    following[start] = target
                else:
                    ends[start] = target
            at = following
    return ends | dict.fromkeys(at)


Missing = Callable[[Sequence[str]], set[str]]


def _missing(ctx: Context, whole: bool) -> Missing:
    """How a run finds missing bodies: the blob store's batched check; or, for a whole run on
    a store that lists itself cheaply (S3), one listing, with the keys it lacks checked again
    one by one (a body written since the listing is not missing)."""
    listed = ctx.blobs.listing(LISTED_KEYS) if whole else None
    if listed is None:
        return ctx.blobs.missing
    return lambda keys: ctx.blobs.missing([k for k in keys if k not in listed])


def _check_rows(ctx: Context, missing_of: Missing, rows: list[PageRow], report: Report
                ) -> list[PageRow]:
    """The rows that cannot be trusted: a body missing, or a chain not ending at a stored
    original."""
    ends = _chain_ends(ctx, rows)
    keys = {k for r in rows for k in (r.storage_key, r.raw_storage_key) if k}
    keys |= {e.storage_key for e in ends.values() if e is not None and e.storage_key}
    missing = missing_of(sorted(keys))
    report.rows += len(rows)
    report.bodies += len(keys)
    bad = []
    for row in rows:
        end = ends.get(row.url_hash)
        if row.storage_key in missing or row.raw_storage_key in missing:
            report.found("missing_body", row.url)
        elif row.content_dedup and (end is None or not end.original or end.storage_key in missing):
            report.found("broken_chain", row.url)
        else:
            continue
        bad.append(row)
    return bad


def _repair_rows(ctx: Context, bad: list[PageRow], report: Report) -> None:
    """Originals give up their claims and their copies go to another original; then every
    untrusted page (and copy left without an original) is queued again."""
    originals = [r for r in bad if r.original]
    ctx.dedup_index.release([dedup.held_by(r) for r in originals])
    with ctx.sessions.begin() as session:
        left = dedup.adopt(ctx, session, [r.url_hash for r in originals])
        queued = dedup_rows.mark_refetch(session, [r.url_hash for r in bad] + left,
                                         "requeued by verify: body missing or original gone")
    send_back(ctx, queued)
    report.fixed("pages_requeued", len(queued))


class Owners:
    """The rows that claims and table members name, read once each: an original owns a claim,
    a fingerprint and a member in each near-copy table. Forgets them all past OWNERS_KEPT
    rows, to bound memory."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.known: dict[str, PageRow | None] = {}

    def __call__(self, hashes: list[str]) -> dict[str, PageRow | None]:
        wanted = {h for h in hashes if h not in self.known}
        if len(self.known) + len(wanted) > OWNERS_KEPT:
            self.known.clear()
            wanted = set(hashes)
        with self.ctx.sessions() as session:
            found = dedup_rows.rows_by_hash(session, wanted)
        self.known.update((h, found.get(h)) for h in wanted)
        return {h: self.known[h] for h in hashes}


def _in_scope(row: PageRow | None, host: str | None) -> bool:
    """With --host, only the entries whose owner is a page of that host are checked."""
    return host is None or (row is not None and row.host == host)


def _check_claims(ctx: Context, owners: Owners, host: str | None, limit: int | None,
                  repair: bool, report: Report) -> None:
    index = ctx.dedup_index
    for entries in index.entries(CHUNK):
        rows = owners([e.owner for e in entries])
        stale = []
        for e in entries:
            row = rows.get(e.owner)
            if not _in_scope(row, host):
                continue
            report.claims += 1
            if not (row and row.original and index.files(dedup.held_by(row), e)):
                report.found("stale_claim", f"{e.key} {e.field.hex()} -> "
                                            f"{row.url if row else e.owner}")
                stale.append(e)
        if repair and stale:
            index.forget(stale)
            report.fixed("claims_dropped", len(stale))
        if limit and report.claims >= limit:
            return


def _check_bands(ctx: Context, owners: Owners, host: str | None, limit: int | None,
                 repair: bool, report: Report) -> None:
    for entries in ctx.dedup_index.table_entries(CHUNK):
        rows = owners([e.owner for e in entries if e.owner])
        stale = []
        for e in entries:
            row = rows.get(e.owner) if e.owner else None
            if not _in_scope(row, host):
                continue
            report.band_entries += 1
            if not (row and row.original and row.fingerprint == e.fingerprint):
                report.found("stale_band", f"{e.fingerprint:016x} -> "
                                           f"{row.url if row else e.owner or 'no owner'}")
                stale.append(e)
        if repair and stale:
            ctx.dedup_index.drop(stale)
            report.fixed("band_entries_dropped", len(stale))
        if limit and report.band_entries >= limit:
            return


def verify(ctx: Context, host: str | None = None, sample: int | None = None,
           repair: bool = False, progress: Callable[[int], None] = lambda n: None) -> Report:
    """Check (and with `repair`, mend) the rows of `host` or all, or a random `sample` of
    them (and as many claims and band entries); the report is kept as the last verify."""
    started = time.monotonic()
    scope = [f"host {host}"] * bool(host) + [f"sample {sample}"] * bool(sample)
    report = Report(scope=" ".join(scope) or "all")
    missing_of = _missing(ctx, whole=not (host or sample))
    for rows in _row_chunks(ctx, host, sample):
        bad = _check_rows(ctx, missing_of, rows, report)
        if repair and bad:
            _repair_rows(ctx, bad, report)
        progress(len(rows))
    owners = Owners(ctx)
    _check_claims(ctx, owners, host, sample, repair, report)
    _check_bands(ctx, owners, host, sample, repair, report)
    report.seconds = round(time.monotonic() - started, 3)
    ctx.verify_report.save(asdict(report) | {"repair": repair})
    return report


def describe(report: Report) -> str:
    """The report as lines of text."""
    lines = [f"checked {report.rows} rows, {report.bodies} bodies, {report.claims} content "
             f"claims, {report.band_entries} band entries ({report.scope}) in "
             f"{report.seconds:.1f} s",
             "problems: " + (", ".join(f"{k} {v}" for k, v in report.problems.items() if v)
                             or "none")]
    lines += [f"  {kind}: {', '.join(found)}" for kind, found in report.examples.items() if found]
    if report.repaired:
        lines.append("repaired: " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                              for k, v in report.repaired.items()))
    return "\n".join(lines)
