"""`crawlctl url check` and `crawlctl robots check`: how the crawler reads a link and applies
robots.txt, for any URL, one at a time or as JSON lines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crawlapp.cli.common import context, json_option
from crawlapp.core.settings import get_settings
from crawlapp.core.urls import request_url

if TYPE_CHECKING:
    from crawlapp.core.robots import RobotsPolicy

jsonl_option = click.option(
    "--jsonl", type=click.Path(path_type=Path, allow_dash=True),
    help="One JSON object a line in (a file, or - for stdin), one a line out.")


def _jsonl_out(answers: Callable[[Iterable[str]], Iterator[str]], source: Path) -> None:
    """Answer a --jsonl input (a file, or - for stdin) one line at a time, in order."""
    stream = sys.stdin if str(source) == "-" else None
    try:
        handle = stream or source.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise click.BadParameter(f"cannot read {source}: {exc.strerror}",
                                 param_hint="--jsonl") from None
    with handle:
        for answer in answers(handle):
            click.echo(answer)


def _answers(rows: list[dict[str, Any]], as_json: bool, fields: tuple[str, ...]) -> None:
    """The answers as JSON (one object for one answer), or one `key=value` line each."""
    if as_json:
        click.echo(json.dumps(rows if len(rows) != 1 else rows[0], indent=2))
        return
    for row in rows:
        shown = [f"{k}={row[k]}" for k in fields if row[k] is not None]
        click.echo(" ".join(shown))


@click.group(name="url")
def url_group() -> None:
    """How the crawler reads URLs.  Example: crawlctl url check '../a?b#c' --base http://h/x/y"""


@url_group.command("check")
@click.argument("hrefs", nargs=-1)
@click.option("--base", help="The page the links were found on.")
@json_option
@jsonl_option
def url_check(hrefs: tuple[str, ...], base: str | None, as_json: bool, jsonl: Path | None
              ) -> None:
    """For each link: the URL fetched (fetch), its dedup key (key), its politeness key
    (host), its registrable domain and SURT form, which the crawl scope matches (domain,
    surt), or why it is refused (rejected). With --jsonl, input lines are
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
             ("href", "fetch", "key", "host", "domain", "rejected"))


@click.group(name="robots")
def robots_group() -> None:
    """robots.txt as the crawler applies it.

    Example: crawlctl robots check http://example.com/a --robots-file robots.txt
    """


def _known_policy(origin: str) -> RobotsPolicy:
    """The robots.txt policy the crawler holds for an ORIGIN argument."""
    from crawlapp.core.urls import origin_of
    from crawlapp.ops.inspecting import robots_policy

    key = origin_of(request_url(origin if "://" in origin else f"http://{origin}/"))
    policy = robots_policy(context(), key)
    if policy is None:
        raise click.BadParameter(f"no robots.txt known for {key}: crawl it first, or give "
                                 "--robots-file", param_hint="--host")
    return policy


@robots_group.command("check")
@click.argument("urls", nargs=-1)
@click.option("--robots-file", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="The robots.txt to apply.")
@click.option("--host", "origin", help="Apply the robots.txt the crawler holds for ORIGIN.")
@click.option("--agent", help="User-Agent (default CRAWL_USER_AGENT); its product token "
                              "picks the group.")
@json_option
@jsonl_option
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
