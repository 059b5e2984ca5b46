"""Tables of permuted fingerprints (core/near_tables.py): no fingerprint within the distance is
ever missed, proved on every pair at small widths and on every difference at 64 bits."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from crawlapp.core.near_tables import MAX_TABLES, STRANGERS, Tables, blocks, plan, tables


def prefixes(t: Tables, values: np.ndarray) -> np.ndarray:
    """Each value's prefix in each table: shape (tables, n)."""
    shifts = np.array([t.width - p for p in t.prefixes], dtype=np.uint64)[:, None]
    return t.permute(values) >> shifts


def popcounts(values: np.ndarray) -> np.ndarray:
    return np.bitwise_count(values.astype(np.uint64))


def key_bits(t: Tables, table: int, fp: int) -> int:
    """The prefix of `fp` in `table` by the definition: its key blocks' bits, in order."""
    out, start = 0, t.width
    starts = []
    for width in t.blocks:
        start -= width
        starts.append(start)
    for block in t.keys[table]:
        out = out << t.blocks[block] | fp >> starts[block] & ((1 << t.blocks[block]) - 1)
    return out


@pytest.mark.parametrize("width", [8, 10])
@pytest.mark.parametrize("distance", [0, 1, 2, 3])
@pytest.mark.parametrize("extra", [1, 2, 3])
def test_every_pair_within_the_distance_shares_a_prefix_on_small_widths(
        width: int, distance: int, extra: int) -> None:
    """All 2^width x 2^width pairs: those within `distance` bits share a prefix in some table;
    the tables keep far pairs apart as often as a stranger's odds say (else they would filter
    nothing)."""
    t = tables(distance + extra, distance, width)
    values = np.arange(1 << width, dtype=np.uint64)
    keyed = prefixes(t, values)
    shared = np.zeros((len(values), len(values)), dtype=bool)
    for row in keyed:
        shared |= row[:, None] == row[None, :]
    near = popcounts(values[:, None] ^ values[None, :]) <= distance
    assert shared[near].all()
    assert shared[~near].mean() <= t.strangers(1)


@pytest.mark.parametrize(("originals", "distance"), [
    (10_000, 3), (100_000, 3), (10_000_000, 3), (1_000_000_000, 3),
    (10_000_000, 2), (1_000_000_000, 2), (10_000_000, 1), (10_000_000, 0)])
def test_every_difference_within_the_distance_is_found_on_64_bits(originals: int,
                                                                  distance: int) -> None:
    """Permuting is linear over XOR, so two fingerprints share a table's prefix exactly when
    their difference's prefix is zero: every difference of up to `distance` bits (43,745 at
    3) has a table where it is; and pairs sampled at random agree."""
    t = plan(originals, distance)
    differences = np.array([sum(1 << bit for bit in bits) for k in range(distance + 1)
                            for bits in itertools.combinations(range(64), k)], dtype=np.uint64)
    assert len(differences) == sum(len(list(itertools.combinations(range(64), k)))
                                   for k in range(distance + 1))
    assert (prefixes(t, differences) == 0).any(axis=0).all()
    rng = np.random.default_rng(originals + distance)
    a = rng.integers(0, 2**64, size=20_000, dtype=np.uint64)
    b = a ^ rng.choice(differences, size=len(a))
    assert (prefixes(t, a) == prefixes(t, b)).any(axis=0).all()


def test_prefixes_are_the_key_blocks_and_unpermuting_gives_the_fingerprint_back() -> None:
    t = plan(10_000_000, 3)
    rng = random.Random(5)
    fps = [0, 2**64 - 1, *(rng.getrandbits(64) for _ in range(300))]
    permuted = t.permute(fps)
    for table, prefix in enumerate(t.prefixes):
        assert [int(v) >> (64 - prefix) for v in permuted[table]] == \
            [key_bits(t, table, fp) for fp in fps]
        assert t.unpermute(table, permuted[table]).tolist() == fps
        assert sorted(popcounts(permuted[table]).tolist()) == sorted(fp.bit_count() for fp in fps)
    # values of several tables unpermuted at once, each by its own table
    picked = [rng.randrange(len(t.keys)) for _ in fps]
    mixed = [int(permuted[table][i]) for i, table in enumerate(picked)]
    assert t.unpermute(picked, mixed).tolist() == fps


def test_blocks_cut_every_bit_once() -> None:
    assert blocks(64, 4) == (16, 16, 16, 16)
    assert blocks(64, 5) == (13, 13, 13, 13, 12)
    assert blocks(64, 6) == (11, 11, 11, 11, 10, 10)
    for bad in (0, 65):
        with pytest.raises(ValueError):
            blocks(64, bad)


@pytest.mark.parametrize("distance", [0, 1, 2, 3])
def test_the_plan_takes_the_fewest_tables_that_meet_few_strangers(distance: int) -> None:
    counts = []
    for originals in (0, 1_000, 100_000, 10_000_000, 1_000_000_000, 10_000_000_000):
        t = plan(originals, distance)
        counts.append(len(t.keys))
        assert t.strangers(originals) <= STRANGERS or len(t.keys) * 2 > MAX_TABLES
        fewer = len(t.blocks) - 1
        if fewer > distance:
            assert tables(fewer, distance).strangers(originals) > STRANGERS
        assert len(t.keys) == len(set(t.keys)) and all(len(k) == fewer + 1 - distance
                                                      for k in t.keys)
    assert counts == sorted(counts)


def test_the_plan_for_three_bits() -> None:
    """The figures of the module's docstring."""
    shapes = {n: (len(plan(n, 3).keys), min(plan(n, 3).prefixes), max(plan(n, 3).prefixes))
              for n in (16_000, 4_000_000, 150_000_000, 2_000_000_000)}
    assert shapes == {16_000: (4, 16, 16), 4_000_000: (10, 25, 26),
                      150_000_000: (20, 31, 33), 2_000_000_000: (35, 36, 37)}
    assert plan(2_500_000, 3).strangers(2_500_000) == pytest.approx(0.52, abs=0.01)


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError):
        tables(3, 3)
    with pytest.raises(ValueError):
        plan(-1, 3)
    with pytest.raises(ValueError):
        plan(10, 64)
    with pytest.raises(ValueError):
        Tables(64, 3, (16, 16, 16), ((0,),))
