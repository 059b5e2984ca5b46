"""the fetch history (table fetches): one row per kept fetch, what `crawlctl export warc`
writes; filled from the URL rows' last stored fetch, without the headers nobody kept then

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


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
    """Each URL row's stored body, as the one fetch known of it (one INSERT ... SELECT): a
    304's row names the body of the 200 before it; the response headers are the ones the
    row kept, "Name: value" lines joined by CRLF."""
    c = sa.table('urls', *(sa.column(name, sa.Text()) for name in (
        'url_hash', 'url', 'host', 'content_type', 'etag', 'last_modified', 'storage_key',
        'raw_storage_key')), sa.column('id', sa.Integer()), sa.column('http_status', sa.Integer()),
        sa.column('last_fetched_at', sa.DateTime(timezone=True)),
        sa.column('discovered_at', sa.DateTime(timezone=True)),
        sa.column('rendered', sa.Boolean())).c
    crlf = sa.literal('\r\n', sa.Text())
    # Each present header as CRLF + line (NULL || text is NULL), then the first CRLF cut.
    lines = [sa.func.coalesce(crlf + sa.literal(f'{name}: ', sa.Text()) + column,
                              sa.literal('', sa.Text()))
             for name, column in (('Content-Type', c.content_type), ('ETag', c.etag),
                                  ('Last-Modified', c.last_modified))]
    op.execute(fetches.insert().from_select(
        ['url_hash', 'url', 'host', 'fetched_at', 'http_status', 'response_headers',
         'storage_key', 'not_modified', 'robots'],
        sa.select(c.url_hash, c.url, c.host, sa.func.coalesce(c.last_fetched_at, c.discovered_at),
                  sa.case((c.http_status == 304, 200), else_=c.http_status),
                  sa.func.substr(lines[0] + lines[1] + lines[2], 3),
                  sa.case((c.rendered, c.raw_storage_key), else_=c.storage_key),
                  sa.false(), sa.false())
        .where(c.http_status.is_not(None),
               sa.or_(sa.and_(sa.not_(c.rendered), c.storage_key.is_not(None)),
                      c.raw_storage_key.is_not(None)))
        .order_by(c.id)))


def downgrade() -> None:
    op.drop_index('ix_fetches_host', table_name='fetches')
    op.drop_table('fetches')
