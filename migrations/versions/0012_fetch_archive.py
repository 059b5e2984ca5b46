"""the fetch history keeps redirects and error answers too: whether the body kept was cut
(CRAWL_ARCHIVE_ANSWER_BYTES), and the protocol and TLS cipher suite of the exchange, for the
WARC export's WARC-Truncated, WARC-Protocol and WARC-Cipher-Suite

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('fetches', schema=None) as batch_op:
        batch_op.add_column(sa.Column('truncated', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('http_version', sa.String(16), nullable=True))
        batch_op.add_column(sa.Column('cipher_suite', sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('fetches', schema=None) as batch_op:
        batch_op.drop_column('cipher_suite')
        batch_op.drop_column('http_version')
        batch_op.drop_column('truncated')
