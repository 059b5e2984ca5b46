"""Fetch retries: how many times a URL failed transiently (429, 5xx, no answer) in a row.

`{P:retries}` (hash url -> failures) is bumped by the fetch stage at each transient failure
and forgotten when the URL is fetched, refused or given up (CRAWL_MAX_RETRIES). No rebuild:
a lost count gives a URL its retries again.

A batch counts its failures once, however often a Redis fault makes it send them again
(`Context.steady`): one script bumps the counts, forgets the URLs past the most retries and
those done with, and keeps its reply under the batch's run (`{P:retries}:run:<run>`, the
same hash tag, expiring); sent again under that run, it answers the kept reply and changes
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline, text
from crawlapp.adapters.redis.lua import Lua
from crawlapp.adapters.redis.pipeline import Reply, joined

CHUNK = 1000  # URLs per HDEL

# KEYS: the retries hash, the run's reply. ARGV: the most retries, milliseconds the reply is
# kept, how many URLs failed, those URLs, then the URLs done with.
# Returns the failed URLs' counts, comma-separated (those past the most are forgotten).
_COUNT = Lua("""
local kept = redis.call('GET', KEYS[2])
if kept then return kept end
local most, failed = tonumber(ARGV[1]), tonumber(ARGV[3])
local counts = {}
for i = 4, 3 + failed do
  local n = redis.call('HINCRBY', KEYS[1], ARGV[i], 1)
  if n > most then redis.call('HDEL', KEYS[1], ARGV[i]) end
  counts[#counts + 1] = n
end
for i = 4 + failed, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
local reply = table.concat(counts, ',')
redis.call('SET', KEYS[2], reply, 'PX', ARGV[2])
return reply
""")


class FetchRetries:
    """One hash, url -> transient failures so far."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.key = keys.RETRIES.of(prefix)

    def count(self, run: str, failed: Sequence[str], done: Sequence[str], most: int,
              keep_seconds: float, pipe: Pipeline) -> Reply[list[int]]:
        """Count one more failure of each `failed` URL (forgotten past `most`) and forget the
        `done` ones, once per `run` (a batch's, kept `keep_seconds`): the failed URLs' counts,
        in the caller's round trip."""
        if not failed:
            self.forget(done, pipe)
            return lambda replies: []
        at = len(pipe)
        _COUNT(pipe, [self.key, keys.RETRIES_RUN.of(self.prefix, run=run)],
               [most, int(keep_seconds * 1000), len(failed), *failed, *done])
        return lambda replies: [int(n) for n in text(replies[at]).split(",")]

    def forget(self, urls: Sequence[str], pipe: Pipeline | None = None) -> None:
        with joined(self.client, pipe) as p:
            for start in range(0, len(urls), CHUNK):
                p.hdel(self.key, *urls[start:start + CHUNK])
