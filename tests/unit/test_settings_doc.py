"""docs/settings.md is generated from the Settings fields and must not drift from them."""

from __future__ import annotations

import inspect
from dataclasses import fields

from crawlapp.core import settings_doc
from crawlapp.core.settings import Settings, load_settings


def test_every_setting_names_the_variable_load_settings_reads() -> None:
    source = inspect.getsource(load_settings)
    for f in fields(Settings):
        assert f.metadata.get("env") and f.metadata.get("meaning"), f.name
        assert f'"{f.metadata["env"]}"' in source, f.name


def test_settings_doc_is_up_to_date() -> None:
    assert settings_doc.DOC_PATH.read_text() == settings_doc.render(), \
        "docs/settings.md drifted from crawlapp/core/settings.py: run `make docs`"
