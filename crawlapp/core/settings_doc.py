"""docs/settings.md, generated from the Settings fields: `python -m crawlapp.core.settings_doc`."""

from __future__ import annotations

import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from crawlapp.core.settings import Settings, load_settings

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
HEADER = """# Settings

Every setting comes from the environment; a bad value stops any command with one line
naming the variable (exit code 2). This page is generated from `crawlapp/core/settings.py`:
change a setting there, then run `make docs`.

| variable | default | meaning |
|---|---|---|
"""


def _default(value: Any) -> str:
    if value is None or value == ():
        return "unset"
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"


def render() -> str:
    """The whole settings reference as Markdown."""
    defaults = load_settings({})
    rows = []
    for f in fields(Settings):
        meta = f.metadata
        default = meta["doc_default"] or _default(getattr(defaults, f.name))
        rows.append(f"| `{meta['env']}` | {default} | {meta['meaning']} |\n")
    return HEADER + "".join(rows)


def write(path: Path, text: str, argv: list[str]) -> int:
    """Write a generated page, or with --check exit 1 when it differs from `text`."""
    if "--check" in argv:
        if not path.exists() or path.read_text() != text:
            print(f"{path} is out of date: run `make docs`", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    return 0


def main(argv: list[str]) -> int:
    """Write docs/settings.md, or with --check exit 1 when it differs from the settings."""
    return write(DOC_PATH, render(), argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
