"""an index on urls (next_crawl_at, id) of the rows with a next crawl time: Redis keeps only the
re-crawl schedule's near future, and the beat's drain loads the pages coming due from the
database a window at a time, in keyset pages on it (crawlapp.adapters.db.schedule.due). On
Postgres it is built on every partition of urls.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

SCHEDULED = sa.text('next_crawl_at IS NOT NULL')


def upgrade() -> None:
    op.create_index('ix_urls_next_crawl_at', 'urls', ['next_crawl_at', 'id'],
                    postgresql_where=SCHEDULED, sqlite_where=SCHEDULED)


def downgrade() -> None:
    op.drop_index('ix_urls_next_crawl_at', table_name='urls')
