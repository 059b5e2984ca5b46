"""What every frontier does, as test cases: a subclass named Test... provides the `make`
fixture (a frontier of `shards` shards, empty) and pytest runs the cases on it.
tests/integration/test_frontier.py runs them on Redis, tests/unit/test_frontier_contract.py on
the in-memory frontier."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from crawlapp.core.ports import Frontier
from crawlapp.core.priority import YIELD_MARGIN
from crawlapp.core.records import (
    PAUSED,
    HostState,
    HostStatus,
    Lease,
    ParkKind,
    ParkReason,
    QueuedURL,
    Release,
)

NOW = 1_000_000.0
FAILING = ParkReason(ParkKind.FAILING, "8 failures in a row, last: 500")
GIVEN_UP = ParkReason(ParkKind.UNREACHABLE, "dns")
MakeFrontier = Callable[..., Frontier]  # make(shards=2)


def lease_all(f: Frontier, now: float, max_hosts: int = 100, lease: float = 60.0,
              max_leased: int = 1000, lookahead: float = 0.0, due_by: float | None = None,
              per_lease: int = 1, warm_hosts: int = 0, warm_seconds: float = 0.0
              ) -> tuple[list[Lease], float | None]:
    leases, next_ready = f.dispatch(range(f.shards), now, max_hosts=max_hosts,
                                    lease_seconds=lease, max_leased=max_leased,
                                    lookahead=lookahead, due_by=due_by, per_lease=per_lease,
                                    warm_hosts=warm_hosts, warm_seconds=warm_seconds)
    return [lease for batch in leases.values() for lease in batch], next_ready


class FrontierContract:
    @pytest.fixture
    def make(self) -> MakeFrontier:
        raise NotImplementedError("a subclass gives the frontier to test")

    def test_one_url_per_host_is_leased_and_the_host_waits_its_delay(
            self, make: MakeFrontier) -> None:
        f = make()
        assert f.add([QueuedURL(f"http://a.com/{i}", 1, 0.5) for i in range(3)]
                     + [QueuedURL("http://b.com/", 0, 1.0)], NOW) == 4
        leases, _ = lease_all(f, NOW)
        assert sorted(lease.host for lease in leases) == ["a.com", "b.com"]
        again, _ = lease_all(f, NOW + 1)
        assert again == []  # both hosts are busy
        a = next(lease for lease in leases if lease.host == "a.com")
        assert f.release([Release(a, NOW + 2)]) == 1
        early, next_ready = lease_all(f, NOW + 1.9)
        assert early == [] and next_ready == NOW + 2
        later, _ = lease_all(f, NOW + 2)
        assert [lease.host for lease in later] == ["a.com"]

    def test_best_priority_first_and_duplicates_are_queued_once(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/low", 3, 0.1), QueuedURL("http://a.com/high", 1, 0.9)],
              NOW)
        assert f.add([QueuedURL("http://a.com/low", 3, 0.1)], NOW) == 0
        order = []
        now = NOW
        while True:
            leases, _ = lease_all(f, now)
            if not leases:
                break
            order.append(leases[0].url)
            f.release([Release(leases[0], now)])
            now += 1
        assert order == ["http://a.com/high", "http://a.com/low"]

    def test_equal_scores_pop_in_the_same_order(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        urls = [("https://a.com/b", 2), ("http://a.com/z", 2), ("http://a.com/a", 10),
                ("http://a.com/c", 2)]
        f.add([QueuedURL(url, depth, 0.5) for url, depth in urls], NOW)
        order = []
        for n in range(len(urls)):
            (lease,), _ = lease_all(f, NOW + n)
            order.append((lease.url, lease.depth))
            f.release([Release(lease, NOW + n + 1)])
        assert order == [("http://a.com/a", 10), ("http://a.com/c", 2), ("http://a.com/z", 2),
                         ("https://a.com/b", 2)]  # "depth<TAB>url" as text

    def test_expired_lease_returns_its_url_and_a_stale_release_is_ignored(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/x", 0, 1.0)], NOW)
        (first,), _ = lease_all(f, NOW, lease=10)
        assert f.renew([first], NOW + 5, 10) == [0]
        (second,), _ = lease_all(f, NOW + 16, lease=10)  # the lease ran out at NOW + 15
        assert second.url == first.url and second.token != first.token
        assert second.not_before == NOW + 16
        assert f.renew([first], NOW + 16, 10) == [None]
        assert f.release([Release(first, NOW + 100)]) == 0
        assert f.release([Release(second, NOW + 17)]) == 1
        assert f.is_idle(NOW + 20)

    def test_an_answer_after_its_lease_expired_keeps_its_url_from_being_fetched_again(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://a.com/{i}", 0, 1.0) for i in range(2)], NOW)
        (late,), _ = lease_all(f, NOW, lease=10)
        f.dispatch([0], NOW + 11, max_hosts=1, lease_seconds=10, max_leased=0)  # expires it
        assert f.stats(NOW + 11)[0].urls_queued == 2  # its URL is back
        assert f.release([Release(late, NOW + 30)]) == 0  # its answer came after all
        assert f.stats(NOW + 11)[0].urls_queued == 1
        assert lease_all(f, NOW + 29)[0] == []  # the host waits for its next time
        (other,), _ = lease_all(f, NOW + 30)
        assert other.url != late.url
        f.release([Release(late, NOW + 31, requeue=True)])  # to retry: stays put back
        assert f.stats(NOW + 31)[0].urls_queued == 0

    def test_requeue_puts_the_url_back_and_leased_hosts_are_capped(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://h{i}.com/", 0, 1.0) for i in range(5)], NOW)
        leases, _ = lease_all(f, NOW, max_leased=3)
        assert len(leases) == 3
        f.release([Release(lease, NOW + 1, requeue=True) for lease in leases])
        stats = f.stats(NOW + 1)[0]
        assert stats.urls_queued == 5 and stats.hosts_leased == 0
        assert stats.hosts_ready + stats.hosts_waiting == 5


    def test_a_url_to_try_again_goes_behind_its_hosts_other_urls(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/broken", 0, 0.9)]
              + [QueuedURL(f"http://a.com/{i}", 1, 0.5) for i in range(3)], NOW)
        (broken,), _ = lease_all(f, NOW)
        assert broken.url == "http://a.com/broken"
        f.release([Release(broken, NOW + 1, requeue=True, behind=True)])
        order = []
        for n in range(4):
            (lease,), _ = lease_all(f, NOW + 1 + n)
            order.append(lease.url)
            f.release([Release(lease, NOW + 2 + n, requeue=order == ["http://a.com/0"])])
        # /0 went back once without `behind` (not fetched): it keeps its place before /1
        assert order == ["http://a.com/0", "http://a.com/0", "http://a.com/1", "http://a.com/2"]
        (last,), _ = lease_all(f, NOW + 10)
        assert last.url == "http://a.com/broken"
    def test_a_batch_waits_to_grow_until_full_or_due(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/", 0, 1.0), QueuedURL("http://b.com/", 0, 1.0)], NOW + 5)
        assert lease_all(f, NOW, 3, lookahead=10, due_by=NOW + 1) == ([], NOW + 5)
        assert lease_all(f, NOW, 3, lookahead=4)[0] == []  # beyond the lookahead
        full, _ = lease_all(f, NOW, 2, lookahead=10, due_by=NOW + 1)
        assert sorted(lease.host for lease in full) == ["a.com", "b.com"]
        assert {lease.not_before for lease in full} == {NOW + 5}  # not before the host's time

    def test_idle_once_every_url_is_handed_out_and_released(self, make: MakeFrontier) -> None:
        f = make()
        assert f.is_idle(NOW)
        f.add([QueuedURL("http://a.com/x", 2, 0.5)], NOW)
        assert not f.is_idle(NOW)
        (lease,), _ = lease_all(f, NOW)
        assert not f.is_idle(NOW)  # leased
        f.release([Release(lease, NOW + 1)])
        assert f.is_idle(NOW)

    def test_next_due_and_the_hosts_waiting_past_a_time(self, make: MakeFrontier) -> None:
        f = make()
        assert f.next_due(NOW) is None and f.waiting_after(NOW, 10) == {}
        f.add([QueuedURL(f"http://{h}.com/", 0, 1.0) for h in "abcd"], NOW)
        leases, _ = lease_all(f, NOW)
        assert f.next_due(NOW + 1) == NOW + 1  # a lease held: due now
        a, b, c, d = sorted(leases, key=lambda lease: lease.host)
        f.release([Release(a, NOW + 5, requeue=True), Release(b, NOW + 60, requeue=True),
                   Release(c, NOW + 90, requeue=True, failures=3, park_reason="3 failures"),
                   Release(d, NOW + 2)])  # d has nothing queued: it only remembers its time
        assert f.next_due(NOW + 1) == NOW + 5
        assert f.waiting_after(NOW + 31, 10) == {"b.com": NOW + 60}  # parked: parked()'s
        assert f.waiting_after(NOW + 1, 10) == {"a.com": NOW + 5, "b.com": NOW + 60}
        (again,), _ = lease_all(f, NOW + 5)
        assert again.host == "a.com" and f.next_due(NOW + 5) == NOW + 5
        f.release([Release(again, NOW + 6)])  # a's last URL: a only remembers its time
        f.pause("b.com")
        assert f.next_due(NOW + 7) == NOW + 90  # parked c comes back; paused b never does
        f.resume("c.com", NOW + 8)
        f.pause("c.com")
        assert f.next_due(NOW + 9) is None

    def test_failures_park_a_host_until_its_time_and_are_reported(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://a.com/{i}", 1, 0.5) for i in range(2)], NOW)
        (lease,), _ = lease_all(f, NOW)
        f.release([Release(lease, NOW + 600, requeue=True, failures=8,
                           park_reason=FAILING)])
        assert f.parked() == {"a.com": (NOW + 600, FAILING)}
        assert f.stats(NOW)[0].hosts_backing_off == 1
        assert f.is_idle(NOW + 1)  # parked hosts keep their URLs for later
        f.add([QueuedURL("http://a.com/new", 1, 0.5)], NOW + 2)
        assert lease_all(f, NOW + 599)[0] == []
        (back,), _ = lease_all(f, NOW + 600)
        assert back.host == "a.com" and f.renew([back], NOW + 600, 60) == [8]
        f.release([Release(back, NOW + 601)])  # a success clears the failure count
        (again,), _ = lease_all(f, NOW + 601)
        assert f.renew([again], NOW + 601, 60) == [0]
        assert f.stats(NOW + 601)[0].hosts_backing_off == 0

    def test_pause_and_resume_an_idle_a_ready_and_a_leased_host(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/1", 1, 0.5), QueuedURL("http://b.com/1", 1, 0.5)], NOW)
        (lease_a,), _ = lease_all(f, NOW, max_hosts=1)
        f.pause("a.com")
        f.pause("b.com")
        f.pause("c.com")
        f.release([Release(lease_a, NOW + 1, requeue=True)])
        assert set(f.parked()) == {"a.com", "b.com", "c.com"}
        assert lease_all(f, NOW + 10)[0] == []
        f.add([QueuedURL("http://c.com/1", 1, 0.5)], NOW + 10)
        assert lease_all(f, NOW + 11)[0] == []
        assert f.resume("a.com", NOW + 20) and f.resume("c.com", NOW + 20)
        assert not f.resume("nothing.com", NOW + 20)
        leases, _ = lease_all(f, NOW + 20)
        assert sorted(lease.host for lease in leases) == ["a.com", "c.com"]

    def test_a_url_found_closer_moves_only_while_it_waits(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/x", 3, 0.5), QueuedURL("http://a.com/y", 3, 0.5)], NOW)
        (lease,), _ = lease_all(f, NOW)
        waiting = "http://a.com/y" if lease.url == "http://a.com/x" else "http://a.com/x"
        moved = [QueuedURL(lease.url, 1, 0.9, replaces_depth=3),
                 QueuedURL(waiting, 1, 0.9, replaces_depth=3)]
        assert f.add(moved, NOW) == 0
        f.release([Release(lease, NOW)])
        (again,), _ = lease_all(f, NOW)
        assert (again.url, again.depth) == (waiting, 1)
        f.release([Release(again, NOW)])
        assert lease_all(f, NOW)[0] == []  # the URL leased meanwhile was not queued again

    def test_a_url_its_lease_holds_is_not_queued_again(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/x", 2, 0.5), QueuedURL("http://a.com/y", 2, 0.5)], NOW)
        leases, _ = lease_all(f, NOW, per_lease=2)
        assert sorted(lease.url for lease in leases) == ["http://a.com/x", "http://a.com/y"]
        # queued again while its fetch is under way (a re-crawl come due, a rebuild), at
        # its own depth or another: the fetch's outcome plans what comes next
        assert f.add([QueuedURL("http://a.com/x", 2, 0.9), QueuedURL("http://a.com/y", 1, 0.9),
                      QueuedURL("http://a.com/z", 2, 0.5)], NOW + 1, unless_leased=True) == 1
        f.release([Release(lease, NOW + 2) for lease in leases])
        (again,), _ = lease_all(f, NOW + 2)
        assert again.url == "http://a.com/z"
        f.release([Release(again, NOW + 3)])
        assert lease_all(f, NOW + 3)[0] == []  # x and y were fetched once
        assert f.add([QueuedURL("http://a.com/x", 2, 0.5)], NOW + 4, unless_leased=True) == 1
        (lease,), _ = lease_all(f, NOW + 4)
        assert f.add([QueuedURL("http://a.com/x", 2, 0.5)], NOW + 5) == 1  # a lost batch's

    def test_drop_some_urls_or_a_whole_queue(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://a.com/{i}", 1, 0.5) for i in range(3)]
              + [QueuedURL("http://b.com/1", 1, 0.5)], NOW)
        assert f.drop("a.com", []) == 0
        assert f.drop("a.com", [(1, "http://a.com/0", 0), (2, "http://a.com/1", 0)]) == 1
        assert f.host_states(["a.com"], NOW)["a.com"].queued == 2
        assert f.drop("a.com") == 2 and f.drop("a.com") == 0
        assert f.stats(NOW)[0].urls_queued == 1
        assert f.host_states(["a.com"], NOW)["a.com"].status == HostStatus.IDLE
        (lease,), _ = lease_all(f, NOW)
        assert lease.host == "b.com" and f.drop("b.com") == 0  # a leased URL stays leased

    def test_off_scope_hops_travel_with_the_url(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/in", 2, 0.5), QueuedURL("http://a.com/off", 2, 0.5, hops=1),
               QueuedURL("http://a.com/far", 4, 0.4, hops=2)], NOW)
        assert f.add([QueuedURL("http://a.com/far", 3, 0.4, replaces_depth=4, hops=2)], NOW) == 0
        assert f.drop("a.com", [(2, "http://a.com/off", 0)]) == 0  # its hops are part of it
        got = []
        for n in range(3):
            (lease,), _ = lease_all(f, NOW + n)
            got.append((lease.url, lease.depth, lease.hops))
            f.release([Release(lease, NOW + n + 1)])
        assert sorted(got) == [("http://a.com/far", 3, 2), ("http://a.com/in", 2, 0),
                               ("http://a.com/off", 2, 1)]
        f.add([QueuedURL("http://a.com/off", 2, 0.5, hops=1)], NOW + 5)
        assert f.drop("a.com", [(2, "http://a.com/off", 1)]) == 1

    def test_hold_delays_ready_and_idle_hosts(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/1", 1, 0.5)], NOW)
        f.hold(["a.com", "b.com"], NOW + 30)
        f.hold(["a.com"], NOW + 10)  # never earlier
        f.add([QueuedURL("http://b.com/1", 1, 0.5)], NOW + 1)
        assert lease_all(f, NOW + 29) == ([], NOW + 30)
        leases, _ = lease_all(f, NOW + 30)
        assert sorted(lease.host for lease in leases) == ["a.com", "b.com"]

    def test_a_host_with_nothing_queued_keeps_its_next_time_and_failures(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/1", 1, 0.5)], NOW)
        (lease,), _ = lease_all(f, NOW)
        f.release([Release(lease, NOW + 5, failures=1)])
        assert f.host_states(["a.com"], NOW)["a.com"] == HostState(0, HostStatus.IDLE, 1, None)
        f.add([QueuedURL("http://a.com/2", 1, 0.5)], NOW + 1)
        assert lease_all(f, NOW + 1) == ([], NOW + 5)
        (lease,), _ = lease_all(f, NOW + 5)
        f.release([Release(lease, NOW + 600, requeue=True, failures=2, park_reason=FAILING)])
        assert f.resume("a.com", NOW + 6)  # parked: it comes back now, its failures forgotten
        assert f.host_states(["a.com"], NOW + 6)["a.com"] == HostState(1, HostStatus.READY, 0, NOW + 6)

    def test_host_states(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://{h}.com/{i}", 1, 0.5) for h in "abc" for i in range(2)], NOW)
        (lease,), _ = lease_all(f, NOW, max_hosts=1)
        assert lease.host == "a.com"  # equal times: hosts in name order
        f.pause("c.com")
        assert f.host_states(["a.com", "b.com", "c.com", "d.com"], NOW) == {
            "a.com": HostState(1, HostStatus.LEASED, 0, None),
            "b.com": HostState(2, HostStatus.READY, 0, NOW),
            "c.com": HostState(2, HostStatus.PARKED, 0, None, PAUSED),
            "d.com": HostState(0, HostStatus.IDLE, 0, None)}
        f.release([Release(lease, NOW + 5, failures=2)])
        f.pause("d.com", GIVEN_UP)
        assert f.host_states(["a.com", "d.com"], NOW) == {
            "a.com": HostState(1, HostStatus.WAITING, 2, NOW + 5),
            "d.com": HostState(0, HostStatus.PARKED, 0, None, GIVEN_UP)}
        assert f.host_states(["d.com"], NOW)["d.com"].label == "unreachable: dns"

    def test_boosted_hosts_go_first_among_those_due_and_never_early(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://{h}.com/{i}", 1, 0.9 - i / 100) for h in "abcdef"
               for i in range(2)], NOW)
        f.hold(["f.com"], NOW + 50)  # f.com may not be fetched before NOW + 50
        f.boost({"e.com": 0.9, "c.com": 0.5, "f.com": 1.0})
        leases, _ = lease_all(f, NOW, max_hosts=2)
        # four hosts due compete for two slots: the boosted ones win, the URLs keep their
        # order within each host (the best first)
        assert [(lease.host, lease.url) for lease in leases] == [
            ("e.com", "http://e.com/0"), ("c.com", "http://c.com/0")]
        f.release([Release(lease, NOW + 10) for lease in leases])
        leases, _ = lease_all(f, NOW + 1, max_hosts=2)
        assert [lease.host for lease in leases] == ["a.com", "b.com"]  # no boost: earliest
        f.release([Release(lease, NOW + 10) for lease in leases])
        leases, _ = lease_all(f, NOW + 2, max_hosts=2)
        assert [lease.host for lease in leases] == ["d.com"]  # f.com, boosted, is not due
        leases, _ = lease_all(f, NOW + 10, max_hosts=1)
        assert [lease.host for lease in leases] == ["e.com"]  # at equal times, the boost
        f.boost({"e.com": 0.0})
        assert [lease.host for lease in lease_all(f, NOW + 11, max_hosts=1)[0]] == ["c.com"]

    def test_warm_hosts_go_first_among_those_due_until_their_session_ends(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://{h}.com/{i}", 1, 0.9 - i / 100) for h in "abcdef"
               for i in range(3)], NOW)
        f.boost({"e.com": 0.9})
        warm = {"warm_hosts": 4, "warm_seconds": 10.0}
        leases, _ = lease_all(f, NOW, max_hosts=2, **warm)
        assert [lease.host for lease in leases] == ["e.com", "a.com"]  # none warm yet
        f.release([Release(lease, NOW + 1) for lease in leases])
        # b, c, d and f have waited longer, but e and a are warm (boost or not)
        leases, _ = lease_all(f, NOW + 1, max_hosts=2, **warm)
        assert [lease.host for lease in leases] == ["e.com", "a.com"]
        f.release([Release(lease, NOW + 2) for lease in leases])
        leases, _ = lease_all(f, NOW + 1.5, max_hosts=2, **warm)
        assert [lease.host for lease in leases] == ["b.com", "c.com"]  # warm, but not due
        f.release([Release(lease, NOW + 20) for lease in leases])
        # e's and a's sessions began at NOW: at NOW + 10 they give way (e is still boosted)
        leases, _ = lease_all(f, NOW + 10, max_hosts=2, **warm)
        assert [lease.host for lease in leases] == ["e.com", "d.com"]
        f.release([Release(lease, NOW + 11) for lease in leases])
        # without warm hosts, d (warm, due) waits behind f and a, due earlier (e is done)
        assert [lease.host for lease in lease_all(f, NOW + 11, max_hosts=2)[0]] == [
            "f.com", "a.com"]

    def test_only_the_hosts_leased_last_stay_warm(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://{h}.com/{i}", 1, 0.5) for h in "abcdef" for i in range(2)],
              NOW)
        warm = {"warm_hosts": 2, "warm_seconds": 60.0}
        for expected, at in (("a.com", NOW), ("b.com", NOW + 0.1), ("c.com", NOW + 0.2)):
            leases, _ = lease_all(f, at, max_hosts=1, **warm)
            assert [lease.host for lease in leases] == [expected]
            f.release([Release(lease, NOW + 1) for lease in leases])
        # a, b and c are due again and d, e, f waited longer: of the warm, a left first
        leases, _ = lease_all(f, NOW + 1, max_hosts=1, **warm)
        assert [lease.host for lease in leases] == ["b.com"]

    def test_a_single_free_slot_still_chooses_among_a_batch_worth_of_hosts(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        for i, h in enumerate("abcdef"):
            f.add([QueuedURL(f"http://{h}.com/", 1, 0.5)], NOW + i)
        f.boost({"f.com": 0.7})
        # one slot left (max_leased 1), batches of 2: the 8 earliest hosts are candidates
        leases, _ = lease_all(f, NOW + 10, max_hosts=2, max_leased=1)
        assert [lease.host for lease in leases] == ["f.com"]

    def test_a_lease_takes_several_urls_while_the_batch_has_room(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://{h}.com/{i}", 1, 0.9 - i / 100) for h in "ab" for i in range(5)]
              + [QueuedURL("http://c.com/", 1, 0.5)], NOW)
        f.hold(["c.com"], NOW + 10)
        leases, _ = lease_all(f, NOW, max_hosts=5, per_lease=3)
        # two hosts due, batches of 5 URLs: 2 URLs each (not 3), the best first
        assert [lease.url for lease in leases] == [
            "http://a.com/0", "http://a.com/1", "http://b.com/0", "http://b.com/1"]
        assert len({(lease.token, lease.not_before) for lease in leases[:2]}) == 1
        assert f.stats(NOW)[0].urls_queued == 7 and f.stats(NOW)[0].hosts_leased == 2
        f.release([Release(lease, NOW + 10) for lease in leases])
        leases, _ = lease_all(f, NOW + 10, max_hosts=3, per_lease=3)
        assert [lease.url for lease in leases] == [  # three hosts due for 3 URLs: one each
            "http://a.com/2", "http://b.com/2", "http://c.com/"]
        f.release([Release(lease, NOW + 20) for lease in leases])
        leases, _ = lease_all(f, NOW + 20, max_hosts=50, per_lease=3)
        assert sorted(lease.url for lease in leases) == [  # what is left, up to 3 URLs each
            "http://a.com/3", "http://a.com/4", "http://b.com/3", "http://b.com/4"]

    def test_an_expired_lease_returns_every_url_it_held(self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://a.com/{i}", 1, 0.9 - i / 100) for i in range(4)], NOW)
        first, _ = lease_all(f, NOW, lease=10, per_lease=3)
        assert [lease.url for lease in first] == [f"http://a.com/{i}" for i in range(3)]
        assert f.renew(first, NOW + 5, 10) == [0, 0, 0]
        again, _ = lease_all(f, NOW + 16, lease=10, per_lease=5)  # it ran out at NOW + 15
        assert [lease.url for lease in again] == [f"http://a.com/{i}" for i in range(4)]
        assert f.renew(first, NOW + 16, 10) == [None, None, None]
        assert f.release([Release(lease, NOW + 100) for lease in first]) == 0  # stale
        assert f.stats(NOW + 16)[0].urls_queued == 0

    def test_a_lease_ends_with_its_last_url_and_requeues_those_not_fetched(
            self, make: MakeFrontier) -> None:
        f = make(shards=1)
        f.add([QueuedURL(f"http://a.com/{i}", 1, 0.9 - i / 100) for i in range(5)], NOW)
        leases, _ = lease_all(f, NOW, per_lease=4)
        assert [lease.url for lease in leases] == [f"http://a.com/{i}" for i in range(4)]
        assert f.release([Release(leases[0], NOW + 5)]) == 0  # fetched; the others go on
        assert f.host_states(["a.com"], NOW)["a.com"].status == HostStatus.LEASED
        # /1 fetched, /2 to try again behind the others, /3 not fetched: the lease ends
        assert f.release([Release(leases[1], NOW + 5), Release(leases[2], NOW + 5, requeue=True,
                                                               behind=True),
                          Release(leases[3], NOW + 5, requeue=True)]) == 1
        assert f.stats(NOW)[0].urls_queued == 3 and lease_all(f, NOW + 4.9)[0] == []
        again, _ = lease_all(f, NOW + 5, per_lease=4)
        assert [lease.url for lease in again] == ["http://a.com/3", "http://a.com/4",
                                                  "http://a.com/2"]
        # a lease that ran out after some of its URLs were released returns only the others
        assert f.release([Release(again[0], NOW + 6)]) == 0
        back, _ = lease_all(f, NOW + 200, per_lease=4)
        assert [lease.url for lease in back] == ["http://a.com/4", "http://a.com/2"]

    def test_a_lease_is_asked_to_yield_to_a_url_well_ahead_of_one_it_holds(
            self, make: MakeFrontier) -> None:
        """A URL queued while its host is leased, whose queue value is lower than the worst
        the lease holds by more than YIELD_MARGIN, asks that lease (its token) to end early;
        one merely as good, one already queued, or one of another host does not; the ask ends
        with the lease, and a later lease of the host is not asked until asked again."""
        f = make(shards=1)
        f.add([QueuedURL(f"http://a.com/{i}", 2, 0.30) for i in range(3)]
              + [QueuedURL("http://b.com/", 1, 0.3)], NOW)
        leases, _ = lease_all(f, NOW, per_lease=3)
        a = [lease for lease in leases if lease.host == "a.com"]
        b = [lease for lease in leases if lease.host == "b.com"]
        assert len(a) == 3 and f.yielding([a[0], b[0]]) == set()
        f.add([QueuedURL("http://a.com/same", 2, 0.30 + YIELD_MARGIN / 2),  # not enough ahead
               QueuedURL("http://c.com/", 1, 1.0)], NOW + 1)  # another host
        assert f.yielding([a[0], b[0]]) == set()
        f.add([QueuedURL("http://a.com/new", 1, 0.45)], NOW + 2)  # 0.15 ahead, less 2 s aged
        assert f.yielding([a[0], b[0]]) == {"a.com"}
        assert f.yielding([a[1]]) == {"a.com"}  # any lease of the host under its token
        # the first URL fetched, the others not asked: they go back, the ask ends
        assert f.release([Release(a[0], NOW + 3)]
                         + [Release(lease, NOW + 3, requeue=True) for lease in a[1:]]) == 1
        again, _ = lease_all(f, NOW + 3, per_lease=3)  # alone: well ahead of the others
        assert [lease.url for lease in again if lease.host == "a.com"] == ["http://a.com/new"]
        assert f.yielding(again) == set()
        f.add([QueuedURL("http://a.com/2", 2, 0.9)], NOW + 4)  # queued already: not new
        assert f.yielding(again) == set()

    def test_a_url_well_ahead_of_its_hosts_others_is_leased_alone(
            self, make: MakeFrontier) -> None:
        """A lease of several URLs takes none whose queue value is above its best one's by
        more than YIELD_MARGIN: a new URL ahead of re-crawls goes alone; the URLs left keep
        their place."""
        f = make(shards=1)
        f.add([QueuedURL("http://a.com/hub", 0, 0.45)]
              + [QueuedURL(f"http://a.com/{i}", 1, 0.30 - i / 1000) for i in range(4)], NOW)
        alone, _ = lease_all(f, NOW, per_lease=4)
        assert [lease.url for lease in alone] == ["http://a.com/hub"]
        assert f.stats(NOW)[0].urls_queued == 4
        assert f.release([Release(alone[0], NOW + 1)]) == 1
        rest, _ = lease_all(f, NOW + 1, per_lease=4)
        assert [lease.url for lease in rest] == [f"http://a.com/{i}" for i in range(4)]

    def test_a_dispatch_asked_again_by_its_call_gives_the_same_leases(
            self, make: MakeFrontier) -> None:
        """A dispatch whose reply was lost (a failover) is asked again by the same call: each
        shard it had leased gives the same leases again, and leases nothing more; a new call
        leases as usual."""
        f = make(shards=2)
        f.add([QueuedURL(f"http://{h}.com/{i}", 1, 0.5) for h in "abcd" for i in range(2)], NOW)

        def dispatch(call: str, now: float) -> list[Lease]:
            leases, _ = f.dispatch(range(f.shards), now, max_hosts=10, lease_seconds=60,
                                   max_leased=100, call=call)
            return [lease for batch in leases.values() for lease in batch]

        first = dispatch("one", NOW)
        assert sorted(lease.host for lease in first) == ["a.com", "b.com", "c.com", "d.com"]
        assert dispatch("one", NOW + 1) == first
        assert f.release([Release(lease, NOW + 2) for lease in first]) == 4
        assert dispatch("two", NOW + 1) == []  # each host waits for its next time
        second = dispatch("three", NOW + 2)
        assert {lease.url for lease in second}.isdisjoint({lease.url for lease in first})
        assert len(second) == 4 and dispatch("three", NOW + 2) == second
