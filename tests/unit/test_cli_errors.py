"""The error tree and how crawlctl reports it: one line on stderr, exit 2 for bad input,
1 for a server that is down or any other failure (a traceback only with --debug)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from crawlapp.cli import cli
from crawlapp.core.errors import CrawlError, InputError, TransientError
from crawlapp.core.hostpatterns import BadPattern, normalize
from crawlapp.core.settings import SettingsError, load_settings
from crawlapp.core.urls import URLRejected, request_url

Raising = Callable[..., Result]


def test_the_input_errors_are_input_errors_and_still_value_errors() -> None:
    for raise_it, kind in ((lambda: request_url("ftp://x"), URLRejected),
                           (lambda: normalize("*."), BadPattern),
                           (lambda: load_settings({"CRAWL_MAX_DEPTH": "x"}), SettingsError)):
        with pytest.raises(kind) as caught:
            raise_it()
        assert isinstance(caught.value, InputError) and isinstance(caught.value, ValueError)
        assert isinstance(caught.value, CrawlError)


def test_a_transient_error_names_its_server() -> None:
    exc = TransientError("Redis", "Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    assert (exc.service, str(exc)) == (
        "Redis", "Redis is unavailable: Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    assert not isinstance(exc, InputError)


@pytest.fixture
def raising(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Raising:
    """crawlctl with a command `boom` that raises the exception it is given."""
    monkeypatch.setenv("CRAWL_DATA_DIR", str(tmp_path / "var"))

    def run(exc: BaseException, *options: str) -> Result:
        @click.command()
        def boom() -> None:
            """Raise.  Example: crawlctl boom"""
            raise exc

        monkeypatch.setitem(cli.commands, "boom", boom)
        return CliRunner().invoke(cli, [*options, "boom"], prog_name="crawlctl")

    return run


@pytest.mark.parametrize(("exc", "code", "line"), [
    (URLRejected("scheme_ftp", "ftp://x"), 2,
     "Error: 'ftp://x': only http and https URLs are crawled, not ftp: (scheme_ftp)"),
    (SettingsError("CRAWL_MAX_DEPTH='x': expected an integer"), 2,
     "Error: CRAWL_MAX_DEPTH='x': expected an integer"),
    (InputError("not a seed"), 2, "Error: not a seed"),
    (TransientError("Postgres", "connection refused"), 1,
     "Error: Postgres is unavailable: connection refused"),
    (RuntimeError("worker keeps exiting"), 1, "Error: RuntimeError: worker keeps exiting"),
])
def test_each_failure_is_one_line_and_its_exit_status(raising: Raising, exc: Exception,
                                                      code: int, line: str) -> None:
    done = raising(exc)
    assert (done.exit_code, done.stderr, done.stdout) == (code, line + "\n", "")


def test_debug_shows_the_traceback_of_a_failure_but_not_of_bad_input(raising: Raising) -> None:
    failed = raising(TransientError("S3", "timed out"), "--debug")
    assert isinstance(failed.exception, TransientError) and failed.stderr == ""
    refused = raising(InputError("not a seed"), "--debug")
    assert (refused.exit_code, refused.stderr) == (2, "Error: not a seed\n")
