"""MMR selection (search.md §8) against hand-computed steps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli.retrieve.mmr import mmr_select


def v(*xs: float) -> npt.NDArray[np.float64]:
    return np.array(xs, dtype=np.float64)


def select(
    scores: Sequence[float],
    vectors: Sequence[npt.NDArray[np.floating] | None],
    docs: Sequence[int],
    *,
    lam: float,
    pen: float,
    limit: int,
) -> list[int]:
    return mmr_select(scores, vectors, docs, mmr_lambda=lam, same_doc_penalty=pen, limit=limit)


def test_hand_computed_selection() -> None:
    # pool  score  vector      doc
    #  0    1.0    (1, 0)      1
    #  1    0.8    (0.8, 0.6)  2      cos(1,0) = 0.8
    #  2    0.6    (0, 1)      3      cos(2,0) = 0,   cos(2,1) = 0.6
    #  3    0.5    (0.6, 0.8)  4      cos(3,0) = 0.6, cos(3,1) = 0.96, cos(3,2) = 0.8
    # rel = (s - 0.5) / (1.0 - 0.5) = 1.0, 0.6, 0.2, 0.0;  λ = 0.5
    # step 1: 0.5·rel                    = 0.5, 0.3, 0.1, 0.0          → pick 0
    # step 2: 0.5·rel − 0.5·max cos(·,{0}) = 0.3−0.4, 0.1−0, 0−0.3
    #                                    = −0.1, 0.1, −0.3             → pick 2
    # step 3: max cos(·,{0,2}) = 0.8 (1), 0.8 (3): 0.3−0.4, 0−0.4 = −0.1, −0.4 → pick 1
    # step 4: 3
    scores = [1.0, 0.8, 0.6, 0.5]
    vectors = [v(1, 0), v(0.8, 0.6), v(0, 1), v(0.6, 0.8)]
    docs = [1, 2, 3, 4]
    kwargs = {"mmr_lambda": 0.5, "same_doc_penalty": 0.0}
    assert mmr_select(scores, vectors, docs, **kwargs, limit=4) == [0, 2, 1, 3]
    assert mmr_select(scores, vectors, docs, **kwargs, limit=3) == [0, 2, 1]
    assert mmr_select(scores, vectors, docs, **kwargs, limit=10) == [0, 2, 1, 3]


def test_lambda_one_keeps_relevance_order() -> None:
    scores = [1.0, 0.8, 0.6, 0.5]
    vectors = [v(1, 0), v(0.8, 0.6), v(0, 1), v(0.6, 0.8)]
    selected = mmr_select(
        scores, vectors, [1, 2, 3, 4], mmr_lambda=1.0, same_doc_penalty=0.0, limit=4
    )
    assert selected == [0, 1, 2, 3]


def test_same_doc_penalty() -> None:
    # rel = (s − 0.5) / 0.5 = 1.0, 0.8, 0.0; λ = 1 so only relevance and the penalty count.
    scores = [1.0, 0.9, 0.5]
    vectors = [v(1, 0), v(0, 1), v(1, 1)]
    docs = [7, 7, 8]
    # penalty 0: step 2 values 0.8 (pool 1) vs 0.0 (pool 2) → 1.
    assert select(scores, vectors, docs, lam=1.0, pen=0.0, limit=3) == [0, 1, 2]
    # penalty 0.9: step 2 values 0.8 − 0.9 = −0.1 (pool 1, same doc as 0) vs 0.0 (pool 2) → 2.
    assert select(scores, vectors, docs, lam=1.0, pen=0.9, limit=3) == [0, 2, 1]


def test_none_vectors_are_dropped_before_normalising() -> None:
    # Pool 0 has no stored vector. Over the rest, rel = (s − 0.1)/(0.9 − 0.1) = 1.0, 0.0, 0.5.
    # λ = 0.6, vectors orthogonal so similarity never counts: 0.6·rel → pick 1, then 3, then 2.
    scores = [5.0, 0.9, 0.1, 0.5]
    vectors = [None, v(1, 0, 0), v(0, 1, 0), v(0, 0, 1)]
    selected = mmr_select(
        scores, vectors, [1, 2, 3, 4], mmr_lambda=0.6, same_doc_penalty=0.0, limit=5
    )
    assert selected == [1, 3, 2]


def test_all_none_vectors() -> None:
    assert select([1.0], [None], [1], lam=0.7, pen=0.0, limit=5) == []


def test_equal_scores_tie_to_lower_index() -> None:
    # All rel = 0. Step 1 ties everywhere → pool 0. Step 2: −0.3·cos: pool 1 −0.3·1 = −0.3,
    # pool 2 −0.3·0 = 0 → 2. Then 1.
    scores = [0.5, 0.5, 0.5]
    vectors = [v(1, 0), v(2, 0), v(0, 3)]
    assert select(scores, vectors, [1, 2, 3], lam=0.7, pen=0.0, limit=3) == [0, 2, 1]


def test_spread_below_epsilon_is_flat() -> None:
    # 1e-8 < 1.1920929e-07: rel is 0 for all, so pool 0 wins the tie although pool 1 is higher.
    scores = [0.5, 0.5 + 1e-8]
    vectors = [v(1, 0), v(0, 1)]
    assert select(scores, vectors, [1, 2], lam=0.7, pen=0.0, limit=1) == [0]
    # A spread of 1e-6 is above the epsilon: pool 1 has rel 1.
    scores = [0.5, 0.5 + 1e-6]
    assert select(scores, vectors, [1, 2], lam=0.7, pen=0.0, limit=1) == [1]


def test_zero_norm_and_dimension_mismatch_have_cosine_zero() -> None:
    # rel = 1.0, 0.5, 0.0 (scores 3, 2, 1). λ = 0.5.
    # step 2 after pool 0 = (1, 0):  pool 1 = (0, 0) cos 0 → 0.25; pool 2 = (1, 0, 0), other
    # dimension, cos 0 → 0.0 → pick 1. A real cosine (pool 1 parallel) would have given −0.25.
    scores = [3.0, 2.0, 1.0]
    vectors = [v(1, 0), v(0, 0), v(1, 0, 0)]
    assert select(scores, vectors, [1, 2, 3], lam=0.5, pen=0.0, limit=3) == [0, 1, 2]
    # Same pool with pool 1 parallel to pool 0: step 2 values 0.25 − 0.5 = −0.25 vs 0.0 → 2.
    vectors = [v(1, 0), v(4, 0), v(1, 0, 0)]
    assert select(scores, vectors, [1, 2, 3], lam=0.5, pen=0.0, limit=3) == [0, 2, 1]


def test_negative_cosine_counts_as_the_max() -> None:
    # After picking pool 0 = (1, 0), pool 1 = (−1, 0) has max cos −1, which raises its value:
    # λ = 0.5, rel = 1, 0, 0 → pool 1: 0 − 0.5·(−1) = 0.5, pool 2 = (0, 1): 0 − 0 = 0 → 1.
    scores = [1.0, 0.0, 0.0]
    vectors = [v(1, 0), v(-1, 0), v(0, 1)]
    assert select(scores, vectors, [1, 2, 3], lam=0.5, pen=0.0, limit=2) == [0, 1]


def test_limit_zero_and_empty_pool() -> None:
    assert select([1.0], [v(1)], [1], lam=0.7, pen=0.0, limit=0) == []
    assert select([], [], [], lam=0.7, pen=0.0, limit=5) == []


def test_float32_vectors_accepted() -> None:
    vectors = [np.array([1, 0], dtype=np.float32), np.array([0, 1], dtype=np.float32)]
    assert select([1.0, 0.5], vectors, [1, 2], lam=0.7, pen=0.0, limit=2) == [0, 1]


def test_length_mismatch() -> None:
    with pytest.raises(ValueError):
        mmr_select([1.0], [], [1], mmr_lambda=0.7, same_doc_penalty=0.0, limit=1)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=100),
            st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3),
            st.booleans(),
        ),
        max_size=15,
    ),
    st.integers(min_value=1, max_value=20),
)
def test_lambda_one_is_relevance_order_property(
    pool: list[tuple[int, list[float], bool]], limit: int
) -> None:
    scores = [s / 10 for s, _, _ in pool]
    vectors = [v(*xs) if has else None for _, xs, has in pool]
    selected = mmr_select(
        scores, vectors, list(range(len(pool))), mmr_lambda=1.0, same_doc_penalty=0.0, limit=limit
    )
    kept = [i for i, vec in enumerate(vectors) if vec is not None]
    kept_scores = [scores[i] for i in kept]
    if kept_scores and max(kept_scores) - min(kept_scores) > 1.1920929e-07:
        expected = sorted(kept, key=lambda i: (-scores[i], i))[:limit]
    else:
        expected = kept[:limit]
    assert selected == expected
