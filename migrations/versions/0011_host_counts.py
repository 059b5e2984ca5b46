"""URL rows per host and status kept by triggers on `urls` (`crawlctl hosts` and the rebuild's
per-host counts read them instead of scanning urls), filled from the rows there are

- `host_counts` (host, status, n): the folded totals.
- `host_count_deltas` (host, status, n): on Postgres, what each statement on urls changed,
  appended by a statement-level trigger (its transition tables, net per host and status).
  Appending takes no lock a concurrent writer waits for: an upsert into host_counts from
  every transaction would hold the row of a host every worker finds links to (a popular
  host) until its commit, and two transactions writing several statements each could lock
  two hosts in opposite orders. host_counts_fold() moves the deltas into host_counts (the
  beat task `crawl.host_counts`, every minute); a reader sums both, so a count is exact
  whenever the fold ran last.
- On SQLite (one writer at a time) row-level triggers update host_counts directly and
  host_count_deltas stays empty.

Rows are counted, whatever changes them: the stages' batches, takedowns, the denylist,
verify's repairs, a DELETE by hand. TRUNCATE urls does not reach the counters.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

# Net changes of one statement per host and status (its transition tables old_rows, new_rows).
NOTE = """
CREATE OR REPLACE FUNCTION host_counts_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO host_count_deltas (host, status, n)
        SELECT host, status, count(*) FROM new_rows GROUP BY host, status;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO host_count_deltas (host, status, n)
        SELECT host, status, -count(*) FROM old_rows GROUP BY host, status;
    ELSE
        INSERT INTO host_count_deltas (host, status, n)
        SELECT host, status, sum(n) FROM (SELECT host, status, 1 AS n FROM new_rows
                                          UNION ALL SELECT host, status, -1 FROM old_rows) AS c
        GROUP BY host, status HAVING sum(n) <> 0;
    END IF;
    RETURN NULL;
END $$
"""
# The deltas committed so far into host_counts, in host order; one fold at a time. Returns how
# many (host, status) counts changed.
FOLD = """
CREATE OR REPLACE FUNCTION host_counts_fold() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('host_counts_fold'));
    WITH moved AS (DELETE FROM host_count_deltas RETURNING host, status, n),
         added AS (INSERT INTO host_counts AS c (host, status, n)
                   SELECT host, status, sum(n) FROM moved GROUP BY host, status
                   ORDER BY host, status
                   ON CONFLICT (host, status) DO UPDATE SET n = c.n + excluded.n
                   RETURNING 1)
    SELECT count(*) INTO folded FROM added;
    RETURN folded;
END $$
"""
_PG_TRIGGERS = {'insert': 'NEW TABLE AS new_rows', 'update': 'OLD TABLE AS old_rows NEW TABLE AS '
                'new_rows', 'delete': 'OLD TABLE AS old_rows'}

_ADD = "INSERT INTO host_counts (host, status, n) VALUES (NEW.host, NEW.status, 1) " \
       "ON CONFLICT (host, status) DO UPDATE SET n = n + 1;"
_TAKE = "UPDATE host_counts SET n = n - 1 WHERE host = OLD.host AND status = OLD.status;"
_SQLITE_TRIGGERS = {
    'insert': f"AFTER INSERT ON urls BEGIN {_ADD} END",
    'update': "AFTER UPDATE OF host, status ON urls WHEN OLD.host IS NOT NEW.host OR "
              f"OLD.status IS NOT NEW.status BEGIN {_TAKE} {_ADD} END",
    'delete': f"AFTER DELETE ON urls BEGIN {_TAKE} END",
}


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == 'postgresql'
    op.create_table('host_counts',
                    sa.Column('host', sa.String(255), primary_key=True),
                    sa.Column('status', sa.String(16), primary_key=True),
                    sa.Column('n', sa.BigInteger(), nullable=False))
    op.create_table('host_count_deltas',
                    sa.Column('host', sa.String(255), nullable=False),
                    sa.Column('status', sa.String(16), nullable=False),
                    sa.Column('n', sa.BigInteger(), nullable=False))
    if postgres:
        # No write to urls between the count below and the triggers (reads go on).
        op.execute('LOCK TABLE urls IN SHARE ROW EXCLUSIVE MODE')
        op.execute(NOTE)
        op.execute(FOLD)
        for event, tables in _PG_TRIGGERS.items():
            op.execute(f'CREATE TRIGGER host_counts_{event} AFTER {event.upper()} ON urls '
                       f'REFERENCING {tables} FOR EACH STATEMENT '
                       'EXECUTE FUNCTION host_counts_note()')
    else:
        for event, body in _SQLITE_TRIGGERS.items():
            op.execute(f'CREATE TRIGGER host_counts_{event} {body}')
    op.execute('INSERT INTO host_counts (host, status, n) '
               'SELECT host, status, count(*) FROM urls GROUP BY host, status')


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == 'postgresql'
    for event in _PG_TRIGGERS:
        op.execute(f'DROP TRIGGER host_counts_{event}' + (' ON urls' if postgres else ''))
    if postgres:
        op.execute('DROP FUNCTION host_counts_fold()')
        op.execute('DROP FUNCTION host_counts_note()')
    op.drop_table('host_count_deltas')
    op.drop_table('host_counts')
