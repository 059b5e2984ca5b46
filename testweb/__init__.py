"""Deterministic generated test web: many loopback HTTP hosts served by one asyncio process.

`site` builds the web (pure), `server` serves it and writes a JSON-lines request log,
`serverlog` reads that log and judges politeness (delays, overlaps, robots.txt first).
"""

from testweb.site import Response, Web, WebSpec

__all__ = ["Response", "Web", "WebSpec"]
