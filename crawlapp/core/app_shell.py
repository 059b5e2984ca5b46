"""Does a page look like an application shell, built by its scripts? Pure: no I/O.

It does when it has scripts, little visible text, and at least one hint that the scripts
build the page (a <noscript> message, an app root element such as <div id="root">, or
script bundles). Pages without any <script> never do.
"""

from __future__ import annotations

import re

import lxml.html
from lxml import etree

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
