"""the fetch history (table fetches): one row per kept fetch, what `crawlctl export warc`
writes; filled from the URL rows' last stored fetch, without the headers nobody kept then

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

CHUNK = 1000


def upgrade() -> None:
    fetches = op.create_table(
        'fetches',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), primary_key=True,
                  autoincrement=True),
        sa.Column('url_hash', sa.String(32), nullable=False),
        sa.Column('url', sa.Text(), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('fetched_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('http_status', sa.SmallInteger(), nullable=False),
        sa.Column('ip_address', sa.String(45), nullable=True),
        sa.Column('request_headers', sa.Text(), nullable=True),
        sa.Column('response_headers', sa.Text(), nullable=True),
        sa.Column('storage_key', sa.String(128), nullable=True),
        sa.Column('payload_digest', sa.String(64), nullable=True),
        sa.Column('not_modified', sa.Boolean(), nullable=False),
        sa.Column('robots', sa.Boolean(), nullable=False),
        sa.UniqueConstraint('url_hash', 'fetched_at', name='uq_fetches_url_hash_fetched_at'),
    )
    op.create_index('ix_fetches_host', 'fetches', ['host'])
    _backfill(fetches)


def _backfill(fetches: sa.Table) -> None:
    """Each URL row's stored body, as the one fetch known of it: a 304's row names the body
    of the 200 before it; the response headers are the ones the row kept."""
    when = sa.DateTime(timezone=True)
    urls = sa.table('urls', *(sa.column(name) for name in (
        'id', 'url_hash', 'url', 'host', 'http_status', 'content_type', 'etag',
        'last_modified', 'storage_key', 'raw_storage_key')),
        sa.column('last_fetched_at', when), sa.column('discovered_at', when),
        sa.column('rendered', sa.Boolean()))
    bind = op.get_bind()
    last_id = 0
    while True:
        rows = bind.execute(sa.select(urls).where(
            urls.c.id > last_id, urls.c.http_status.is_not(None),
            sa.or_(sa.and_(sa.not_(urls.c.rendered), urls.c.storage_key.is_not(None)),
                   urls.c.raw_storage_key.is_not(None))).order_by(urls.c.id).limit(CHUNK)).all()
        if not rows:
            return
        last_id = rows[-1].id
        op.bulk_insert(fetches, [{
            'url_hash': row.url_hash, 'url': row.url, 'host': row.host,
            'fetched_at': row.last_fetched_at or row.discovered_at,
            'http_status': 200 if row.http_status == 304 else row.http_status,
            'response_headers': '\r\n'.join(f'{name}: {value}' for name, value in (
                ('Content-Type', row.content_type), ('ETag', row.etag),
                ('Last-Modified', row.last_modified)) if value),
            'storage_key': row.raw_storage_key if row.rendered else row.storage_key,
            'not_modified': False, 'robots': False,
        } for row in rows])


def downgrade() -> None:
    op.drop_index('ix_fetches_host', table_name='fetches')
    op.drop_table('fetches')
