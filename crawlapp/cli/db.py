"""`crawlctl db`: the database schema."""

from __future__ import annotations

import click

from crawlapp.core.settings import get_settings


@click.group()
def db() -> None:
    """Database schema.  Example: crawlctl db upgrade"""


@db.command("upgrade")
def db_upgrade() -> None:
    """Run migrations to the newest schema.  Example: crawlctl db upgrade"""
    from crawlapp.adapters.db.engine import upgrade

    upgrade(get_settings())
    click.echo("database is at the newest schema")
