"""Tables of permuted SimHash fingerprints, in which a look-up finds every fingerprint within
`distance` bits among a bounded number of candidates, whatever the number filed. Pure.

After Manku, Jain and Das Sarma, "Detecting near-duplicates for web crawling" (WWW 2007).
Cut a fingerprint's `width` bits into `b` blocks. Two fingerprints within `k` bits differ in
at most `k` positions, which touch at most `k` blocks: at least `b - k` blocks are the same in
both (pigeonhole). A table takes one combination of `b - k` blocks and files each fingerprint
under its *prefix*: those blocks' bits, moved to the top of the fingerprint (a permutation of
its bits). There are C(b, k) tables, and for any two fingerprints within `k` bits, the table
of `b - k` blocks they share files both under one prefix. A look-up reads, in each table, the
fingerprints filed under the page's own prefix: every fingerprint within `k` bits is among
them (no false negative), and of `n` others spread at random a table holds ~ n / 2^prefix
under any prefix: `strangers` counts them, over every table.

More blocks make more tables (each a copy of every fingerprint) with longer prefixes
((b - k) / b of the bits), so fewer strangers: `plan` takes the fewest blocks with which a
look-up meets at most `STRANGERS` strangers, on average, among the originals planned for. At
64 bits and k = 3 (ones blocks of 64 / b bits, the first `64 % b` a bit longer):

    b  tables  prefix bits      strangers per look-up      at most STRANGERS up to
    4     4    16               n x 4 / 2^16                       16 thousand
    5    10    25-26            n x 7 / 2^25                      4.8 million
    6    20    31-33            n x 44 / 2^33                     195 million
    7    35    36-37            n x 50 / 2^37                     2.7 billion

k = 1 or 2 need fewer tables (k = 2: 3 tables of 21-22 bits, 6 of 32, 10 of 38-39); k = 0
one, the whole fingerprint its prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from math import comb

import numpy as np

WIDTH = 64
STRANGERS = 1.0  # candidates a look-up meets, on average, that are not within the distance
MAX_TABLES = 64  # the most tables `plan` takes, whatever the originals planned for


def blocks(width: int, count: int) -> tuple[int, ...]:
    """`width` bits cut into `count` blocks, most significant first: their widths, the first
    `width % count` a bit longer."""
    if not 1 <= count <= width:
        raise ValueError(f"cannot cut {width} bits into {count} blocks")
    return tuple(width // count + (i < width % count) for i in range(count))


def _bit_luts(order: Sequence[int], width: int) -> np.ndarray:
    """Per byte of a fingerprint and per value of that byte, the bits it sets once moved:
    bit `order[j]` of the fingerprint goes to bit `width - 1 - j`. Shape (8, 256), uint64."""
    target = np.zeros(WIDTH, dtype=np.uint64)
    for j, source in enumerate(order):
        target[source] = np.uint64(1) << np.uint64(width - 1 - j)
    values = np.arange(256)
    luts = np.zeros((8, 256), dtype=np.uint64)
    for byte in range(8):
        for bit in range(8):
            luts[byte] |= np.where(values >> bit & 1, target[8 * byte + bit], np.uint64(0))
    return luts


_SHIFTS = np.arange(8, dtype=np.uint64) * np.uint64(8)


def _octets(values: np.ndarray) -> np.ndarray:
    """Each value's 8 bytes, least significant first: shape (n, 8), indexes."""
    octets: np.ndarray = ((values[:, None] >> _SHIFTS) & np.uint64(255)).astype(np.intp)
    return octets


def _apply(luts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each value's bits moved by `luts` (one permutation, or one a table: (tables, 8, 256));
    shape (n,) or (tables, n)."""
    moved: np.ndarray = np.bitwise_or.reduce(luts[..., np.arange(8), _octets(values)], axis=-1)
    return moved


@dataclass(frozen=True)
class Tables:
    """One table per combination of `len(blocks) - distance` blocks (`keys`, block indexes):
    a fingerprint's bits permuted so that those blocks come first, then the others, each in
    its order; its prefix is the key blocks' bits."""

    width: int
    distance: int
    blocks: tuple[int, ...]
    keys: tuple[tuple[int, ...], ...]
    prefixes: tuple[int, ...] = field(init=False, compare=False)  # each table's prefix bits
    _forward: np.ndarray = field(init=False, repr=False, compare=False)
    _backward: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.width <= WIDTH:
            raise ValueError(f"fingerprints have 1 to {WIDTH} bits, not {self.width}")
        if sum(self.blocks) != self.width:
            raise ValueError(f"blocks {self.blocks} do not cut {self.width} bits")
        starts = [self.width - sum(self.blocks[:i + 1]) for i in range(len(self.blocks))]
        forward, backward = [], []
        for key in self.keys:
            moved = [*key, *(i for i in range(len(self.blocks)) if i not in key)]
            order = [starts[i] + bit for i in moved for bit in reversed(range(self.blocks[i]))]
            forward.append(_bit_luts(order, self.width))
            inverse = [0] * self.width
            for j, source in enumerate(order):
                inverse[self.width - 1 - source] = self.width - 1 - j
            backward.append(_bit_luts(inverse, self.width))
        object.__setattr__(self, "prefixes",
                           tuple(sum(self.blocks[i] for i in key) for key in self.keys))
        object.__setattr__(self, "_forward", np.stack(forward))
        object.__setattr__(self, "_backward", np.stack(backward))

    def permute(self, fingerprints: Sequence[int] | np.ndarray) -> np.ndarray:
        """Each fingerprint as each table files it: shape (tables, n), uint64."""
        return _apply(self._forward, np.asarray(fingerprints, dtype=np.uint64))

    def unpermute(self, table: int | Sequence[int] | np.ndarray,
                  permuted: Sequence[int] | np.ndarray) -> np.ndarray:
        """The fingerprints that `table` files as `permuted` (one table, or one a value)."""
        values = np.asarray(permuted, dtype=np.uint64)
        if isinstance(table, int):
            return _apply(self._backward[table], values)
        luts = self._backward[np.asarray(table, dtype=np.intp)[:, None], np.arange(8),
                              _octets(values)]
        found: np.ndarray = np.bitwise_or.reduce(luts, axis=-1)
        return found

    def strangers(self, originals: int) -> float:
        """Fingerprints a look-up meets, on average, among `originals` spread at random (none
        within the distance)."""
        return _strangers(self.prefixes, originals)


def _strangers(prefixes: Sequence[int], originals: int) -> float:
    """A table's share of `originals` under one prefix is 2^-prefix: summed over the tables."""
    return originals * sum(2.0 ** -p for p in prefixes)


def _keys(count: int, distance: int) -> tuple[tuple[int, ...], ...]:
    if not 0 <= distance < count:
        raise ValueError(f"{count} blocks cannot find every fingerprint within {distance} bits")
    return tuple(combinations(range(count), count - distance))


def tables(count: int, distance: int, width: int = WIDTH) -> Tables:
    """The tables of `count` blocks for `distance`: one per combination of `count - distance`."""
    return Tables(width, distance, blocks(width, count), _keys(count, distance))


def plan(originals: int, distance: int, width: int = WIDTH,
         strangers: float = STRANGERS) -> Tables:
    """The fewest tables with which a look-up among `originals` meets at most `strangers`
    fingerprints beyond `distance` bits, on average (the most blocks within MAX_TABLES
    tables when none does)."""
    if originals < 0 or not 0 <= distance < width:
        raise ValueError(f"no tables for {originals} originals within {distance} of {width} bits")
    def met(count: int) -> float:
        widths = blocks(width, count)
        return _strangers([sum(widths[i] for i in key) for key in _keys(count, distance)],
                          originals)

    count = distance + 1
    while count < width and comb(count + 1, distance) <= MAX_TABLES and met(count) > strangers:
        count += 1
    return tables(count, distance, width)
