"""How the queries go in batches: chunks of keys, a table's rows in id order, and rows
written from one array a column (Postgres) or an executemany (SQLite)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import Select, String, bindparam, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from crawlapp.adapters.db.models import Url

# Keys in one IN list or unnest array: a statement a chunk, however many keys a caller has
# (SQLite allows 999 parameters a statement in old builds).
CHUNK = 500

T = TypeVar("T")


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """`items`, `size` at a time."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


def dialect_insert(session: Session, table: Any) -> postgresql.Insert | sqlite.Insert:
    """INSERT in the dialect of the session, so ON CONFLICT DO NOTHING is available."""
    dialect = session.get_bind().dialect.name
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)


def on_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


AnySelect = TypeVar("AnySelect", bound=Select[Any])


def of_hashes(session: Session, query: AnySelect, hashes: Sequence[str]) -> AnySelect:
    """`query` on urls kept to the rows of these url_hashes. On Postgres a join on
    unnest(hashes): each one is looked up in its own partition, where an IN list would probe
    every partition with all of them (migration 0010, docs/sizing.md)."""
    if not on_postgres(session):
        return query.where(Url.url_hash.in_(hashes))
    array = bindparam("hashes", list(dict.fromkeys(hashes)), type_=postgresql.ARRAY(String))
    wanted = func.unnest(array).table_valued("v").render_derived()
    return query.join(wanted, Url.url_hash == wanted.c.v)


def insert_many(session: Session, table: Any, rows: Sequence[dict[str, Any]],
                conflict: list[str] | None = None, returning: Any = None) -> Any:
    """INSERT rows that are new (ON CONFLICT DO NOTHING on `conflict`), in one statement;
    the result, RETURNING `returning` if given. On Postgres from unnested(rows)."""
    stmt: Any = dialect_insert(session, table)
    params: list[dict[str, Any]] | None = None
    if on_postgres(session):
        keys = sorted({key for row in rows for key in row})
        values = unnested({key: table.__table__.c[key].type for key in keys}, rows)
        stmt = stmt.from_select(keys, select(*(values.c[k] for k in keys)))
    else:
        params = uniform(rows)
    stmt = stmt.on_conflict_do_nothing(index_elements=conflict)
    if returning is not None:
        stmt = stmt.returning(returning)
    return session.connection().execute(stmt, params)


def uniform(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with the same keys each (missing ones None), as executemany needs."""
    keys = {key for row in rows for key in row}
    return [{key: row.get(key) for key in keys} for row in rows]


def unnested(types: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """The rows as a table of the server's (columns `types`, None where a row has no
    value): one array a column, unnested.

    A statement on it has the same text whatever the number of rows, so neither SQLAlchemy
    nor psycopg builds and parses a list of a placeholder a value, as an executemany does
    (87 against 15-22 us of client CPU a URL row inserted in batches of 200; the arrays go
    in binary: engine._binary_arrays). They are of unsized types: a value too long for its
    column fails the statement, as it would row by row, where a cast to varchar(n) would
    cut it short.
    """
    arrays = [bindparam(f"a_{key}", [row.get(key) for row in rows],
                        type_=postgresql.ARRAY(String() if isinstance(type_, String) else type_))
              for key, type_ in types.items()]
    return func.unnest(*arrays).table_valued(*types).render_derived()


class HasId(Protocol):
    @property
    def id(self) -> int: ...


R = TypeVar("R", bound=HasId)


def in_id_order(sessions: sessionmaker[Session], read: Callable[[Session, int], Iterable[R]]
                ) -> Iterator[list[R]]:
    """A table read a page at a time in id order (keyset pagination: each page one indexed
    range read, each in its own short session): `read(session, last id)` gives the rows
    after that id, a page of them."""
    last_id = 0
    while True:
        with sessions() as session:
            rows = list(read(session, last_id))
        if not rows:
            return
        last_id = rows[-1].id
        yield rows
