"""What the commands share: the process's context, JSON or text output, a HOST argument, a
stop on SIGTERM or SIGINT."""

from __future__ import annotations

import json
import signal
import threading
from typing import TYPE_CHECKING, Any

import click

from crawlapp.core.urls import host_of, request_url

if TYPE_CHECKING:
    from crawlapp.adapters.context import Context

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


def context() -> Context:
    """This process's context (imported here, so commands that need none start quicker)."""
    from crawlapp.adapters.context import get_context

    return get_context()


def emit(data: Any, as_json: bool, text: str) -> None:
    """`data` as indented JSON with --json, else `text`."""
    click.echo(json.dumps(data, indent=2, default=str) if as_json else text)


def host_arg(host: str) -> str:
    """The politeness key of a HOST argument (`example.com`, `example.com:8080` or a URL)."""
    value = host.strip()
    return host_of(request_url(value if "://" in value else f"http://{value}/"))


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT, for a command that runs until stopped."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop
