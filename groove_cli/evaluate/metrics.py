"""Per-query retrieval metrics: recall@k, reciprocal rank and nDCG@k (eval.md §3, §4).

Pure functions over hit records; the formulas are versioned by `METRIC_VERSION`, which is part of
the run fingerprint so that runs scored differently are never compared.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from groove_cli.evaluate.golden import Expected

METRIC_VERSION = 1
"""Bump when any formula in this module changes; old history runs then stop being comparable."""


@dataclass(frozen=True, slots=True)
class HitRecord:
    """One returned hit as eval records it: 1-based rank, path, chunk heading, score."""

    rank: int
    path: str
    heading: str | None
    score: float


@dataclass(frozen=True, slots=True)
class QueryMetrics:
    """The metrics of one query; the dicts are keyed by k."""

    recall_at_k: dict[int, float]
    reciprocal_rank: float
    ndcg_at_k: dict[int, float]


def heading_matches(expected: Expected, hit: HitRecord) -> bool:
    """The hit rule: same path and, when the entry names a heading, the same heading.

    Headings compare after `strip().lower()`; inner whitespace is kept. A hit without a heading
    never satisfies an entry that names one.
    """
    if expected.path != hit.path:
        return False
    if expected.heading is None:
        return True
    if hit.heading is None:
        return False
    return expected.heading.strip().lower() == hit.heading.strip().lower()


def recall_at_k(expected: Sequence[Expected], hits: Sequence[HitRecord], k: int) -> float:
    """Share of expected entries matched by some hit in the first k (entries judged separately)."""
    top = hits[:k] if k > 0 else ()
    if not expected or not top:
        return 0.0
    found = sum(1 for e in expected if any(heading_matches(e, h) for h in top))
    return found / len(expected)


def reciprocal_rank(expected: Sequence[Expected], hits: Sequence[HitRecord]) -> float:
    """1 / rank of the first hit matching any entry, over the whole list; 0 when none does."""
    for position, hit in enumerate(hits, start=1):
        if any(heading_matches(e, hit) for e in expected):
            return 1.0 / position
    return 0.0


def _discount(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def ndcg_at_k(expected: Sequence[Expected], hits: Sequence[HitRecord], k: int) -> float:
    """nDCG@k with graded gains and one-to-one greedy matching of hits to expected entries.

    nDCG is from Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002; the gain of an entry is its grade (linear gain, as trec_eval's
    `ndcg` and ranx's `ndcg` use; 1 for every entry of a binary golden file). Each hit may
    consume one not-yet-consumed relevant entry it matches, preferring the highest grade, then
    an entry that names a heading, then the lowest index: a hit on `a.md#Setup` should satisfy
    the heading entry and leave the path-only entry for another chunk of `a.md`.

    Args:
        expected: the query's expected entries (E); grade-0 entries never count.
        hits: the returned hits in rank order.
        k: the cut-off; 0 gives 0.

    Returns:
        DCG / IDCG with IDCG = Σ_{i=1..min(|E|, k)} gain_i / log2(i + 1) over the gains sorted
        in descending order; 0 when k = 0 or no entry is relevant.
    """
    relevant = [e for e in expected if e.grade > 0]
    if k <= 0 or not relevant:
        return 0.0
    consumed = [False] * len(relevant)
    dcg = 0.0
    for position, hit in enumerate(hits[:k], start=1):
        choice = _pick_entry(relevant, consumed, hit)
        if choice is not None:
            consumed[choice] = True
            dcg += relevant[choice].grade * _discount(position)
    gains = sorted((e.grade for e in relevant), reverse=True)[:k]
    idcg = sum(g * _discount(i) for i, g in enumerate(gains, start=1))
    return dcg / idcg


def _pick_entry(expected: Sequence[Expected], consumed: list[bool], hit: HitRecord) -> int | None:
    """The entry a hit consumes: the unconsumed match with the highest grade, then one with a
    heading, then the lowest index."""
    best: int | None = None
    for index, entry in enumerate(expected):
        if consumed[index] or not heading_matches(entry, hit):
            continue
        if best is None or (entry.grade, entry.heading is not None) > (
                expected[best].grade, expected[best].heading is not None):
            best = index
    return best


def score_query(
    expected: Sequence[Expected], hits: Sequence[HitRecord], k_values: Iterable[int]
) -> QueryMetrics:
    """All metrics of one query.

    Args:
        expected: the query's expected entries; entries of grade 0 (judged not relevant)
            count in no metric, and grades are nDCG gains.
        hits: every returned hit in rank order (the eval fetch depth, not cut at any k).
        k_values: the normalised k list.

    Returns:
        recall@k and nDCG@k for each k, and the reciprocal rank over the whole list.
    """
    ks = list(k_values)
    relevant = [e for e in expected if e.grade > 0]
    return QueryMetrics(
        recall_at_k={k: recall_at_k(relevant, hits, k) for k in ks},
        reciprocal_rank=reciprocal_rank(relevant, hits),
        ndcg_at_k={k: ndcg_at_k(expected, hits, k) for k in ks},
    )
