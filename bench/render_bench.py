"""CPU and memory per rendered page: the render case host's app page, rendered again and again
by one Renderer (answers straight from the generated web, so only the browser is measured).

    .venv/bin/python bench/render_bench.py            # RENDER_PAGES=40, CRAWL_RENDER_RECYCLE=20

Prints per-page wall time, browser CPU (every browser process, closed ones included), the
CPU of the page's whole render (this process's too) and the browser's memory (PSS) after each
page, as medians and maxima, and the peak memory of the whole process tree (this process and
its browser), and writes them as JSON to bench/out/render.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlapp.adapters.browser.cdp import find_chromium  # noqa: E402
from crawlapp.adapters.browser.renderer import Renderer  # noqa: E402
from crawlapp.adapters.proctree import tree_usage  # noqa: E402
from crawlapp.core.records import Fetched  # noqa: E402
from crawlapp.core.settings import DEFAULT_USER_AGENT, load_settings  # noqa: E402
from testweb.site import Web, WebSpec  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "render.json"


async def run(pages: int, recycle: int, max_memory_mb: int) -> dict[str, object]:
    path = find_chromium(os.environ.get("CRAWL_CHROMIUM"))
    if path is None:
        raise SystemExit("no Chromium: run `make install-render`")
    web = Web(WebSpec(hosts=1, port=8080, render_cases=True))
    app = web.case_urls()["app"]

    async def answer(url: str, origin: str | None) -> Fetched:
        parts = urlsplit(url)
        response = web.respond(parts.netloc, parts.path)
        return Fetched(url, response.status, {"content-type": response.header("content-type")
                                              or "application/octet-stream"},
                       b"".join(response.chunks()), ended=time.time())

    document = b"".join(web.respond(urlsplit(app).netloc, urlsplit(app).path).chunks())
    renderer = Renderer(path, DEFAULT_USER_AGENT, recycle, max_memory_mb << 20)
    walls, cpus, memory, whole = [], [], [], []
    cpu_before, peak = 0.0, 0
    try:
        for _ in range(pages):
            own = time.process_time()
            rendered = await renderer.render(app, document, "text/html", answer, 15.0)
            assert rendered.html and "/js/3.html" in rendered.html, rendered.error
            used = renderer.cpu_seconds()
            walls.append(rendered.seconds)
            cpus.append(used - cpu_before)
            whole.append(used - cpu_before + time.process_time() - own)
            cpu_before = used
            memory.append(renderer.usage()[1] / (1 << 20))
            peak = max(peak, tree_usage(os.getpid())[1])
    finally:
        await renderer.close()
    live = [m for m in memory if m > 0]  # 0 right after a recycle
    return {
        "pages": pages, "recycle_after": recycle, "browser_starts": renderer.restarts,
        "wall_ms": {"median": round(statistics.median(walls) * 1000, 1),
                    "max": round(max(walls) * 1000, 1)},
        "cpu_ms_per_page": {"median": round(statistics.median(cpus[1:] or cpus) * 1000, 1),
                            "first": round(cpus[0] * 1000, 1),
                            "mean": round(sum(cpus) / len(cpus) * 1000, 1)},
        "render_cpu_ms_per_page": {"median": round(statistics.median(whole[1:] or whole) * 1000, 1),
                                   "mean": round(sum(whole) / len(whole) * 1000, 1)},
        "peak_tree_pss_mib": round(peak / (1 << 20), 1),
        "browser_pss_mib": {"median": round(statistics.median(live), 1) if live else 0.0,
                            "max": round(max(live), 1) if live else 0.0},
    }


def main() -> None:
    settings = load_settings()
    pages = int(os.environ.get("RENDER_PAGES", "40"))
    recycle = int(os.environ.get("CRAWL_RENDER_RECYCLE", "20"))
    result = asyncio.run(run(pages, recycle, settings.render_max_memory_mb))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
