"""Hit rule and per-query metrics against hand-computed values (eval.md §3, §4)."""

from __future__ import annotations

import math

import pytest

from groove_cli.evaluate.golden import Expected
from groove_cli.evaluate.metrics import (
    METRIC_VERSION,
    HitRecord,
    heading_matches,
    score_query,
)


def hits(*items: str | tuple[str, str | None]) -> list[HitRecord]:
    """Hits in rank order from `path` or `(path, heading)` items."""
    records = []
    for rank, item in enumerate(items, start=1):
        path, heading = (item, None) if isinstance(item, str) else item
        records.append(HitRecord(rank=rank, path=path, heading=heading, score=1.0 / rank))
    return records


def entry(path: str, heading: str | None = None) -> Expected:
    return Expected(path=path, heading=heading)


def d(rank: int) -> float:
    """The DCG discount of a 1-based rank."""
    return 1 / math.log2(rank + 1)


def test_metric_version() -> None:
    assert METRIC_VERSION == 1


def test_spec_example_two_answers() -> None:
    m = score_query([entry("a.md"), entry("b.md")], hits("x.md", "a.md", "b.md"), [1, 5])
    assert m.at_k["recall"] == {1: 0.0, 5: 1.0}
    assert m.whole["mrr"] == 0.5
    assert m.at_k["ndcg"][1] == 0.0
    assert m.at_k["ndcg"][5] == pytest.approx((d(2) + d(3)) / (d(1) + d(2)))
    assert round(m.at_k["ndcg"][5], 4) == 0.6934


def test_spec_example_heading_entry_consumed_first() -> None:
    expected = [entry("a.md"), entry("a.md", "Setup")]
    m = score_query(expected, hits(("a.md", "Setup"), ("a.md", "Other")), [5])
    assert m.at_k["ndcg"][5] == pytest.approx(1.0)
    # The greedy rule that consumed the path-only entry first would score DCG = 1 only:
    assert round(d(1) / (d(1) + d(2)), 3) == 0.613
    assert m.at_k["recall"][5] == 1.0
    assert m.whole["mrr"] == 1.0


def test_heading_rule() -> None:
    hit = HitRecord(rank=1, path="a.md", heading="  Data Flow ", score=0.5)
    assert heading_matches(entry("a.md"), hit)
    assert heading_matches(entry("a.md", "data flow"), hit)
    assert heading_matches(entry("a.md", "DATA FLOW  "), hit)
    assert not heading_matches(entry("a.md", "data  flow"), hit)  # inner whitespace kept
    assert not heading_matches(entry("b.md", "data flow"), hit)
    assert not heading_matches(entry("A.md"), hit)  # paths compare exactly
    no_heading = HitRecord(rank=1, path="a.md", heading=None, score=0.5)
    assert heading_matches(entry("a.md"), no_heading)
    assert not heading_matches(entry("a.md", "Data Flow"), no_heading)


def test_heading_specific_expectation_with_null_hit_heading() -> None:
    expected = [entry("a.md", "Setup")]
    m = score_query(expected, hits(("a.md", None), ("a.md", "setup")), [1, 2])
    assert m.at_k["recall"] == {1: 0.0, 2: 1.0}
    assert m.whole["mrr"] == 0.5
    assert m.at_k["ndcg"][1] == 0.0
    assert m.at_k["ndcg"][2] == pytest.approx(d(2) / d(1))


def test_multi_answer_query() -> None:
    expected = [entry("a.md"), entry("b.md"), entry("c.md")]
    ranked = hits("b.md", "x.md", "b.md", "c.md", "y.md")
    m = score_query(expected, ranked, [1, 3, 5])
    assert m.at_k["recall"] == {1: pytest.approx(1 / 3), 3: pytest.approx(1 / 3), 5: pytest.approx(2 / 3)}
    assert m.whole["mrr"] == 1.0
    # The second b.md hit finds its entry consumed and gains nothing (one-to-one).
    assert m.at_k["ndcg"][1] == pytest.approx(d(1) / d(1))
    assert m.at_k["ndcg"][3] == pytest.approx(d(1) / (d(1) + d(2) + d(3)))
    assert m.at_k["ndcg"][5] == pytest.approx((d(1) + d(4)) / (d(1) + d(2) + d(3)))


def test_one_hit_satisfies_several_entries_for_recall_but_one_for_ndcg() -> None:
    expected = [entry("a.md"), entry("a.md", "Setup")]
    m = score_query(expected, hits(("a.md", "Setup")), [1, 3])
    assert m.at_k["recall"] == {1: 1.0, 3: 1.0}
    assert m.at_k["ndcg"][1] == pytest.approx(1.0)  # IDCG@1 has one term
    assert m.at_k["ndcg"][3] == pytest.approx(d(1) / (d(1) + d(2)))


def test_lowest_index_among_path_only_entries() -> None:
    expected = [entry("a.md", "Other"), entry("a.md"), entry("a.md")]
    m = score_query(expected, hits(("a.md", "Setup"), ("a.md", "Other")), [2])
    # Hit 1 cannot take the "Other" entry, takes entry 1; hit 2 takes the heading entry 0.
    assert m.at_k["ndcg"][2] == pytest.approx(1.0)
    assert m.at_k["recall"][2] == 1.0


def test_k_larger_than_the_hit_list() -> None:
    m = score_query([entry("a.md"), entry("b.md")], hits("a.md"), [1, 10])
    assert m.at_k["recall"] == {1: 0.5, 10: 0.5}
    assert m.at_k["ndcg"][10] == pytest.approx(d(1) / (d(1) + d(2)))


def test_k_zero() -> None:
    m = score_query([entry("a.md")], hits("a.md"), [0, 1])
    assert m.at_k["recall"][0] == 0.0
    assert m.at_k["ndcg"][0] == 0.0
    assert m.at_k["recall"][1] == 1.0
    assert m.whole["mrr"] == 1.0


def test_rr_is_not_capped_at_any_k() -> None:
    m = score_query([entry("z.md")], hits(*[f"{i}.md" for i in range(7)], "z.md"), [1, 5])
    assert m.whole["mrr"] == 1 / 8
    assert m.at_k["recall"] == {1: 0.0, 5: 0.0}


def test_empty_expected_and_empty_hits() -> None:
    empty_e = score_query([], hits("a.md"), [1, 5])
    assert empty_e.at_k["recall"] == {1: 0.0, 5: 0.0}
    assert empty_e.whole["mrr"] == 0.0
    assert empty_e.at_k["ndcg"] == {1: 0.0, 5: 0.0}
    no_hits = score_query([entry("a.md")], [], [1, 5])
    assert no_hits.at_k["recall"] == {1: 0.0, 5: 0.0}
    assert no_hits.whole["mrr"] == 0.0
    assert no_hits.at_k["ndcg"] == {1: 0.0, 5: 0.0}
