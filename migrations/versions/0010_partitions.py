"""declarative partitioning of the three tables that grow with the crawl (Postgres only; SQLite
keeps its plain tables)

- `urls` by HASH (url_hash), 32 partitions. Every write and every per-URL read names the
  url_hash (add_urls' ON CONFLICT (url_hash), lower_depths, record_fetches, page show), so each
  prunes to one partition and the conflict target stays what it is. A hash of the host would
  keep a host's rows together (hosts, recrawl --host) but force (host, url_hash) into every
  unique key and conflict target, and the hot path knows the URL, not always its row's host;
  a host query probes the host index of each partition instead (32 index probes).
  The primary key becomes (id, url_hash): it must hold the partition key; ids still come from
  urls_id_seq, so they stay unique and ordered, and `id > last_id ORDER BY id` (rebuild,
  verify) is a merge of the partitions' primary key indexes. The status index becomes
  (status, id): the rebuild scan (status = 'queued', keyset by id) reads it in order.
- `links` by HASH (source_hash), 32 partitions: the primary key holds it already, and the link
  stage and page show read out of a source. Inbound links probe each partition's target index.
- `fetches` by RANGE (fetched_at), a month a partition (UTC), plus a DEFAULT partition: a fetch
  of a month nobody made a partition for lands there and is never refused. fetches_add_month()
  makes a month's partition and moves that month's rows out of the default (under a lock, so
  no row is lost or refused); this migration calls it for every month of the history and the
  current and next months, the beat task `crawl.partitions` every 6 hours for the current and next
  month. The primary key becomes (id, fetched_at); the host index (host, id), the export's
  keyset per host. Old months can be detached and archived whole.

32 hash partitions: at ten billion URLs a partition holds ~300 M rows (~100 GB with its
indexes), small enough to vacuum and rebuild one at a time; more would add planning time and
index probes to every query that is not by url_hash. One partition can later be split in two
(modulus 64, remainders r and r + 32) without touching the others.

Each table is converted in place: the old one renamed, the partitioned one created like it
(columns, defaults, the same id sequence), the rows copied in one INSERT ... SELECT, the old one
dropped, then keys and indexes built on the full table. The downgrade does the reverse.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-22
"""

from collections.abc import Sequence
from dataclasses import dataclass

from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

HASH_PARTITIONS = 32


@dataclass(frozen=True)
class _Shape:
    """A table's keys and indexes in one of its two forms (name, DDL after ON/ADD)."""

    constraints: Sequence[tuple[str, str]]
    indexes: Sequence[tuple[str, str]]


_PARTITIONED = {
    'urls': _Shape([('urls_pkey', 'PRIMARY KEY (id, url_hash)'),
                    ('urls_url_hash_key', 'UNIQUE (url_hash)')],
                   [('ix_urls_host', '(host)'), ('ix_urls_status_id', '(status, id)'),
                    ('ix_urls_content_hash', '(content_hash)'),
                    ('ix_urls_duplicate_of', '(duplicate_of)')]),
    'links': _Shape([('links_pkey', 'PRIMARY KEY (source_hash, target_hash)')],
                    [('ix_links_target_hash', '(target_hash)')]),
    'fetches': _Shape([('fetches_pkey', 'PRIMARY KEY (id, fetched_at)'),
                       ('uq_fetches_url_hash_fetched_at', 'UNIQUE (url_hash, fetched_at)')],
                      [('ix_fetches_host_id', '(host, id)')]),
}
_PLAIN = {
    'urls': _Shape([('urls_pkey', 'PRIMARY KEY (id)'), ('urls_url_hash_key', 'UNIQUE (url_hash)')],
                   [('ix_urls_host', '(host)'), ('ix_urls_status', '(status)'),
                    ('ix_urls_content_hash', '(content_hash)'),
                    ('ix_urls_duplicate_of', '(duplicate_of)')]),
    'links': _PARTITIONED['links'],
    'fetches': _Shape([('fetches_pkey', 'PRIMARY KEY (id)'),
                       ('uq_fetches_url_hash_fetched_at', 'UNIQUE (url_hash, fetched_at)')],
                      [('ix_fetches_host', '(host)')]),
}
_KEYS = {'urls': 'HASH (url_hash)', 'links': 'HASH (source_hash)', 'fetches': 'RANGE (fetched_at)'}
_SEQUENCES = {'urls': 'urls_id_seq', 'fetches': 'fetches_id_seq'}

# A month's partition of fetches, its rows moved out of the default one. The default is locked
# first: a concurrent insert of that month waits, then lands in the new partition.
ADD_MONTH = """
CREATE OR REPLACE FUNCTION fetches_add_month(moment timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    first timestamp := date_trunc('month', moment AT TIME ZONE 'UTC');
    lo timestamptz := first AT TIME ZONE 'UTC';
    hi timestamptz := (first + interval '1 month') AT TIME ZONE 'UTC';
    name text := 'fetches_' || to_char(first, 'YYYY_MM');
BEGIN
    IF to_regclass(name) IS NOT NULL THEN
        RETURN name;
    END IF;
    LOCK TABLE fetches_default IN EXCLUSIVE MODE;
    EXECUTE format('CREATE TABLE %I (LIKE fetches INCLUDING DEFAULTS)', name);
    EXECUTE format('INSERT INTO %I SELECT * FROM fetches_default '
                   'WHERE fetched_at >= %L AND fetched_at < %L', name, lo, hi);
    EXECUTE format('DELETE FROM fetches_default WHERE fetched_at >= %L AND fetched_at < %L',
                   lo, hi);
    EXECUTE format('ALTER TABLE fetches ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                   name, lo, hi);
    RETURN name;
END $$
"""


def _convert(table: str, partitioned: bool) -> None:
    """Rebuild `table` in the other form, rows, ids and sequence kept."""
    old = f'{table}_old'
    op.execute(f'ALTER TABLE {table} RENAME TO {old}')
    for name, _ in (_PLAIN if partitioned else _PARTITIONED)[table].indexes:
        op.execute(f'DROP INDEX {name}')
    for name, _ in (_PLAIN if partitioned else _PARTITIONED)[table].constraints:
        op.execute(f'ALTER TABLE {old} DROP CONSTRAINT {name}')
    by = f' PARTITION BY {_KEYS[table]}' if partitioned else ''
    op.execute(f'CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS){by}')
    if partitioned and table == 'fetches':
        op.execute('CREATE TABLE fetches_default PARTITION OF fetches DEFAULT')
        op.execute(ADD_MONTH)
        op.execute("SELECT fetches_add_month(m) FROM (SELECT DISTINCT date_trunc('month', "
                   "fetched_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS m FROM fetches_old "
                   "UNION SELECT now() UNION SELECT now() + interval '1 month') AS months")
    elif partitioned:
        for i in range(HASH_PARTITIONS):
            op.execute(f'CREATE TABLE {table}_p{i:02d} PARTITION OF {table} '
                       f'FOR VALUES WITH (MODULUS {HASH_PARTITIONS}, REMAINDER {i})')
    op.execute(f'INSERT INTO {table} SELECT * FROM {old}')
    if table in _SEQUENCES:
        op.execute(f'ALTER SEQUENCE {_SEQUENCES[table]} OWNED BY {table}.id')
    op.execute(f'DROP TABLE {old}')
    shape = (_PARTITIONED if partitioned else _PLAIN)[table]
    for name, ddl in shape.constraints:
        op.execute(f'ALTER TABLE {table} ADD CONSTRAINT {name} {ddl}')
    for name, columns in shape.indexes:
        op.execute(f'CREATE INDEX {name} ON {table} {columns}')
    op.execute(f'ANALYZE {table}')


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table in _KEYS:
        _convert(table, partitioned=True)


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table in _KEYS:
        _convert(table, partitioned=False)
    op.execute('DROP FUNCTION fetches_add_month(timestamptz)')
