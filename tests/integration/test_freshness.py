"""The re-crawl policy on the real Redis and databases: each visit adds to its page's change
record and its host's sums once (a batch stored twice changes nothing), a rebuild sums them
again from the rows, a sitemap's lastmod makes a changed page due and leaves the others, and
lastmods proven false end the host's trust."""

from __future__ import annotations

import gzip
import hashlib
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.db.models import Url
from crawlapp.adapters.redis.change_rates import ALL_HOSTS
from crawlapp.core.freshness import (
    HUBS_SHARE,
    ChangeRecord,
    HostRates,
    best_interval,
    expected_freshness,
    hub_driven,
    kind_of,
)
from crawlapp.core.records import Link, Page, Status
from crawlapp.core.recrawl import EARLY
from crawlapp.core.rows import UrlRow
from crawlapp.core.settings import load_settings
from crawlapp.core.textchanges import text_digest
from crawlapp.core.urls import url_hash
from crawlapp.ops.rebuild import rebuild
from crawlapp.stages import revisiting, sitemapping
from crawlapp.stages.dedup import dedup_pages
from crawlapp.stages.parsing import parse_pages
from crawlapp.stages.recrawling import drain, rescore
from crawlapp.stages.storing import store_pages

T = float(int(time.time())) - 3600
HOST = "w.test"
URLS = [f"http://{HOST}/p{i}" for i in range(5)]
SETTINGS = {"CRAWL_RECRAWL_MIN_INTERVAL": "5", "CRAWL_RECRAWL_MAX_INTERVAL": "7200",
            "CRAWL_RECRAWL_FIRST_INTERVAL": "120"}


@pytest.fixture(params=["sqlite", "postgres"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path, redis_url: str) -> Context:
    env = {"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url, **SETTINGS}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("pg_url")
    settings = load_settings(env)
    upgrade(settings)
    ctx = Context(settings)
    with ctx.sessions.begin() as session:
        repository.add_urls(session, [UrlRow(url_hash(u), u, HOST, 1, "queued",
                                             datetime.now(UTC)) for u in URLS])
    ctx.budgets.add({HOST: len(URLS)}, {})
    return ctx


def page(url: str, at: float, version: int, modified: float | None = None,
         not_modified: bool = False) -> Page:
    body = f"<p>{url} version {version}</p>".encode()
    out = Page(url=url, url_hash=url_hash(url), host=HOST, depth=1, status=Status.FETCHED,
               fetched_at=at, http_status=304 if not_modified else 200, content_type="text/html",
               not_modified=not_modified,
               last_modified=None if modified is None else
               datetime.fromtimestamp(modified, UTC).strftime("%a, %d %b %Y %H:%M:%S GMT"))
    if not not_modified:
        out.content_hash = hashlib.sha256(body).hexdigest()
        out.content_length, out.body_gz = len(body), gzip.compress(body)
    return out


def store(ctx: Context, pages: list[Page]) -> None:
    store_pages(ctx, dedup_pages(ctx, pages))


def row(ctx: Context, url: str) -> tuple[ChangeRecord, float, float]:
    """A page's change record, last fetch and next fetch (POSIX times)."""
    with ctx.sessions() as session:
        found = repository.get_url(session, url_hash(url))
    assert found is not None and found.last_fetched_at and found.next_crawl_at
    stamp = lambda d: d.replace(tzinfo=d.tzinfo or UTC).timestamp()  # noqa: E731
    return (ChangeRecord.unpack(found.changes), stamp(found.last_fetched_at),
            stamp(found.next_crawl_at))


def sums(ctx: Context) -> dict[str, HostRates]:
    return {h: HostRates.parse(raw) for h, raw in ctx.change_rates.load([HOST]).items()}


def test_visits_build_the_record_and_the_host_sums_once(ctx: Context) -> None:
    # p0 changes at every visit (Last-Modified says when), p1 never (304s)
    store(ctx, [page(URLS[0], T, 0, T - 50), page(URLS[1], T, 0, T - 5000), page(URLS[2], T, 0)])
    record, last, nxt = row(ctx, URLS[0])
    assert last == T and record.exposure == 50 and record.bucket >= 0  # as old as it says
    assert T < nxt < row(ctx, URLS[1])[2]  # the page unchanged for longer waits longer
    # the prior alone: due 120 s later, queued EARLY of it before
    assert row(ctx, URLS[2])[2] - T == pytest.approx(120 * (1 - EARLY), abs=1)
    for visit in range(1, 6):
        at = T + 100 * visit
        batch = [page(URLS[0], at, visit, at - 10), page(URLS[1], at, 0, T - 5000, True)]
        store(ctx, batch)
        store(ctx, batch)  # delivered again: counted once
    changing, _, changing_next = row(ctx, URLS[0])
    still, _, still_next = row(ctx, URLS[1])
    assert changing.changes == pytest.approx(sum(0.96875 ** k for k in range(5)))
    assert still.changes == 0 and still.exposure > 4500  # its age, then 500 s, decayed
    assert changing.rate(1 / 120) > 20 * still.rate(1 / 120)
    assert still_next - (T + 500) > changing_next - (T + 500) >= 5
    host, fleet = sums(ctx)[HOST], sums(ctx)[ALL_HOSTS]
    assert host.pages == fleet.pages == 3
    assert sum(host.buckets.values()) == 3 and changing.bucket != still.bucket
    assert host.changes == 5 and host.seconds == 1000
    assert host.freshness == pytest.approx(changing.freshness + still.freshness
                                           + row(ctx, URLS[2])[0].freshness)
    assert host.multiplier is not None
    counts = ctx.counters.read()
    assert counts["recrawl:changed"] == 5 and counts["recrawl:unchanged"] == 5
    assert counts["recrawl:refresh"] >= 10 and counts["recrawl:discovery"] >= 2

    before = sums(ctx)
    ctx.redis.delete(ctx.change_rates._key(HOST), ctx.change_rates.fleet)
    assert rebuild(ctx, dedup=False)["hosts_planned"] == 1
    after = sums(ctx)
    for name in (HOST, ALL_HOSTS):
        assert after[name].buckets == before[name].buckets
        assert after[name].pages == before[name].pages
        assert after[name].freshness == pytest.approx(before[name].freshness)


def test_a_kind_that_never_changed_plans_its_new_pages_through_redis(ctx: Context) -> None:
    """Articles (/a/) seen again unchanged and index pages (/p/) seen changed, as the store
    stage adds them to Redis (which keeps no zero delta: the articles' kind has no changes
    field): a new article is planned from its kind's rate, far later than a new index page."""
    articles = [f"http://{HOST}/a/{i}" for i in range(4)]
    index = [f"http://{HOST}/p/{i}" for i in range(4)]
    new = [f"http://{HOST}/a/new", f"http://{HOST}/p/new"]
    with ctx.sessions.begin() as session:
        repository.add_urls(session, [UrlRow(url_hash(u), u, HOST, 1, "queued", datetime.now(UTC))
                                      for u in articles + index + new])
    store(ctx, [page(url, T, 0) for url in articles + index])
    for visit in range(1, 4):
        at = T + 300 * visit
        store(ctx, [page(url, at, 0) for url in articles] + [page(url, at, visit) for url in index])
    host = sums(ctx)[HOST]
    assert host.kinds[kind_of(articles[0])] == (0.0, pytest.approx(4 * 900.0))
    assert host.kinds[kind_of(index[0])] == (12.0, pytest.approx(4 * 900.0))
    at = T + 1000
    store(ctx, [page(url, at, 0) for url in new])
    new_article, new_index = (row(ctx, url)[2] - at for url in new)
    assert new_article > 5 * new_index


def sitemap(at: float, lastmods: dict[str, float]) -> Page:
    out = page(f"http://{HOST}/sitemap.xml", at, int(at))
    out.lastmods = lastmods
    return out


def test_a_sitemap_lastmod_past_the_copy_makes_the_page_due_and_lies_end_the_trust(
        ctx: Context) -> None:
    fetched = time.time() - (1 - EARLY) * 120 + 20  # queued again 20 s from now
    store(ctx, [page(u, fetched, 0) for u in URLS])
    now = time.time()
    made = sitemapping.freshen(ctx, [sitemap(now, {URLS[0]: fetched + 30,
                                                   URLS[1]: fetched - 30})])
    assert made == 1
    _, _, due = row(ctx, URLS[0])
    assert due <= time.time()
    assert drain(ctx) == 1  # p0 back in the frontier; p1, unchanged, left alone
    with ctx.sessions() as session:
        listed = repository.get_url(session, url_hash(URLS[1]))
    assert listed is not None and listed.sitemap_lastmod is not None

    # p2-p4 change between two visits, and the sitemap fetched after says they did not
    for version, at in ((1, fetched + 10), (2, fetched + 20)):
        store(ctx, [page(u, at, version) for u in URLS[2:]])
    assert ctx.sitemap_trust.load([HOST])[HOST].trusted
    made = sitemapping.freshen(ctx, [sitemap(time.time(), {u: fetched - 30 for u in URLS[2:]}
                                             | {URLS[1]: time.time() - 1})])
    assert made == 0  # three lies: no longer trusted, p1's new lastmod acted on no more
    trust = ctx.sitemap_trust.load([HOST])[HOST]
    assert trust[:2] == (3, 3) and not trust.trusted


def test_a_page_a_trusted_sitemap_lists_is_estimated_as_fresh_as_its_plan_would_keep_it(
        ctx: Context) -> None:
    """It waits the maximum interval (the sitemap tells of its changes), and its freshness,
    which `crawlctl stats` sums, is what its host's plan would give it without the sitemap,
    not what a visit every two hours would: its twin not listed shows the same."""
    store(ctx, [page(u, T, 0) for u in URLS[:2]])
    assert sitemapping.freshen(ctx, [sitemap(T + 50, {URLS[0]: T - 30})]) == 0
    store(ctx, [page(u, T + 100, 0, not_modified=True) for u in URLS[:2]])
    (listed, last, nxt), (twin, _, twin_next) = row(ctx, URLS[0]), row(ctx, URLS[1])
    assert nxt - last > 3600 > twin_next - last  # the maximum interval, less its lead
    assert listed.freshness == pytest.approx(twin.freshness) and listed.freshness > 0.5
    assert listed.freshness > 2 * expected_freshness(listed.rate(1 / 120), 1 / 7200)


def test_a_visit_a_sitemap_brings_about_observes_the_first_change_its_copy_lacked(
        ctx: Context) -> None:
    """The row keeps the first lastmod past its copy while later polls move it on; the visit
    it brings about learns "no change until then" (not "changed since the last visit", which
    would make the page look as if it changed as often as its sitemap has it fetched), and is
    estimated fresh from the last visit to that change."""
    store(ctx, [page(URLS[0], T, 0)])
    assert sitemapping.freshen(ctx, [sitemap(T + 50, {URLS[0]: T + 40})]) == 1
    assert sitemapping.freshen(ctx, [sitemap(T + 60, {URLS[0]: T + 55})]) == 1
    with ctx.sessions() as session:
        found = repository.get_url(session, url_hash(URLS[0]))
    assert found is not None and found.sitemap_lastmod is not None
    assert found.sitemap_lastmod.replace(tzinfo=UTC).timestamp() == T + 40  # the first past it
    store(ctx, [page(URLS[0], T + 70, 1, modified=T + 55)])
    record, _, _ = row(ctx, URLS[0])
    # 40 s without a change, a change, (unknown), the last change at T + 55, 15 s without
    assert (record.changes, record.censored, record.exposure) == (2, 0, 55)
    assert record.freshness == pytest.approx(40 / 70)
    watched = sums(ctx)[HOST]
    assert (watched.changes, watched.seconds) == (1, 40)  # its host's: to that first change
    assert sitemapping.freshen(ctx, [sitemap(T + 80, {URLS[0]: T + 55})]) == 0  # fetched since
    with ctx.sessions() as session:
        found = repository.get_url(session, url_hash(URLS[0]))
    assert found is not None and found.sitemap_lastmod is not None
    assert found.sitemap_lastmod.replace(tzinfo=UTC).timestamp() == T + 55


def test_pages_revealing_new_urls_at_every_visit_get_a_quarter_of_their_host_together(
        ctx: Context) -> None:
    """Thirty pages each linking to a URL never seen before at every visit (a token in a
    link), each of which alone would be visited every tenth of its host's capacity, are planned
    a quarter of it together, in proportion."""
    rotating = [f"http://{HOST}/r{i}" for i in range(30)]
    with ctx.sessions.begin() as session:
        repository.add_urls(session, [UrlRow(url_hash(u), u, HOST, 1, "queued",
                                             datetime.now(UTC)) for u in rotating])
    for visit in range(6):
        batch = []
        for i, url in enumerate(rotating):
            out = page(url, T + 30 * visit, 0)
            out.links = [Link(f"http://{HOST}/post?token={visit}-{i}")]
            batch.append(out)
        store(ctx, batch)
    plan = revisiting.host_plans(ctx, {HOST}, {})[0][HOST]
    records = [row(ctx, url) for url in rotating]
    claims = sum(record.hub_rate for record, _, _ in records)
    assert claims == pytest.approx(sums(ctx)[HOST].hubs)
    assert claims > 2 * HUBS_SHARE * plan.capacity  # alone, each would take its tenth
    visits = sum(1 / (nxt - last) for _, last, nxt in records)
    assert visits == pytest.approx(HUBS_SHARE * plan.capacity, rel=0.1)
    assert all(hub_driven(plan.hub_visits(record.link_rate(1 / 120)), nxt - last)
               for record, last, nxt in records)


def test_a_page_is_a_hub_for_the_urls_it_reveals_not_for_links_that_move(
        ctx: Context) -> None:
    """Links that change among pages the crawl knows (a "random posts" block), or to other
    hosts only, make no hub; a link to a page of its host never seen does, and a sitemap whose
    lastmods move does (it tells of changes)."""
    known = [f"http://{HOST}/post{i}" for i in range(10)]
    ctx.url_seen.add([bytes.fromhex(url_hash(url)) for url in known])
    pages = {"rotating": URLS[0], "elsewhere": URLS[1], "news": URLS[2],
             "sitemap": f"http://{HOST}/sitemap.xml"}
    with ctx.sessions.begin() as session:
        repository.add_urls(session, [UrlRow(url_hash(pages["sitemap"]), pages["sitemap"], HOST,
                                             1, "queued", datetime.now(UTC))])
    for visit in range(4):
        at = T + 30 * visit
        rotating, elsewhere, news = (page(pages[name], at, visit)
                                     for name in ("rotating", "elsewhere", "news"))
        rotating.links = [Link(known[(visit + k) % 10]) for k in range(3)]
        elsewhere.links = [Link(f"http://other.test/a{visit}"), Link(known[0])]
        news.links = [Link(f"http://{HOST}/a{visit}"), Link(f"http://{HOST}/a{visit + 1}",
                                                             nofollow=True)]
        store(ctx, [rotating, elsewhere, news, sitemap(at, {url: T + visit for url in known})])
    records = {name: row(ctx, url)[0] for name, url in pages.items()}
    assert records["rotating"].link_changes == records["elsewhere"].link_changes == 0
    assert records["rotating"].hub_rate == records["elsewhere"].hub_rate == 0
    assert records["news"].link_changes > 2 and records["news"].hub_rate > 0
    assert records["sitemap"].link_changes > 2 and records["sitemap"].hub_rate > 0


def test_a_new_body_with_the_same_visible_text_is_no_change(ctx: Context) -> None:
    """A dynamic page writes a token of each request into its markup (a form field, a script,
    a comment) and the time it was served into its text: its bytes differ at every visit, its
    text but for that time only when it changes. Parsed and stored, the first is seen unchanged
    (and counted as markup only), the second changed."""
    def dynamic(url: str, at: float, text: str) -> Page:
        served = time.strftime("%H:%M:%S", time.gmtime(at))
        return parsed(ctx, url, at, f"<p>{text}</p><form><input type=hidden name=t value={at}>"
                      f"</form><script>var at = {at};</script><!-- {at} --><p>Served at "
                      f"{served} UTC</p>")

    texts = {URLS[0]: ["same"] * 4, URLS[1]: ["one", "two", "three", "four"]}
    for visit in range(4):
        store(ctx, [dynamic(url, T + 60 * visit, words[visit]) for url, words in texts.items()])
    still, moving = row(ctx, URLS[0])[0], row(ctx, URLS[1])[0]
    assert still.censored == still.changes == 0 and still.exposure == pytest.approx(
        60 * sum(0.96875 ** k for k in range(3)))
    assert moving.censored == pytest.approx(sum(0.96875 ** k for k in range(3)))
    assert moving.exposure == 0
    counts = ctx.counters.read()
    assert counts["recrawl:unchanged"] == counts["recrawl:markup_only"] == 3
    assert counts["recrawl:changed"] == 3
    with ctx.sessions() as session:
        digests = {u.url: u.text_digest for u in repository.urls_by_hash(
            session, [url_hash(url) for url in texts])}
    ignore = ctx.settings.change_ignore
    assert digests[URLS[0]] == text_digest("same served at 00:00:00 utc", ignore)
    assert digests[URLS[1]] == text_digest("four served at 00:00:00 utc", ignore)


def parsed(ctx: Context, url: str, at: float, html: str, modified: float | None = None) -> Page:
    """The page of `html` (a body's inside) fetched at `at` with that Last-Modified, parsed."""
    body = f"<html><body>{html}</body></html>".encode()
    out = replace(page(url, at, 0, modified), content_hash=hashlib.sha256(body).hexdigest(),
                  content_length=len(body), body_gz=gzip.compress(body))
    return parse_pages([out], ctx.settings)[0][0]


def test_a_new_body_with_the_same_text_is_a_change_when_its_last_modified_says_so(
        ctx: Context) -> None:
    """A link's target moved under the same anchor text: a change when the page's
    Last-Modified moved past the last visit, and not when it is the time of serving (a dynamic
    page's) or did not move."""
    modified = {URLS[0]: lambda at: at - 30, URLS[1]: lambda at: at, URLS[2]: lambda at: T - 60}
    for visit in range(4):
        at = T + 60 * visit
        store(ctx, [parsed(ctx, url, at, f'<p><a href="/story/{visit}">Read on</a></p>', lm(at))
                    for url, lm in modified.items()])
    told, served, kept = (row(ctx, url)[0] for url in URLS[:3])
    assert told.changes == pytest.approx(sum(0.96875 ** k for k in range(3)))
    assert told.exposure == pytest.approx(30 * sum(0.96875 ** k for k in range(4)))  # + 1st
    for record in (served, kept):
        assert record.changes == record.censored == 0 and record.exposure > 170
    counts = ctx.counters.read()
    assert counts["recrawl:changed"] == 3
    assert counts["recrawl:unchanged"] == counts["recrawl:markup_only"] == 6


def test_a_hub_is_planned_on_time_and_a_page_early(ctx: Context) -> None:
    """A page visited for its links (a home page whose list of articles changes at every
    visit, its text the same) is planned when due, not EARLY of it: it is queued as a new
    URL, ahead of its host's re-crawls, and would be fetched as soon as queued."""
    for visit in range(6):
        at = T + 30 * visit
        hub = page(URLS[0], at, 0)
        hub.links = [Link(f"http://{HOST}/article{visit}")]
        store(ctx, [hub, page(URLS[1], at, visit)])
    record, last, nxt = row(ctx, URLS[0])
    assert record.link_changes > 4 and record.changes + record.censored == 0
    assert hub_driven(record.hub_rate, nxt - last)
    assert nxt - last == pytest.approx(1 / record.hub_rate, abs=0.01)
    changing, last, nxt = row(ctx, URLS[1])
    assert changing.censored > 4 and changing.hub_rate == 0
    planned = best_interval(changing, revisiting.host_plans(ctx, {HOST}, {})[0][HOST],
                            ctx.settings.recrawl_bounds, 1, kind_of(URLS[1]), False).interval
    assert nxt - last == pytest.approx(max(5.0, planned * (1 - EARLY)), rel=0.05)


def test_re_crawls_go_earliest_due_first_known_stale_slowest_first_and_hubs_as_new_urls(
        ctx: Context) -> None:
    store(ctx, [page(u, T, 0) for u in URLS])
    with ctx.sessions() as session:
        rows = {u: repository.get_url(session, url_hash(u)) for u in URLS}
    last = datetime.fromtimestamp(T, UTC)

    def planned(url: str, queued_after: float, record: ChangeRecord, stale: bool = False) -> Url:
        found = rows[url]
        assert found is not None
        found.last_fetched_at, found.changes = last, record.pack()
        found.next_crawl_at = last + timedelta(seconds=queued_after)
        found.sitemap_lastmod = last + timedelta(seconds=60) if stale else None
        return found

    slow, fast = ChangeRecord(exposure=5000), ChangeRecord(censored=5, censored_time=500)
    rates_key = ctx.change_rates._key(HOST)
    ctx.redis.hset(rates_key, "mu_at", 1.0)  # solved long ago: the drain takes it as kept
    scored = {item.url: item.priority for _, item, _ in rescore(ctx, [
        planned(URLS[0], 400, slow),  # queued alike, due as the host's plan has them now
        planned(URLS[1], 400, fast),
        planned(URLS[2], 400, ChangeRecord(censored=5, censored_time=50), stale=True),  # fast
        planned(URLS[3], 400, ChangeRecord(exposure=5000), stale=True),  # slow
        planned(URLS[4], 40, ChangeRecord(hub_rate=1 / 60)),  # due 60 s after, for its links
    ], T + 1)}
    assert sorted(scored, key=scored.__getitem__, reverse=True) == [
        URLS[4], URLS[3], URLS[2], URLS[1], URLS[0]]
    assert float(ctx.redis.hget(rates_key, "mu_at")) == 1.0  # not solved again
    # their queue values are their due times under the host's plan: as far apart
    plans, _ = revisiting.host_plans(ctx, {HOST}, {})
    bounds = ctx.settings.recrawl_bounds
    kind = kind_of(URLS[0])
    due_slow, due_fast = (best_interval(r, plans[HOST], bounds, 1, kind, False).interval
                          for r in (slow, fast))
    assert due_slow > due_fast
    assert scored[URLS[1]] - scored[URLS[0]] == pytest.approx((due_slow - due_fast) / 3600,
                                                              abs=1e-4)


def test_a_refresh_that_fails_or_is_refused_keeps_the_copy_and_its_schedule(
        ctx: Context) -> None:
    """A page the collection holds whose re-crawl fails (a 503 past its retries, no answer) or
    that robots.txt now disallows keeps its copy, and is tried again after as long as its copy
    went unconfirmed (a refused one no sooner than robots.txt is read again); a 404 is its new
    state. Each is counted."""
    store(ctx, [page(URLS[0], T, 0), page(URLS[1], T, 0)])

    def held() -> tuple[str, str | None, str | None, str | None, float, float]:
        with ctx.sessions() as session:
            found = repository.get_url(session, url_hash(URLS[0]))
        assert found is not None and found.last_fetched_at and found.next_crawl_at
        stamp = lambda d: d.replace(tzinfo=d.tzinfo or UTC).timestamp()  # noqa: E731
        return (found.status, found.content_hash, found.storage_key, found.last_error,
                stamp(found.last_fetched_at), stamp(found.next_crawl_at))

    copy = held()[1:3]
    failed = Page(url=URLS[0], url_hash=url_hash(URLS[0]), host=HOST, depth=1,
                  status=Status.FAILED, fetched_at=T + 100, http_status=503)
    store(ctx, [failed])
    assert held() == ("fetched", *copy, "HTTP 503", T, T + 200)
    store(ctx, [replace(failed, fetched_at=T + 200, http_status=None, error="timeout")])
    assert held() == ("fetched", *copy, "timeout", T, T + 400)  # twice as long unconfirmed
    refused = replace(failed, status=Status.BLOCKED, fetched_at=T + 400, http_status=None,
                      error="robots: Disallow: /p")
    store(ctx, [refused])
    assert held() == ("fetched", *copy, "robots: Disallow: /p", T, T + 400 + 7200)
    # a trusted sitemap's lastmod past the copy does not make it due before its re-check:
    # refused or failing, it would be leased again at every poll of the sitemap
    assert sitemapping.freshen(ctx, [sitemap(T + 450, {URLS[0]: T + 420})]) == 0
    assert held() == ("fetched", *copy, "robots: Disallow: /p", T, T + 400 + 7200)
    store(ctx, [page(URLS[0], T + 500, 1)])  # answered again: its new copy, its own plan
    status, content, _, error, last, _ = held()
    assert (status, error, last) == ("fetched", None, T + 500) and content != copy[0]

    gone = replace(failed, url=URLS[1], url_hash=url_hash(URLS[1]), http_status=404)
    store(ctx, [gone])
    with ctx.sessions() as session:
        row = repository.get_url(session, url_hash(URLS[1]))
    assert row is not None and (row.status, row.content_hash, row.next_crawl_at) == (
        "failed", None, None)
    counts = ctx.counters.read()
    assert (counts["recrawl:failed"], counts["recrawl:refused"]) == (2, 1)
