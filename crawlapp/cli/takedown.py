"""`crawlctl block`, `unblock` and `delete`: the denylist and takedowns."""

from __future__ import annotations

import click

from crawlapp.cli.common import context, emit, host_arg
from crawlapp.core.urls import request_url


class HostPattern(click.ParamType):
    """A denylist pattern (HOST, HOST:PORT or *.DOMAIN), in its canonical form."""

    name = "pattern"

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None
                ) -> str:
        from crawlapp.core.hostpatterns import BadPattern, normalize

        try:
            return normalize(value)
        except BadPattern as exc:
            self.fail(str(exc), param, ctx)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items())


@click.command()
@click.argument("pattern", required=False, type=HostPattern())
@click.option("--reason", help="Why (kept in the denylist).")
@click.option("--list", "list_", is_flag=True, help="Show the denylist.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (with --list).")
def block(pattern: str | None, reason: str | None, list_: bool, as_json: bool) -> None:
    """Put a HOST (any port; HOST:PORT for one) or *.DOMAIN (the domain and all its
    subdomains) on the denylist: its queued URLs leave the frontier and their rows become
    'blocked', its re-crawls stop, and its links are no longer queued nor its URLs fetched.

    Example: crawlctl block '*.example.com' --reason "owner asked"
    """
    from crawlapp.ops import inspecting, takedown

    ctx = context()
    if list_ == bool(pattern):
        raise click.UsageError("give a HOST or *.DOMAIN pattern, or --list")
    if list_:
        entries = inspecting.denylist(ctx)
        emit(entries, as_json, "\n".join(
            f"{e['pattern']}  {e['created_at']:%Y-%m-%d %H:%M}  {e['reason'] or ''}".rstrip()
            for e in entries) or "the denylist is empty")
        return
    assert pattern is not None
    counts = takedown.block(ctx, pattern, reason)
    if counts is None:
        click.echo(f"{pattern} is on the denylist already")
        return
    click.echo(f"blocked {pattern}: {_counts(counts)}")


@click.command()
@click.argument("pattern", type=HostPattern())
def unblock(pattern: str) -> None:
    """Take a pattern off the denylist: the rows it blocked are queued again and re-crawls
    resume (for hosts no other pattern covers).

    Example: crawlctl unblock '*.example.com'
    """
    from crawlapp.ops import takedown

    counts = takedown.unblock(context(), pattern)
    if counts is None:
        raise click.BadParameter(f"{pattern} is not on the denylist (crawlctl block --list)",
                                 param_hint="PATTERN")
    click.echo(f"unblocked {pattern}: {_counts(counts)}")


@click.command()
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
    ctx = context()
    target = request_url(url, max_length=ctx.settings.max_url_length) if url else None
    name = host_arg(host) if host else None
    if not yes:
        click.confirm(f"Delete {target or 'every page of ' + str(name)}?", abort=True)
    counts = takedown.delete(ctx, url=target, host=name)
    click.echo(f"deleted {target or name}: {_counts(counts)}")
