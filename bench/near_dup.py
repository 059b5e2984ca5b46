"""The near-copy index alone at scale: `make bench-near-dup`.

For each size in BENCH_NEAR_DUP_SIZES (default 100000,1000000,10000000), on a redis-server of
its own: that many random 64-bit fingerprints are filed as originals (their tables and the
owner of each, by mass insertion: the index as `DedupIndex.planned` shapes it for
CRAWL_EXPECTED_URLS = URLS_PER_ORIGINAL x the size, CRAWL_NEAR_DUPLICATE_BITS = 3); then
BENCH_NEAR_DUP_LOOKUPS pages are looked up one at a time (`claim` in LOOK mode, as a copy
whose original changed is), NEAR_SHARE of them near copies of a filed original 1-3 bits away,
the others new fingerprints; then BENCH_NEAR_DUP_FILES new originals are filed one at a time
(`claim`, under the dedup lock). Writes var/bench/near_dup.json, one object per size:

  originals, tables, prefix_bits      the index's shape
  candidates_per_lookup               filed fingerprints a look-up reads and compares (mean)
  bytes_read_per_page                 bytes Redis sent per look-up (INFO total_net_output_bytes)
  bytes_written_per_original          bytes sent to Redis per original filed (the lock, the
                                      look-up and the writes; total_net_input_bytes)
  lookup_ms_p50, lookup_ms_p99        one page's look-up, wall time, timed once every size
                                      is filed, a hundred look-ups of each size in turn
                                      (sizes timed side by side see the same machine load)
  file_ms_p50                         one original's claim and filing, wall time
  redis_bytes_per_original            used_memory grown by the filing, per original: the
                                      tables and the fingerprints' owners
  table_bytes_per_original            MEMORY USAGE of the table keys (a sample, scaled), per
                                      original
  missed                              near copies the index did not find: planted ones not
                                      answered NEAR, and pairs within 3 bits a brute-force
                                      scan of every original finds for BRUTE_FORCE look-ups
                                      and the tables do not

The dedup lock's limit (var/bench/near_dup_lock.json, unless BENCH_NEAR_DUP_LOCK_WORKERS is
empty): with Redis BENCH_NEAR_DUP_RTT_MS (default 1) further away than loopback (a proxy of
ours holds each request that long before passing it on), 1, 2, 4... worker processes
(BENCH_NEAR_DUP_LOCK_WORKERS, default 1,2,4,8) each claim batches of LOCK_BATCH pages (a
quarter near copies) in FILE mode for LOCK_SECONDS: the batches a second they manage
together, and each batch's wall time. One lock admits at most 1 / (the time a batch holds
it) batches a second, whatever the workers.

Filing a size's originals sends the RESP of every ZADD and HSET over one socket in chunks
(what `redis-cli --pipe` does), built with numpy; its keys and members are checked against
`DedupIndex.places` on a sample, and `missed` checks the result. 10 M originals take about
2 GB of Redis and a few minutes.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import mmh3
import numpy as np
import redis

from bench.services import own_redis
from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.dedup_index import (
    LOOK,
    NEAR,
    URLS_PER_ORIGINAL,
    Claim,
    DedupIndex,
)
from crawlapp.core.near_tables import WIDTH

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "var" / "bench" / "near_dup.json"
LOCK_RESULTS = ROOT / "var" / "bench" / "near_dup_lock.json"
LOCK_BATCH = 100  # pages a dedup batch claims (CRAWL_BATCH_SIZE's order)
LOCK_SECONDS = 15.0
LOCK_ORIGINALS = 100_000  # filed before the lock is measured
DISTANCE = 3
NEAR_SHARE = 0.25  # of the look-ups, near copies of a filed original (1-3 bits away)
BRUTE_FORCE = 200  # look-ups checked against every original
CHUNK = 200_000  # originals a mass-insertion round
PREFIX = "bench"


def sizes() -> list[int]:
    raw = os.environ.get("BENCH_NEAR_DUP_SIZES", "100000,1000000,10000000")
    return [int(part.replace("_", "")) for part in raw.split(",") if part.strip()]


def _setting(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def url_hashes(ids: np.ndarray) -> np.ndarray:
    """A synthetic url_hash (16 bytes) per original: its number, big-endian."""
    out = np.zeros((len(ids), 16), dtype=np.uint8)
    out[:, 8:] = ids.astype(">u8").view(np.uint8).reshape(-1, 8)
    return out


def _text(values: Sequence[bytes], width: int) -> np.ndarray:
    """Equal-length byte strings as rows of a uint8 array."""
    return np.frombuffer(b"".join(values), dtype=np.uint8).reshape(-1, width)


def _records(*parts: np.ndarray | bytes, rows: int) -> bytes:
    """Rows of RESP, each the concatenation of `parts` (constants or one row each)."""
    columns = [np.broadcast_to(np.frombuffer(p, dtype=np.uint8), (rows, len(p)))
               if isinstance(p, bytes) else p for p in parts]
    return np.ascontiguousarray(np.hstack(columns)).tobytes()


def _bulk(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return b"$%d\r\n%s\r\n" % (len(raw), raw)


class MassInsert:
    """Commands written to Redis as raw RESP over one socket; their replies read and counted."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.sock = socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379))

    def send(self, payload: bytes, commands: int) -> None:
        """Send `commands` commands; wait for their replies (integers: one line each)."""
        self.sock.sendall(payload)
        lines = 0
        while lines < commands:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("Redis closed the mass insertion")
            if b"-" in data:
                raise RuntimeError(f"Redis refused a command: {data[:200]!r}")
            lines += data.count(b"\n")

    def close(self) -> None:
        self.sock.close()


def file_originals(index: DedupIndex, url: str, fingerprints: np.ndarray) -> None:
    """Each fingerprint's owner ("f" field, HSET) and table members (ZADD), by mass insertion."""
    mass = MassInsert(url)
    tables = index.tables
    member_width = 8 - index.cut
    try:
        for start in range(0, len(fingerprints), CHUNK):
            fps = fingerprints[start:start + CHUNK]
            owners = url_hashes(np.arange(start, start + len(fps)))
            slots = [index.fingerprint_slot(fp) for fp in fps.tolist()]
            payload = [b"*4\r\n$4\r\nHSET\r\n" + _bulk(key) + _bulk(field) + _bulk(owner.tobytes())
                       for (key, field), owner in zip(slots, owners, strict=True)]
            mass.send(b"".join(payload), len(fps))
            permuted = tables.permute(fps)
            for table in range(len(tables.keys)):
                values = permuted[table]
                buckets = values >> np.uint64(WIDTH - index.bits)
                key = index.table_key(table, 0).encode()
                stem, digits = key[:len(key) - index.digits], index.digits
                nibbles = (buckets[:, None] >> (np.uint64(4) * np.arange(
                    digits - 1, -1, -1, dtype=np.uint64))) & np.uint64(15)
                hexed = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles.astype(np.intp)]
                members = values.astype(">u8").view(np.uint8).reshape(-1, 8)[:, index.cut:]
                mass.send(_records(b"*4\r\n$4\r\nZADD\r\n$%d\r\n%s" % (len(key), stem), hexed,
                                   b"\r\n$1\r\n0\r\n$%d\r\n" % member_width, members, b"\r\n",
                                   rows=len(fps)), len(fps))
    finally:
        mass.close()


def check_layout(index: DedupIndex, client: redis.Redis, fingerprints: np.ndarray) -> None:
    """The mass insertion filed what the index itself would: a sample's members are where
    `DedupIndex.places` puts them, and each fingerprint's owner where it looks."""
    sample = fingerprints[:: max(1, len(fingerprints) // 50)].tolist()
    pipe = client.pipeline(transaction=False)
    for places in index.places(sample).values():
        for place in places:
            pipe.zscore(place.range.key, place.member)
    for fp in sample:
        pipe.hexists(*index.fingerprint_slot(fp))
    if not all(reply is not None and reply is not False for reply in pipe.execute()):
        raise RuntimeError("the mass insertion filed fingerprints elsewhere than the index")


def file_and_check(index: DedupIndex, url: str, fingerprints: np.ndarray) -> None:
    file_originals(index, url, fingerprints)
    check_layout(index, index.client, fingerprints)


def near_copies(rng: np.random.Generator, originals: np.ndarray, count: int) -> np.ndarray:
    """`count` copies of originals picked at random, each with 1-3 random bits flipped."""
    picked = originals[rng.integers(0, len(originals), count)]
    flips = np.zeros(count, dtype=np.uint64)
    for i, k in enumerate(rng.integers(1, DISTANCE + 1, count)):
        for bit in rng.choice(WIDTH, size=k, replace=False):
            flips[i] |= np.uint64(1) << np.uint64(bit)
    return picked ^ flips


def _claim(fp: int, n: int) -> Claim:
    return Claim(mmh3.hash_bytes(b"page%d" % n).hex(), mmh3.hash_bytes(b"body%d" % n).hex(), fp)


def timed(calls: Sequence[Callable[[], Any]], client: redis.Redis, stat: str
          ) -> tuple[list[float], list[Any], float]:
    """Each call's wall time (ms), its answer, and the INFO counter `stat` grown per call."""
    before = client.info("stats")[stat]
    times, answers = [], []
    for call in calls:
        began = time.perf_counter()
        answers.append(call())
        times.append((time.perf_counter() - began) * 1000)
    grown = client.info("stats")[stat] - before
    return times, answers, grown / len(calls)


def candidates(index: DedupIndex, fp: int) -> set[int]:
    """The distinct filed fingerprints a look-up of `fp` reads (whatever their distance)."""
    spans = [place.range for place in index.places([fp])[fp]]
    return {found for fps in index.look([], spans)[1].values() for found in fps}


def table_bytes(client: redis.Redis, pattern: str, sample: int = 20_000) -> tuple[int, int]:
    """How many keys match `pattern`, and their MEMORY USAGE summed (a sample, scaled)."""
    names = [key for key in client.scan_iter(match=pattern, count=10_000)]
    picked = names[:: max(1, len(names) // sample)]
    pipe = client.pipeline(transaction=False)
    for name in picked:
        pipe.memory_usage(name, samples=0)
    used = sum(pipe.execute())
    return len(names), round(used * len(names) / max(1, len(picked)))


def measure(n: int, index_of: Callable[[redis.Redis], DedupIndex],
            filing: Callable[[DedupIndex, str, np.ndarray], None],
            found: Callable[[DedupIndex, int], set[int]], pattern: str, servers: ExitStack
            ) -> tuple[dict[str, Any], list[Callable[[], Any]]]:
    """One size, on a redis-server of its own that `servers` keeps (module docstring); and
    its look-ups, to time again beside the other sizes'."""
    rng = np.random.default_rng(n)
    originals = np.unique(rng.integers(1, 2**64, n, dtype=np.uint64, endpoint=False))
    while len(originals) < n:  # a collision among random 64-bit values: draw again
        originals = np.unique(np.concatenate([originals, rng.integers(1, 2**64, n - len(originals),
                                                                      dtype=np.uint64)]))
    rng.shuffle(originals)
    lookups = _setting("BENCH_NEAR_DUP_LOOKUPS", 2000)
    files = _setting("BENCH_NEAR_DUP_FILES", 1000)
    planted = int(lookups * NEAR_SHARE)
    pages = np.concatenate([near_copies(rng, originals, planted),
                            rng.integers(1, 2**64, lookups - planted, dtype=np.uint64)]).tolist()
    fresh = rng.integers(1, 2**64, files, dtype=np.uint64).tolist()
    url = servers.enter_context(own_redis())
    client = redis.Redis.from_url(url)
    index = index_of(client)
    before = client.info("memory")["used_memory"]
    began = time.perf_counter()
    filing(index, url, originals)
    filing_s = time.perf_counter() - began
    grown = client.info("memory")["used_memory"] - before
    keys, table_used = table_bytes(client, pattern)
    print(f"{n:,} originals filed in {filing_s:.0f} s; {grown / n:.0f} B of Redis each, "
          f"{table_used / n:.0f} B in {keys:,} table keys", flush=True)

    lookups_of = [lambda i=i, fp=fp: index.claim([_claim(fp, i)], DISTANCE, LOOK)[0]
                  for i, fp in enumerate(pages)]
    _, outcomes, read = timed(lookups_of, client, "total_net_output_bytes")
    counts = [len(found(index, fp)) for fp in pages]
    missed = sum(o.kind != NEAR for o in outcomes[:planted])
    checked = list(range(0, planted, max(1, 2 * planted // BRUTE_FORCE))) + \
        list(range(planted, lookups, max(1, 2 * (lookups - planted) // BRUTE_FORCE)))
    for i in checked:
        near = originals[np.bitwise_count(originals ^ np.uint64(pages[i])) <= DISTANCE]
        reached = {fp for fp in found(index, pages[i])
                   if (fp ^ pages[i]).bit_count() <= DISTANCE}
        missed += len(set(near.tolist()) - reached)
    file_ms, _, written = timed(
        [lambda i=i, fp=fp: index.claim([_claim(fp, lookups + i)], DISTANCE)
         for i, fp in enumerate(fresh)], client, "total_net_input_bytes")
    result = {
        "originals": n, "filing_s": round(filing_s, 1),
        "candidates_per_lookup": round(statistics.fmean(counts), 3),
        "bytes_read_per_page": round(read, 1),
        "bytes_written_per_original": round(written, 1),
        "file_ms_p50": round(float(np.percentile(file_ms, 50)), 3),
        "redis_bytes_per_original": round(grown / n, 1),
        "table_bytes_per_original": round(table_used / n, 1),
        "table_keys": keys,
        "missed": missed, "brute_forced": len(checked), "planted": planted,
    }
    print(json.dumps(result), flush=True)
    return result, lookups_of


def side_by_side(lookups: list[list[Callable[[], Any]]], chunk: int = 100) -> list[list[float]]:
    """Each size's look-ups timed again (ms), `chunk` of one size, then of the next, in turn."""
    times: list[list[float]] = [[] for _ in lookups]
    for start in range(0, max(map(len, lookups)), chunk):
        for calls, spent in zip(lookups, times, strict=True):
            for call in calls[start:start + chunk]:
                began = time.perf_counter()
                call()
                spent.append((time.perf_counter() - began) * 1000)
    return times


class DelayProxy:
    """A TCP proxy on loopback that holds each chunk a client sends for `delay` seconds
    before passing it on (answers go back at once): Redis that much further away."""

    def __init__(self, target: tuple[str, int], delay: float) -> None:
        self.target, self.delay = target, delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]

    def serve(self) -> None:
        while True:
            client, _ = self.listener.accept()
            server = socket.create_connection(self.target)
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            held: deque[tuple[float, bytes]] = deque()
            ready = threading.Condition()
            for run in (lambda c=client, q=held, r=ready: self._hold(c, q, r),
                        lambda s=server, q=held, r=ready: self._release(s, q, r),
                        lambda s=server, c=client: self._back(s, c)):
                threading.Thread(target=run, daemon=True).start()

    def _hold(self, client: socket.socket, held: deque[tuple[float, bytes]],
              ready: threading.Condition) -> None:
        while data := client.recv(1 << 16):
            with ready:
                held.append((time.perf_counter() + self.delay, data))
                ready.notify()

    def _release(self, server: socket.socket, held: deque[tuple[float, bytes]],
                 ready: threading.Condition) -> None:
        while True:
            with ready:
                while not held:
                    ready.wait()
                due, data = held.popleft()
            time.sleep(max(0.0, due - time.perf_counter()))
            server.sendall(data)

    @staticmethod
    def _back(server: socket.socket, client: socket.socket) -> None:
        while data := server.recv(1 << 16):
            client.sendall(data)


def _proxy(target: tuple[str, int], delay: float, port: Any) -> None:
    proxy = DelayProxy(target, delay)
    port.value = proxy.port
    proxy.serve()


def _lock_worker(url: str, seed: int, until: float, done: Any) -> None:
    """Claim batches until `until`: each a quarter near copies of what this worker filed."""
    index = DedupIndex.planned(redis.Redis.from_url(url), PREFIX,
                               URLS_PER_ORIGINAL * LOCK_ORIGINALS, DISTANCE)
    rng = np.random.default_rng(seed)
    filed = rng.integers(1, 2**64, LOCK_BATCH, dtype=np.uint64)
    times, n = [], seed * 10**9
    while time.time() < until:
        copies = near_copies(rng, filed, LOCK_BATCH // 4)
        fps = np.concatenate([copies, rng.integers(1, 2**64, LOCK_BATCH - len(copies),
                                                   dtype=np.uint64)])
        claims = [_claim(fp, n + i) for i, fp in enumerate(fps.tolist())]
        n += LOCK_BATCH
        began = time.perf_counter()
        index.claim(claims, DISTANCE)
        times.append(time.perf_counter() - began)
        filed = fps
    done.put(times)


def lock_limit(workers: list[int], rtt_ms: float) -> dict[str, Any]:
    """Batches a second through one dedup lock with Redis `rtt_ms` further away."""
    rows = []
    with own_redis() as url:
        client = redis.Redis.from_url(url)
        index = DedupIndex.planned(client, PREFIX, URLS_PER_ORIGINAL * LOCK_ORIGINALS, DISTANCE)
        file_originals(index, url, np.random.default_rng(0).integers(
            1, 2**64, LOCK_ORIGINALS, dtype=np.uint64))
        parsed = urlparse(url)
        port = multiprocessing.Value("i", 0)
        proxy = multiprocessing.Process(target=_proxy, daemon=True, args=(
            (parsed.hostname, parsed.port), rtt_ms / 1000, port))
        proxy.start()
        try:
            while not port.value:
                time.sleep(0.01)
            far = f"redis://127.0.0.1:{port.value}/0"
            pinged = redis.Redis.from_url(far)
            pinged.ping()
            began = time.perf_counter()
            for _ in range(100):
                pinged.ping()
            ping_ms = (time.perf_counter() - began) * 10
            for count in workers:
                done: Any = multiprocessing.Queue()
                until = time.time() + LOCK_SECONDS
                procs = [multiprocessing.Process(target=_lock_worker, args=(far, s + 1, until, done))
                         for s in range(count)]
                for p in procs:
                    p.start()
                times = [t for _ in procs for t in done.get()]
                for p in procs:
                    p.join()
                rows.append({"workers": count, "batches_per_s": round(len(times) / LOCK_SECONDS, 1),
                             "batch_ms_p50": round(1000 * float(np.percentile(times, 50)), 2),
                             "batch_ms_p99": round(1000 * float(np.percentile(times, 99)), 2)})
                print(json.dumps(rows[-1]), flush=True)
        finally:
            proxy.terminate()
    return {"added_rtt_ms": rtt_ms, "measured_rtt_ms": round(ping_ms, 3),
            "pages_a_batch": LOCK_BATCH, "seconds": LOCK_SECONDS, "runs": rows}


def main() -> None:
    workers = [int(w) for w in os.environ.get("BENCH_NEAR_DUP_LOCK_WORKERS", "1,2,4,8")
               .split(",") if w.strip()]
    results, lookups = [], []
    with ExitStack() as servers:
        for n in sizes():
            def index_of(client: redis.Redis, n: int = n) -> DedupIndex:
                return DedupIndex.planned(client, PREFIX, URLS_PER_ORIGINAL * n, DISTANCE)

            shape = index_of(redis.Redis())
            result, lookups_of = measure(n, index_of, file_and_check, candidates,
                                         keys.NEAR_TABLE.of(PREFIX, table="*", bucket="*"),
                                         servers)
            results.append({"originals": n, "tables": len(shape.tables.keys),
                            "prefix_bits": [min(shape.tables.prefixes), max(shape.tables.prefixes)],
                            **result})
            lookups.append(lookups_of)
        for result, look_ms in zip(results, side_by_side(lookups), strict=True):
            result["lookup_ms_p50"] = round(float(np.percentile(look_ms, 50)), 3)
            result["lookup_ms_p99"] = round(float(np.percentile(look_ms, 99)), 3)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    if workers:
        lock = lock_limit(workers, float(os.environ.get("BENCH_NEAR_DUP_RTT_MS", "1")))
        LOCK_RESULTS.parent.mkdir(parents=True, exist_ok=True)
        LOCK_RESULTS.write_text(json.dumps(lock, indent=1) + "\n")
    print(f"written: {RESULTS}")


if __name__ == "__main__":
    main()
