"""Host patterns of the denylist: an exact host (`example.com`, or `example.com:8080` for one
port only) or `*.example.com`, which covers example.com and every subdomain. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable

from crawlapp.core.errors import InputError

_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_PORT = re.compile(r"^[0-9]{1,5}$")


class BadPattern(InputError):
    """Not an exact host nor a `*.domain` pattern."""


def normalize(text: str) -> str:
    """The canonical form of a pattern: lower case, no scheme, path or trailing dot. Pure."""
    value = text.strip().lower()
    if "://" in value:
        value = value.split("://", 1)[1]
    value = value.split("/", 1)[0].rstrip(".")
    wildcard = value.startswith("*.")
    name, _, port = value.removeprefix("*.").partition(":")
    if not _NAME.match(name.rstrip(".")):
        raise BadPattern(f"not a host or *.domain pattern: {text!r}")
    if port and (wildcard or not _PORT.match(port) or not 0 < int(port) < 65536):
        raise BadPattern(f"a port goes with an exact host only, 1-65535: {text!r}")
    return value


def candidates(host: str) -> list[str]:
    """Every pattern that denies `host` (a URL's host, with its port if any). Pure."""
    name, _, port = host.lower().partition(":")
    labels = name.split(".")
    out = [host.lower()] if port else []
    out.append(name)
    out += ["*." + ".".join(labels[i:]) for i in range(len(labels))]
    return out


def matches(host: str, pattern: str) -> bool:
    """Whether `pattern` denies `host`. Pure."""
    return pattern in candidates(host)


def denied_by(host: str, patterns: Iterable[str]) -> str | None:
    """The first of `patterns` that denies `host`, or None. Pure."""
    wanted = set(candidates(host))
    return next((p for p in patterns if p in wanted), None)


def sql_host_filter(pattern: str) -> tuple[list[str], list[str]]:
    """The exact hosts and the LIKE patterns of the `urls.host` values `pattern` denies. Pure."""
    if pattern.startswith("*."):
        domain = pattern[2:]
        return [domain], [f"{domain}:%", f"%.{domain}", f"%.{domain}:%"]
    if ":" in pattern:
        return [pattern], []
    return [pattern], [f"{pattern}:%"]
