"""The content dedup index: which stored original holds each content hash and each SimHash
band value.

  P:content:<sha256>  the url_hash of the original whose body is stored under that hash
  P:band:<band hex>   SET of "<fingerprint hex><url_hash>" of originals, one per band value
  P:dedup-lock        the token of the task filing originals, expiring
Every claim and band set is a key of its own, so a Redis Cluster spreads them over its masters
(they are most of what the dedup Redis holds: about five keys per stored page).

`claim` takes a batch of pages in order: a page whose hash another page claimed is an exact
copy of it; else a page within `max_distance` bits of a filed fingerprint is a near copy of
that original and claims nothing; else it claims its hash and files its fingerprint
(stages/dedup.py says what the stages do with the answers). Two pages' bands lie on different
keys, often on different masters, so no one script can look them all up and file a page at
once; instead a batch files under the dedup lock: look up (one round trip), decide here, in
order, each page against what is filed and what the batch filed before it, then file (one
round trip). Of two near copies in two workers' batches, the second to take the lock finds
the first. The lock is held for those two round trips; at 50 pages a batch that bounds a
fleet at thousands of batches a second. A task that dies holding it holds it
`LOCK_SECONDS` at most; what it filed for pages never stored is released by verify, as after
any crash between dedup and store.

Only stored originals are filed: what a page stops being one of is released (`release`), and
a rebuild files every stored original of the database again (`restore`).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client
from crawlapp.adapters.redis.lua import Lua
from crawlapp.core.errors import TransientError
from crawlapp.core.simhash import bands

# KEYS: a content claim or the lock. ARGV: a url_hash or a lock holder's token. Deletes the key
# if it still holds that value (the page still holds the claim, the holder the lock).
DELETE_IF = Lua("""
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
""")

ORIGINAL, EXACT, NEAR = "original", "exact", "near"
FILE, LOOK = "file", "look"
NO_NEAR = -1  # max distance that skips the near look-up
LOCK_SECONDS = 10.0  # the lock expires this long after it was taken
LOCK_WAIT = 30.0  # a batch waits this long for the lock, then fails as a TransientError


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
    """Content claims, SimHash band sets and the lock under which a batch files."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self._claim_prefix = keys.CLAIM.of(prefix, sha256="")
        self._lock = keys.DEDUP_LOCK.of(prefix)

    def claim_key(self, content_hash: str) -> str:
        return self._claim_prefix + content_hash

    def band_keys(self, fingerprint: int) -> list[str]:
        return [keys.BAND.of(self.prefix, band=f"{band:x}") for band in bands(fingerprint)]

    @staticmethod
    def band_member(fingerprint: int, owner: str) -> str:
        return f"{fingerprint:016x}{owner}"

    def claim(self, claims: Sequence[Claim], max_distance: int, mode: str = FILE
              ) -> list[Outcome]:
        """Each page's outcome, in order (module docstring). FILE claims and files the
        originals, under the lock; LOOK writes nothing (a claimed hash counts as a near copy)."""
        if not claims:
            return []
        if mode == LOOK:
            return _Filing(self, claims, max_distance).decide(mode)
        with self._locked():
            filing = _Filing(self, claims, max_distance)
            outcomes = filing.decide(mode)
            filing.write()
        return outcomes

    @contextmanager
    def _locked(self) -> Iterator[None]:
        token = uuid.uuid4().hex
        deadline, pause = time.monotonic() + LOCK_WAIT, 0.002
        while not self.client.set(self._lock, token, nx=True, px=int(LOCK_SECONDS * 1000)):
            if time.monotonic() > deadline:
                raise TransientError("Redis", f"the dedup lock stayed taken {LOCK_WAIT:.0f} s")
            time.sleep(pause)
            pause = min(2 * pause, 0.05)
        try:
            yield
        finally:
            DELETE_IF(self.client, [self._lock], [token])

    def release(self, held: Iterable[Held]) -> None:
        """Drop the claims the pages still hold and their band entries, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for h in held:
            if h.content_hash:
                DELETE_IF(pipe, [self.claim_key(h.content_hash)], [h.url_hash])
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
            pipe = self.client.pipeline(transaction=False)
            for name in names:
                pipe.get(name)
            owners: list[bytes | None] = pipe.execute()
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


class _Filing:
    """One batch's claims: what Redis holds of their hashes and bands (one round trip), the
    outcomes decided in order, and the writes of the originals."""

    def __init__(self, index: DedupIndex, claims: Sequence[Claim], max_distance: int) -> None:
        self.index = index
        self.claims = claims
        self.max_distance = max_distance
        self.owners: dict[str, str] = {}  # content hash -> owner, as read and as claimed here
        self.filed: dict[str, list[tuple[int, str]]] = defaultdict(list)  # band key -> entries
        self.new_claims: dict[str, str] = {}
        self.new_entries: dict[str, list[str]] = defaultdict(list)
        self._read()

    def _read(self) -> None:
        pipe = self.index.client.pipeline(transaction=False)
        hashes = list(dict.fromkeys(c.content_hash for c in self.claims))
        for h in hashes:
            pipe.get(self.index.claim_key(h))
        band_keys = list(dict.fromkeys(
            key for c in self.claims if c.fingerprint and self.max_distance >= 0
            for key in self.index.band_keys(c.fingerprint)))
        for key in band_keys:
            pipe.smembers(key)
        replies = pipe.execute()
        self.owners = {h: owner.decode()
                       for h, owner in zip(hashes, replies[:len(hashes)], strict=True) if owner}
        for key, members in zip(band_keys, replies[len(hashes):], strict=True):
            self.filed[key] = [(int(m[:16], 16), m[16:].decode()) for m in members]

    def decide(self, mode: str) -> list[Outcome]:
        return [self._one(c, mode) for c in self.claims]

    def _one(self, c: Claim, mode: str) -> Outcome:
        owner = self.owners.get(c.content_hash)
        if owner and owner != c.url_hash:
            return Outcome(NEAR if mode == LOOK else EXACT, owner)
        band_keys = self.index.band_keys(c.fingerprint) if c.fingerprint else []
        if not owner or mode == LOOK:
            near = self._nearest(c, band_keys)
            if near is not None:
                return Outcome(NEAR, near)
            if mode == LOOK:
                return Outcome(ORIGINAL)
            self.owners[c.content_hash] = self.new_claims[c.content_hash] = c.url_hash
        for key in band_keys:
            self.filed[key].append((c.fingerprint or 0, c.url_hash))
            self.new_entries[key].append(self.index.band_member(c.fingerprint or 0, c.url_hash))
        return Outcome(ORIGINAL)

    def _nearest(self, c: Claim, band_keys: list[str]) -> str | None:
        """The closest filed original within max_distance (not the page itself), if any."""
        if not c.fingerprint or self.max_distance < 0:
            return None
        best, best_distance = None, self.max_distance + 1
        for key in band_keys:
            for fingerprint, other in self.filed[key]:
                distance = (fingerprint ^ c.fingerprint).bit_count()
                if other != c.url_hash and distance < best_distance:
                    best, best_distance = other, distance
        return best

    def write(self) -> None:
        pipe = self.index.client.pipeline(transaction=False)
        for content_hash, owner in self.new_claims.items():
            pipe.set(self.index.claim_key(content_hash), owner)
        for key, members in self.new_entries.items():
            pipe.sadd(key, *members)
        pipe.execute()
