"""Weighted Reciprocal Rank Fusion with a normalised score (search.md §5, config.md §4).

RRF: G. V. Cormack, C. L. A. Clarke and S. Büttcher, "Reciprocal Rank Fusion outperforms
Condorcet and individual Rank Learning Methods", SIGIR 2009. Each leg contributes
`w_leg / (rrf_k + rank)`; only ranks are used, so the bm25 and cosine scales never meet.
Dividing by the best reachable sum makes the score comparable across queries, which is what
`min_score` filters on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused candidate: the weighted RRF sum and its normalised score in (0, 1]."""

    chunk_id: int
    raw: float
    score: float


def weighted_rrf(legs: Sequence[tuple[float, Sequence[int]]], rrf_k: float) -> list[Fused]:
    """Fuse ranked id lists with weighted RRF.

    Args:
        legs: the legs that ran, vector leg first; each a weight > 0 and its filtered id list,
            best first (1-based rank = position + 1). A repeated id keeps its first rank.
        rrf_k: the RRF constant (≥ 1 in practice).

    Returns:
        Candidates sorted by raw sum descending, ties by chunk id ascending; `score = raw / max`
        with `max = Σ w_leg / (rrf_k + 1)` over the legs that returned at least one id, summed
        in leg order so a candidate first in every such leg scores exactly 1.0. Empty when no
        leg returned anything.

    Raises:
        ValueError: a weight is not finite and > 0 (a leg with weight 0 does not run).
    """
    raw: dict[int, float] = {}
    best = 0.0
    for weight, ids in legs:
        if not (math.isfinite(weight) and weight > 0):
            raise ValueError(f"leg weight must be finite and > 0, got {weight!r}")
        if not ids:
            continue
        best += weight / (rrf_k + 1)
        seen: set[int] = set()
        for position, chunk_id in enumerate(ids):
            if chunk_id in seen:
                continue
            seen.add(chunk_id)
            raw[chunk_id] = raw.get(chunk_id, 0.0) + weight / (rrf_k + (position + 1))
    ordered = sorted(raw.items(), key=lambda item: (-item[1], item[0]))
    return [Fused(chunk_id, value, value / best) for chunk_id, value in ordered]


def apply_min_score(fused: Sequence[Fused], min_score: float) -> list[Fused]:
    """Keep the prefix of `fused` (sorted by `weighted_rrf`) whose score is ≥ `min_score`."""
    kept: list[Fused] = []
    for candidate in fused:
        if candidate.score < min_score:
            break
        kept.append(candidate)
    return kept


def min_score_warning(
    mode: str, vector_weight: float, fts_weight: float, min_score: float
) -> str | None:
    """The §5 warning when `min_score` drops every candidate found by one leg alone, else None.

    Only in hybrid mode with both weights > 0 and `min_score > min(w) / Σw`.
    """
    if mode != "hybrid" or vector_weight <= 0 or fts_weight <= 0:
        return None
    ceiling = min(vector_weight, fts_weight) / (vector_weight + fts_weight)
    if min_score <= ceiling:
        return None
    return (
        f"min_score {min_score} exceeds {ceiling:.4f}, the highest score a candidate found by "
        "the lower-weighted leg alone can reach; in hybrid mode such candidates are always "
        "dropped"
    )
