"""crawlctl: the management command line of the crawler."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from crawlapp.core.settings import SettingsError, get_settings
from crawlapp.core.urls import URLRejected, dedup_key, request_url, url_hash


class CrawlCtl(click.Group):
    """Turns failures into one line on stderr: exit 2 for bad input, 1 for runtime errors."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # a group without its command: its help, on stderr
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            hint = (f" (see '{exc.ctx.command_path} --help')"
                    if isinstance(exc, click.UsageError) and exc.ctx is not None else "")
            click.echo(f"Error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted, nothing changed.", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except SettingsError as exc:
            raise click.UsageError(str(exc)) from None
        except URLRejected as exc:
            raise click.UsageError(_rejection(exc)) from None
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from None


def _rejection(exc: URLRejected) -> str:
    """A refused URL, for people: the URL, why in words, and the reason's code."""
    return f"{exc.url[:200]!r}: {exc.sentence} ({exc.reason})"


def _context():  # type: ignore[no-untyped-def]
    from crawlapp.adapters.context import get_context

    return get_context()


def _emit(data: Any, as_json: bool, text: str) -> None:
    click.echo(json.dumps(data, indent=2, default=str) if as_json else text)


@click.group(cls=CrawlCtl)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Drive the crawler: migrate, seed, crawl, inspect.

    Example: crawlctl crawl --seeds seeds.txt --until-idle
    """
    ctx.obj = {"debug": debug}
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    get_settings()  # a bad setting fails here, with the variable named


@cli.group()
def db() -> None:
    """Database schema.  Example: crawlctl db upgrade"""


@db.command("upgrade")
def db_upgrade() -> None:
    """Run migrations to the newest schema.  Example: crawlctl db upgrade"""
    from crawlapp.adapters.db.engine import upgrade

    upgrade(get_settings())
    click.echo("database is at the newest schema")


@cli.group()
def seed() -> None:
    """Seed URLs.  Example: crawlctl seed add https://example.com/"""


def _read_seed_file(path: Path, option: str) -> list[str]:
    """The seed URLs of a file; a line that is not a URL refuses the whole file (exit 2,
    nothing added), as a bad URL argument does."""
    from crawlapp.core.seeds import read_seeds

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint=option) from None
    urls, problems = read_seeds(lines, get_settings().max_url_length)
    if problems:
        shown = "; ".join(f"line {p.line}: {p.text[:80]!r}: {p.sentence}" for p in problems[:3])
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise click.BadParameter(
            f"{path}: {len(problems)} line(s) are not URLs, nothing added ({shown}{more}); "
            "fix or remove them (a line starting with # is a comment)", param_hint=option)
    return urls


def _prepare_and_seed(urls: list[str]) -> int:
    from crawlapp.adapters.blobstore import S3BlobStore
    from crawlapp.adapters.db.engine import upgrade
    from crawlapp.ops.rebuild import ensure_frontier
    from crawlapp.ops.seeding import add_seeds

    ctx = _context()
    upgrade(ctx.settings)
    if isinstance(ctx.blobs, S3BlobStore):
        ctx.blobs.ensure_bucket()
    # A Redis without the frontier is rebuilt from the database before anything is queued;
    # on a first crawl there is nothing to rebuild and nothing to say.
    restored = ensure_frontier(ctx)
    if restored and any(restored.values()):
        click.echo("Redis had lost the frontier; rebuilt from the database: "
                   + ", ".join(f"{k}={v}" for k, v in restored.items()), err=True)
    return add_seeds(ctx, urls) if urls else 0


@seed.command("add")
@click.argument("urls", nargs=-1)
@click.option("--file", "file_", type=click.Path(path_type=Path), help="One URL per line.")
def seed_add(urls: tuple[str, ...], file_: Path | None) -> None:
    """Add seed URLs.  Example: crawlctl seed add https://example.com/ --file more.txt"""
    if not urls and file_ is None:
        raise click.UsageError("give URLs or --file PATH")
    seeds = [request_url(u, max_length=get_settings().max_url_length) for u in urls]
    if file_ is not None:
        seeds += _read_seed_file(file_, "--file")
    added = _prepare_and_seed(seeds)
    click.echo(f"{added} new seed(s) queued, {len(seeds) - added} already known")


def _interrupt_once() -> Any:
    """A SIGINT handler that stops the crawl on the first Ctrl-C and ignores the next ones
    (a terminal sends one to every process of the group, and people press it twice), so
    the shutdown is never cut short."""
    seen = threading.Event()

    def handler(*_: object) -> None:
        if not seen.is_set():
            seen.set()
            raise KeyboardInterrupt

    return handler


@cli.command()
@click.option("--seeds", type=click.Path(path_type=Path), help="Seed file, one URL per line.")
@click.option("--until-idle", is_flag=True, help="Exit once nothing is queued or in flight.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Pipeline worker processes (default CRAWL_WORKER_CONCURRENCY).")
def crawl(seeds: Path | None, until_idle: bool, workers: int | None) -> None:
    """Run workers, beat and the dispatcher here until idle or Ctrl-C.

    Example: crawlctl crawl --seeds seeds.txt --until-idle
    """
    from crawlapp.app.chain import send_batch
    from crawlapp.observe import stats
    from crawlapp.ops import dispatcher as dispatching
    from crawlapp.ops import runner

    urls = _read_seed_file(seeds, "--seeds") if seeds is not None else []
    ctx = _context()
    added = _prepare_and_seed(urls)
    if seeds is not None:
        click.echo(f"{added} new seed(s) queued")
    before = stats.outcomes(ctx)
    fleet = runner.Fleet(ctx.settings.data_dir / "logs")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, _interrupt_once())
    started = time.time()
    fleet.start(runner.child_commands(ctx, workers or ctx.settings.worker_concurrency))
    # The dispatcher runs here, as a thread: one Python process less to start.
    stop = threading.Event()
    thread = threading.Thread(target=dispatching.run, args=(ctx, send_batch, stop),
                              name="dispatcher", daemon=True)
    thread.start()
    idle = False
    try:
        if until_idle:
            runner.wait_until_idle(ctx, fleet)
            idle = True
        else:
            runner.wait_forever(fleet)
    except KeyboardInterrupt:
        click.echo("stopping: workers end their batches; the crawl's state is kept, and "
                   "`crawlctl crawl` goes on from it", err=True)
        raise SystemExit(130) from None
    finally:
        stop.set()
        thread.join(10)
        # Idle: no task is running or queued, so the workers get a cold shutdown (a warm one
        # waits for the pool's housekeeping).
        fleet.stop(timeout=5.0, cold=True) if idle else fleet.stop()
    summary = stats.collect(ctx, with_queues=False)
    peak = max((w["peak_rss_mib"] for w in summary["workers"].values()), default=0.0)
    run = {k: summary[k] - before[k] for k in stats.OUTCOMES}
    click.echo(f"idle after {time.time() - started:.1f} s: this run {run['fetched']} fetched, "
               f"{run['failed']} failed, {run['blocked_robots']} blocked by robots, "
               f"{run['duplicates']} duplicates (the crawl so far: {summary['fetched']} "
               f"fetched, {summary['failed']} failed); {fleet.restarted} restart(s), "
               f"peak worker memory {peak:.0f} MiB; logs in {fleet.log_dir}")
    given_up = summary["hosts_given_up"]
    if given_up:
        click.echo(f"{len(given_up)} host(s) given up as unreachable (crawlctl frontier resume "
                   "HOST tries again):")
        for line in stats.given_up_lines(given_up):
            click.echo(f"  {line}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--watch", is_flag=True, help="A live view, redrawn until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.5), default=2.0, show_default=True,
              help="Seconds between redraws of --watch.")
def stats(as_json: bool, watch: bool, interval: float) -> None:
    """Counts, rate, frontier and queue lengths.

    --watch shows the rate over the last minute, what is queued and in flight, every
    shard's queue, errors by kind and the top hosts, redrawn every --interval seconds.

    Example: crawlctl stats --json, or crawlctl stats --watch --interval 5
    """
    if watch:
        if as_json:
            raise click.UsageError("--watch draws a live view: it does not go with --json")
        from crawlapp.observe import watch as live

        try:
            live.run(_context(), interval)
        except KeyboardInterrupt:
            pass
        return
    from crawlapp.observe.stats import collect, given_up_lines, verify_line, where_the_crawl_is

    ctx = _context()
    data = collect(ctx)
    lines = [] if data["started"] else [
        f"no crawl yet in {where_the_crawl_is(ctx)} "
        "(crawlctl crawl --seeds FILE --until-idle starts one)"]
    lines += [f"{k:>18}: {data[k]}" for k in ("discovered", "queued", "fetched", "redirected",
                                             "failed", "blocked_robots", "too_deep", "stored", "duplicates",
                                             "pages_per_second")]
    lines.append(f"{'frontier':>18}: " + ", ".join(
        f"{k}={v}" for k, v in data["frontier"].items() if k != "shards"))
    lines.append(f"{'queues':>18}: " + ", ".join(f"{k}={v}" for k, v in data["queues"].items()))
    render = data["render"]
    if render["pages"]:
        lines.append(f"{'render':>18}: " + ", ".join([
            f"{render['rendered']} of {render['pages']} rendered",
            f"{render['seconds']} s ({render['seconds_per_page']} s/page, "
            f"{render['cpu_seconds']} CPU s)", f"{render['subrequests']} sub-requests",
            *(f"{k}={v}" for k, v in {**render["errors"], **render["refused"]}.items())]))
    for label, key in (("pages unread", "unread"), ("parse errors", "parse_errors"),
                       ("links rejected", "rejected_links")):
        if data[key]:
            lines.append(f"{label:>18}: " + ", ".join(f"{k}={v}" for k, v in data[key].items()))
    lines.append(f"{'last verify':>18}: {verify_line(data['last_verify'])}")
    lines.append(f"{'recrawl':>18}: " + ", ".join(
        f"{tier}={v['pages']} ({v['overdue']} overdue)" for tier, v in data["recrawl"].items()))
    if data["hosts_given_up"]:
        lines.append(f"{'hosts given up':>18}: {len(data['hosts_given_up'])}")
        lines += [f"{'':>20}{line}" for line in given_up_lines(data["hosts_given_up"])]
    _emit(data, as_json, "\n".join(lines))


@cli.command()
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many hosts to show.")
@click.option("--errors", is_flag=True,
              help="Only hosts with failed or blocked pages, a backoff, or parked; most failures first.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def hosts(top: int, errors: bool, as_json: bool) -> None:
    """Per host: pages fetched, failed, blocked and queued, robots.txt answer and crawl delay,
    frontier state (ready, waiting, leased, idle, parked or paused) and backoff.

    Example: crawlctl hosts --top 10 --errors
    """
    from crawlapp.observe.stats import host_report

    rows = host_report(_context(), top, errors)
    header = (f"{'host':<32} {'pages':>6} {'fetched':>7} {'failed':>6} {'blocked':>7} "
              f"{'queued':>6} {'robots':>6} {'delay':>5} {'fails':>5}  state")
    lines = [header] + [
        f"{h['host']:<32} {h['pages']:>6} {h['fetched']:>7} {h['failed']:>6} {h['blocked']:>7} "
        f"{h['queued']:>6} {h['robots_status'] or '-':>6} {h['crawl_delay'] or '-':>5} "
        f"{h['failures_in_a_row']:>5}  {h['frontier_state']}"
        + (f" (until {time.strftime('%H:%M:%S', time.localtime(h['until']))})"
           if h["until"] and h["frontier_state"] not in ("ready", "idle") else "")
        + (f", denied by {h['denied_by']}" if h["denied_by"] else "")
        + (f" ({h['given_up']})" if h["given_up"] else "")
        for h in rows]
    _emit(rows, as_json, "\n".join(lines) if rows else "no hosts")


@cli.group()
def page() -> None:
    """Stored pages.  Example: crawlctl page show https://example.com/"""


@page.command("show")
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--body", is_flag=True, help="Print the stored body too.")
def page_show(url: str, as_json: bool, body: bool) -> None:
    """What the crawler knows of one URL.  Example: crawlctl page show https://example.com/ --json"""
    import gzip

    from crawlapp.adapters.db import repository

    ctx = _context()
    wanted = request_url(url, max_length=ctx.settings.max_url_length)
    with ctx.sessions() as session:
        row = repository.get_url(session, url_hash(wanted))
        if row is None:
            raise click.BadParameter(f"not known: {wanted}", param_hint="URL")
        data = {"url": row.url, "key": dedup_key(row.url)} | {col: getattr(row, col) for col in (
            "url_hash", "host", "depth", "status", "priority", "http_status",
            "content_type", "content_length", "content_hash", "content_dedup", "duplicate_of",
            "storage_key", "title", "etag", "last_modified", "redirect_to", "redirect_hops",
            "canonical_url", "noindex", "rendered", "render_error", "raw_storage_key",
            "discovered_at",
            "last_fetched_at", "next_crawl_at", "fail_count", "last_error")}
        data["simhash"] = f"{row.simhash & (2**64 - 1):016x}" if row.simhash is not None else None
        data["outbound_links"] = repository.outbound_links(session, row.url_hash)
    if body and data["storage_key"]:
        data["body"] = gzip.decompress(ctx.blobs.get(data["storage_key"])).decode(
            "utf-8", errors="replace")
    _emit(data, as_json, "\n".join(f"{k:>16}: {v}" for k, v in data.items()))


def _jsonl_out(lines: Any, source: Path) -> None:
    """Answer a --jsonl input (a file, or - for stdin) one line at a time, in order."""
    stream = sys.stdin if str(source) == "-" else None
    try:
        handle = stream or source.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise click.BadParameter(f"cannot read {source}: {exc.strerror}",
                                 param_hint="--jsonl") from None
    with handle:
        for answer in lines(handle):
            click.echo(answer)


def _answers(rows: list[dict[str, Any]], as_json: bool, fields: tuple[str, ...]) -> None:
    if as_json:
        click.echo(json.dumps(rows if len(rows) != 1 else rows[0], indent=2))
        return
    for row in rows:
        shown = [f"{k}={row[k]}" for k in fields if row[k] is not None]
        click.echo(" ".join(shown))


JSONL = click.option("--jsonl", type=click.Path(path_type=Path, allow_dash=True),
                     help="One JSON object a line in (a file, or - for stdin), one a line out.")


@cli.group(name="url")
def url_group() -> None:
    """How the crawler reads URLs.  Example: crawlctl url check '../a?b#c' --base http://h/x/y"""


@url_group.command("check")
@click.argument("hrefs", nargs=-1)
@click.option("--base", help="The page the links were found on.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@JSONL
def url_check(hrefs: tuple[str, ...], base: str | None, as_json: bool, jsonl: Path | None
              ) -> None:
    """For each link: the URL fetched (fetch), its dedup key (key), its politeness key
    (host), or why it is refused (rejected). With --jsonl, input lines are
    {"href": ..., "base": ...}.

    Example: crawlctl url check 'index.php?/blog/post-1' --base http://example.com/ --json
    """
    from crawlapp.core import checks

    limit = get_settings().max_url_length
    if jsonl is not None:
        _jsonl_out(lambda lines: checks.url_jsonl(lines, limit), jsonl)
        return
    if not hrefs:
        raise click.UsageError("give links, or --jsonl FILE")
    if base is not None:
        request_url(base)  # a bad base is bad usage, said once
    _answers([checks.url_answer(h, base, limit) for h in hrefs], as_json,
             ("href", "fetch", "key", "host", "rejected"))


@cli.group(name="robots")
def robots_group() -> None:
    """robots.txt as the crawler applies it.

    Example: crawlctl robots check http://example.com/a --robots-file robots.txt
    """


def _known_policy(origin: str) -> Any:
    """The robots.txt policy the crawler holds for an origin (the hosts table)."""
    from crawlapp.adapters.db import repository
    from crawlapp.core.robots import RobotsPolicy
    from crawlapp.core.urls import origin_of

    key = origin_of(request_url(origin if "://" in origin else f"http://{origin}/"))
    with _context().sessions() as session:
        known = repository.robots_of(session, key)
    if known is None:
        raise click.BadParameter(f"no robots.txt known for {key}: crawl it first, or give "
                                 "--robots-file", param_hint="--host")
    return RobotsPolicy(*known)


@robots_group.command("check")
@click.argument("urls", nargs=-1)
@click.option("--robots-file", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="The robots.txt to apply.")
@click.option("--host", "origin", help="Apply the robots.txt the crawler holds for ORIGIN.")
@click.option("--agent", help="User-Agent (default CRAWL_USER_AGENT); its product token "
                              "picks the group.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@JSONL
def robots_check(urls: tuple[str, ...], robots_file: Path | None, origin: str | None,
                 agent: str | None, as_json: bool, jsonl: Path | None) -> None:
    """Whether the crawler would fetch each URL (found in a link, resolved as the crawler
    resolves it): allowed, the group and rule that decided, and the crawl delay. With
    --jsonl, input lines are {"robots": "<file text>", "url": ..., "agent": ...}.

    Example: crawlctl robots check 'http://example.com/?q=user/login/' --robots-file robots.txt
    """
    from crawlapp.core import checks
    from crawlapp.core.robots import RobotsPolicy, decode_robots

    settings = get_settings()
    agent = agent or settings.user_agent
    if jsonl is not None:
        _jsonl_out(lambda lines: checks.robots_jsonl(lines, agent, settings.max_url_length), jsonl)
        return
    if not urls or (robots_file is None) == (origin is None):
        raise click.UsageError("give URLs and one of --robots-file FILE or --host ORIGIN")
    if robots_file is not None:
        try:
            raw = sys.stdin.buffer.read() if str(robots_file) == "-" else robots_file.read_bytes()
        except OSError as exc:
            raise click.BadParameter(f"cannot read {robots_file}: {exc.strerror}",
                                     param_hint="--robots-file") from None
        policy = RobotsPolicy(200, decode_robots(raw))
    else:
        policy = _known_policy(str(origin))
    _answers([checks.robots_answer(policy, u, agent, max_length=settings.max_url_length)
              for u in urls], as_json,
             ("url", "fetch", "allowed", "group", "rule", "crawl_delay", "rejected"))


@cli.command()
@click.argument("url")
@click.option("--in/--out", "inbound", default=False, help="Links into the page, or out of it (default).")
@click.option("--limit", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def links(url: str, inbound: bool, limit: int, as_json: bool) -> None:
    """The recorded links out of a page (or into it, with --in): URL, anchor, nofollow, and
    what the crawler knows of the other page.

    Example: crawlctl links https://example.com/ --in --json
    """
    from crawlapp.adapters.db import repository

    ctx = _context()
    wanted = request_url(url, max_length=ctx.settings.max_url_length)
    with ctx.sessions() as session:
        if repository.get_url(session, url_hash(wanted)) is None:
            raise click.BadParameter(f"not known: {wanted}", param_hint="URL")
        found = repository.links_of(session, url_hash(wanted), inbound, limit)
    data = [{"url": u, "key": dedup_key(u), "anchor": a, "nofollow": n, "status": st}
            for u, a, n, st in found]
    arrow = "<-" if inbound else "->"
    _emit(data, as_json, "\n".join(
        f"{arrow} {d['url']}  [{d['status']}]" + (" nofollow" if d["nofollow"] else "")
        + (f"  {d['anchor']!r}" if d["anchor"] else "") for d in data)
        or f"no links {'into' if inbound else 'out of'} {wanted}")


@cli.command()
@click.argument("urls", nargs=-1)
@click.option("--host", "host", help="Every page of this host.")
@click.option("--all", "all_", is_flag=True, help="Every page.")
@click.option("--now", is_flag=True, help="Due now, instead of at each page's next time.")
def recrawl(urls: tuple[str, ...], host: str | None, all_: bool, now: bool) -> None:
    """Make pages due for a fetch again (a running crawl's beat picks them up).

    Example: crawlctl recrawl --host example.com --now
    """
    from sqlalchemy import select

    from crawlapp.adapters.db.models import Url

    if bool(urls) + bool(host) + all_ != 1:
        raise click.UsageError("give URLs, or --host HOST, or --all")
    ctx = _context()
    hashes: list[str] | None = None
    if urls:
        hashes = [url_hash(request_url(u, max_length=ctx.settings.max_url_length)) for u in urls]
    elif host:
        with ctx.sessions() as session:
            hashes = list(session.scalars(select(Url.url_hash).where(Url.host == _host_arg(host))))
    if now:
        moved = ctx.recrawls.make_due(hashes, time.time())
    else:
        from crawlapp.ops.rebuild import restore_recrawls

        moved = restore_recrawls(ctx, hashes)
    click.echo(f"{moved} page(s) due {'now' if now else 'at their next crawl time'}")


@cli.group()
def export() -> None:
    """Export stored pages.  Example: crawlctl export warc --out crawl.warc.gz"""


@export.command("warc")
@click.option("--out", "out", type=click.Path(path_type=Path), required=True,
              help="The .warc.gz file to write.")
@click.option("--since", type=click.DateTime(), help="Only pages fetched at or after this time.")
@click.option("--host", "host", help="Only pages of this host.")
def export_warc(out: Path, since: Any, host: str | None) -> None:
    """Write stored pages as WARC/1.1 request and response records (gzip per record).

    Example: crawlctl export warc --host example.com --out example.warc.gz
    """
    from crawlapp.ops.exporting import export_warc as export_pages

    ctx = _context()
    with open(out, "wb") as fh:
        exported = export_pages(ctx, fh, since=since, host=_host_arg(host) if host else None,
                                progress=lambda n: click.echo(f"  {n} pages", err=True))
    click.echo(f"{exported.written} pages written to {out}")
    if exported.skipped:
        click.echo(exported.describe() + " (crawlctl verify --repair queues them again)")


@cli.command()
@click.option("--host", "host", help="Only the pages of this host (and the claims they own).")
@click.option("--sample", type=click.IntRange(min=1),
              help="Check N rows picked at random (and up to N claims and band entries).")
@click.option("--repair", is_flag=True,
              help="Clear what cannot be trusted and queue those pages again.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def verify(click_ctx: click.Context, host: str | None, sample: int | None, repair: bool,
           as_json: bool) -> None:
    """Check that every body a row names is in the blob store, that the content claims and
    SimHash bands in Redis name stored originals, and that every copy's duplicate_of chain
    ends at one. Exit 1 if problems were found and not repaired.

    Example: crawlctl verify --sample 10000, or crawlctl verify --host example.com --repair
    """
    from dataclasses import asdict

    from crawlapp.ops import verify as checks

    ctx = _context()
    name = _host_arg(host) if host else None
    if name and not checks.host_known(ctx, name):
        raise click.BadParameter(f"no pages of {name}", param_hint="--host")
    with click.progressbar(length=checks.rows_to_check(ctx, name, sample), label="rows",
                           file=sys.stderr) as bar:
        report = checks.verify(ctx, name, sample, repair, bar.update)
    _emit(asdict(report), as_json, checks.describe(report))
    if report.total and not repair:
        click_ctx.exit(1)


@cli.group()
def frontier() -> None:
    """The frontier: host states, pausing, rebuilding.  Example: crawlctl frontier stats"""


@frontier.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def frontier_stats(as_json: bool) -> None:
    """Hosts ready, waiting, leased and parked, URLs queued per shard.

    Example: crawlctl frontier stats --json
    """
    from dataclasses import asdict

    ctx = _context()
    now = time.time()
    shards = ctx.frontier.stats(now)
    parked = ctx.frontier.parked()
    data = {
        "shards": [asdict(s) for s in shards],
        "totals": {k: sum(getattr(s, k) for s in shards) for k in (
            "hosts_ready", "hosts_waiting", "hosts_leased", "hosts_parked", "urls_queued")},
        "parked": {host: {"until": until if until != float("inf") else None, "reason": why}
                   for host, (until, why) in parked.items()},
        "batches_in_flight": ctx.batches.in_flight(),
    }
    lines = [" ".join(f"{k}={v}" for k, v in data["totals"].items()),
             *(f"shard {s.shard}: ready={s.hosts_ready} waiting={s.hosts_waiting} "
               f"leased={s.hosts_leased} parked={s.hosts_parked} urls={s.urls_queued}"
               for s in shards),
             *(f"parked {host}: {info['reason']}" for host, info in data["parked"].items())]
    _emit(data, as_json, "\n".join(lines))


def _host_arg(host: str) -> str:
    from crawlapp.core.urls import host_of

    value = host.strip()
    return host_of(request_url(value if "://" in value else f"http://{value}/"))


@frontier.command("pause")
@click.argument("host")
def frontier_pause(host: str) -> None:
    """Stop fetching from HOST (its URLs stay queued).  Example: crawlctl frontier pause example.com"""
    name = _host_arg(host)
    _context().frontier.pause(name)
    click.echo(f"paused {name}")


@frontier.command("resume")
@click.argument("host")
def frontier_resume(host: str) -> None:
    """Fetch from a paused or parked HOST again.  Example: crawlctl frontier resume example.com"""
    name = _host_arg(host)
    if not _context().frontier.resume(name, time.time()):
        raise click.BadParameter(f"{name} was neither paused nor parked", param_hint="HOST")
    click.echo(f"resumed {name}")


@frontier.command("rebuild")
def frontier_rebuild() -> None:
    """Restore the frontier and caches from the database after Redis lost them.

    Example: crawlctl frontier rebuild
    """
    from crawlapp.ops.rebuild import rebuild

    restored = rebuild(_context(), lambda n: click.echo(f"  {n} URLs queued", err=True))
    click.echo(", ".join(f"{k}={v}" for k, v in restored.items()))


def _celery_queues() -> list[str]:
    from crawlapp.core.queues import Queues

    return list(Queues.of(get_settings()).all)


@cli.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def queues(ctx: click.Context, as_json: bool) -> None:
    """Messages waiting in every Celery queue; `queues purge` empties them.

    Example: crawlctl queues --json
    """
    if ctx.invoked_subcommand is not None:
        return
    from crawlapp.adapters.broker import queue_lengths

    lengths = queue_lengths(get_settings().broker_url, _celery_queues())
    _emit(lengths, as_json, "\n".join(f"{name:>8}: {n}" for name, n in lengths.items()))


@queues.command("purge")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every queue of the crawler.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def queues_purge(names: tuple[str, ...], all_: bool, yes: bool) -> None:
    """Delete the waiting messages of queues. The URLs of a purged batch go back to the
    frontier once its deadline passes, like those of a batch lost with a worker.

    Example: crawlctl queues purge fetch.3 --yes
    """
    from crawlapp.adapters.broker import purge
    from crawlapp.ops.takedown import audit

    known = _celery_queues()
    if bool(names) == all_:
        raise click.UsageError("give queue NAMEs or --all")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise click.BadParameter(f"no such queue: {', '.join(unknown)} (queues: {', '.join(known)})",
                                 param_hint="NAME")
    chosen = known if all_ else list(dict.fromkeys(names))
    if not yes:
        click.confirm(f"Purge {', '.join(chosen)}?", abort=True)
    purged = purge(get_settings().broker_url, chosen)
    audit(_context(), "queues purge", ",".join(chosen), purged)
    click.echo(f"{sum(purged.values())} message(s) purged from {', '.join(chosen)}")


def _pattern(_: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from crawlapp.core.hostpatterns import BadPattern, normalize

    if value is None:
        return None
    try:
        return normalize(value)
    except BadPattern as exc:
        raise click.BadParameter(str(exc), param=param) from None


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items())


@cli.command()
@click.argument("pattern", required=False, callback=_pattern)
@click.option("--reason", help="Why (kept in the denylist).")
@click.option("--list", "list_", is_flag=True, help="Show the denylist.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (with --list).")
def block(pattern: str | None, reason: str | None, list_: bool, as_json: bool) -> None:
    """Put a HOST (any port; HOST:PORT for one) or *.DOMAIN (the domain and all its
    subdomains) on the denylist: its queued URLs leave the frontier and their rows become
    'blocked', its re-crawls stop, and its links are no longer queued nor its URLs fetched.

    Example: crawlctl block '*.example.com' --reason "owner asked"
    """
    from crawlapp.adapters.db import repository
    from crawlapp.ops import takedown

    ctx = _context()
    if list_ == bool(pattern):
        raise click.UsageError("give a HOST or *.DOMAIN pattern, or --list")
    if list_:
        with ctx.sessions() as session:
            entries = [{"pattern": d.pattern, "reason": d.reason, "created_at": d.created_at}
                       for d in repository.denylist(session)]
        _emit(entries, as_json, "\n".join(
            f"{e['pattern']}  {e['created_at']:%Y-%m-%d %H:%M}  {e['reason'] or ''}".rstrip()
            for e in entries) or "the denylist is empty")
        return
    assert pattern is not None
    counts = takedown.block(ctx, pattern, reason)
    if counts is None:
        click.echo(f"{pattern} is on the denylist already")
        return
    click.echo(f"blocked {pattern}: {_counts(counts)}")


@cli.command()
@click.argument("pattern", callback=_pattern)
def unblock(pattern: str) -> None:
    """Take a pattern off the denylist: the rows it blocked are queued again and re-crawls
    resume (for hosts no other pattern covers).

    Example: crawlctl unblock '*.example.com'
    """
    from crawlapp.ops import takedown

    counts = takedown.unblock(_context(), pattern)
    if counts is None:
        raise click.BadParameter(f"{pattern} is not on the denylist (crawlctl block --list)",
                                 param_hint="PATTERN")
    click.echo(f"unblocked {pattern}: {_counts(counts)}")


@cli.command()
@click.argument("url", required=False)
@click.option("--host", "host", help="Every page of this host.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def delete(url: str | None, host: str | None, yes: bool) -> None:
    """Take down a URL or a whole host: stored bodies are removed (unless another page still
    points to the same body), rows become 'deleted' and are never crawled again, and they
    leave the frontier and the re-crawl sets. Idempotent; each run appends a line to
    <data dir>/audit.log. Block the host first so nothing new comes in.

    Example: crawlctl delete --host example.com --yes
    """
    from crawlapp.ops import takedown

    if bool(url) == bool(host):
        raise click.UsageError("give a URL or --host HOST")
    ctx = _context()
    target = request_url(url, max_length=ctx.settings.max_url_length) if url else None
    name = _host_arg(host) if host else None
    if not yes:
        click.confirm(f"Delete {target or 'every page of ' + str(name)}?", abort=True)
    counts = takedown.delete(ctx, url=target, host=name)
    click.echo(f"deleted {target or name}: {_counts(counts)}")


@cli.command()
def dispatcher() -> None:
    """Lease ready hosts and send fetch batches until stopped (one or more per fleet).

    Example: crawlctl dispatcher
    """
    from crawlapp.app.chain import send_batch
    from crawlapp.ops import dispatcher as dispatching

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    dispatching.run(_context(), send_batch, stop)


@cli.group()
def metrics() -> None:
    """Prometheus metrics of the crawl.  Example: crawlctl metrics serve --port 9108"""


@metrics.command("serve")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port to listen on (default CRAWL_METRICS_PORT, else 9108).")
@click.option("--addr", default=None, help="Address to listen on (default CRAWL_METRICS_ADDR).")
def metrics_serve(port: int | None, addr: str | None) -> None:
    """Serve /metrics for Prometheus until stopped: counters of every worker, frontier,
    re-crawl and queue lengths.  Example: crawlctl metrics serve --port 9108 --addr 0.0.0.0
    """
    from crawlapp.observe.metrics import serve

    ctx = _context()
    port = port or ctx.settings.metrics_port or 9108
    addr = addr or ctx.settings.metrics_addr
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    click.echo(f"serving crawl metrics on http://{addr}:{port}/metrics", err=True)
    serve(ctx, port, addr, stop)


def main() -> None:
    cli(prog_name="crawlctl")


if __name__ == "__main__":
    main()
