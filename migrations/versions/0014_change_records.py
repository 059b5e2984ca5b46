"""what a page's visits saw of its changes, for the re-crawl policy (crawlapp.core.freshness):
the packed change record, a digest of its set of links (a hub's links change) and the latest
<lastmod> a sitemap gave for it. Nullable columns, added in place (no table rewrite).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('urls', sa.Column('changes', sa.LargeBinary(), nullable=True))
    op.add_column('urls', sa.Column('links_digest', sa.BigInteger(), nullable=True))
    op.add_column('urls', sa.Column('sitemap_lastmod', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # In place too (SQLite 3.35+): a batch would copy the table and lose its triggers.
    for column in ('sitemap_lastmod', 'links_digest', 'changes'):
        op.drop_column('urls', column)
