"""the stored batches whose links are not admitted yet (links_unread): a batch's pages with
links, noted by the store stage and dropped in the links stage's commit, so that a links
message the broker lost (a Redis that lost its data, a batch taken for lost after its store)
has its pages fetched again rather than their links lost.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'links_unread',
        sa.Column('batch_id', sa.String(length=64), nullable=False),
        sa.Column('url_hashes', sa.Text(), nullable=False),
        sa.Column('stored_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('batch_id'))


def downgrade() -> None:
    op.drop_table('links_unread')
