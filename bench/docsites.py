"""Real documentation sites behind nginx: does the crawler read every page a reference crawler
(GNU wget2) reaches, politely? Not part of `make test`: `make docsites`.

Needs Debian's nginx and four documentation packages (DocBook XHTML: PostgreSQL 15 and the
Debian Reference; Sphinx HTML5: Python 3.11 and Django), and wget2 for the reference count:

    apt-get install nginx-light wget2 postgresql-doc-15 debian-reference-en \
        python3.11-doc python-django-doc

Each set is served by an nginx of our own on a free loopback port; wget2 (depth 5, robots on)
gives the reachable HTML pages; `crawlctl crawl --until-idle` (depth 5, a Redis and data
folder of its own) crawls the same seeds; nginx's logs say what each requested. Prints, per
site: pages reachable, pages the crawler fetched, coverage, requests, overlaps and the
shortest gap between two requests. DOCSITES_DELAY (default 0.05 s: our own server) sets
CRAWL_DEFAULT_DELAY.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bench.services import free_port, own_redis

SITES = {  # name: (document root, index file)
    "postgresql": ("/usr/share/doc/postgresql-doc-15/html", "index.html"),
    "debian-reference": ("/usr/share/debian-reference", "index.en.html"),
    "python": ("/usr/share/doc/python3.11/html", "index.html"),
    "django": ("/usr/share/doc/python-django-doc/html", "index.html"),
}
ROOT = Path(__file__).resolve().parents[1]
CRAWLCTL = Path(sys.executable).parent / "crawlctl"
DEPTH = 5

NGINX_CONF = """worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 256; }}
http {{
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  log_format timed '$msec $request_time "$request" $status';
  client_body_temp_path {dir}/tmp; proxy_temp_path {dir}/tmp; fastcgi_temp_path {dir}/tmp;
  uwsgi_temp_path {dir}/tmp; scgi_temp_path {dir}/tmp;
{servers}
}}
"""
SERVER = ("  server {{ listen 127.0.0.1:{port}; root {root}; index {index};"
          " access_log {dir}/{name}.log timed; }}")


def _missing() -> list[str]:
    needs = [tool for tool in ("nginx", "wget2") if shutil.which(tool) is None]
    return needs + [root for root, _ in SITES.values() if not Path(root).is_dir()]


def _start_nginx(work: Path, ports: dict[str, int]) -> None:
    (work / "tmp").mkdir()
    servers = "\n".join(SERVER.format(port=ports[name], root=root, index=index, dir=work,
                                      name=name) for name, (root, index) in SITES.items())
    (work / "nginx.conf").write_text(NGINX_CONF.format(dir=work, servers=servers))
    subprocess.run(["nginx", "-c", str(work / "nginx.conf"), "-p", str(work)], check=True)


def _reachable(work: Path, name: str, port: int) -> set[str]:
    """The HTML pages wget2 reaches from the site's home page, as request paths."""
    mirror = work / "mirror" / name
    subprocess.run(["wget2", "-q", "-r", "-l", str(DEPTH), "--no-parent", "-e", "robots=on",
                    "-P", str(mirror), f"http://127.0.0.1:{port}/"], check=False,
                   timeout=900)
    site = mirror / "127.0.0.1"  # wget2 names the folder by host, without the port
    return {"/" + path.relative_to(site).as_posix() for path in site.rglob("*.html")}


def _requests(log: Path) -> list[tuple[float, float, str, int]]:
    """(start, end, path, status) of each request nginx logged; a directory named as wget2
    saves it (dir/index.html)."""
    out = []
    for line in log.read_text().splitlines():
        end, took, _, target, *_, status = line.replace('"', "").split()
        path = unquote(urlsplit(target).path)
        out.append((float(end) - float(took), float(end),
                    path + "index.html" if path.endswith("/") else path, int(status)))
    return out


def _crawl(work: Path, redis_url: str, ports: dict[str, int]) -> float:
    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"http://127.0.0.1:{port}/\n" for port in ports.values()))
    env = {**os.environ, "CRAWL_DATA_DIR": str(work / "var"), "CRAWL_REDIS_URL": redis_url,
           "CELERY_BROKER_URL": redis_url, "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",
           "CRAWL_MAX_DEPTH": str(DEPTH),
           "CRAWL_DEFAULT_DELAY": os.environ.get("DOCSITES_DELAY", "0.05")}
    started = time.monotonic()
    with (work / "crawl.log").open("w") as log:
        subprocess.run([str(CRAWLCTL), "crawl", "--seeds", str(seeds), "--until-idle"],
                       env=env, stdout=log, stderr=subprocess.STDOUT, check=True, cwd=ROOT,
                       timeout=3600)
    return time.monotonic() - started


def _report(name: str, reachable: set[str], requests: list[tuple[float, float, str, int]]
            ) -> str:
    fetched = {path for _, _, path, status in requests if status == 200}
    spans = sorted((start, end) for start, end, _, _ in requests)
    overlaps = sum(1 for a, b in pairwise(spans) if b[0] < a[1] - 0.0005)
    gap = min((b[0] - a[1] for a, b in pairwise(spans)), default=0.0)
    got = len(reachable & fetched)
    return (f"{name:>17} {len(reachable):>9} {got:>8} {100 * got / max(1, len(reachable)):>8.2f}%"
            f" {len(requests):>8} {overlaps:>8} {gap:>8.3f}"
            + (f"  missing e.g. {sorted(reachable - fetched)[:3]}" if got < len(reachable) else ""))


def main() -> int:
    missing = _missing()
    if missing:
        print(f"missing: {', '.join(missing)}; see `head -12 {__file__}` for the apt-get line",
              file=sys.stderr)
        return 2
    ports = {name: free_port() for name in SITES}
    with tempfile.TemporaryDirectory(prefix="docsites-") as tmp:
        work = Path(tmp)
        _start_nginx(work, ports)
        try:
            reachable = {name: _reachable(work, name, port) for name, port in ports.items()}
            for name in SITES:  # the reference crawl's requests are not the crawler's
                (work / f"{name}.log").write_text("")
            subprocess.run(["nginx", "-c", str(work / "nginx.conf"), "-p", str(work), "-s",
                            "reopen"], check=True)
            with own_redis() as redis_url:
                seconds = _crawl(work, redis_url, ports)
        finally:
            subprocess.run(["nginx", "-c", str(work / "nginx.conf"), "-p", str(work), "-s",
                            "stop"], check=False)
        print(f"crawl: {seconds:.0f} s wall, delay {os.environ.get('DOCSITES_DELAY', '0.05')} s")
        print(f"{'site':>17} {'reachable':>9} {'fetched':>8} {'coverage':>9} {'requests':>8}"
              f" {'overlaps':>8} {'min gap':>8}")
        for name in SITES:
            print(_report(name, reachable[name], _requests(work / f"{name}.log")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
