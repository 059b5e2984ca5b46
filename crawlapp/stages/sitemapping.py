"""Sitemaps as a change signal (the links stage, for each sitemap page with <lastmod>s).

A page whose <lastmod> moved past the crawler's copy (its last fetch) is made due now, on a
host whose sitemaps are trusted; one whose lastmod did not move is left alone (revisiting.py
gives a page a trusted sitemap lists the maximum interval). Its row keeps its lastmod: the
first one past its copy until it is fetched again (the first change its copy lacks, which that
visit observes: core/freshness.py `Visit.first_change`), else the last one.

The lastmods are checked against what the visits saw: a page seen changed between two visits
(its change record's `changed_after` and `changed_by`) whose lastmod, in a sitemap fetched after
the second visit, is still before the first visit, changed without its lastmod moving. Such
lies, counted per host once per change seen (adapters/redis/sitemap_trust.py), end the host's
trust: its pages go back to their own schedules.
"""

from __future__ import annotations

from datetime import UTC, datetime

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import schedule
from crawlapp.adapters.redis.sitemap_trust import Trust
from crawlapp.core.freshness import LASTMOD_SLACK, ChangeRecord, past_copy
from crawlapp.core.records import Page
from crawlapp.core.recrawl import RECRAWLED_STATUSES, timestamp
from crawlapp.core.urls import url_hash

DAY = 86400.0  # a lastmod at midnight may be a date alone: the change was that day


def _lied(lastmod: float, record: ChangeRecord, sitemap_at: float) -> bool | None:
    """Whether the page's last change seen proves `lastmod` false (None: nothing to check:
    no change seen, or seen after this sitemap was fetched)."""
    if record.changed_by <= 0 or record.changed_by > sitemap_at:
        return None
    slack = DAY if lastmod % DAY == 0 else LASTMOD_SLACK
    return lastmod + slack < record.changed_after


def _past(lastmod: float, last_fetched: datetime | None) -> bool:
    """A lastmod after the page's last fetch: a change the crawler's copy lacks."""
    return last_fetched is not None and past_copy(lastmod, timestamp(last_fetched))


def freshen(ctx: Context, pages: list[Page]) -> int:
    """Act on the lastmods of the batch's sitemaps; returns how many pages were made due."""
    listed: dict[str, tuple[float, float]] = {}  # url_hash -> (lastmod, sitemap fetched at)
    for page in pages:
        for url, lastmod in (page.lastmods or {}).items():
            listed[url_hash(url)] = (lastmod, page.fetched_at)
    if not listed:
        return 0
    now = datetime.now(UTC)
    with ctx.sessions.begin() as session:
        entries = schedule.sitemap_entries(session, list(listed))
        trust = ctx.sitemap_trust.load({e.host for e in entries})
        checked: dict[str, Trust] = {}
        for entry in entries:  # what the lastmods prove, before acting on them
            lastmod, sitemap_at = listed[entry.url_hash]
            host = trust.get(entry.host, Trust())
            record = ChangeRecord.unpack(entry.changes)
            lied = _lied(lastmod, record, sitemap_at)
            if lied is not None and record.changed_by > host.checked_at:
                now_host = checked.get(entry.host, host)
                checked[entry.host] = now_host._replace(
                    checks=now_host.checks + 1, lies=now_host.lies + int(lied))
        moved, due = [], []
        for entry in entries:
            lastmod, _ = listed[entry.url_hash]
            last = entry.last_fetched_at
            if entry.sitemap_lastmod is None or (
                    timestamp(entry.sitemap_lastmod) != lastmod
                    and not _past(timestamp(entry.sitemap_lastmod), last)):
                moved.append((entry.url_hash, datetime.fromtimestamp(lastmod, UTC)))
            host = checked.get(entry.host) or trust.get(entry.host, Trust())
            if (host.trusted and entry.status in RECRAWLED_STATUSES and last is not None
                    and not entry.held and _past(lastmod, last)):
                due.append(entry)
        schedule.set_sitemap_lastmods(session, moved, [(e.url_hash, now) for e in due])
    sitemap_at = max(at for _, at in listed.values())
    ctx.sitemap_trust.write({h: t._replace(checked_at=sitemap_at) for h, t in checked.items()})
    ctx.recrawls.make_due([planned for e in due
                           if (row := e.scheduled()) is not None
                           for planned in [row.planned(now.timestamp())]])
    return len(due)
