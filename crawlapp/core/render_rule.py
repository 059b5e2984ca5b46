"""Which fetched pages go through the render stage. Pure: no I/O.

A page is rendered when its host matches one of CRAWL_RENDER_HOSTS (host or *.domain), or
when it looks like an application shell: it has scripts, little visible text, and at least
one hint that the scripts build the page (a <noscript> message, an app root element such as
<div id="root">, or script bundles). Pages without any <script> are never rendered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import lxml.html
from lxml import etree

from crawlapp.core import hostpatterns
from crawlapp.core.html import is_html, text_of

APP_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app",
                          "react-root", "app-root", "application"})
APP_ROOT_ATTRS = ("ng-app", "data-reactroot", "data-server-rendered", "ng-version")
APP_ROOT_TAGS = frozenset({"app-root"})  # Angular's default root component
SCRIPT_SNIFF = re.compile(rb"<script", re.I)
MIN_TEXT = 200  # visible characters under which a page with scripts may be a shell


def shell_hints(body: bytes, content_type: str | None, min_text: int = MIN_TEXT) -> list[str]:
    """Why this HTML looks like a page built by its scripts: a subset of 'little_text',
    'noscript', 'app_root', 'bundles'; empty when it does not (or has no scripts)."""
    if not is_html(content_type) or not SCRIPT_SNIFF.search(body):
        return []
    try:
        root = lxml.html.document_fromstring(body)
    except (etree.ParserError, ValueError):
        return []
    scripts = root.findall(".//script")
    if not scripts:
        return []
    hints = []
    if root.find(".//noscript") is not None:
        hints.append("noscript")
    if any(_is_app_root(el) for el in root.iter() if isinstance(el.tag, str)):
        hints.append("app_root")
    if any(s.get("src") for s in scripts):
        hints.append("bundles")
    if len(text_of(root)) < min_text:  # last: it strips scripts and noscript from the tree
        hints.insert(0, "little_text")
    return hints


def _is_app_root(el: etree._Element) -> bool:
    if el.get("id", "").lower() in APP_ROOT_IDS or el.tag in APP_ROOT_TAGS:
        return True
    return any(el.get(name) is not None for name in APP_ROOT_ATTRS)


def is_shell(hints: list[str]) -> bool:
    """Little visible text and at least one other hint."""
    return "little_text" in hints and len(hints) > 1


def render_reason(host: str, body: bytes, content_type: str | None,
                  hosts: Iterable[str], min_text: int = MIN_TEXT) -> str | None:
    """'host' when `host` matches a render pattern, 'shell' when the page looks like an
    application shell, else None (not rendered)."""
    if not is_html(content_type):
        return None
    if hostpatterns.denied_by(host, hosts) is not None:
        return "host"
    return "shell" if is_shell(shell_hints(body, content_type, min_text)) else None
