"""redirect target and hop count on URL rows

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.add_column(sa.Column('redirect_to', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('redirect_hops', sa.SmallInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_column('redirect_hops')
        batch_op.drop_column('redirect_to')
