"""URL rows hold the request URL (WHATWG) and are keyed by the hash of its dedup key

Until 0004 a row's `url` was the w3lib canonical form and `url_hash` its hash. From 0005 the
row keeps the request URL (the link as a browser resolves it: crawlapp.core.urls.request_url) and
`url_hash` hashes its dedup key (crawlapp.core.urls.dedup_key). A stored canonical form is a valid
URL already, so each row keeps it as its request URL, re-serialized by the WHATWG parser; the
rows whose host or key that changes (IPv4 in numeric forms, IDNA 2003 -> UTS #46 spellings)
get their new hash, host and URL, and their link edges and duplicate pointers follow. A row
whose new hash is another row's already keeps its old one (it stays readable; the crawl goes
on with the other). Downgrade leaves rows as they are: the old code reads them as canonical.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

from crawlapp.core.urls import URLRejected, host_of, request_url, url_hash

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

BATCH = 1000


def _moves(rows: list[sa.Row]) -> list[tuple[str, str, str, str]]:
    """(old hash, new hash, new URL, new host) of each row whose key changes."""
    moves = []
    for row in rows:
        try:
            url = request_url(row.url, max_length=1 << 20)
        except URLRejected:
            continue
        new_hash = url_hash(url)
        if new_hash != row.url_hash or url != row.url:
            moves.append((row.url_hash, new_hash, url, host_of(url)))
    return moves


def _apply(bind: sa.Connection, moves: list[tuple[str, str, str, str]]) -> None:
    urls = sa.table('urls', sa.column('url_hash'), sa.column('url'), sa.column('host'),
                    sa.column('duplicate_of'))
    links = sa.table('links', sa.column('source_hash'), sa.column('target_hash'))
    taken = set(bind.scalars(sa.select(urls.c.url_hash).where(
        urls.c.url_hash.in_([new for old, new, _, _ in moves if new != old]))))
    for old, new, url, host in moves:
        if new != old and new in taken:
            continue
        bind.execute(sa.update(urls).where(urls.c.url_hash == old).values(
            url_hash=new, url=url, host=host))
        if new != old:
            bind.execute(sa.update(urls).where(urls.c.duplicate_of == old).values(
                duplicate_of=new))
            known = links.alias('known')
            for name, other in (('source_hash', 'target_hash'), ('target_hash', 'source_hash')):
                # an edge the new hash has already is kept once
                existing = sa.select(known.c[other]).where(known.c[name] == new)
                bind.execute(sa.delete(links).where(links.c[name] == old,
                                                    links.c[other].in_(existing)))
                bind.execute(sa.update(links).where(links.c[name] == old).values({name: new}))
        taken.add(new)


def upgrade() -> None:
    bind = op.get_bind()
    urls = sa.table('urls', sa.column('id'), sa.column('url_hash'), sa.column('url'))
    last = 0
    while True:
        rows = bind.execute(sa.select(urls.c.id, urls.c.url_hash, urls.c.url)
                            .where(urls.c.id > last).order_by(urls.c.id).limit(BATCH)).all()
        if not rows:
            break
        last = rows[-1].id
        moves = _moves(rows)
        if moves:
            _apply(bind, moves)


def downgrade() -> None:
    pass
