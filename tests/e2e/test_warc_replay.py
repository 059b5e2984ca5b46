"""The WARC export of a crawl and its re-crawl (304s, changed and unchanged 200s), and of a
crawl of redirects, 4xx and 5xx answers, checked by warcio and replayed by pywb: every fetch
kept, at its own timestamp, answers with the status and the very bytes the web served then
(an error page's first CRAWL_ARCHIVE_ANSWER_BYTES), a redirect with its Location."""

from __future__ import annotations

import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import crawl_env
from tests.e2e.helpers import Answer, ScriptedHost, crawlctl, serving
from testweb.server import start_in_background
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
PYWB = ROOT / ".venv-pywb" / "bin"
VENV = Path(sys.executable).parent
COLLECTION = "crawl"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _served(web: Web, url: str) -> bytes:
    netloc, _, path = url.removeprefix("http://").partition("/")
    return b"".join(web.respond(netloc, "/" + path).chunks())


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object) -> None:
        return None  # a redirect is an answer of its own (an HTTPError)


_OPENER = urllib.request.build_opener(_NoRedirects)


def _get(url: str) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers of a GET, redirects not followed."""
    try:
        with _OPENER.open(url, timeout=10) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def _check(warcs: list[Path]) -> None:
    """Each file passes `warcio check` (digests, record structure) and opens with warcinfo."""
    for warc in warcs:
        check = subprocess.run([str(VENV / "warcio"), "check", "-v", str(warc)],
                               capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        with warc.open("rb") as stream:
            assert next(iter(ArchiveIterator(stream))).rec_type == "warcinfo"


def _history(tmp_path: Path) -> list[tuple[str, str, int, int, int]]:
    """The fetch history's url, fetched_at, http_status, not_modified and robots, in order."""
    return sqlite3.connect(tmp_path / "var" / "crawl.db").execute(
        "select url, fetched_at, http_status, not_modified, robots from fetches "
        "order by id").fetchall()


def _stamp(fetched_at: str) -> str:
    return datetime.fromisoformat(fetched_at).replace(tzinfo=UTC).strftime("%Y%m%d%H%M%S")


def _wayback(root: Path, warcs: list[Path], index: Path) -> tuple[subprocess.Popen[bytes], str]:
    """pywb's wayback on a collection of the export's files and its CDXJ index."""
    subprocess.run([str(PYWB / "wb-manager"), "init", COLLECTION], cwd=root, check=True,
                   capture_output=True)
    collection = root / "collections" / COLLECTION
    for warc in warcs:
        shutil.copy(warc, collection / "archive" / warc.name)
    shutil.copy(index, collection / "indexes" / "index.cdxj")
    port = _free_port()
    log = open(root / "wayback.log", "wb")  # noqa: SIM115 - the server's, closed with it
    server = subprocess.Popen([str(PYWB / "wayback"), "-b", "127.0.0.1", "-p", str(port)],
                              cwd=root, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/{COLLECTION}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server, base
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError((root / "wayback.log").read_text()) from None
            time.sleep(0.2)


def test_export_of_a_recrawl_replays_every_fetch_in_pywb(tmp_path: Path, redis_url: str) -> None:
    if not (PYWB / "wayback").exists():
        pytest.skip("pywb is not installed: make install-pywb")
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY="0.2")
    spec = WebSpec(hosts=3, pages_per_host=5, port=0, crawl_delay_every=0, recrawl_cases=True,
                   vary_validators=True)
    with start_in_background(Web(spec), str(tmp_path / "requests.jsonl")) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()))
        first = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
        assert first.returncode == 0, first.stdout + first.stderr
        switched = datetime.now(UTC)
        server.set_generation(1)
        assert crawlctl(env, "recrawl", "--all", "--now").returncode == 0
        second = crawlctl(env, "crawl", "--until-idle")
        assert second.returncode == 0, second.stdout + second.stderr
    webs = (server.web.at_generation(0), server.web)

    out = tmp_path / "export" / "crawl.warc.gz"
    out.parent.mkdir()
    exported = crawlctl(env, "export", "warc", "--out", str(out), "--cdxj",
                        "--max-size", "60000")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "skipped" not in exported.stdout, exported.stdout
    warcs = sorted(out.parent.glob("crawl-*.warc.gz"))
    assert len(warcs) > 1 and not out.exists()  # split by size, the first file renamed
    _check(warcs)
    index = out.parent / "crawl.cdxj"
    again = subprocess.run([str(VENV / "cdxj-indexer"), "--sort", *map(str, warcs)],
                           capture_output=True, text=True, check=True, cwd=out.parent)
    assert again.stdout == index.read_text()  # the CLI's index and the library's agree

    history = _history(tmp_path)
    kinds: Counter[str] = Counter()
    records: Counter[str] = Counter()
    for warc in warcs:
        with warc.open("rb") as stream:
            records.update(r.rec_type for r in ArchiveIterator(stream))
    root = tmp_path / "pywb"
    root.mkdir()
    wayback, base = _wayback(root, warcs, index)
    try:
        for url, fetched_at, status, not_modified, robots in history:
            when = datetime.fromisoformat(fetched_at).replace(tzinfo=UTC)
            web = webs[when >= switched]
            kinds["robots" if robots else
                  "304" if not_modified else f"gen{when >= switched:d}"] += 1
            stamp = _stamp(fetched_at)
            got_status, body, _ = _get(f"{base}/{stamp}id_/{url}")
            assert got_status == (200 if not_modified else status), (url, stamp)
            assert body == _served(web, url), (url, stamp)
    finally:
        wayback.terminate()
        wayback.wait(10)
    assert kinds["304"] > 0 and kinds["gen0"] > 0 and kinds["gen1"] > 0 and kinds["robots"] > 0
    assert records["revisit"] > kinds["304"]  # unchanged 200s are revisits too
    assert records["request"] == records["response"] + records["revisit"] == len(history)


LONG = 3000  # bytes of the long error page, past CRAWL_ARCHIVE_ANSWER_BYTES
KEPT = 1024


def _answers(path: str, before: int) -> Answer:
    """A host of redirects and error answers, each with a body of its own, and a noindex page."""
    html = {"Content-Type": "text/html"}
    if path == "/robots.txt":
        return 404, html, b"<h1>no robots.txt here</h1>"
    if path == "/":
        links = "".join(f"<a href='{p}'>{p}</a>" for p in (
            "/moved", "/temporary", "/missing", "/broken", "/long-404", "/hidden", "/teapot"))
        return 200, html, f"<p>links</p>{links}".encode()
    if path == "/moved":
        return 301, {**html, "Location": "/target"}, b"<a href='/target'>moved here</a>"
    if path == "/temporary":
        return 302, {**html, "Location": "/target"}, b"<a href='/target'>over there</a>"
    if path in ("/missing", "/sitemap.xml"):
        return 404, html, b"<h1>nothing here</h1>"
    if path == "/broken":  # tried again 2 s later: each try has a second of its own
        return 503, {**html, "Retry-After": "2"}, f"<h1>down, try {before + 1}</h1>".encode()
    if path == "/long-404":
        return 404, html, b"<p>" + b"lost " * (LONG // 5) + b"</p>"
    if path == "/teapot":
        return 418, html, b"short and stout"
    if path == "/hidden":
        return 200, html, b"<meta name=robots content=noindex><p>hidden</p>"
    return 200, html, f"<p>page {path}</p>".encode()


def test_redirects_and_error_answers_replay_with_their_status(tmp_path: Path,
                                                              redis_url: str) -> None:
    if not (PYWB / "wayback").exists():
        pytest.skip("pywb is not installed: make install-pywb")
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY="0.2", CRAWL_MAX_RETRIES="1",
                    CRAWL_MAX_BACKOFF="1", CRAWL_ARCHIVE_ANSWER_BYTES=str(KEPT),
                    CRAWL_ARCHIVE_UNSTORED="true")
    host = ScriptedHost(_answers)
    with serving({"127.0.3.41": host}) as bases:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(bases["127.0.3.41"] + "/\n")
        done = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
    assert done.returncode == 0, done.stdout + done.stderr

    out = tmp_path / "export" / "answers.warc.gz"
    out.parent.mkdir()
    exported = crawlctl(env, "export", "warc", "--out", str(out), "--cdxj")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "skipped" not in exported.stdout, exported.stdout
    assert ("8 redirect(s), error answer(s) and answers too large (1 cut: WARC-Truncated)"
            in exported.stdout), exported.stdout
    _check([out])
    history = _history(tmp_path)
    paths = ["/" + url.split("/", 3)[3] for url, *_ in history]
    assert sorted(paths) == sorted(p for p, *_ in host.log)  # every exchange, tries included
    assert paths.count("/broken") == 2  # the 503 and its one retry (CRAWL_MAX_RETRIES=1)
    assert {p: status for p, (_, _, status, _, _) in zip(paths, history, strict=True)} == {
        "/robots.txt": 404, "/": 200, "/moved": 301, "/temporary": 302, "/missing": 404,
        "/broken": 503, "/long-404": 404, "/teapot": 418, "/hidden": 200, "/target": 200,
        "/sitemap.xml": 404}

    root = tmp_path / "pywb"
    root.mkdir()
    wayback, base = _wayback(root, [out], out.parent / "answers.cdxj")
    try:
        tries: Counter[str] = Counter()
        for path, (url, fetched_at, status, _, _) in zip(paths, history, strict=True):
            got_status, body, headers = _get(f"{base}/{_stamp(fetched_at)}id_/{url}")
            assert got_status == status, (url, got_status)
            assert body == _answers(path, tries[path])[2][:KEPT], url
            tries[path] += 1
            if status in (301, 302):
                assert headers["Location"].endswith("/target"), headers
    finally:
        wayback.terminate()
        wayback.wait(10)
