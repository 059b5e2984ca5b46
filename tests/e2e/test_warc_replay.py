"""The WARC export of a crawl and its re-crawl (304s, changed and unchanged 200s), checked by
warcio and replayed by pywb: every fetch kept, at its own timestamp, answers with the status
and the very bytes the test web served then."""

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
from tests.e2e.helpers import crawlctl
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


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


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
    for warc in warcs:
        check = subprocess.run([str(VENV / "warcio"), "check", "-v", str(warc)],
                               capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        with warc.open("rb") as stream:
            assert next(iter(ArchiveIterator(stream))).rec_type == "warcinfo"
    index = out.parent / "crawl.cdxj"
    again = subprocess.run([str(VENV / "cdxj-indexer"), "--sort", *map(str, warcs)],
                           capture_output=True, text=True, check=True, cwd=out.parent)
    assert again.stdout == index.read_text()  # the CLI's index and the library's agree

    history = sqlite3.connect(tmp_path / "var" / "crawl.db").execute(
        "select url, fetched_at, http_status, not_modified, robots from fetches "
        "order by id").fetchall()
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
            stamp = when.strftime("%Y%m%d%H%M%S")
            got_status, body = _get(f"{base}/{stamp}id_/{url}")
            assert got_status == (200 if not_modified else status), (url, stamp)
            assert body == _served(web, url), (url, stamp)
    finally:
        wayback.terminate()
        wayback.wait(10)
    assert kinds["304"] > 0 and kinds["gen0"] > 0 and kinds["gen1"] > 0 and kinds["robots"] > 0
    assert records["revisit"] > kinds["304"]  # unchanged 200s are revisits too
    assert records["request"] == records["response"] + records["revisit"] == len(history)
