"""Weighted RRF and the normalised fused score (search.md §5, config.md §4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli.retrieve.fuse import Fused, apply_min_score, min_score_warning, weighted_rrf

K = 60.0


def by_id(fused: list[Fused]) -> dict[int, Fused]:
    return {f.chunk_id: f for f in fused}


def test_plain_rrf_hand_computed() -> None:
    # vector: 10, 20, 30   fts: 30, 40, 10
    fused = weighted_rrf([(1.0, [10, 20, 30]), (1.0, [30, 40, 10])], K)
    best = 1 / (60 + 1) + 1 / (60 + 1)
    expected = {
        10: 1 / (60 + 1) + 1 / (60 + 3),
        30: 1 / (60 + 3) + 1 / (60 + 1),
        20: 1 / (60 + 2),
        40: 1 / (60 + 2),
    }
    # 10 and 30 tie on raw (up to summation order), as do 20 and 40: ties by chunk id.
    assert [f.chunk_id for f in fused] == [10, 30, 20, 40]
    for chunk_id, raw in expected.items():
        assert by_id(fused)[chunk_id].raw == pytest.approx(raw, rel=1e-15)
        assert by_id(fused)[chunk_id].score == pytest.approx(raw / best, rel=1e-15)


def test_sum_is_in_leg_order() -> None:
    fused = by_id(weighted_rrf([(1.0, [10, 20, 30]), (1.0, [30, 40, 10])], K))
    # Exactly the float64 sum vector-term first, not merely approximately.
    assert fused[10].raw == 1 / (60 + 1) + 1 / (60 + 3)
    assert fused[30].raw == 1 / (60 + 3) + 1 / (60 + 1)


def test_weighted_rrf_hand_computed() -> None:
    fused = by_id(weighted_rrf([(1.2, [1, 2]), (0.8, [2, 3])], K))
    best = 1.2 / (60 + 1) + 0.8 / (60 + 1)
    assert fused[1].raw == 1.2 / (60 + 1)
    assert fused[2].raw == 1.2 / (60 + 2) + 0.8 / (60 + 1)
    assert fused[3].raw == 0.8 / (60 + 2)
    assert fused[2].score == (1.2 / (60 + 2) + 0.8 / (60 + 1)) / best


def test_first_in_every_leg_scores_exactly_one() -> None:
    for weights in [(1.0, 1.0), (1.2, 0.8), (0.3, 7.0)]:
        fused = weighted_rrf([(weights[0], [5, 6]), (weights[1], [5, 7])], K)
        assert fused[0] == Fused(5, weights[0] / (K + 1) + weights[1] / (K + 1), 1.0)


def _score_of(vector_rank: int | None, fts_rank: int | None, wv: float, wf: float) -> float:
    """Score of chunk 0 placed at the given ranks; both legs return candidates (filler ids)."""
    vector = [100 + i for i in range(10)]
    fts = [200 + i for i in range(10)]
    if vector_rank is not None:
        vector[vector_rank - 1] = 0
    if fts_rank is not None:
        fts[fts_rank - 1] = 0
    return by_id(weighted_rrf([(wv, vector), (wf, fts)], K))[0].score


def test_config_worked_values_equal_weights() -> None:
    assert _score_of(1, 1, 1.0, 1.0) == 1.0
    assert _score_of(1, None, 1.0, 1.0) == pytest.approx(0.5, abs=1e-15)
    assert _score_of(None, 1, 1.0, 1.0) == pytest.approx(0.5, abs=1e-15)
    # (1/63 + 1/67) / (2/61) = 0.93934…
    assert _score_of(3, 7, 1.0, 1.0) == pytest.approx((1 / 63 + 1 / 67) / (2 / 61))
    assert round(_score_of(3, 7, 1.0, 1.0), 4) == 0.9394


def test_config_worked_values_balanced() -> None:
    assert _score_of(1, None, 1.2, 0.8) == pytest.approx(0.6, abs=1e-15)
    assert _score_of(None, 1, 1.2, 0.8) == pytest.approx(0.4, abs=1e-15)
    # (1.2/63 + 0.8/67) / (2/61) = 0.94512…
    assert _score_of(3, 7, 1.2, 0.8) == pytest.approx((1.2 / 63 + 0.8 / 67) / (2 / 61))
    assert round(_score_of(3, 7, 1.2, 0.8), 4) == 0.9451


def test_leg_without_candidates_does_not_count_in_max() -> None:
    # FTS returned nothing: max = 1/(60+1) from the vector leg alone, so its first scores 1.0.
    fused = weighted_rrf([(1.0, [7, 8]), (1.0, [])], K)
    assert fused == [Fused(7, 1 / 61, 1.0), Fused(8, 1 / 62, (1 / 62) / (1 / 61))]


def test_single_leg_is_plain_rank_order() -> None:
    fused = weighted_rrf([(1.0, [9, 3, 5])], K)
    assert [f.chunk_id for f in fused] == [9, 3, 5]


def test_no_candidates() -> None:
    assert weighted_rrf([(1.0, []), (1.0, [])], K) == []
    assert weighted_rrf([], K) == []


def test_ties_by_chunk_id() -> None:
    # Each id is first in one leg with equal weights: equal raw, so ascending chunk id.
    fused = weighted_rrf([(1.0, [42]), (1.0, [7])], K)
    assert [f.chunk_id for f in fused] == [7, 42]
    assert fused[0].raw == fused[1].raw == 1 / 61


def test_repeated_id_keeps_first_rank() -> None:
    fused = weighted_rrf([(1.0, [4, 5, 4])], K)
    assert by_id(fused)[4].raw == 1 / 61
    assert len(fused) == 2


@pytest.mark.parametrize("weight", [0.0, -1.0, float("nan"), float("inf")])
def test_weight_must_be_positive_and_finite(weight: float) -> None:
    with pytest.raises(ValueError):
        weighted_rrf([(weight, [1])], K)


ids = st.lists(st.integers(min_value=0, max_value=60), max_size=30, unique=True)
weights = st.floats(min_value=0.01, max_value=1e6, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(ids, ids, weights, weights, st.floats(min_value=1.0, max_value=1e6))
def test_score_bounds(
    vector: list[int], fts: list[int], wv: float, wf: float, rrf_k: float
) -> None:
    fused = weighted_rrf([(wv, vector), (wf, fts)], rrf_k)
    assert {f.chunk_id for f in fused} == set(vector) | set(fts)
    for f in fused:
        assert 0.0 < f.score <= 1.0
    # Sorted by raw desc, ties by id asc.
    keys = [(-f.raw, f.chunk_id) for f in fused]
    assert keys == sorted(keys)
    # A candidate first in every leg that returned something scores exactly 1.
    if vector and fts and vector[0] == fts[0]:
        assert fused[0].score == 1.0
    if vector and not fts:
        assert fused[0].score == 1.0


@settings(max_examples=200, deadline=None)
@given(ids, ids, st.floats(min_value=0.0, max_value=1.0))
def test_min_score_keeps_a_prefix(vector: list[int], fts: list[int], floor: float) -> None:
    fused = weighted_rrf([(1.0, vector), (1.0, fts)], K)
    kept = apply_min_score(fused, floor)
    assert kept == fused[: len(kept)]
    assert all(f.score >= floor for f in kept)
    assert all(f.score < floor for f in fused[len(kept) :])


def test_min_score_prefix_hand_computed() -> None:
    # Chunk 1 is in both legs (score 1.0); 2 and 3 only in one leg, each ≤ 0.5.
    fused = weighted_rrf([(1.0, [1, 2]), (1.0, [1, 3])], K)
    assert [f.chunk_id for f in apply_min_score(fused, 0.5)] == [1]
    assert [f.chunk_id for f in apply_min_score(fused, 0.49)] == [1, 2, 3]
    # 2 scores (1/62) / (2/61) = 0.491935…: exactly at its score it is kept.
    assert [f.chunk_id for f in apply_min_score(fused, fused[1].score)] == [1, 2, 3]
    assert apply_min_score(fused, 0.0) == fused
    assert apply_min_score([], 0.3) == []


def test_min_score_warning_text() -> None:
    assert min_score_warning("hybrid", 1.0, 1.0, 0.6) == (
        "min_score 0.6 exceeds 0.5000, the highest score a candidate found by the "
        "lower-weighted leg alone can reach; in hybrid mode such candidates are always dropped"
    )
    # balanced: min(1.2, 0.8) / 2.0 = 0.4
    assert min_score_warning("hybrid", 1.2, 0.8, 0.45) == (
        "min_score 0.45 exceeds 0.4000, the highest score a candidate found by the "
        "lower-weighted leg alone can reach; in hybrid mode such candidates are always dropped"
    )


@pytest.mark.parametrize(
    ("mode", "wv", "wf", "floor"),
    [
        ("hybrid", 1.0, 1.0, 0.5),  # not above 0.5
        ("hybrid", 1.2, 0.8, 0.4),  # balanced preset's bound is exactly 0.4
        ("hybrid", 1.2, 0.8, 0.3),
        ("hybrid", 0.0, 1.0, 0.9),  # one leg off
        ("hybrid", 1.0, 0.0, 0.9),
        ("vector", 1.0, 1.0, 0.9),
        ("fts", 1.0, 1.0, 0.9),
    ],
)
def test_min_score_warning_absent(mode: str, wv: float, wf: float, floor: float) -> None:
    assert min_score_warning(mode, wv, wf, floor) is None
