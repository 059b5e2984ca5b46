"""host authority: the host graph (host_links), each host's authority (host_authority), and a
URL's authority and link context beside its combined priority (crawlapp/core/priority.py)

Rows from before keep their priority; their link context is that priority (it was the link
context alone until now).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'host_links',
        sa.Column('source_host', sa.String(255), primary_key=True),
        sa.Column('target_host', sa.String(255), primary_key=True),
    )
    op.create_table(
        'host_authority',
        sa.Column('host', sa.String(255), primary_key=True),
        sa.Column('score', sa.Float(), nullable=False),
        sa.Column('computed_at', sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table('urls') as batch:
        batch.add_column(sa.Column('authority', sa.Float(), nullable=True))
        batch.add_column(sa.Column('link_context', sa.Float(), nullable=True))
    op.execute('UPDATE urls SET link_context = priority')


def downgrade() -> None:
    with op.batch_alter_table('urls') as batch:
        batch.drop_column('link_context')
        batch.drop_column('authority')
    op.drop_table('host_authority')
    op.drop_table('host_links')
