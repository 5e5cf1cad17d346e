"""The metric registry (evaluate/metrics.py): every registered metric's scalar form (eval) and
vectorised form (tune's sweep) agree exactly on random ranked lists, graded and binary; and
the registry's names and JSON keys are what eval's documents use (eval.md §10)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli.evaluate.golden import Expected
from groove_cli.evaluate.metrics import (
    METRICS,
    HitRecord,
    Metric,
    Ranked,
    entry_matches,
    metric_blocks,
    metric_label,
    metric_names,
    parse_metric,
    query_metric_label,
)

PATHS = ("a.md", "b.md", "c.md")
HEADINGS = (None, "Setup", "setup ", "Other")

entries = st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(HEADINGS),
                             st.integers(min_value=0, max_value=3)), max_size=5)
hit_lists = st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(HEADINGS)), max_size=8)
k_lists = st.lists(st.integers(min_value=0, max_value=10), min_size=1, max_size=4, unique=True
                   ).map(sorted)


def vectorised_values(metric: Metric, relevant: list[Expected], hits: list[HitRecord],
                      k_values: list[int], *, graded: bool) -> list[float]:
    """The metric's vectorised form on one list, one value per k (one for a whole-list metric)."""
    rel = np.array([[entry_matches((e.path, e.heading), (h.path, h.heading)) for e in relevant]
                    for h in hits], dtype=bool).reshape(1, len(hits), len(relevant))
    has_heading = np.array([e.heading is not None for e in relevant], dtype=bool)
    grades = np.array([float(e.grade) for e in relevant]) if graded else None
    values = metric.vectorised(Ranked(rel, has_heading, grades), k_values)
    if metric.at_k:
        assert values.shape == (len(k_values), 1)
        return [float(values[i, 0]) for i in range(len(k_values))]
    assert values.shape == (1,)
    return [float(values[0])]


def scalar_values(metric: Metric, relevant: list[Expected], hits: list[HitRecord],
                  k_values: list[int]) -> list[float]:
    ks = k_values if metric.at_k else [0]
    return [metric.scalar(relevant, hits, k) for k in ks]


@pytest.mark.parametrize("metric", METRICS, ids=[m.name for m in METRICS])
@settings(max_examples=150, deadline=None)
@given(drawn=entries, ranked=hit_lists, k_values=k_lists)
def test_scalar_and_vectorised_forms_agree(metric: Metric, drawn: list[tuple[str, str | None, int]],
                                           ranked: list[tuple[str, str | None]],
                                           k_values: list[int]) -> None:
    expected = [Expected(p, h, g) for p, h, g in drawn]
    relevant = [e for e in expected if e.grade > 0]
    hits = [HitRecord(i + 1, p, h, 0.0) for i, (p, h) in enumerate(ranked)]
    # graded: the grades are the gains (a binary metric ignores them)
    assert vectorised_values(metric, relevant, hits, k_values, graded=True) == \
        scalar_values(metric, relevant, hits, k_values)
    # binary, as tune scores (tune.md §2): every relevant entry has gain 1
    binary = [Expected(e.path, e.heading, 1) for e in relevant]
    assert vectorised_values(metric, relevant, hits, k_values, graded=False) == \
        scalar_values(metric, binary, hits, k_values)
    if not metric.graded:  # a binary metric ignores the grades
        assert scalar_values(metric, relevant, hits, k_values) == \
            scalar_values(metric, binary, hits, k_values)


def test_graded_ndcg_differs_from_binary_on_a_graded_example() -> None:
    """The property above cannot pass vacuously: grades change nDCG (a grade-3 entry found
    second, a grade-1 entry first: DCG = 1 + 3/log2(3), IDCG = 3 + 1/log2(3))."""
    ndcg = parse_metric("ndcg@2")[0]
    relevant = [Expected("a.md", None, 3), Expected("b.md", None, 1)]
    hits = [HitRecord(1, "b.md", None, 0.0), HitRecord(2, "a.md", None, 0.0)]
    d3 = 1 / np.log2(3)
    expected = (1 + 3 * d3) / (3 + d3)
    assert vectorised_values(ndcg, relevant, hits, [2], graded=True) == \
        pytest.approx([expected])
    assert vectorised_values(ndcg, relevant, hits, [2], graded=False) == [1.0]


def test_names_keys_and_labels() -> None:
    assert metric_names([1, 5]) == ["recall@1", "recall@5", "mrr", "ndcg@1", "ndcg@5"]
    assert [metric_label(n) for n in metric_names([10])] == ["recall@10", "MRR", "nDCG@10"]
    assert [query_metric_label(m.query_name(3)) for m in METRICS] == ["recall@3", "RR", "nDCG@3"]
    assert metric_blocks([1, 5], lambda m, k: f"{m.name}{k}") == {
        "recall_at_k": {"1": "recall1", "5": "recall5"}, "mrr": "mrrNone",
        "ndcg_at_k": {"1": "ndcg1", "5": "ndcg5"}}
    assert list(metric_blocks([1], lambda m, k: 0, key="query")) == [
        "recall_at_k", "reciprocal_rank", "ndcg_at_k"]
    for bad in ("mrr@5", "ndcg", "recall@", "recall@x", "map@10"):
        with pytest.raises(ValueError):
            parse_metric(bad)
    names = [m.name for m in METRICS]
    assert len(set(names)) == len(names)
    assert len({m.aggregate_key for m in METRICS}) == len({m.query_key for m in METRICS}) == \
        len(METRICS)
