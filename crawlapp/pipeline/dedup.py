"""Stage 3, dedup: exact copies by content hash, near copies by SimHash, claimed atomically.

Exact: the first page with a content hash claims it (SET NX) and is the original.
Near: each original's fingerprint is filed in 4 Redis sets, one per 16-bit band value
(`simhash.bands`); a new page compares itself only with the fingerprints filed under its
own band values. The look-up and the filing are one Lua script per page, so two copies
processed at the same moment by two workers still yield exactly one original. All pages
of a batch go in one pipelined round trip per step.
"""

from __future__ import annotations

from crawlapp.context import Context
from crawlapp.pipeline.pages import Page
from crawlapp.simhash import bands
from crawlapp.urls import url_hash

# KEYS: the band sets of the page's fingerprint (one per band)
# ARGV: fingerprint as 16 hex digits, url_hash of the page, max Hamming distance
# A set member is "<fingerprint hex><url_hash>". Returns the url_hash of the closest filed
# fingerprint within the distance (the page is a near duplicate of it), or "" after
# filing the page under every band (it is an original). A page never matches itself.
NEAR_CLAIM = """
local function popcount(x)
  local n = 0
  while x ~= 0 do
    x = bit.band(x, x - 1)
    n = n + 1
  end
  return n
end
local fp, me, max_distance = ARGV[1], ARGV[2], tonumber(ARGV[3])
local hi, lo = tonumber(string.sub(fp, 1, 8), 16), tonumber(string.sub(fp, 9, 16), 16)
local best, best_distance = nil, max_distance + 1
for _, key in ipairs(KEYS) do
  for _, member in ipairs(redis.call('SMEMBERS', key)) do
    local owner = string.sub(member, 17)
    if owner ~= me then
      local d = popcount(bit.bxor(hi, tonumber(string.sub(member, 1, 8), 16)))
              + popcount(bit.bxor(lo, tonumber(string.sub(member, 9, 16), 16)))
      if d < best_distance then
        best, best_distance = owner, d
      end
    end
  end
end
if best then return best end
for _, key in ipairs(KEYS) do
  redis.call('SADD', key, fp .. me)
end
return ''
"""


def _claim_exact(ctx: Context, pages: list[Page]) -> None:
    hashed = [p for p in pages if p.get("content_hash")]
    if not hashed:
        return
    pipe = ctx.redis.pipeline(transaction=False)
    for page in hashed:
        key = ctx.key("content", page["content_hash"])
        pipe.set(key, page["url_hash"], nx=True)
        pipe.get(key)
    replies = pipe.execute()
    for i, page in enumerate(hashed):
        owner = replies[2 * i + 1].decode()
        if owner != page["url_hash"]:
            page.update(content_dedup=True, duplicate_of=owner)


def band_keys(ctx: Context, fingerprint: int) -> list[str]:
    return [ctx.key("band", f"{band:x}") for band in bands(fingerprint)]


def _claim_near(ctx: Context, pages: list[Page], max_distance: int) -> None:
    candidates = [p for p in pages if p.get("simhash") and not p.get("content_dedup")]
    if not candidates:
        return
    script = ctx.script(NEAR_CLAIM)
    pipe = ctx.redis.pipeline(transaction=False)
    for page in candidates:
        script(keys=band_keys(ctx, page["simhash"]),
               args=[f"{page['simhash']:016x}", page["url_hash"], max_distance], client=pipe)
    for page, owner in zip(candidates, pipe.execute(), strict=True):
        if owner:
            page.update(content_dedup=True, duplicate_of=owner.decode(), near_duplicate=True)


def _defer_to_canonicals(ctx: Context, pages: list[Page]) -> None:
    """A page whose <link rel=canonical> names another URL is kept as a pointer to it, not
    stored, unless that URL itself defers to another one (two pages naming each other must
    not both go unstored: the second to be parsed is stored)."""
    declaring = [p for p in pages if p.get("canonical")]
    if not declaring:
        return
    pipe = ctx.redis.pipeline(transaction=False)
    for page in declaring:
        pipe.exists(ctx.key("canonical-of", url_hash(page["canonical"])))
    for page, target_defers in zip(declaring, pipe.execute(), strict=True):
        if target_defers:
            page.pop("canonical")
            continue
        page.update(duplicate_of=url_hash(page["canonical"]), unstored="canonical")
        pipe.set(ctx.key("canonical-of", page["url_hash"]), url_hash(page["canonical"]))
    pipe.execute()


def dedup_pages(ctx: Context, pages: list[Page]) -> list[Page]:
    """Mark pages not to store (noindex, or another URL is canonical), then exact and near
    duplicates; the bodies of all those leave the batch."""
    _defer_to_canonicals(ctx, pages)
    for page in pages:
        if page.get("noindex"):
            page.setdefault("unstored", "noindex")
    kept = [p for p in pages if not p.get("unstored")]
    _claim_exact(ctx, kept)
    _claim_near(ctx, kept, ctx.settings.near_duplicate_bits)
    for page in pages:
        if page.get("content_dedup") or page.get("unstored"):
            page.pop("body_gz", None)
    return pages
