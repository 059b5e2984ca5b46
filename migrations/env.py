"""Alembic environment: the URL comes from the caller (crawlctl db upgrade) or the settings."""

from alembic import context
from sqlalchemy import create_engine

from crawlapp.adapters.db.engine import normalize_url
from crawlapp.adapters.db.models import Base
from crawlapp.core.settings import get_settings

config = context.config
url = config.get_main_option("sqlalchemy.url") or normalize_url(get_settings().database_url)


def run_offline() -> None:
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True,
                      render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = create_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata,
                          render_as_batch=url.startswith("sqlite"))
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
