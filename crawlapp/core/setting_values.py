"""What a setting's value may be: the converters of the settings' text (each raises a
ValueError that says what it expected). Pure."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from crawlapp.core.hostpatterns import normalize

T = TypeVar("T")
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def bounded(kind: Callable[[str], T], low: float, high: float) -> Callable[[str], T]:
    def convert(raw: str) -> T:
        try:
            value = kind(raw)
        except ValueError:
            raise ValueError("expected an integer" if kind is int else "expected a number"
                             ) from None
        if not low <= value <= high:  # type: ignore[operator]
            raise ValueError(f"must be between {low:g} and {high:g}")
        return value

    return convert


def directory(raw: str) -> Path:
    return Path(raw).resolve()


def pem_file(raw: str) -> Path:
    """A readable file of PEM certificates."""
    path = Path(raw).expanduser().resolve()
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    if b"-----BEGIN CERTIFICATE-----" not in text:
        raise ValueError("expected a PEM file of certificates (-----BEGIN CERTIFICATE-----)")
    return path


def networks(raw: str) -> tuple[IPNetwork, ...]:
    out = []
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{part!r} is not a CIDR network such as 127.0.0.0/8") from None
    return tuple(out)


def name_addresses(raw: str) -> dict[str, tuple[str, ...]]:
    """"a.test=127.0.0.2, b.test=127.0.0.2" -> {"a.test": ("127.0.0.2",), ...}"""
    out: dict[str, tuple[str, ...]] = {}
    for part in raw.replace(",", " ").split():
        name, sep, address = part.partition("=")
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise ValueError(f"{part!r} is not name=address, such as a.test=127.0.0.2") from None
        if not sep or not name:
            raise ValueError(f"{part!r} is not name=address, such as a.test=127.0.0.2")
        out[name.lower().rstrip(".")] = (*out.get(name.lower().rstrip("."), ()), address)
    return out


def boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    def convert(raw: str) -> str:
        if raw.lower() not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return raw.lower()

    return convert


def host_patterns(raw: str) -> tuple[str, ...]:
    return tuple(normalize(part) for part in raw.split(",") if part.strip())


def auto_or(convert: Callable[[str], T]) -> Callable[[str], T | None]:
    """`auto` (None: the code chooses), or a value `convert` takes."""
    def parse(raw: str) -> T | None:
        return None if raw.lower() == "auto" else convert(raw)

    return parse


def email_address(raw: str) -> str:
    local, at, domain = raw.partition("@")
    if not (local and at and "." in domain) or any(c.isspace() or c in "\r\n" for c in raw):
        raise ValueError("expected an e-mail address such as crawler@example.com")
    return raw


def url_of(schemes: tuple[str, ...]) -> Callable[[str], str]:
    def convert(raw: str) -> str:
        scheme = raw.split("://", 1)[0].split("+", 1)[0]
        if "://" not in raw or scheme not in schemes:
            raise ValueError(f"expected a URL starting with one of {', '.join(schemes)}")
        return raw

    return convert
