"""SimHash fingerprints of pages' visible text (as the parse stage reads it), and near copies
found among them by the tables of core/near_tables.py."""

from __future__ import annotations

import itertools
import random
import re
import time
from collections import defaultdict

import mmh3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawlapp.core.html import parse_html
from crawlapp.core.near_tables import Tables, plan
from crawlapp.core.simhash import (
    from_signed,
    hamming,
    shingles,
    simhash,
    to_signed,
    tokens,
)
from testweb.hosts import HTML_TYPE, WebSpec, vocabulary
from testweb.site import Web

HOSTS, PAGES = 25, 10
FUNCTION_WORDS = ("the", "of", "and", "a", "to", "in", "is", "that", "for", "it", "as", "was",
                  "with", "on", "by", "at", "from", "this", "which", "were")
BYLINE = "By Jane Doe, staff reporter, in Lisbon."
MAX_DISTANCE = 3


class TableIndex:
    """In-memory tables of permuted fingerprints by key: the model of the Redis index
    (adapters/redis/dedup_index.py), each table a dict of prefixes."""

    def __init__(self, tables: Tables | None = None) -> None:
        self.tables = tables or plan(100_000, MAX_DISTANCE)
        self._fingerprints: dict[str, int] = {}
        self._filed: defaultdict[tuple[int, int], set[str]] = defaultdict(set)

    def _prefixes(self, fp: int) -> list[tuple[int, int]]:
        permuted = self.tables.permute([fp])[:, 0].tolist()
        return [(t, value >> (self.tables.width - bits))
                for t, (value, bits) in enumerate(zip(permuted, self.tables.prefixes, strict=True))]

    def add(self, key: str, fp: int) -> None:
        """File `key` under the prefixes of `fp`, replacing its previous fingerprint if any."""
        old = self._fingerprints.get(key)
        if old is not None:
            for prefix in self._prefixes(old):
                self._filed[prefix].discard(key)
        self._fingerprints[key] = fp
        for prefix in self._prefixes(fp):
            self._filed[prefix].add(key)

    def candidates(self, fp: int) -> set[str]:
        """Keys whose fingerprint shares at least one table's prefix with `fp`."""
        found: set[str] = set()
        for prefix in self._prefixes(fp):
            found |= self._filed.get(prefix, set())
        return found

    def near(self, fp: int, max_distance: int = MAX_DISTANCE) -> list[tuple[str, int]]:
        """(key, distance) of the keys within `max_distance` bits of `fp`, closest first."""
        if max_distance > self.tables.distance:
            raise ValueError(f"the tables only find distances up to {self.tables.distance}")
        distances = ((key, hamming(fp, self._fingerprints[key])) for key in self.candidates(fp))
        near = [(key, d) for key, d in distances if d <= max_distance]
        return sorted(near, key=lambda pair: (pair[1], pair[0]))


def page_text(body: bytes, content_type: str | None = None) -> str:
    """The text the parse stage fingerprints."""
    return parse_html(body, content_type).text


def article(seed: int, words: int = 600) -> str:
    """Deterministic prose: capitalised sentences of 8-20 words, 40% of them function words."""
    rng, vocab = random.Random(seed), vocabulary()
    sentences: list[str] = []
    count = 0
    while count < words:
        n = min(rng.randint(8, 20), words - count)
        chosen = [rng.choice(FUNCTION_WORDS) if rng.random() < 0.4 else rng.choice(vocab)
                  for _ in range(n)]
        sentences.append(" ".join(chosen).capitalize() + ".")
        count += n
    return " ".join(sentences)


def edits(text: str) -> dict[str, str]:
    """Copies of `text` with the middle word replaced, the middle word deleted, a byline added."""
    words = text.split(" ")
    middle = len(words) // 2
    replaced = words[:middle] + ["replacement"] + words[middle + 1:]
    return {
        "replaced": " ".join(replaced),
        "deleted": " ".join(words[:middle] + words[middle + 1:]),
        "byline": f"{BYLINE} {text}",
    }


@pytest.fixture(scope="module")
def web_pages() -> dict[str, bytes]:
    web = Web(WebSpec(hosts=HOSTS, pages_per_host=PAGES, port=8080))
    return {f"{i}/{j}": web.respond(web.netloc(i), f"/p/{j}.html").body
            for i in range(HOSTS) for j in range(PAGES)}


@pytest.fixture(scope="module")
def web_fingerprints(web_pages: dict[str, bytes]) -> dict[str, int]:
    started = time.process_time()
    fingerprints = {key: simhash(parse_html(body, HTML_TYPE).text)
                    for key, body in web_pages.items()}
    cpu = time.process_time() - started
    print(f"\nparse_html+simhash: {cpu / len(web_pages) * 1000:.3f} ms CPU per page")
    return fingerprints


def brute_force_pairs(fingerprints: dict[str, int], max_distance: int = 3) -> set[frozenset[str]]:
    pairs = itertools.combinations(fingerprints.items(), 2)
    return {frozenset((a, b)) for (a, fa), (b, fb) in pairs if hamming(fa, fb) <= max_distance}


def index_pairs(fingerprints: dict[str, int], max_distance: int = 3) -> set[frozenset[str]]:
    index = TableIndex()
    for key, fp in fingerprints.items():
        index.add(key, fp)
    return {frozenset((key, other)) for key, fp in fingerprints.items()
            for other, _ in index.near(fp, max_distance) if other != key}


def planted_fingerprints(seed: int = 7, total: int = 300) -> dict[str, int]:
    """Random fingerprints, a third of them near copies of another with 0-3 bits flipped."""
    rng = random.Random(seed)
    originals = {f"r{n}": rng.getrandbits(64) for n in range(total * 2 // 3)}
    copies = {}
    for n, base in enumerate(rng.sample(sorted(originals), total - len(originals))):
        flips = rng.sample(range(64), rng.randint(0, 3))
        copies[f"c{n}"] = originals[base] ^ sum(1 << bit for bit in flips)
    return originals | copies


# --- fingerprints --------------------------------------------------------------------------

def test_identical_text_gives_identical_deterministic_fingerprint() -> None:
    text = article(1)
    assert simhash(text) == simhash(article(1))
    assert 0 < simhash(text) < 2**64
    assert simhash(text) != simhash(article(2))


def test_fingerprints_are_stable_across_releases() -> None:
    """Stored fingerprints stay comparable only while shingling and hashing do not change."""
    assert simhash("the quick brown fox jumps over the lazy dog") == 0xF8130A3876855016
    assert simhash("hello") == 0xCBD8A7B341BD9B02


@given(st.lists(st.text(min_size=1, max_size=8), max_size=40).map(" ".join))
def test_fingerprints_follow_their_definition(text: str) -> None:
    """Bit k is set when more than half of the shingles' mmh3.hash64 values have it set."""
    features = shingles(tokens(text))
    hashes = [mmh3.hash64(f, signed=False)[0] for f in features]
    expected = sum(1 << k for k in range(64)
                   if 2 * sum(h >> k & 1 for h in hashes) > len(hashes))
    assert simhash(text) == expected


@given(st.one_of(st.text(), st.text(alphabet=st.characters(max_codepoint=127))))
def test_the_words_are_the_runs_of_word_characters(text: str) -> None:
    """The byte-table split of ASCII text and the regex of other text agree with \\w+."""
    assert tokens(text) == [word.encode() for word in re.findall(r"\w+", text)]


def test_short_and_empty_texts() -> None:
    assert simhash("") == 0
    assert simhash("  ,;  ") == 0
    assert simhash("hello") != 0
    assert simhash("hello world") != simhash("world hello world")


@pytest.mark.parametrize("kind", ["replaced", "deleted", "byline"])
def test_small_edit_of_an_article_stays_within_three_bits(kind: str) -> None:
    text = article(0)
    assert len(tokens(text)) == 600
    assert hamming(simhash(text), simhash(edits(text)[kind])) <= 3


def test_small_edits_are_usually_within_three_bits() -> None:
    """Over 100 articles: the 3-bit threshold is probabilistic, 13-17% of these edits miss it."""
    distances: dict[str, list[int]] = {kind: [] for kind in ("replaced", "deleted", "byline")}
    for seed in range(100):
        text = article(seed)
        fp = simhash(text)
        for kind, edited in edits(text).items():
            distances[kind].append(hamming(fp, simhash(edited)))
    for found in distances.values():
        assert sum(d <= 3 for d in found) >= 80
        assert max(found) <= 8


def test_markup_around_the_text_does_not_change_the_fingerprint() -> None:
    text = article(0)
    page = f"<html><head><style>p {{}}</style></head><body><p>{text}</p></body></html>"
    assert simhash(page_text(page.encode())) == simhash(text.lower())


def test_unrelated_generated_pages_are_far_apart(web_fingerprints: dict[str, int]) -> None:
    assert len(web_fingerprints) == HOSTS * PAGES
    distances = [hamming(a, b) for a, b in itertools.combinations(web_fingerprints.values(), 2)]
    print(f"\nminimum pairwise distance of generated pages: {min(distances)}")
    assert min(distances) > 3


def test_hamming() -> None:
    assert hamming(0, 2**64 - 1) == 64
    assert hamming(0b1011, 0b0001) == 2
    assert hamming(0b111, 0) == 3 and hamming(0b1111, 0) == 4


@pytest.mark.parametrize("value", [0, 1, 2**63 - 1, 2**63, 2**64 - 1, 0xDEADBEEF_12345678])
def test_signed_round_trip(value: int) -> None:
    signed = to_signed(value)
    assert -(2**63) <= signed < 2**63
    assert from_signed(signed) == value


def test_signed_conversion_rejects_out_of_range() -> None:
    for bad in (-1, 2**64):
        with pytest.raises(ValueError):
            to_signed(bad)
    for bad in (2**63, -(2**63) - 1):
        with pytest.raises(ValueError):
            from_signed(bad)


# --- table index ---------------------------------------------------------------------------

def test_table_index_matches_brute_force_on_generated_pages(
        web_fingerprints: dict[str, int]) -> None:
    assert index_pairs(web_fingerprints) == brute_force_pairs(web_fingerprints) == set()


def test_table_index_matches_brute_force_on_planted_near_copies(
        web_fingerprints: dict[str, int]) -> None:
    fingerprints = web_fingerprints | planted_fingerprints()
    expected = brute_force_pairs(fingerprints)
    assert len(expected) >= 100  # every planted copy, whatever its flips
    distances = {hamming(*(fingerprints[key] for key in pair)) for pair in expected}
    assert distances == {0, 1, 2, 3}
    assert index_pairs(fingerprints) == expected


def test_table_index_near_and_candidates() -> None:
    index = TableIndex()  # 10 tables: 5 blocks of 13, 13, 13, 13 and 12 bits, keyed by 2
    index.add("a", 0)
    index.add("b", 0b111)  # 3 bits, all in the last block
    index.add("c", 0b1111)  # 4 bits: shares prefixes, but too far
    # 4 bits in 4 blocks: the only block left alike is one, no table's two
    index.add("d", 1 << 63 | 1 << 50 | 1 << 37 | 1 << 24)
    assert index.candidates(0) == {"a", "b", "c"}
    assert index.near(0) == [("a", 0), ("b", 3)]
    assert index.near(0, max_distance=2) == [("a", 0)]
    index.add("b", 2**64 - 1)  # re-adding a key replaces its fingerprint
    assert index.near(0) == [("a", 0)]
    assert index.near(2**64 - 1) == [("b", 0)]
    with pytest.raises(ValueError):
        index.near(0, max_distance=4)


# --- visible text --------------------------------------------------------------------------

def test_visible_text_drops_markup_scripts_styles_and_comments() -> None:
    page = b"""<!DOCTYPE html><html><head><title>The  Title</title>
    <style>body { color: red }</style><script>var hidden = 1;</script></head>
    <body><!-- a comment --><h1>Hello</h1><p>First&nbsp;para<b>graph</b></p><p>Second</p>
    <noscript>enable js</noscript><template><p>later</p></template>
    <script type="application/ld+json">{"a": 1}</script>tail   text</body></html>"""
    assert page_text(page, HTML_TYPE) == "the title hello first para graph second tail text"


def test_visible_text_decodes_bytes_by_content_type_and_meta() -> None:
    assert page_text("<p>Ça  VA</p>".encode("latin-1"), "text/html; charset=latin-1") == "ça va"
    meta = '<meta charset="windows-1252"><p>Caf\u00e9</p>'.encode("windows-1252")
    assert page_text(meta) == "café"
    assert page_text("<p>\u00c9t\u00e9</p>".encode()) == "été"
    assert page_text(b'<?xml version="1.0" encoding="utf-8"?><html><p>x</p></html>') == "x"


@pytest.mark.parametrize("empty", [
    b"", b"   \n\t ", b"<!-- only a comment -->", b"<script>x()</script>", b"<html></html>",
])
def test_a_page_without_visible_text_has_none(empty: bytes) -> None:
    assert page_text(empty) == ""


def test_visible_text_of_broken_html_keeps_the_text() -> None:
    assert page_text(b"<p>unclosed <b>bold <i>text</p></div><<>") == "unclosed bold text <<>"


@given(st.binary(max_size=2000), st.one_of(st.none(), st.text(max_size=40)))
def test_never_raises_on_arbitrary_bytes(body: bytes, content_type: str | None) -> None:
    assert 0 <= simhash(page_text(body, content_type)) < 2**64


@given(st.text(max_size=2000))
def test_never_raises_on_arbitrary_text(words: str) -> None:
    assert 0 <= simhash(page_text(words.encode("utf-8", "surrogatepass"))) < 2**64
    assert 0 <= simhash(words) < 2**64
