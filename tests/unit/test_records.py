"""The records' wire forms: what a Celery task sends (msgpack) reads back as the same record."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import msgpack

from crawlapp.core.records import Handover, Lease, Link, Page, RobotsAnswer, Status


def over_the_wire(raw: object) -> Any:
    """What the next task gets: kombu's msgpack serializer, both ways."""
    return msgpack.unpackb(msgpack.packb(raw, use_bin_type=True), raw=False)


def test_a_page_round_trips_through_msgpack() -> None:
    page = Page(url="http://a.com/", url_hash="ab" * 16, host="a.com", depth=2,
                status=Status.FETCHED, http_status=200, fetched_at=1.7e9,
                content_type="text/html", content_hash="cd" * 32, content_length=3,
                body_gz=b"\x1f\x8b", redirect_hops=1, simhash=2**64 - 1, title="A",
                links=[Link("http://a.com/1", "One", False, True), Link("http://b.com/")],
                noindex=True, content_dedup=True, duplicate_of="ef" * 16)
    back = Page.from_wire(over_the_wire(page.to_wire()))
    assert back == page
    assert type(back.status) is Status and all(type(link) is Link for link in back.links)


def test_a_robots_record_carries_its_answer() -> None:
    page = Page(url="http://a.com/robots.txt", host="a.com", depth=-1, status=Status.ROBOTS,
                robots=RobotsAnswer("http://a.com", 200, "User-agent: *\nDisallow: /x", 2.5),
                links=[Link("http://a.com/sitemap.xml")])
    back = Page.from_wire(over_the_wire(page.to_wire()))
    assert back == page and type(back.robots) is RobotsAnswer


def test_a_page_written_before_a_field_was_added_still_loads() -> None:
    older = Page(url="http://a.com/", status=Status.FAILED, error="timeout").to_wire()[:-1]
    back = Page.from_wire(older)
    assert (back.url, back.status, back.error, back.robots) == (
        "http://a.com/", Status.FAILED, "timeout", None)


def test_the_wire_form_is_every_field_in_order() -> None:
    assert len(Page().to_wire()) == len(fields(Page))


def test_a_handover_and_a_lease_round_trip() -> None:
    lease = Lease(1, "a.com", "tok.1:1", "http://a.com/", 0, 1.7e9)
    handover = Handover(Page(url="http://a.com/", status=Status.FETCHED, body_gz=b"x",
                             render_reason="shell"), lease, 1.7e9 + 1, 0)
    assert Handover.from_wire(over_the_wire(handover.to_wire())) == handover
    assert Lease.from_wire(over_the_wire(lease.to_wire())) == lease


def test_a_lease_carries_its_off_scope_hops_and_one_sent_before_them_has_none() -> None:
    lease = Lease(1, "b.com", "tok", "http://b.com/", 2, 1.7e9, hops=1)
    assert Lease.from_wire(over_the_wire(lease.to_wire())) == lease
    assert Lease.from_wire(lease.to_wire()[:6]).hops == 0
    page = Page(url="http://b.com/", hops=1)
    assert Page.from_wire(over_the_wire(page.to_wire())).hops == 1
    before_hops = [f.name for f in fields(Page)].index("hops")
    assert Page.from_wire(page.to_wire()[:before_hops]).hops == 0
