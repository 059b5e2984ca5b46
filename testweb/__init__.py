"""Deterministic generated test web: many loopback HTTP hosts served by one asyncio process.

`site` builds the web (pure) on `hosts` (the spec, the addresses, the records of pages and
responses), `server` serves it and writes a JSON-lines request log, `serverlog` reads that log
and judges politeness (delays, overlaps, robots.txt first). `changing` is a web whose pages
change over time, `freshness` judges how fresh a crawl of it kept its copies.
"""

from testweb.hosts import Response, WebSpec
from testweb.site import Web

__all__ = ["Response", "Web", "WebSpec"]
