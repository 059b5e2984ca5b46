"""Migration 0005 on SQLite and Postgres: rows stored under the old canonical form are keyed by
the dedup key of their request URL, with their links and duplicate pointers following."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import mmh3
import pytest
import sqlalchemy as sa

from crawlapp.adapters.db.engine import get_engine, upgrade
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import url_hash

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _old_hash(url: str) -> str:
    """How rows were keyed up to 0004: the hash of the stored canonical URL itself."""
    return mmh3.hash_bytes(url.encode("utf-8")).hex()


OLD = ["http://a.com/x?a=1&b=2",          # unchanged: its key is itself
       "http://127.1/p",                    # numeric IPv4: one server, one spelling now
       "http://2130706433/p",               # the same URL again: keeps its old hash
       "http://b.com/dup"]


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {"CRAWL_DATA_DIR": str(tmp_path)}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("pg_url")
    return load_settings(env)


def test_rows_links_and_pointers_move_to_the_new_key(settings) -> None:  # type: ignore[no-untyped-def]
    upgrade(settings, "0004")
    engine = get_engine(settings)
    hashes = {u: _old_hash(u) for u in OLD}
    with engine.begin() as conn:
        for url in OLD:
            conn.execute(sa.text(
                "INSERT INTO urls (url_hash, url, host, depth, status, priority, discovered_at, "
                "content_dedup, fail_count, noindex, rendered, duplicate_of) VALUES "
                "(:h, :u, :host, 0, 'fetched', 1.0, :now, :dedup, 0, :f, :f, :dup)"),
                {"h": hashes[url], "u": url, "host": url.split("/")[2], "now": NOW, "f": False,
                 "dedup": url.endswith("dup"),
                 "dup": hashes["http://127.1/p"] if url.endswith("dup") else None})
        conn.execute(sa.text("INSERT INTO links (source_hash, target_hash, nofollow) VALUES "
                             "(:s, :t, :f)"),
                     {"s": hashes["http://a.com/x?a=1&b=2"], "t": hashes["http://127.1/p"],
                      "f": False})
    upgrade(settings)
    with engine.connect() as conn:
        rows = {r.url_hash: r for r in conn.execute(sa.text("SELECT url_hash, url, host, "
                                                            "duplicate_of FROM urls"))}
        links = conn.execute(sa.text("SELECT source_hash, target_hash FROM links")).all()
    moved = url_hash("http://127.0.0.1/p")
    assert rows[moved].url == "http://127.0.0.1/p" and rows[moved].host == "127.0.0.1"
    assert rows[hashes["http://a.com/x?a=1&b=2"]].url == "http://a.com/x?a=1&b=2"
    assert rows[hashes["http://2130706433/p"]].url == "http://2130706433/p"  # kept once
    assert rows[hashes["http://b.com/dup"]].duplicate_of == moved
    assert [tuple(link) for link in links] == [(hashes["http://a.com/x?a=1&b=2"], moved)]
    engine.dispose()
