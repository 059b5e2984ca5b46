"""an index on urls.duplicate_of: a page that stops being a stored original hands its copies
over (crawlapp.stages.dedup.adopt), which looks them up by it

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_urls_duplicate_of', 'urls', ['duplicate_of'])


def downgrade() -> None:
    op.drop_index('ix_urls_duplicate_of', table_name='urls')
