"""a digest of a page's visible text as last fetched (crawlapp.core.freshness.text_digest): a
new body with the same text is no change for the re-crawl policy. A nullable column, added in
place (no table rewrite).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('urls', sa.Column('text_digest', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column('urls', 'text_digest')  # in place (SQLite 3.35+), as 0014
