"""declared canonical URL and noindex flag on URL rows

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.add_column(sa.Column('canonical_url', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('noindex', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_column('noindex')
        batch_op.drop_column('canonical_url')
