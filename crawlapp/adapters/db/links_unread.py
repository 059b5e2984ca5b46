"""The stored batches whose links are not admitted yet (table links_unread, migration 0015).

The store stage notes a batch's pages with links in its transaction (`note`); the links stage
drops the note in the commit that admits them (`read`). A note left behind means the links
stage's message never ran: the broker lost it (a Redis that lost its data, where the broker
lives) or the batch was taken for lost after its store. Its pages are then fetched again
(`refetch`), in full: a conditional GET answered 304 would bring no links.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from crawlapp.adapters.db.batching import chunks, dialect_insert
from crawlapp.adapters.db.models import LinksUnread, Url
from crawlapp.core.records import QueuedURL, Status

REASON = "fetched again: its links were lost on their way to the links stage"


def note(session: Session, batch_id: str, url_hashes: Sequence[str], now: datetime) -> None:
    """Note the batch's pages with links (a batch stored again keeps its first note)."""
    if url_hashes:
        session.execute(dialect_insert(session, LinksUnread).values(
            batch_id=batch_id, url_hashes=" ".join(url_hashes), stored_at=now)
            .on_conflict_do_nothing(index_elements=["batch_id"]))


def read(session: Session, batch_id: str) -> None:
    """The batch's links are admitted with this transaction."""
    session.execute(delete(LinksUnread).where(LinksUnread.batch_id == batch_id))


def refetch(session: Session, batch_ids: Sequence[str] | None = None) -> dict[str, QueuedURL]:
    """Mark the pages of these batches' notes (every note's: None) queued, without the
    validators of a conditional GET and out of the re-crawl schedule, and drop the notes;
    returns the URLs by url_hash, to queue once committed. A page queued already, or taken
    down, is left as it is."""
    query = select(LinksUnread.batch_id, LinksUnread.url_hashes)
    if batch_ids is not None:
        query = query.where(LinksUnread.batch_id.in_(batch_ids))
    notes = session.execute(query).all()
    hashes = sorted({h for _, listed in notes for h in listed.split()})
    out: dict[str, QueuedURL] = {}
    for chunk in chunks(hashes):
        where = (Url.url_hash.in_(chunk), Url.status.not_in((Status.QUEUED, Status.DELETED)))
        out.update((h, QueuedURL(url, depth, priority, hops=hops or 0))
                   for h, url, depth, priority, hops in session.execute(
                       select(Url.url_hash, Url.url, Url.depth, Url.priority, Url.hops)
                       .where(*where)))
        session.execute(update(Url).where(*where).values(
            status=Status.QUEUED, etag=None, last_modified=None, next_crawl_at=None,
            last_error=REASON))
    for chunk in chunks([batch_id for batch_id, _ in notes]):
        session.execute(delete(LinksUnread).where(LinksUnread.batch_id.in_(chunk)))
    return out
