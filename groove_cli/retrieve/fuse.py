"""Fusion of the legs' lists with a normalised score (search.md §5, config.md §4): weighted
Reciprocal Rank Fusion (`method = "rrf"`) or score fusion (`method = "score"`, the default).

RRF: G. V. Cormack, C. L. A. Clarke and S. Büttcher, "Reciprocal Rank Fusion outperforms
Condorcet and individual Rank Learning Methods", SIGIR 2009. Each leg contributes
`w_leg / (rrf_k + rank)`; only ranks are used, so the bm25 and cosine scales never meet.
Dividing by the best reachable sum makes the score comparable across queries, which is what
`min_score` filters on.

Score fusion (a weighted CombSUM; E. A. Fox and J. A. Shaw, "Combination of Multiple Searches",
TREC-2, 1994) adds each leg's normalised score instead: a full-text leg's bm25 magnitude divided
by the best of its list, the vector leg's cosines min-max scaled within its list, 0 where a leg
did not return the candidate.

`weighted_rrf` and `score_fuse` fuse one search; `fuse_rows` and `score_fuse_rows` fuse one
query's lists under many conditions at once (numpy, for tune's sweep) with the same arithmetic
term for term, so both give the same ranking and the same scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from groove_cli.config import (
    DEFAULT_LEG_WEIGHT,
    DEFAULT_MIN_SCORE,
    DEFAULT_RRF_K,
)

if TYPE_CHECKING:  # numpy is imported only where many conditions are fused

    from groove_cli.arrays import BoolArray, FloatArray, IntArray


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused candidate: the raw fused sum and its normalised score in [0, 1]."""

    chunk_id: int
    raw: float
    score: float
    leg_scores: tuple[float | None, ...] = ()
    """Score fusion: the candidate's normalised score in each leg given to `score_fuse`, in
    that order (None: the leg did not return it); empty for weighted RRF."""


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


class ScoredLeg(NamedTuple):
    """One leg's list for `score_fuse`: its weight, ids best first, their scores (higher =
    better), and whether the scores are min-max scaled (`spread`: the vector leg's cosines)
    or divided by the list's best (a full-text leg's bm25 magnitudes)."""

    weight: float
    ids: Sequence[int]
    scores: Sequence[float]
    spread: bool = False


def normalised(scores: Sequence[float], spread: bool) -> list[float]:
    """A leg's scores on [0, 1] (search.md §5): `spread`: `(s − min) / (max − min)` (1.0 when
    all are equal); else `s / max` (0.0 when max ≤ 0)."""
    if not scores:
        return []
    top = max(scores)
    if spread:
        low = min(scores)
        return [(s - low) / (top - low) if top > low else 1.0 for s in scores]
    return [s / top if top > 0 else 0.0 for s in scores]


def _first_seen(leg: ScoredLeg) -> dict[int, float]:
    """The leg's normalised score per id; a repeated id keeps its first (best) place."""
    found: dict[int, float] = {}
    for chunk_id, value in zip(leg.ids, normalised(leg.scores, leg.spread), strict=True):
        found.setdefault(chunk_id, value)
    return found


def score_fuse(legs: Sequence[ScoredLeg]) -> list[Fused]:
    """Fuse scored lists by a weighted sum of normalised scores (search.md §5).

    Args:
        legs: the legs that ran, vector leg first, the full-text legs in registry order; a leg
            of weight 0 adds nothing and finds nothing.

    Returns:
        Candidates sorted by raw sum `Σ w_leg · norm_leg` (a leg that did not return the
        candidate adds 0) descending, ties by chunk id ascending; `score = raw / max` with
        `max = Σ w_leg` over the weighted legs that returned at least one id, summed in leg
        order, so a candidate best in every such leg scores exactly 1.0. Empty when no
        weighted leg returned anything.

    Raises:
        ValueError: a weight is not finite and ≥ 0, or a leg's ids and scores differ in length.
    """
    raw: dict[int, float] = {}
    per_leg: list[dict[int, float]] = []
    best = 0.0
    for leg in legs:
        if not (math.isfinite(leg.weight) and leg.weight >= 0):
            raise ValueError(f"leg weight must be finite and >= 0, got {leg.weight!r}")
        if len(leg.ids) != len(leg.scores):
            raise ValueError("a leg's ids and scores differ in length")
        found = _first_seen(leg) if leg.weight > 0 else {}
        per_leg.append(found)
        if not found:
            continue
        best += leg.weight
        for chunk_id, value in found.items():
            raw[chunk_id] = raw.get(chunk_id, 0.0) + leg.weight * value
    ordered = sorted(raw.items(), key=lambda item: (-item[1], item[0]))
    return [Fused(chunk_id, value, value / best, tuple(f.get(chunk_id) for f in per_leg))
            for chunk_id, value in ordered]


def apply_min_score(fused: Sequence[Fused], min_score: float) -> list[Fused]:
    """Keep the prefix of `fused` (sorted by `weighted_rrf` or `score_fuse`) whose score is
    ≥ `min_score`."""
    kept: list[Fused] = []
    for candidate in fused:
        if candidate.score < min_score:
            break
        kept.append(candidate)
    return kept


def per_note(fused: Sequence[Fused], note_of: Mapping[int, int], cap: int) -> list[Fused]:
    """`fused` without each note's chunks after its first `cap` (search.md §5.2); `note_of`
    maps a chunk id to its note (document id); 0 keeps every chunk."""
    if cap <= 0:
        return list(fused)
    seen: dict[int, int] = {}
    kept: list[Fused] = []
    for candidate in fused:
        note = note_of.get(candidate.chunk_id)
        if note is not None:
            seen[note] = seen.get(note, 0) + 1
            if seen[note] > cap:
                continue
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


# --------------------------------------------------------------------------- many conditions at once (tune)


@dataclass(frozen=True, slots=True)
class FusionRows:
    """Distinct fused orderings of a query: one per (leg weights, full-text list, rrf_k).

    `leg_weights` holds, per weight key of the full-text legs (`fts_weight`, `cjk_weight`, …:
    `Leg.weight`), one weight per row; row r uses the full-text lists of weight set
    `fts_list[r]`.
    """

    vector_weight: FloatArray
    leg_weights: Mapping[str, FloatArray]
    fts_list: IntArray
    rrf_k: FloatArray


@dataclass(frozen=True, slots=True)
class FusedRows:
    """Top `limit` of every row: ids (−1 padding), raw RRF sums (−inf padding), scores."""

    ids: IntArray
    raw: FloatArray
    score: FloatArray
    valid: BoolArray


def _ranks(universe: IntArray, ids: Sequence[int]) -> FloatArray:
    """1-based rank of every universe id in `ids`, +inf where absent."""
    import numpy as np

    ranks = np.full(universe.size, np.inf)
    if len(ids):
        ranks[np.searchsorted(universe, np.asarray(ids, dtype=np.int64))] = np.arange(
            1, len(ids) + 1, dtype=np.float64)
    return ranks


@dataclass(frozen=True, slots=True)
class _Sums:
    """The running fusion of many rows: raw sums, which columns any leg found, the best sum."""

    raw: FloatArray
    present: BoolArray
    best: FloatArray


def _add_leg(sums: _Sums, universe: IntArray, lists: Sequence[Sequence[int]],
             weight: FloatArray, rows: FusionRows) -> _Sums:
    """One full-text leg (one list per weight set) added to every row, in leg order.

    A row whose weight is 0 runs no such leg (as `weighted_rrf` is never given it): it adds
    nothing and finds nothing.
    """
    import numpy as np

    if not lists:
        return sums
    rank = np.stack([_ranks(universe, ids) for ids in lists])[rows.fts_list]
    lengths = np.array([len(ids) for ids in lists])[rows.fts_list]
    runs = weight > 0
    return _Sums(sums.raw + weight[:, None] / (rows.rrf_k[:, None] + rank),
                 sums.present | (np.isfinite(rank) & runs[:, None]),
                 np.where((lengths > 0) & runs, sums.best + weight / (rows.rrf_k + 1), sums.best))


LegLists = Sequence[tuple[str, Sequence[Sequence[int]]]]
"""Per full-text leg in fusion order: (its weight key, one ranked list per weight set), the
lists empty when the leg does not run for the query."""


def _top_rows(universe: IntArray, raw: FloatArray, best: FloatArray, limit: int) -> FusedRows:
    """Every row's top `limit` columns by raw sum (−inf: not found), ties by the id-sorted
    column order (a stable sort), with each row's score = raw / its best possible sum."""
    import numpy as np

    order = np.argsort(-raw, axis=1, kind="stable")[:, :limit]
    top_raw = np.take_along_axis(raw, order, axis=1)
    valid = np.isfinite(top_raw)
    top_ids = np.where(valid, universe[order], -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(valid, top_raw / np.where(best > 0, best, 1.0)[:, None], -np.inf)
    return FusedRows(top_ids, top_raw, score, valid)


def fuse_rows(vector_ids: Sequence[int], legs: LegLists, rows: FusionRows, limit: int
              ) -> FusedRows:
    """Weighted RRF of search.md §5 for many rows at once, over the vector leg and every
    full-text leg.

    Every candidate of the query (the union of all lists) is a column; a leg contributes
    `w / (k + rank)`, which is exactly 0.0 where the candidate is absent (rank +inf), so the
    float64 sum vector + each full-text leg in fusion order is the reference's, term for term.
    A stable sort on −raw over id-sorted columns then breaks ties by chunk id. Row r uses the
    lists of weight set `rows.fts_list[r]`.
    """
    import numpy as np

    n_rows = rows.rrf_k.size
    arrays = [np.asarray(ids, dtype=np.int64)
              for ids in (vector_ids, *(ids for _, lists in legs for ids in lists))]
    universe = np.unique(np.concatenate(arrays)) if arrays else np.empty(0, dtype=np.int64)
    vec_rank = _ranks(universe, vector_ids)[None, :]
    raw = np.broadcast_to(rows.vector_weight[:, None] / (rows.rrf_k[:, None] + vec_rank),
                          (n_rows, universe.size))
    present = np.broadcast_to(np.isfinite(vec_rank), (n_rows, universe.size))
    best = np.zeros(n_rows)
    if len(vector_ids):
        best = best + rows.vector_weight / (rows.rrf_k + 1)
    sums = _Sums(raw, present, best)
    for weight_key, lists in legs:
        sums = _add_leg(sums, universe, lists, rows.leg_weights[weight_key], rows)
    return _top_rows(universe, np.where(sums.present, sums.raw, -np.inf), sums.best, limit)


KeyedLegs = Sequence[tuple[str, ScoredLeg]]
"""Per leg in fusion order (vector leg first): its score-weight key and its scored list (the
list's own `weight` is ignored: row r weighs it `weights[key][r]`)."""


def score_fuse_rows(legs: KeyedLegs, weights: Mapping[str, FloatArray], limit: int
                    ) -> FusedRows:
    """`score_fuse` of search.md §5 for many rows (leg weights) at once.

    Every candidate of the query is a column; each leg's normalised scores (`normalised`, the
    same values `score_fuse` uses) are 0.0 where the leg did not return the candidate, so the
    float64 sum `Σ w · norm` in leg order is the reference's term for term. A stable sort on
    −raw over id-sorted columns breaks ties by chunk id; a row whose weight for a leg is 0
    does not count that leg's candidates as found.
    """
    import numpy as np

    n_rows = next(iter(weights.values())).size if weights else 1
    arrays = [np.asarray(leg.ids, dtype=np.int64) for _, leg in legs]
    universe = np.unique(np.concatenate(arrays)) if arrays else np.empty(0, dtype=np.int64)
    raw = np.zeros((n_rows, universe.size))
    present = np.zeros((n_rows, universe.size), dtype=bool)
    best = np.zeros(n_rows)
    for key, leg in legs:
        found = _first_seen(leg)
        if not found:
            continue
        norm = np.zeros(universe.size)
        hit = np.zeros(universe.size, dtype=bool)
        columns = np.searchsorted(universe, np.fromiter(found, dtype=np.int64, count=len(found)))
        norm[columns] = list(found.values())
        hit[columns] = True
        weight = weights[key]
        runs = weight > 0
        raw = raw + weight[:, None] * norm[None, :]
        present = present | (hit[None, :] & runs[:, None])
        best = np.where(runs, best + weight, best)
    return _top_rows(universe, np.where(present, raw, -np.inf), best, limit)


def fuse_lists(vector_ids: Sequence[int], legs: Sequence[tuple[float, Sequence[int]]], *,
               limit: int, rrf_k: float = DEFAULT_RRF_K,
               vector_weight: float = DEFAULT_LEG_WEIGHT,
               min_score: float = DEFAULT_MIN_SCORE) -> list[tuple[int, float]]:
    """One condition fused as search.md §5: `(chunk id, normalised score)` pairs, best first.

    `legs` are the full-text legs that ran, in fusion order: (weight, ranked ids).
    """
    import numpy as np

    keys = [f"leg{i}" for i in range(len(legs))]
    rows = FusionRows(np.array([vector_weight]),
                      {key: np.array([w]) for key, (w, _) in zip(keys, legs, strict=True)},
                      np.array([0]), np.array([float(rrf_k)]))
    fused = fuse_rows(vector_ids, [(key, [ids]) for key, (_, ids) in zip(keys, legs, strict=True)],
                      rows, limit)
    keep = fused.valid[0] & (fused.score[0] >= min_score)
    return [(int(i), float(s)) for i, s in zip(fused.ids[0][keep], fused.score[0][keep],
                                                strict=True)]




def score_fuse_lists(legs: Sequence[ScoredLeg], *, limit: int,
                     min_score: float = DEFAULT_MIN_SCORE) -> list[tuple[int, float]]:
    """One score-fusion condition as search.md §5 fuses it, vectorised (`score_fuse_rows`):
    `(chunk id, normalised score)` pairs, best first. `legs` are the legs that ran, vector leg
    first, each with its weight."""
    import numpy as np

    keyed = [(f"leg{i}", leg) for i, leg in enumerate(legs)]
    fused = score_fuse_rows(keyed, {key: np.array([leg.weight]) for key, leg in keyed}, limit)
    keep = fused.valid[0] & (fused.score[0] >= min_score)
    return [(int(i), float(s)) for i, s in zip(fused.ids[0][keep], fused.score[0][keep],
                                                strict=True)]
