"""low_confidence (search.md §12)."""

from __future__ import annotations

from groove_cli.retrieve.confidence import low_confidence


def test_flat_scores_are_low_confidence() -> None:
    # mean = (1.0 + 0.9 + 0.8) / 3 = 0.9; max / mean = 1.0 / 0.9 = 1.11 < 1.5.
    assert low_confidence([1.0, 0.9, 0.8], 1.5) is True


def test_a_standout_is_confident() -> None:
    # mean = (1.0 + 0.2 + 0.1) / 3 = 0.4333; max / mean = 2.31 ≥ 1.5.
    assert low_confidence([1.0, 0.2, 0.1], 1.5) is False


def test_ratio_boundary_is_strict() -> None:
    # mean = (1.0 + 0.0 + 0.5) / 3 = 0.5; max / mean = 2.0, not < 2.0.
    assert low_confidence([1.0, 0.0, 0.5], 2.0) is False
    assert low_confidence([1.0, 0.0, 0.5], 2.0000001) is True


def test_fewer_than_two_hits() -> None:
    assert low_confidence([], 1.5) is False
    assert low_confidence([0.5], 1.5) is False


def test_ratio_zero_disables() -> None:
    assert low_confidence([1.0, 1.0], 0.0) is False


def test_non_positive_mean() -> None:
    # Reranker logits: mean (−2 + −3) / 2 = −2.5 ≤ 0.
    assert low_confidence([-2.0, -3.0], 1.5) is False
    assert low_confidence([1.0, -1.0], 1.5) is False  # mean 0
    # mean (3 + −1) / 2 = 1; max / mean = 3 ≥ 1.5.
    assert low_confidence([3.0, -1.0], 1.5) is False
    assert low_confidence([3.0, -1.0], 3.5) is True
