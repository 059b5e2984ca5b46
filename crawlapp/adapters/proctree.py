"""Processes read from Linux /proc: the CPU and memory of a process tree (a browser and its
renderers, a crawl and its workers), and the tree's peak memory by kind of process."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple


def pss(pid: int, fallback: int) -> int:
    """Proportional set size (shared pages split between their users), else `fallback`."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return fallback


class Proc(NamedTuple):
    """One process: its parent, CPU seconds (its own and its reaped children's, user and
    system), resident bytes, start time (clock ticks since boot: a pid reused differs) and
    session."""

    parent: int
    cpu: float
    rss: int
    start: int
    session: int


def processes() -> dict[int, Proc]:
    """Every process, by pid (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    out: dict[int, Proc] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = sum(int(stat[i]) for i in (11, 12, 13, 14)) / tick
        out[int(entry.name)] = Proc(int(stat[1]), cpu, int(stat[21]) * page, int(stat[19]),
                                     int(stat[3]))
    return out


def tree(pid: int, processes: dict[int, Proc]) -> set[int]:
    """`pid` and its descendants among `processes`."""
    children: dict[int, list[int]] = {}
    for child, proc in processes.items():
        children.setdefault(proc.parent, []).append(child)
    tree, frontier = {pid}, [pid]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in tree:
                tree.add(child)
                frontier.append(child)
    return tree & processes.keys()


def tree_usage(pid: int) -> tuple[float, int]:
    """CPU seconds (user + system, reaped children's included) and memory (PSS) of `pid`
    and its descendants (Linux /proc)."""
    found = processes()
    members = tree(pid, found)
    return sum(found[p].cpu for p in members), sum(pss(p, found[p].rss) for p in members)


class TreeCpu:
    """CPU seconds a process tree used, those of processes gone included. The tree is the
    root's descendants and, when the root leads a session (a browser started in a session
    of its own), every process of that session: one whose parent left it behind (a double
    fork) too; a process once in the tree is followed wherever it goes. One that ended counts
    with its last reading unless its parent, still followed, reaped it (then its time is in
    the parent's children's time). What a process used after its last reading is lost, so
    read often (each page)."""

    def __init__(self) -> None:
        self.gone = 0.0
        self._last: dict[int, Proc] = {}
        self._session: int | None = None  # the root's session, when the root leads it
        self._lock = threading.Lock()  # read by the render loop and the stage's thread

    def read(self, pid: int | None) -> float:
        """The tree's CPU seconds so far (`pid` None: its root is gone)."""
        with self._lock:
            return self._read(pid)

    def _read(self, pid: int | None) -> float:
        found = processes()
        roots = {p for p, proc in self._last.items()
                 if p in found and found[p].start == proc.start}
        if pid is not None and pid in found:
            roots.add(pid)
            self._session = pid if found[pid].session == pid else None
        if self._session is not None:
            roots |= {p for p, proc in found.items() if proc.session == self._session}
        members: set[int] = set()
        for root in roots - members:
            members |= tree(root, found)
        for old, proc in self._last.items():
            alive = old in members and found[old].start == proc.start
            if not alive and proc.parent not in members:
                self.gone += proc.cpu
        self._last = {p: found[p] for p in members}
        return self.gone + sum(proc.cpu for proc in self._last.values())


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class TreePeak:
    """The peak memory (PSS) of the process tree of `root`, read every `interval` seconds by a
    thread, with each kind of process's share at that peak: a browser's processes are
    'browser', the others are named by `kind_of(pid)` for the first ancestor it names (the
    root's children, say), else `root_kind`.

    PSS costs the kernel a walk of each process's pages (most of the crawl process's own
    CPU when read every time), so it is read only when the tree's summed RSS (a field of
    /proc/PID/stat, read anyway) has grown by a sixteenth past the most it was at an earlier
    reading of PSS: the tree's memory cannot grow without its RSS growing, and the peak is
    known within about 6 % at a few readings for a crawl whose memory grows all along."""

    def __init__(self, root: int, kind_of: Callable[[int], str | None],
                 interval: float = 1.0, root_kind: str = "main") -> None:
        self.root, self.kind_of, self.interval = root, kind_of, interval
        self.root_kind = root_kind
        self.peak = 0
        self.shares: Counter[str] = Counter()
        self._rss = 0  # the most the tree's summed RSS was at a reading
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-peak", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while True:
            self.read()
            if self._stop.wait(self.interval):
                return

    def read(self) -> None:
        """One reading; kept when it is the peak so far."""
        found = processes()
        members = tree(self.root, found)
        rss = sum(found[pid].rss for pid in members)
        if rss <= self._rss + (self._rss >> 4):
            return
        self._rss = rss
        shares: Counter[str] = Counter()
        for pid in members:
            shares[self._kind(pid, found)] += pss(pid, found[pid].rss)
        total = sum(shares.values())
        if total > self.peak:
            self.peak, self.shares = total, shares

    def _kind(self, pid: int, found: dict[int, Proc]) -> str:
        if "chrom" in _comm(pid):
            return "browser"
        while pid in found and pid != self.root:
            kind = self.kind_of(pid)
            if kind is not None:
                return kind
            pid = found[pid].parent
        return self.root_kind
