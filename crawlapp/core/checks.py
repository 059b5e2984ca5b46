"""The crawler's URL and robots.txt decisions for one input at a time, as records an operator
(or a conformance suite) can read: `crawlctl url check` and `crawlctl robots check`. Pure.

Each answer has every key, null where it does not apply; an input that cannot be handled gets
`rejected` (a URL the crawler refuses) or `error` (the input itself is unusable), never no
answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from crawlapp.core.robots import RobotsPolicy, decode_robots
from crawlapp.core.scope import registrable_domain, surt
from crawlapp.core.urls import URLRejected, dedup_key, host_of, request_url

Answer = dict[str, Any]
URL_KEYS = ("href", "base", "fetch", "key", "host", "domain", "surt", "rejected", "error")
ROBOTS_KEYS = ("url", "fetch", "allowed", "group", "rule", "crawl_delay", "rejected", "error")


def _blank(keys: tuple[str, ...], given: Any = None) -> Answer:
    """An answer with every key null, but for the input's own keys echoed back."""
    answer: Answer = dict.fromkeys(keys)
    if isinstance(given, dict):
        answer.update({k: given.get(k) for k in keys if k in ("href", "base", "url")})
    return answer


def url_answer(href: str, base: str | None = None, max_length: int = 2048) -> Answer:
    """What the crawler makes of a link `href` on a page at `base`: the request URL
    (`fetch`), the dedup key (`key`), the politeness key (`host`), the registrable domain
    and SURT form the crawl scope matches (`domain`, `surt`), or why not (`rejected`)."""
    answer = _blank(URL_KEYS, {"href": href, "base": base})
    try:
        url = request_url(href, base, max_length=max_length)
    except URLRejected as exc:
        answer["rejected"] = exc.reason
        return answer
    host = host_of(url)
    answer.update(fetch=url, key=dedup_key(url), host=host, domain=registrable_domain(host),
                  surt=surt(url))
    return answer


def robots_answer(policy: RobotsPolicy, href: str, agent: str, base: str | None = None,
                  max_length: int = 2048) -> Answer:
    """Whether the crawler would fetch a link `href` under `policy`, decided as it does:
    on the link's request URL (`fetch`), with the matched `group` and `rule`."""
    answer = _blank(ROBOTS_KEYS, {"url": href})
    try:
        url = request_url(href, base, max_length=max_length)
    except URLRejected as exc:
        answer["rejected"] = exc.reason
        return answer
    decision = policy.decide(url, agent)
    answer.update(fetch=url, allowed=decision.allowed, group=decision.group,
                  rule=decision.rule, crawl_delay=decision.crawl_delay)
    return answer


_BOM_AS_LATIN1 = ("\u00ef\u00bb\u00bf", "\u00ef\u00bb", "\u00ef")


def policy_of_text(text: str) -> RobotsPolicy:
    """The policy of a robots.txt given as text (a 200 answer with that body). Bytes that
    came through as text are put back first: lone surrogates from a `surrogateescape`
    decoding, and a (partial) UTF-8 byte order mark read as Latin-1, which no robots.txt
    line can begin with."""
    for mojibake in _BOM_AS_LATIN1:
        if text.startswith(mojibake):
            text = text[len(mojibake):]
            break
    try:
        raw = text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte stands for
        raw = text.encode("utf-8", errors="replace")
    return RobotsPolicy(200, decode_robots(raw))


def _url_line(item: Any, max_length: int) -> Answer:
    if not isinstance(item, dict) or not isinstance(item.get("href"), str):
        raise ValueError('expected {"href": "...", "base": "..."}')
    base = item.get("base")
    if base is not None and not isinstance(base, str):
        raise ValueError('"base" must be a string')
    return url_answer(item["href"], base, max_length)


def _robots_line(item: Any, default_agent: str, max_length: int) -> Answer:
    if not isinstance(item, dict) or not isinstance(item.get("robots"), str) \
            or not isinstance(item.get("url"), str):
        raise ValueError('expected {"robots": "...", "url": "...", "agent": "..."}')
    agent = item.get("agent") or default_agent
    if not isinstance(agent, str):
        raise ValueError('"agent" must be a string')
    return robots_answer(policy_of_text(item["robots"]), item["url"], agent, item.get("base"),
                         max_length)


def _jsonl(lines: Iterable[str], handle: Callable[[Any], Answer], keys: tuple[str, ...]
           ) -> Iterator[str]:
    """One JSON answer per input line, in order; a line that cannot be handled gets an
    answer with every key null but `error`."""
    for line in lines:
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            yield json.dumps(_blank(keys) | {"error": f"not JSON: {exc}"})
            continue
        try:
            yield json.dumps(handle(item))
        except (ValueError, TypeError) as exc:
            yield json.dumps(_blank(keys, item) | {"error": str(exc)})


def url_jsonl(lines: Iterable[str], max_length: int = 2048) -> Iterator[str]:
    """`url check --jsonl`: {"href", "base"?} in, an answer of `url_answer`'s shape out."""
    return _jsonl(lines, lambda item: _url_line(item, max_length), URL_KEYS)


def robots_jsonl(lines: Iterable[str], default_agent: str, max_length: int = 2048
                 ) -> Iterator[str]:
    """`robots check --jsonl`: {"robots", "url", "agent"} in, a `robots_answer` out."""
    return _jsonl(lines, lambda item: _robots_line(item, default_agent, max_length), ROBOTS_KEYS)
