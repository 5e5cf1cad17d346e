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
    """Binary-gain nDCG@k with one-to-one greedy matching of hits to expected entries.

    nDCG is from Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002. Each hit may consume one not-yet-consumed entry it matches, preferring
    an entry that names a heading (else the lowest index): a hit on `a.md#Setup` should satisfy
    the heading entry and leave the path-only entry for another chunk of `a.md`.

    Args:
        expected: the query's expected entries (E).
        hits: the returned hits in rank order.
        k: the cut-off; 0 gives 0.

    Returns:
        DCG / IDCG with IDCG = Σ_{i=1..min(|E|, k)} 1 / log2(i + 1); 0 when k = 0 or E is empty.
    """
    if k <= 0 or not expected:
        return 0.0
    consumed = [False] * len(expected)
    dcg = 0.0
    for position, hit in enumerate(hits[:k], start=1):
        choice = _pick_entry(expected, consumed, hit)
        if choice is not None:
            consumed[choice] = True
            dcg += _discount(position)
    idcg = sum(_discount(i) for i in range(1, min(len(expected), k) + 1))
    return dcg / idcg


def _pick_entry(expected: Sequence[Expected], consumed: list[bool], hit: HitRecord) -> int | None:
    """The entry a hit consumes: first unconsumed match with a heading, else first unconsumed match."""
    fallback: int | None = None
    for index, entry in enumerate(expected):
        if consumed[index] or not heading_matches(entry, hit):
            continue
        if entry.heading is not None:
            return index
        if fallback is None:
            fallback = index
    return fallback


def score_query(
    expected: Sequence[Expected], hits: Sequence[HitRecord], k_values: Iterable[int]
) -> QueryMetrics:
    """All metrics of one query.

    Args:
        expected: the query's expected entries.
        hits: every returned hit in rank order (the eval fetch depth, not cut at any k).
        k_values: the normalised k list.

    Returns:
        recall@k and nDCG@k for each k, and the reciprocal rank over the whole list.
    """
    ks = list(k_values)
    return QueryMetrics(
        recall_at_k={k: recall_at_k(expected, hits, k) for k in ks},
        reciprocal_rank=reciprocal_rank(expected, hits),
        ndcg_at_k={k: ndcg_at_k(expected, hits, k) for k in ks},
    )
