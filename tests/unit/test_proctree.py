"""Process trees read from /proc: the CPU of processes that ended counts (reaped by one of
the tree or not), and the peak memory is shared out by kind of process (its PSS read only
when the tree's RSS grew)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

from crawlapp.adapters import proctree
from crawlapp.adapters.proctree import TreeCpu, TreePeak

BURN = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_tree_cpu_counts_the_processes_that_ended() -> None:
    # The shell (a session of its own, as a browser) reaps the first burner (its time moves
    # to the shell's children's time); the second is left behind by a subshell at once (a
    # double fork: another process reaps it) and ends on its own.
    script = (f"{sys.executable} -c '{BURN}'; ( {sys.executable} -c '{BURN}' & ); "
              f"sleep 0.3; {sys.executable} -c 'import time; time.sleep(1.2)'")
    meter, before = TreeCpu(), _children_cpu()
    shell = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    while shell.poll() is None:
        meter.read(shell.pid)
        time.sleep(0.05)
    used = meter.read(None)
    assert used >= 0.7, used  # both burners, 0.4 s each, less the last 50 ms of the second
    reaped = _children_cpu() - before  # what this process can see: the shell's tree it reaped
    assert used >= reaped - 0.05


def test_tree_peak_shares_the_memory_by_kind() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        time.sleep(0.3)
        peak = TreePeak(os.getpid(), lambda pid: "child" if pid == child.pid else None,
                        root_kind="tests")
        peak.read()
    finally:
        child.kill()
        child.wait()
    assert peak.shares.keys() == {"tests", "child"} and peak.shares["child"] > 1 << 20
    assert peak.peak == sum(peak.shares.values())


def test_pss_is_read_only_when_the_trees_rss_grew_a_sixteenth(
        monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    monkeypatch.setattr(proctree, "pss", lambda pid, fallback: read.append(pid) or fallback)
    peak = TreePeak(os.getpid(), lambda pid: None)
    peak.read()
    assert os.getpid() in read and peak.peak > 0  # with the test process's children, if any
    read.clear()
    peak._rss += 1 << 40  # as if the tree had been far bigger at an earlier reading
    peak.read()
    assert read == []
    peak._rss = 1 << 30  # now bigger than the tree by less than a sixteenth
    me = proctree.processes()[os.getpid()]
    monkeypatch.setattr(proctree, "processes", lambda: {
        os.getpid(): me._replace(rss=(1 << 30) + (1 << 25))})
    peak.read()
    assert read == []
    peak._rss = 0
    peak.read()
    assert read == [os.getpid()]  # the tree as `processes` gives it
