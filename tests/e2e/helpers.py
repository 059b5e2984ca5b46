"""Running `crawlctl` as a user would, for the end-to-end tests."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from testweb.changing import ChangingSpec, ChangingWeb
from testweb.server import start_changing_in_background, start_in_background
from testweb.serverlog import Request, load
from testweb.site import Web, WebSpec

CRAWLCTL = [sys.executable, "-m", "crawlapp.cli"]
Answer = tuple[int, dict[str, str], bytes]  # status, headers, body


class LoggedSite:
    """A small hand-written site for http.server: `answer(path)` says what each GET gets, and
    every request is logged as (path, start, end, status)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, float, float, int]] = []
        self.lock = threading.Lock()

    def answer(self, path: str) -> Answer:
        raise NotImplementedError

    def handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                start = time.time()
                status, headers, body = site.answer(self.path)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with site.lock:
                    site.log.append((self.path, start, time.time(), status))

            def log_message(self, *args: object) -> None:
                pass

        return Handler


class ScriptedHost(LoggedSite):
    """One loopback host whose answers come from `answer_nth(path, asked_before)`."""

    def __init__(self, answer_nth: Callable[[str, int], Answer]) -> None:
        super().__init__()
        self.answer_nth = answer_nth
        self.asked: dict[str, int] = {}

    def answer(self, path: str) -> Answer:
        with self.lock:
            before = self.asked.get(path, 0)
            self.asked[path] = before + 1
        return self.answer_nth(path, before)


@contextmanager
def serving(hosts: dict[str, LoggedSite]) -> Iterator[dict[str, str]]:
    """Serve each host on its loopback address; yields address -> base URL."""
    servers = {addr: ThreadingHTTPServer((addr, 0), host.handler()) for addr, host in hosts.items()}
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {addr: f"http://{addr}:{s.server_address[1]}" for addr, s in servers.items()}
    finally:
        for server in servers.values():
            server.shutdown()


def crawlctl(env: dict[str, str], *args: str, timeout: float = 240
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CRAWLCTL, *args], env={**os.environ, **env}, text=True,
                          capture_output=True, timeout=timeout, check=False)


def start_crawl(env: dict[str, str], seeds: Path, out: Path, *args: str,
                wrap: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """`crawlctl crawl --seeds FILE --until-idle [args]` in the background, output to `out`;
    `wrap`: a command that runs it (`hosts_file_namespace`)."""
    with open(out, "wb") as fh:
        return subprocess.Popen([*wrap, *CRAWLCTL, "crawl", "--seeds", str(seeds), "--until-idle",
                                 *args],
                                env={**os.environ, **env}, stdout=fh, stderr=subprocess.STDOUT)


def named(spec: WebSpec) -> WebSpec:
    """`spec` with every normal host named (site<i>.example.test): see hosts_file_namespace."""
    return replace(spec, names=tuple(f"site{i}.example.test" for i in range(spec.hosts)))


def hosts_file_namespace(tmp_path: Path, names: Mapping[str, str]) -> list[str]:
    """A command prefix that runs a command in a mount namespace of its own (unshare) whose
    /etc/hosts also has `names` (name -> address): the operating system's resolver answers
    them, as it would any name, and nothing outside the namespace sees them. The test is
    skipped, with the cause, where no such namespace can be made."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not on the PATH: no hosts file of the test's own")
    prefix = [unshare, "--user", "--map-root-user", "--mount"] if os.geteuid() else [
        unshare, "--mount"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True, check=False)
    if probe.returncode:
        pytest.skip(f"no mount namespace for a hosts file of the test's own: {probe.stderr}")
    hosts = tmp_path / "hosts"
    hosts.write_text(Path("/etc/hosts").read_text() + "".join(
        f"{address} {name}\n" for name, address in names.items()))
    return [*prefix, "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts)]


def by_name(requests: list[Request], web: Web) -> list[Request]:
    """The server's log as the crawl asked it: each request to a named host's address (the
    server logs where a request came to) under that host's name."""
    name_of = {address: name for name, address in web.name_addresses().items()}

    def named(host: str) -> str:
        address, _, port = host.rpartition(":")
        return f"{name_of[address]}:{port}" if address in name_of else host
    return [replace(request, host=named(request.host)) for request in requests]


def crawl_web(tmp_path: Path, env: dict[str, str], spec: WebSpec,
              during: Callable[[subprocess.Popen[bytes]], None] = lambda crawl: None,
              seeds_of: Callable[[Web], list[str]] = Web.seeds,
              before: Callable[[Web], None] = lambda web: None, args: Sequence[str] = (),
              tls: tuple[str, str] | None = None, wrap: Sequence[str] = ()
              ) -> tuple[Web, list[Request], str]:
    """Serve `spec`, call `before(web)` once it is served, run `crawlctl crawl --until-idle
    [args]` on its seeds (`seeds_of(web)`, every normal host's home page by default) while
    `during(crawl)` acts on it, and return the web (at its final generation), the server's
    log and the crawl's output. Fails the test if the crawl fails. `tls`: the certificate and
    key files of a web whose spec says `tls`; `wrap`: a command the crawl runs under."""
    log = str(tmp_path / "requests.jsonl")
    out = tmp_path / "crawl.out"
    with start_in_background(Web(spec), log, tls=tls) as server:
        before(server.web)
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(seeds_of(server.web)) + "\n")
        crawl = start_crawl(env, seeds, out, *args, wrap=wrap)
        during(crawl)
        assert crawl.wait(300) == 0, out.read_text()
    return server.web, load(log), out.read_text()


def keep_fresh(tmp_path: Path, env: dict[str, str], spec: ChangingSpec, seconds: float,
               during: Callable[[float, subprocess.Popen[bytes]], None] = lambda t0, crawl: None
               ) -> tuple[ChangingWeb, float, list[Request]]:
    """Serve the changing web of `spec` and run `crawlctl crawl` on its seeds, no --until-idle,
    for `seconds` from the web's start t0 while `during(t0, crawl)` acts (an outage), then
    stop it as Ctrl-C does (failing the test if it does not stop so). Returns the web, t0 and
    the server's log; the crawl's output is in tmp_path/crawl.out."""
    log, out = str(tmp_path / "requests.jsonl"), tmp_path / "crawl.out"
    with start_changing_in_background(spec, log) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.seeds()) + "\n")
        with open(out, "wb") as fh:
            crawl = subprocess.Popen([*CRAWLCTL, "crawl", "--seeds", str(seeds)],
                                     env={**os.environ, **env}, stdout=fh,
                                     stderr=subprocess.STDOUT)
        during(server.t0, crawl)
        time.sleep(max(0.0, server.t0 + seconds - time.time()))
        crawl.send_signal(signal.SIGINT)
        assert crawl.wait(60) in (0, 130, -signal.SIGINT), out.read_text()
    return server.web, server.t0, load(log)  # the server stopped: its log is whole


def children(pid: int) -> dict[int, str]:
    """Direct children of `pid` with their command lines."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out[int(entry.name)] = cmdline
    return out


def wait_for_child(pid: int, needle: str, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child, cmdline in children(pid).items():
            if needle in cmdline:
                return child
        time.sleep(0.1)
    raise AssertionError(f"no child of {pid} runs {needle!r}")


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
