"""How the queries go in batches: chunks of keys, a table's rows in id order, and rows
written from one array a column (Postgres) or an executemany (SQLite)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
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


AnySelect = TypeVar("AnySelect", bound=Select[*tuple[Any, ...]])


def of_hashes(session: Session, query: AnySelect, hashes: Sequence[str]) -> AnySelect:
    """`query` on urls kept to the rows of these url_hashes. On Postgres a join on
    unnest(hashes): each one is looked up in its own partition, where an IN list would probe
    every partition with all of them (migration 0010, docs/sizing.md)."""
    if not on_postgres(session):
        return query.where(Url.url_hash.in_(hashes))
    array = bindparam("hashes", list(dict.fromkeys(hashes)), type_=postgresql.ARRAY(String))
    wanted = func.unnest(array).table_valued("v").render_derived()
    return query.join(wanted, Url.url_hash == wanted.c.v)


def insert_many(session: Session, table: Any, columns: dict[str, list[Any]],
                conflict: list[str] | None = None, returning: Any = None) -> Any:
    """INSERT the rows of `columns` (name -> a value a row) that are new (ON CONFLICT DO
    NOTHING on `conflict`), in one statement; the result, RETURNING `returning` if given.
    On Postgres from unnested(columns); on SQLite, with nothing returned, the driver's
    executemany (`executemany`)."""
    stmt: Any = dialect_insert(session, table)
    params: list[dict[str, Any]] | None = None
    if on_postgres(session):
        names = sorted(columns)
        values = unnested({name: table.__table__.c[name].type for name in names}, columns)
        stmt = stmt.from_select(names, select(*(values.c[name] for name in names)))
    elif returning is None:
        return executemany(session, (table, tuple(columns), tuple(conflict or ())), lambda: (
            stmt.values({name: bindparam(name) for name in columns})
            .on_conflict_do_nothing(index_elements=conflict)), columns)
    else:
        params = as_dicts(columns)
    stmt = stmt.on_conflict_do_nothing(index_elements=conflict)
    if returning is not None:
        stmt = stmt.returning(returning)
    return session.connection().execute(stmt, params)


_STATEMENTS: dict[Hashable, tuple[str, list[tuple[str, Any]]]] = {}


def executemany(session: Session, key: Hashable, statement: Callable[[], Any],
                columns: dict[str, list[Any]]) -> Any:
    """Run `statement` (made by the callable, once a process for each `key`) for each row of
    `columns` (a bind parameter's name -> a value a row).

    On SQLite the statement is compiled once and its rows go to the driver's executemany as
    tuples, each column through its type's bind processor (a datetime's text) in one pass:
    SQLAlchemy's executemany builds and processes a dict a row, the larger part of a batch's
    database time. Elsewhere through SQLAlchemy, a dict a row."""
    if on_postgres(session):
        return session.connection().execute(statement(), as_dicts(columns))
    if (known := _STATEMENTS.get(key)) is None:
        dialect = session.get_bind().dialect
        compiled = statement().compile(dialect=dialect)
        known = _STATEMENTS[key] = (compiled.string, [
            (name, compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect))
            for name in compiled.positiontup or ()])
    sql, binds = known
    values = [columns[name] if process is None else list(map(process, columns[name]))
              for name, process in binds]
    return session.connection().exec_driver_sql(sql, list(zip(*values, strict=True)))


def column_arrays(rows: Sequence[tuple[Any, ...]], names: Sequence[str]) -> dict[str, list[Any]]:
    """Rows (named tuples whose fields are `names`) as a list a column: transposed in C,
    no dict a row."""
    if not rows:
        return {name: [] for name in names}
    return dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))


def as_dicts(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The rows of `columns` as SQLAlchemy's executemany takes them: a dict a row."""
    keys = list(columns)
    return [dict(zip(keys, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def unnested(types: dict[str, Any], columns: dict[str, list[Any]]) -> Any:
    """The rows of `columns` (name -> a value a row) as a table of the server's, of the
    columns `types`: one array a column, unnested.

    A statement on it has the same text whatever the number of rows, so neither SQLAlchemy
    nor psycopg builds and parses a list of a placeholder a value, as an executemany does
    (87 against 15-22 us of client CPU a URL row inserted in batches of 200; the arrays go
    in binary: engine._binary_arrays). They are of unsized types: a value too long for its
    column fails the statement, as it would row by row, where a cast to varchar(n) would
    cut it short.
    """
    arrays = [bindparam(f"a_{name}", columns[name],
                        type_=postgresql.ARRAY(String() if isinstance(type_, String) else type_))
              for name, type_ in types.items()]
    return func.unnest(*arrays).table_valued(*types).render_derived()


class HasId(Protocol):
    @property
    def id(self) -> int: ...


Keyed = TypeVar("Keyed", bound=HasId)
Row = TypeVar("Row")
K = TypeVar("K")


def in_key_order(sessions: sessionmaker[Session], read: Callable[[Session, K | None], Iterable[Row]],
                 key: Callable[[Row], K]) -> Iterator[list[Row]]:
    """A table read a page at a time in the order of an index (keyset pagination: each page
    one indexed range read, each in its own short session): `read(session, the last row's
    key)` gives the rows after it (None: from the first), a page of them."""
    last: K | None = None
    while True:
        with sessions() as session:
            rows = list(read(session, last))
        if not rows:
            return
        last = key(rows[-1])
        yield rows


def in_id_order(sessions: sessionmaker[Session],
                read: Callable[[Session, int], Iterable[Keyed]]) -> Iterator[list[Keyed]]:
    """A table read a page at a time in id order: `read(session, last id)` gives the rows
    after that id, a page of them."""
    return in_key_order(sessions, lambda session, after: read(session, after or 0),
                        lambda row: row.id)
