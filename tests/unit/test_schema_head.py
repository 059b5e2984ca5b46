"""`upgrade` leaves a database at the newest migration as it is without loading Alembic:
engine.HEAD must be Alembic's head, and a database at it is not migrated again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory

from crawlapp.adapters.db.engine import HEAD, MIGRATIONS_DIR

UPGRADE = """
import sys
from crawlapp.adapters.db.engine import upgrade
from crawlapp.core.settings import get_settings
upgrade(get_settings())
print("alembic" in sys.modules)
"""


def test_head_is_the_newest_migration() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(config).get_current_head() == HEAD


def test_a_database_at_head_is_not_migrated_again(tmp_path: Path) -> None:
    env = {**os.environ, "CRAWL_DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)

    def alembic_loaded() -> str:
        return subprocess.run([sys.executable, "-c", UPGRADE], env=env, text=True, check=True,
                              capture_output=True).stdout.strip()

    assert alembic_loaded() == "True"  # a new database: migrated
    assert alembic_loaded() == "False"  # at head: left as it is
