"""rendered flag, render error and the fetched body's key of rendered pages on URL rows

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rendered', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('render_error', sa.String(32), nullable=True))
        batch_op.add_column(sa.Column('raw_storage_key', sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_column('raw_storage_key')
        batch_op.drop_column('render_error')
        batch_op.drop_column('rendered')
