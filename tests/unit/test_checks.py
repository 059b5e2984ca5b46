"""`url check` and `robots check` answers: every key always there, one answer per line."""

from __future__ import annotations

import json

import pytest

from crawlapp.core.checks import ROBOTS_KEYS, URL_KEYS, policy_of_text, robots_jsonl, url_jsonl

RULES = "User-agent: crawlapp\nDisallow: /x\n"


def test_every_line_gets_one_answer_with_every_key_in_order() -> None:
    lines = ['{"href": "/a?b#c", "base": "http://h/d/e"}', "not json", '{"href": 5}',
             '{"href": "http://[oops/"}', "", '["a"]', '{"href": "mailto:x@y"}']
    answers = [json.loads(a) for a in url_jsonl(lines)]
    assert [tuple(a) for a in answers] == [URL_KEYS] * 6  # the blank line is no input
    assert answers[0] == {"href": "/a?b#c", "base": "http://h/d/e", "fetch": "http://h/a?b",
                               "key": "http://h/a?b=", "host": "h", "domain": "h",
                               "surt": "http://(h,)/a?b", "rejected": None, "error": None}
    assert [a["rejected"] for a in answers] == [None, None, None, "malformed", None,
                                                "scheme_mailto"]
    assert [bool(a["error"]) for a in answers] == [False, True, True, False, True, False]


@pytest.mark.parametrize("prefix", ["", "\ufeff", "\u00ef\u00bb\u00bf", "\u00ef\u00bb", "\u00ef",
                                    "\udcef\udcbb"])
def test_a_byte_order_mark_however_it_came_through_keeps_the_first_group(prefix: str) -> None:
    assert not policy_of_text(prefix + RULES).decide("http://h/x", "crawlapp").allowed


def test_robots_answers_resolve_the_link_first_and_name_group_and_rule() -> None:
    lines = [json.dumps({"robots": "User-agent: *\nDisallow: /*?sort=\nCrawl-delay: 3\n",
                         "url": "http://h/list?sort=price&color=red#top", "agent": "crawlapp"}),
             json.dumps({"robots": RULES, "url": "http://[::1"}),
             json.dumps({"robots": 7, "url": "http://h/"})]
    answers = [json.loads(a) for a in robots_jsonl(lines, "crawlapp/1.0")]
    assert [tuple(a) for a in answers] == [ROBOTS_KEYS] * 3
    assert answers[0] == {"url": "http://h/list?sort=price&color=red#top",
                          "fetch": "http://h/list?sort=price&color=red", "allowed": False,
                          "group": "*", "rule": "Disallow: /*?sort=", "crawl_delay": 3.0,
                          "rejected": None, "error": None}
    assert answers[1]["rejected"] == "malformed" and answers[1]["allowed"] is None
    assert answers[2]["error"] and answers[2]["allowed"] is None


def test_the_commands_answer_and_refuse_bad_usage_in_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from crawlapp.cli import cli

    robots_file = tmp_path / "robots.txt"
    robots_file.write_bytes(b"\xef\xbb" + RULES.encode())  # a partial byte order mark
    env = {"CRAWL_DATA_DIR": str(tmp_path / "var")}
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(cli, list(args), input=stdin, env=env)

    done = run("robots", "check", "http://h/x", "http://h/y", "--robots-file", str(robots_file),
               "--json")
    assert done.exit_code == 0
    assert [a["allowed"] for a in json.loads(done.output)] == [False, True]
    piped = run("url", "check", "--jsonl", "-", stdin='{"href": "../b", "base": "http://h/a/c"}\n')
    assert piped.exit_code == 0 and json.loads(piped.output)["fetch"] == "http://h/b"
    for bad in (("url", "check"), ("url", "check", "x", "--base", "http://[x"),
                ("robots", "check", "http://h/"),
                ("robots", "check", "http://h/", "--robots-file", str(robots_file),
                 "--host", "h"),
                ("url", "check", "--jsonl", str(tmp_path / "missing.jsonl"))):
        result = run(*bad)
        assert result.exit_code == 2, (bad, result.output)
