"""Selection (tune.md §6) and nested leave-one-query-out cross-validation (§7).

Sign test: W. J. Dixon and A. M. Mood, "The statistical sign test", JASA 41(236), 1946.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from groove_cli.arrays import FloatArray
from groove_cli.evaluate.tune.grid import (
    CJK_WEIGHTS,
    DEFAULT_K_INDEX,
    DEFAULT_SCORE_CJK_INDEX,
    LENGTH_RULE_INDEX,
    LENGTH_TIERS,
    MIN_SCORES,
    PLATEAU_EPS,
    RERUN_SPACES,
    RRF_K_VALUES,
    RRF_METHOD_INDEX,
    SCORE_ALPHAS,
    SCORE_CJK_WEIGHTS,
    TIE_EPS,
    WEIGHT_RATIOS,
    Space,
    default_index,
    grid,
    grid_indices,
    weight_sets,
)

# --------------------------------------------------------------------------- selection (§6)


@dataclass(frozen=True, slots=True)
class Selection:
    """A coordinate-descent result with the means it was chosen from."""

    choice: int
    phase1_choice: int
    phase1: tuple[int, ...]
    phase2: tuple[int, ...]
    means: FloatArray


def phase1_conditions(space: Space) -> tuple[int, ...]:
    """Fusion: the 64 weight sets at k = 60; retrieval: the 15 (ratio, CJK weight) pairs at
    min_score 0; fusion-method: the built-in RRF, every one-for-all score_alpha and the
    built-in length rule at each word-boundary tier, at the built-in score_cjk_weight;
    feedback and per-note: every value of their one axis."""
    if space in RERUN_SPACES:
        return tuple(range(len(grid(space))))
    if space == "fusion-method":
        return (RRF_METHOD_INDEX, *(1 + a * len(SCORE_CJK_WEIGHTS) + DEFAULT_SCORE_CJK_INDEX
                                        for a in range(len(SCORE_ALPHAS))),
                *(LENGTH_RULE_INDEX + t * len(SCORE_CJK_WEIGHTS) + DEFAULT_SCORE_CJK_INDEX
                  for t in range(len(LENGTH_TIERS))))
    if space == "fusion":
        return tuple(w * len(RRF_K_VALUES) + DEFAULT_K_INDEX for w in range(len(weight_sets())))
    return tuple(p * len(MIN_SCORES) for p in range(len(WEIGHT_RATIOS) * len(CJK_WEIGHTS)))


def phase2_conditions(space: Space, phase1_choice: int) -> tuple[int, ...]:
    """Fusion: the 6 k values at the chosen weights; retrieval: the 4 floors at the chosen
    weights; fusion-method: every score_cjk_weight at the chosen alpha or length rule (RRF:
    itself); feedback and per-note: the first phase's choice alone (one axis)."""
    if space in RERUN_SPACES:
        return (phase1_choice,)
    if space == "fusion-method":
        if phase1_choice == RRF_METHOD_INDEX:
            return (RRF_METHOD_INDEX,)
        base = phase1_choice - (phase1_choice - 1) % len(SCORE_CJK_WEIGHTS)
        return tuple(base + i for i in range(len(SCORE_CJK_WEIGHTS)))
    size = len(RRF_K_VALUES) if space == "fusion" else len(MIN_SCORES)
    base = phase1_choice - phase1_choice % size
    return tuple(base + i for i in range(size))


def _centre_distance(space: Space, index: int) -> float:
    centre = {"fusion": (1.5, 1.5, 1.5, 2.5), "retrieval": (2.0, 1.0, 0.0),
              "fusion-method": (1.0, 2.5, 1.0, 0.0), "feedback": (0.0,),
              "per-note": (0.0,)}[space]
    return sum(abs(i - c) for i, c in zip(grid_indices(space, index), centre, strict=True))


def _plateau_pick(means: FloatArray, candidates: Sequence[int], start: int, space: Space) -> int:
    best = float(means[start])
    plateau = [start]
    for index in candidates:
        score = float(means[index])
        if score > best + PLATEAU_EPS:
            best, plateau = score, [index]
        elif abs(score - best) <= PLATEAU_EPS and index not in plateau:
            plateau.append(index)
    default = default_index(space)
    if default in plateau:
        return default
    return min(plateau, key=lambda i: (_centre_distance(space, i), i))


def select_detail(scores: FloatArray, subset: Sequence[int], space: Space) -> Selection:
    """Coordinate descent over the mean nDCG@5 of `subset` (columns of `scores`), with details."""
    default = default_index(space)
    if len(subset) == 0:
        means = np.zeros(scores.shape[0])
        return Selection(default, default, phase1_conditions(space),
                         phase2_conditions(space, default), means)
    means = scores[:, list(subset)].mean(axis=1)
    phase1 = phase1_conditions(space)
    first = _plateau_pick(means, phase1, default, space)
    phase2 = phase2_conditions(space, first)
    return Selection(_plateau_pick(means, phase2, first, space), first, phase1, phase2, means)


def select(scores: FloatArray, subset: Sequence[int], space: Space) -> int:
    """The condition index coordinate descent picks for `subset` (§6); the default for ∅."""
    return select_detail(scores, subset, space).choice


# --------------------------------------------------------------------------- cross-validation (§7)


@dataclass(frozen=True, slots=True)
class SignTest:
    """Counts of improved / degraded / tied folds and the two-sided exact sign-test p."""

    improved: int
    degraded: int
    tied: int
    p_value: float


def sign_test(diffs: Sequence[float]) -> SignTest:
    """`p = min(1, 2 × Σ_{i=0..min(pos,neg)} C(n, i) / 2^n)` with n = pos + neg (ties dropped)."""
    pos = sum(1 for d in diffs if d > TIE_EPS)
    neg = sum(1 for d in diffs if d < -TIE_EPS)
    n = pos + neg
    tail = sum(math.comb(n, i) for i in range(min(pos, neg) + 1))
    return SignTest(pos, neg, len(diffs) - n, min(1.0, 2 * tail / 2**n))


def sample_sd(values: Sequence[float]) -> float:
    """Standard deviation with n − 1 (exact arithmetic, so equal values give 0); NaN below 2."""
    if len(values) < 2:
        return math.nan
    return statistics.stdev(values)


def paired_se(diffs: Sequence[float]) -> float:
    """`SD / sqrt(N)` of the held-out differences; ∞ when N < 2."""
    if len(diffs) < 2:
        return math.inf
    return sample_sd(diffs) / math.sqrt(len(diffs))


@dataclass(frozen=True, slots=True)
class LooResult:
    """Nested leave-one-query-out CV over the effective queries."""

    refit: int
    fold_queries: tuple[int, ...]
    selections: tuple[int, ...]
    held_out_diffs: tuple[float, ...]
    mean_delta: float
    sd: float
    paired_se: float
    stability: float
    sign_test: SignTest


def loo_cv(scores: FloatArray, effective: Sequence[int], space: Space) -> LooResult:
    """Refit on all effective queries; score each fold's selection on its held-out query (§7)."""
    queries = tuple(effective)
    default = default_index(space)
    refit = select(scores, queries, space)
    selections: list[int] = []
    diffs: list[float] = []
    for j in queries:
        chosen = select(scores, [q for q in queries if q != j], space)
        selections.append(chosen)
        diffs.append(float(scores[chosen, j] - scores[default, j]))
    n = len(diffs)
    return LooResult(
        refit=refit,
        fold_queries=queries,
        selections=tuple(selections),
        held_out_diffs=tuple(diffs),
        mean_delta=statistics.fmean(diffs) if n else math.nan,
        sd=sample_sd(diffs),
        paired_se=paired_se(diffs),
        stability=sum(1 for s in selections if s == refit) / n if n else 0.0,
        sign_test=sign_test(diffs),
    )


