"""The Scrapy side of the benchmark: a spider that follows every link of a generated web.

Run by the Scrapy virtualenv's Python (no crawlapp import):
    python bench/scrapy_spider.py SEEDS_FILE OUT_DIR MAX_DEPTH DELAY
Writes OUT_DIR/items.jsonl (one line per page) and OUT_DIR/stats.json (Scrapy's stats).
Politeness as the crawler's: one request at a time per host, DELAY seconds between requests,
no jitter, robots.txt obeyed (Scrapy reads Crawl-delay but does not apply it).
"""

import json
import sys
from pathlib import Path

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor

USER_AGENT = "scrapybench/2.19 (+http://127.0.0.1/bench)"


class WebSpider(scrapy.Spider):
    name = "bench"
    links = LinkExtractor()

    def __init__(self, seeds_file: str, out_dir: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.start_urls = Path(seeds_file).read_text().split()
        self.out_dir = Path(out_dir)

    def parse(self, response):
        yield {"url": response.url, "status": response.status, "bytes": len(response.body)}
        if isinstance(response, scrapy.http.TextResponse):
            for link in self.links.extract_links(response):
                yield response.follow(link.url, callback=self.parse)

    def closed(self, reason: str) -> None:
        stats = {k: (v.isoformat() if hasattr(v, "isoformat") else v)
                 for k, v in self.crawler.stats.get_stats().items()}
        (self.out_dir / "stats.json").write_text(json.dumps(stats | {"reason": reason}, indent=1))


def settings(out_dir: str, max_depth: int, delay: float) -> dict:
    return {
        "USER_AGENT": USER_AGENT,
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": delay,
        "DOWNLOAD_DELAY_JITTER": 0,  # RANDOMIZE_DOWNLOAD_DELAY = False, as Scrapy 2.19 spells it
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "CONCURRENT_REQUESTS": 1000,
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_LIMIT": max_depth,
        "DOWNLOAD_TIMEOUT": 30,
        "RETRY_TIMES": 2,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "FEEDS": {str(Path(out_dir) / "items.jsonl"): {"format": "jsonlines", "overwrite": True}},
    }


def main() -> None:
    seeds_file, out_dir, max_depth, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    process = CrawlerProcess(settings(out_dir, max_depth, delay))
    process.crawl(WebSpider, seeds_file=seeds_file, out_dir=out_dir)
    process.start()


if __name__ == "__main__":
    main()
