"""docs/settings.md is generated from the Settings fields and must not drift from them."""

from __future__ import annotations

from crawlapp.core import settings_doc


def test_settings_doc_is_up_to_date() -> None:
    assert settings_doc.DOC_PATH.read_text() == settings_doc.render(), \
        "docs/settings.md drifted from crawlapp/core/settings.py: run `make docs`"
