"""CPU time and memory of processes, read from /proc (Linux) while a measured crawl runs."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

TICKS = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    cpu: float  # seconds of user + system time of the process itself
    rss: int  # bytes


def read_stat(pid: int) -> ProcStat | None:
    """The process's /proc/<pid>/stat, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            raw = file.read().decode(errors="replace")
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()  # after "pid (comm) "; comm may hold spaces
    return ProcStat(pid, int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS,
                    int(fields[21]) * PAGE_BYTES)


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return file.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def all_stats() -> dict[int, ProcStat]:
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := read_stat(int(name))) is not None:
            stats[stat.pid] = stat
    return stats


def descendants(root: int, stats: dict[int, ProcStat]) -> set[int]:
    """`root` and every process below it in `stats`."""
    children: dict[int, list[int]] = {}
    for stat in stats.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in stats and pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


@dataclass
class Group:
    """A set of processes, chosen anew at every sample, whose CPU is summed over a run.

    A process already there at the start counts from its CPU then; one born later counts from
    zero. CPU spent by a process in the last interval before it exits is missed.
    """

    select: Callable[[dict[int, ProcStat]], Iterable[int]]
    label: Callable[[int], str] | None = None  # names a process when first seen (by_label)
    start: dict[int, float] = field(default_factory=dict)
    last: dict[int, float] = field(default_factory=dict)
    labels: dict[int, str] = field(default_factory=dict)
    peak_rss: int = 0

    def sample(self, stats: dict[int, ProcStat], first: bool = False) -> None:
        chosen = [stats[pid] for pid in self.select(stats) if pid in stats]
        for stat in chosen:
            if first:
                self.start[stat.pid] = stat.cpu
            self.last[stat.pid] = stat.cpu
            if self.label is not None and stat.pid not in self.labels:
                self.labels[stat.pid] = self.label(stat.pid)
        self.peak_rss = max(self.peak_rss, sum(stat.rss for stat in chosen))

    @property
    def cpu(self) -> float:
        return sum(cpu - self.start.get(pid, 0.0) for pid, cpu in self.last.items())

    def by_label(self) -> dict[str, float]:
        """CPU seconds summed by the processes' labels."""
        out: dict[str, float] = {}
        for pid, cpu in self.last.items():
            name = self.labels.get(pid, "other")
            out[name] = out.get(name, 0.0) + cpu - self.start.get(pid, 0.0)
        return out


class Sampler:
    """Samples groups of processes every `interval` seconds in a thread, until stopped."""

    def __init__(self, groups: dict[str, Group], interval: float = 0.5) -> None:
        self.groups, self.interval = groups, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._sample(first=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self, first: bool = False) -> None:
        stats = all_stats()
        for group in self.groups.values():
            group.sample(stats, first)
