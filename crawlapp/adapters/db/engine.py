"""The SQLAlchemy engine for this process, and Alembic upgrades."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from crawlapp.core.settings import Settings

_ENGINES: dict[tuple[int, str], Engine] = {}
MIGRATIONS_DIR = Path(__file__).resolve().parents[3] / "migrations"
HEAD = "0016"  # the newest migration's revision (a test holds it to Alembic's head)


def normalize_url(url: str) -> str:
    """Use psycopg 3 for Postgres URLs that name no driver."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def _sqlite_pragmas(dbapi_conn: Any, _record: object) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=60000")
    cur.close()


def _binary_arrays(dbapi_connection: Any, _record: object) -> None:
    """psycopg sends a list (an ARRAY parameter, cast in the SQL) in binary: its text form
    quotes each value with regular expressions in Python, half the client's CPU of an
    INSERT from arrays (batching.unnested)."""
    from psycopg.types.array import ListBinaryDumper

    dbapi_connection.adapters.register_dumper(list, ListBinaryDumper)


def get_engine(settings: Settings) -> Engine:
    """One engine per process and URL (a forked worker child builds its own)."""
    url = normalize_url(settings.database_url)
    key = (os.getpid(), url)
    engine = _ENGINES.get(key)
    if engine is None:
        if url.startswith("sqlite"):
            settings.data_dir.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args={"timeout": 60})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True, pool_size=4, max_overflow=4)
            event.listen(engine, "connect", _binary_arrays)
        _ENGINES[key] = engine
    return engine


def has_tables(settings: Settings) -> bool:
    """Whether the database has the crawl's tables (never creates a SQLite file)."""
    url = make_url(normalize_url(settings.database_url))
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
            and not Path(url.database).exists():
        return False
    return inspect(get_engine(settings)).has_table("urls")


def location(settings: Settings) -> str:
    """The database, for people: a SQLite file's path, else its URL without the password."""
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        return url.database or ""
    return url.render_as_string(hide_password=True)


def load_driver(settings: Settings) -> None:
    """Import the driver (DBAPI) of DATABASE_URL without connecting: a prefork worker does so
    before it forks, so that its processes share it."""
    make_url(normalize_url(settings.database_url)).get_dialect().import_dbapi()


def session_factory(settings: Settings) -> sessionmaker[Session]:
    return sessionmaker(get_engine(settings), expire_on_commit=False)


def upgrade(settings: Settings, revision: str = "head") -> None:
    """Run Alembic migrations up to `revision`. A database at HEAD already is left as it is
    without loading Alembic, a third of a second of CPU at every `crawlctl crawl`."""
    if revision == "head" and _revision(settings) == HEAD:
        return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", normalize_url(settings.database_url))
    get_engine(settings)  # creates the data dir for SQLite
    command.upgrade(config, revision)


def _revision(settings: Settings) -> str | None:
    """The database's Alembic revision; None if it has none (or cannot be read: Alembic then
    says why)."""
    try:
        with get_engine(settings).connect() as conn:
            version = conn.scalar(text("SELECT version_num FROM alembic_version"))
    except DBAPIError:
        return None
    return None if version is None else str(version)
