"""crawl scope: the rules seeds add (scope_rules), and urls.hops, the off-scope links in a row
that led to a URL (restored into the frontier by a rebuild)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'scope_rules',
        sa.Column('kind', sa.String(8), primary_key=True),
        sa.Column('value', sa.String(2048), primary_key=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table('urls') as batch:
        batch.add_column(sa.Column('hops', sa.SmallInteger(), nullable=False,
                                   server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('urls') as batch:
        batch.drop_column('hops')
    op.drop_table('scope_rules')
