"""The SSRF guard's address rule: which resolved addresses the crawler may connect to."""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from crawlapp.core.records import FetchError
from crawlapp.core.setting_values import IPNetwork


@lru_cache(maxsize=1 << 14)
def refusal_reason(address: str, allowed: tuple[IPNetwork, ...]) -> FetchError | None:
    """None if `address` may be fetched, else why not (private, loopback, ...). Remembered
    per address: every request is checked, and a crawl asks the same servers again and
    again."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return FetchError.ADDRESS_INVALID
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip.version == net.version and ip in net for net in allowed):
        return None
    for reason, flag in ((FetchError.ADDRESS_LOOPBACK, ip.is_loopback),
                         (FetchError.ADDRESS_LINK_LOCAL, ip.is_link_local),
                         (FetchError.ADDRESS_MULTICAST, ip.is_multicast),
                         (FetchError.ADDRESS_UNSPECIFIED, ip.is_unspecified),
                         (FetchError.ADDRESS_PRIVATE, ip.is_private),
                         (FetchError.ADDRESS_RESERVED, ip.is_reserved),
                         (FetchError.ADDRESS_NOT_GLOBAL, not ip.is_global)):
        if flag:
            return reason
    return None
