"""Adapters: the crawler's I/O (Redis, the database, the blob store, HTTP, the browser)."""

import sys

# httpx imports its command-line client (rich and pygments: 60 ms of CPU and 6 MB a process)
# when those are installed; the crawler never runs it, and a failed import leaves httpx a stub
# in its place (encode/httpx#3547).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
