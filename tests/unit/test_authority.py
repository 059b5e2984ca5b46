"""Host authority (PageRank over the host graph, log-scaled) and the priority formula."""

from __future__ import annotations

import numpy as np
import pytest

from crawlapp.core.authority import authority, pagerank, scaled
from crawlapp.core.priority import (
    NEW_FRESHNESS,
    REFRESH_FRESHNESS,
    Weights,
    freshness,
    link_priority,
)
from crawlapp.core.settings import SettingsError, load_settings


def edges(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    array = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return array[:, 0], array[:, 1]


def test_a_star_hub_ranks_first_and_the_leaves_are_equal() -> None:
    sources, targets = edges([(leaf, 0) for leaf in range(1, 6)])
    rank = pagerank(sources, targets, 6)
    assert rank.sum() == pytest.approx(1.0)
    assert int(rank.argmax()) == 0
    assert np.allclose(rank[1:], rank[1])
    score = authority(sources, targets, 6)
    assert score[0] == 1.0 and np.all(score[1:] == 0.0)  # the hub 1, hosts nothing links to 0


def test_a_chain_ranks_by_position() -> None:
    # 0 -> 1 -> 2 -> 3: rank flows down the chain (3 is dangling, and gives back evenly)
    sources, targets = edges([(0, 1), (1, 2), (2, 3)])
    rank = pagerank(sources, targets, 4)
    assert rank.sum() == pytest.approx(1.0)
    assert rank[0] < rank[1] < rank[2] < rank[3]
    score = authority(sources, targets, 4)
    assert score[0] == 0.0 and score[3] == 1.0 and 0 < score[1] < score[2] < 1


def test_dangling_nodes_keep_the_total_and_an_isolated_host_scores_zero() -> None:
    # 3 links nowhere; 4 is in the graph but nothing links to it nor from it
    sources, targets = edges([(0, 1), (1, 0), (2, 0), (2, 3)])
    rank = pagerank(sources, targets, 5)
    assert rank.sum() == pytest.approx(1.0)
    assert rank[0] > rank[1] > rank[3] > rank[4]
    assert rank[2] == pytest.approx(rank[4])  # no inbound link: the teleport share only
    assert authority(sources, targets, 5)[4] == 0.0


def test_matches_the_google_matrix_solved_directly() -> None:
    # A -> B, A -> C, B -> C, C -> A, D -> C, E dangling: solved by hand, A = 0.128625 /
    # 0.3316875 for the first four alone; here, against the dense Google matrix's fixed point
    pairs = [(0, 1), (0, 2), (1, 2), (2, 0), (3, 2)]
    n, d = 5, 0.85
    links = np.zeros((n, n))
    for s, t in pairs:
        links[t, s] = 1.0
    out = links.sum(axis=0)
    walk = np.where(out > 0, links / np.where(out > 0, out, 1), 1.0 / n)  # dangling: anywhere
    google = d * walk + (1 - d) / n
    expected = np.linalg.solve(np.eye(n) - google + np.ones((n, n)) / n, np.ones(n) / n)
    assert np.allclose(pagerank(*edges(pairs), n), expected, atol=1e-8)
    # the three-host cycle alone, by hand
    assert np.allclose(pagerank(*edges(pairs[:4]), 3),
                       [0.128625 / 0.3316875, 0.05 + 0.425 * 0.128625 / 0.3316875,
                        0.0925 + 0.78625 * 0.128625 / 0.3316875], atol=1e-8)


def test_an_empty_graph_and_a_graph_where_no_host_stands_out() -> None:
    none = np.zeros(0, np.int64)
    assert authority(none, none, 0).size == 0
    sources, targets = edges([(0, 1), (1, 0)])
    assert authority(sources, targets, 2).tolist() == [0.0, 0.0]
    assert scaled(np.array([0.25, 0.5, 0.25])).tolist() == [0.0, 1.0, 0.0]


def test_the_priority_formula_weighs_and_normalises() -> None:
    weights = Weights()  # the design's 0.4, 0.3, 0.3
    assert weights.priority(1.0, 1.0, 1.0) == 1.0
    assert weights.priority(0.0, 0.0, 0.0) == 0.0
    assert weights.priority(0.5, NEW_FRESHNESS, 0.8) == round(0.4 * 0.5 + 0.3 * 0.5 + 0.3 * 0.8, 4)
    # an authoritative host's page beats an equally linked page of an unknown host
    context = link_priority(2, False, "Story")
    assert weights.priority(0.9, NEW_FRESHNESS, context) > weights.priority(0.0, NEW_FRESHNESS,
                                                                             context)
    # weights are relative: doubled weights give the same priority, in [0, 1]
    assert Weights(0.8, 0.6, 0.6).priority(0.3, 0.2, 0.9) == weights.priority(0.3, 0.2, 0.9)
    assert Weights(0, 0, 1).priority(1.0, 1.0, 0.64) == 0.64  # link context alone: as before


def test_freshness_of_new_and_recrawled_pages() -> None:
    assert freshness(0.0, None) == NEW_FRESHNESS
    assert freshness(1800.0, 3600.0) == 0.125
    assert freshness(7200.0, 3600.0) == REFRESH_FRESHNESS < NEW_FRESHNESS  # capped, below new
    assert freshness(-5.0, 3600.0) == 0.0  # a clock step back never goes negative


@pytest.mark.parametrize("raw", ["0.4,0.3", "a,b,c", "-0.1,0.5,0.6", "0,0,0", "inf,1,1",
                                 "nan,0.3,0.3"])
def test_bad_weights_are_a_settings_error_naming_the_variable(raw: str) -> None:
    with pytest.raises(SettingsError, match="CRAWL_PRIORITY_WEIGHTS"):
        load_settings({"CRAWL_PRIORITY_WEIGHTS": raw})


def test_weights_and_interval_defaults_and_values() -> None:
    assert load_settings({}).priority_weights == Weights(0.4, 0.3, 0.3)
    assert load_settings({}).authority_interval == 600.0
    settings = load_settings({"CRAWL_PRIORITY_WEIGHTS": " 1, 0,0 ",
                              "CRAWL_AUTHORITY_INTERVAL": "3"})
    assert settings.priority_weights == Weights(1.0, 0.0, 0.0)
    assert settings.authority_interval == 3.0
    with pytest.raises(SettingsError, match="CRAWL_AUTHORITY_INTERVAL"):
        load_settings({"CRAWL_AUTHORITY_INTERVAL": "0"})
