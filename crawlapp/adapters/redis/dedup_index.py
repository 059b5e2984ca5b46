"""The content dedup index: which stored original holds each content hash and each SimHash
band value.

  {P:dedup}:content:<sha256>  the url_hash of the original whose body is stored under that hash
  {P:dedup}:band:<band hex>   SET of "<fingerprint hex><url_hash>" of originals, one per band value
One Lua script per page (CLAIM) looks both up and files the page in one step: a page whose hash
another page claimed is an exact copy of it; else a page within `max_distance` bits of a filed
fingerprint is a near copy of that original and claims nothing; else it claims its hash and
files its fingerprint (stages/dedup.py says what the stages do with the answers). Only stored
originals are filed: what a page stops being one of is released (`release`), and a rebuild
files every stored original of the database again (`restore`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client
from crawlapp.adapters.redis.lua import Lua
from crawlapp.core.simhash import bands

# KEYS: the content claim of the page's hash, then the band sets of its fingerprint (none if
#   it has none)
# ARGV: fingerprint as 16 hex digits or "", url_hash of the page, max Hamming distance (-1: no
#   near look-up), "file" (claim and file an original) or "look" (only look up)
# Returns "=<owner>" (an exact copy of owner), "~<owner>" (a near copy of the closest filed
# original; with "look", a claimed hash counts as a near copy too) or "" (an original: claimed
# and filed; with "look": nothing found, nothing written). A page never matches itself.
CLAIM = Lua("""
local function popcount(x)
  local n = 0
  while x ~= 0 do
    x = bit.band(x, x - 1)
    n = n + 1
  end
  return n
end
local fp, me, max_distance, mode = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= me then
  if mode == 'look' then return '~' .. owner end
  return '=' .. owner
end
if not owner or mode == 'look' then
  if fp ~= '' and max_distance >= 0 then
    local hi, lo = tonumber(string.sub(fp, 1, 8), 16), tonumber(string.sub(fp, 9, 16), 16)
    local best, best_distance = nil, max_distance + 1
    for i = 2, #KEYS do
      for _, member in ipairs(redis.call('SMEMBERS', KEYS[i])) do
        local other = string.sub(member, 17)
        if other ~= me then
          local d = popcount(bit.bxor(hi, tonumber(string.sub(member, 1, 8), 16)))
                  + popcount(bit.bxor(lo, tonumber(string.sub(member, 9, 16), 16)))
          if d < best_distance then
            best, best_distance = other, d
          end
        end
      end
    end
    if best then return '~' .. best end
  end
  if mode == 'look' then return '' end
  redis.call('SET', KEYS[1], me)
end
for i = 2, #KEYS do
  redis.call('SADD', KEYS[i], fp .. me)
end
return ''
""")

# KEYS: a content claim. ARGV: url_hash. Drops the claim if that page still holds it.
RELEASE = Lua("""
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
""")

ORIGINAL, EXACT, NEAR = "original", "exact", "near"
FILE, LOOK = "file", "look"
NO_NEAR = -1  # max distance that makes CLAIM skip the near look-up


@dataclass(frozen=True)
class Claim:
    """A page's content as dedup files it: its content hash and SimHash fingerprint."""

    url_hash: str
    content_hash: str
    fingerprint: int | None


@dataclass(frozen=True)
class Outcome:
    kind: str  # ORIGINAL, EXACT or NEAR
    owner: str | None = None  # the original it is a copy of


@dataclass(frozen=True)
class Held:
    """What a page may hold in Redis: the claim of a content hash, band entries of a fingerprint."""

    url_hash: str
    content_hash: str | None
    fingerprint: int | None


@dataclass(frozen=True)
class BandEntry:
    """One original filed under one band value (the set `band`)."""

    band: str
    fingerprint: int
    owner: str


class DedupIndex:
    """Content claims and SimHash bands under the `{P:dedup}` hash tag."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self._claim_prefix = keys.CLAIM.of(prefix, sha256="")

    def claim_key(self, content_hash: str) -> str:
        return self._claim_prefix + content_hash

    def band_keys(self, fingerprint: int) -> list[str]:
        return [keys.BAND.of(self.prefix, band=f"{band:x}") for band in bands(fingerprint)]

    @staticmethod
    def band_member(fingerprint: int, owner: str) -> str:
        return f"{fingerprint:016x}{owner}"

    def claim(self, claims: Sequence[Claim], max_distance: int, mode: str = FILE
              ) -> list[Outcome]:
        """Run CLAIM for each page in order, in one round trip."""
        if not claims:
            return []
        pipe = self.client.pipeline(transaction=False)
        for c in claims:
            fp = c.fingerprint or 0  # 0: no words, nothing to compare
            CLAIM(pipe, [self.claim_key(c.content_hash), *(self.band_keys(fp) if fp else [])],
                  [f"{fp:016x}" if fp else "", c.url_hash, max_distance, mode])
        outcomes = []
        for reply in pipe.execute():
            text = reply.decode()
            kind = {"=": EXACT, "~": NEAR}.get(text[:1], ORIGINAL)
            outcomes.append(Outcome(kind, text[1:] if kind != ORIGINAL else None))
        return outcomes

    def release(self, held: Iterable[Held]) -> None:
        """Drop the claims the pages still hold and their band entries, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for h in held:
            if h.content_hash:
                RELEASE(pipe, [self.claim_key(h.content_hash)], [h.url_hash])
            if h.fingerprint:
                for key in self.band_keys(h.fingerprint):
                    pipe.srem(key, self.band_member(h.fingerprint, h.url_hash))
        pipe.execute()

    def restore(self, originals: Iterable[Held]) -> None:
        """File stored originals again (a claim already held is kept), in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for h in originals:
            if h.content_hash:
                pipe.set(self.claim_key(h.content_hash), h.url_hash, nx=True)
            if h.fingerprint:
                for key in self.band_keys(h.fingerprint):
                    pipe.sadd(key, self.band_member(h.fingerprint, h.url_hash))
        pipe.execute()

    def _scan(self, pattern: str, chunk: int) -> Iterator[list[str]]:
        batch: list[str] = []
        for key in self.client.scan_iter(match=pattern, count=chunk):
            batch.append(key.decode())
            if len(batch) == chunk:
                yield batch
                batch = []
        if batch:
            yield batch

    def claims(self, chunk: int) -> Iterator[list[tuple[str, str]]]:
        """Every claim as (content hash, owner's url_hash), `chunk` keys at a time (SCAN)."""
        start = len(self._claim_prefix)
        for names in self._scan(self._claim_prefix + "*", chunk):
            owners: list[bytes | None] = self.client.mget(names)  # type: ignore[assignment]
            yield [(name[start:], owner.decode())
                   for name, owner in zip(names, owners, strict=True) if owner]

    def band_entries(self, chunk: int) -> Iterator[list[BandEntry]]:
        """Every band entry, the members of `chunk` band sets at a time (SCAN)."""
        for names in self._scan(keys.BAND.of(self.prefix, band="*"), chunk):
            pipe = self.client.pipeline(transaction=False)
            for name in names:
                pipe.smembers(name)
            yield [BandEntry(name, int(m[:16], 16), m[16:].decode())
                   for name, members in zip(names, pipe.execute(), strict=True)
                   for m in members]

    def drop(self, entries: Iterable[BandEntry]) -> None:
        """Take these entries out of their band sets, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for e in entries:
            pipe.srem(e.band, self.band_member(e.fingerprint, e.owner))
        pipe.execute()
