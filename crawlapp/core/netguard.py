"""The SSRF guard's address rule: which resolved addresses the crawler may connect to."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from crawlapp.core.settings import IPNetwork


def refusal_reason(address: str, allowed: Iterable[IPNetwork]) -> str | None:
    """None if `address` may be fetched, else why not (private, loopback, ...)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "bad_address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip.version == net.version and ip in net for net in allowed):
        return None
    for reason, flag in (("loopback", ip.is_loopback), ("link_local", ip.is_link_local),
                         ("multicast", ip.is_multicast), ("unspecified", ip.is_unspecified),
                         ("private", ip.is_private), ("reserved", ip.is_reserved),
                         ("not_global", not ip.is_global)):
        if flag:
            return reason
    return None
