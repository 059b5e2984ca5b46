"""Which fetched pages go through the render stage. Pure: no I/O.

A page is rendered when its host matches one of CRAWL_RENDER_HOSTS (host or *.domain), or
when it looks like an application shell (crawlapp.core.app_shell). Only a page fetched
(not a 304) in a crawl with CRAWL_RENDER is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from crawlapp.core import hostpatterns
from crawlapp.core.records import Page, Status

if TYPE_CHECKING:
    from crawlapp.core.settings import Settings


def wants_render(settings: Settings, page: Page, body: bytes) -> str | None:
    """Why a page just fetched goes to the render stage ('host' or 'shell'), or None."""
    if not settings.render or page.status != Status.FETCHED or page.not_modified:
        return None
    return render_reason(page.host, body, page.content_type, settings.render_hosts,
                         settings.render_min_text)


def render_reason(host: str, body: bytes, content_type: str | None,
                  hosts: Iterable[str], min_text: int) -> str | None:
    """'host' when `host` matches a render pattern, 'shell' when the page looks like an
    application shell, else None (not rendered)."""
    # Imported here: its HTML parsers are for the fetch workers of a crawl that renders.
    from crawlapp.core.app_shell import is_shell, shell_hints
    from crawlapp.core.html import is_html
    if not is_html(content_type):
        return None
    if hostpatterns.denied_by(host, hosts) is not None:
        return "host"
    return "shell" if is_shell(shell_hints(body, content_type, min_text)) else None


def shares_slots(settings: Settings) -> bool:
    """Whether fetches and renders hold their politeness key's slot (adapters/redis/slots.py)
    around their requests: with a key wider than the host, or when renders may ask other
    hosts, which fetch workers and other browsers may be asking at the same time."""
    return settings.politeness_key != "host" or (settings.render
                                                 and bool(settings.render_other_hosts))
