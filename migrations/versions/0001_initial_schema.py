"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('denylist',
    sa.Column('pattern', sa.String(length=512), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('pattern')
    )
    op.create_table('hosts',
    sa.Column('origin', sa.String(length=300), nullable=False),
    sa.Column('robots_status', sa.SmallInteger(), nullable=True),
    sa.Column('robots_body', sa.Text(), nullable=True),
    sa.Column('robots_fetched_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('crawl_delay', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('origin')
    )
    op.create_table('links',
    sa.Column('source_hash', sa.String(length=32), nullable=False),
    sa.Column('target_hash', sa.String(length=32), nullable=False),
    sa.Column('anchor', sa.Text(), nullable=True),
    sa.Column('nofollow', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('source_hash', 'target_hash')
    )
    with op.batch_alter_table('links', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_links_target_hash'), ['target_hash'], unique=False)

    op.create_table('urls',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('url_hash', sa.String(length=32), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('depth', sa.SmallInteger(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('priority', sa.Float(), nullable=False),
    sa.Column('discovered_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_fetched_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_crawl_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('etag', sa.String(length=512), nullable=True),
    sa.Column('last_modified', sa.String(length=64), nullable=True),
    sa.Column('http_status', sa.SmallInteger(), nullable=True),
    sa.Column('content_type', sa.String(length=255), nullable=True),
    sa.Column('content_length', sa.Integer(), nullable=True),
    sa.Column('content_hash', sa.String(length=64), nullable=True),
    sa.Column('simhash', sa.BigInteger(), nullable=True),
    sa.Column('content_dedup', sa.Boolean(), nullable=False),
    sa.Column('duplicate_of', sa.String(length=32), nullable=True),
    sa.Column('storage_key', sa.String(length=128), nullable=True),
    sa.Column('title', sa.Text(), nullable=True),
    sa.Column('fail_count', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('url_hash')
    )
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_urls_content_hash'), ['content_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_urls_host'), ['host'], unique=False)
        batch_op.create_index(batch_op.f('ix_urls_status'), ['status'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_urls_status'))
        batch_op.drop_index(batch_op.f('ix_urls_host'))
        batch_op.drop_index(batch_op.f('ix_urls_content_hash'))

    op.drop_table('urls')
    with op.batch_alter_table('links', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_links_target_hash'))

    op.drop_table('links')
    op.drop_table('hosts')
    op.drop_table('denylist')
