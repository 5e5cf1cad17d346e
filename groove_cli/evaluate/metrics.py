"""Per-query retrieval metrics: recall@k, reciprocal rank and nDCG@k (eval.md §3, §4).

Pure functions over hit records; the formulas are versioned by `METRIC_VERSION`, which is part of
the run fingerprint so that runs scored differently are never compared. `score_query` scores one
list (eval); `rank_metrics` scores many lists at once with numpy (tune's sweep) by the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groove_cli.evaluate.golden import Expected

if TYPE_CHECKING:

    from groove_cli.arrays import BoolArray, FloatArray

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
    """The hit rule: same path and, when the entry names a heading, the same heading."""
    return entry_matches((expected.path, expected.heading), (hit.path, hit.heading))


def entry_matches(entry: tuple[str, str | None], hit: tuple[str, str | None]) -> bool:
    """The hit rule on `(path, heading)` pairs (eval.md §3).

    Headings compare after `strip().lower()`; inner whitespace is kept. A hit without a heading
    never satisfies an entry that names one.
    """
    path, heading = entry
    if path != hit[0]:
        return False
    if heading is None:
        return True
    return hit[1] is not None and heading.strip().lower() == hit[1].strip().lower()


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


# --------------------------------------------------------------------------- many ranked lists at once (tune)


def rank_metrics(rel: BoolArray, has_heading: BoolArray, k_values: Sequence[int]
                  ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """recall@k, nDCG@k (shape (len(k), R)) and RR (R,) of R ranked lists.

    `rel[r, p, e]` says whether the hit at 0-based position p of list r matches entry e (False on
    padding). nDCG walks the positions in rank order with the one-to-one greedy matching of eval.md
    §4 (a hit consumes an unconsumed entry it matches, one with a heading first, else the lowest
    index); DCG is summed in rank order exactly like the per-query reference.
    """
    import numpy as np

    n_rows, depth, n_entries = rel.shape
    ks = list(k_values)
    recall = np.zeros((len(ks), n_rows))
    ndcg = np.zeros((len(ks), n_rows))
    rr = np.zeros(n_rows)
    if n_entries == 0 or depth == 0:
        return recall, ndcg, rr
    any_rel: BoolArray = np.asarray(rel.any(axis=2))
    first = np.argmax(any_rel, axis=1)
    found = any_rel[np.arange(n_rows), first]
    rr = np.where(found, 1.0 / (first + 1.0), 0.0)
    seen = np.logical_or.accumulate(rel, axis=1)
    for i, k in enumerate(ks):
        if k > 0:
            recall[i] = seen[:, min(k, depth) - 1].sum(axis=1) / n_entries
    consumed = np.zeros((n_rows, n_entries), dtype=bool)
    dcg = np.zeros(n_rows)
    dcg_at: dict[int, FloatArray] = {}
    max_k = max((k for k in ks if k > 0), default=0)
    for position in range(min(depth, max_k)):
        if any_rel[:, position].any():
            open_match = rel[:, position, :] & ~consumed
            takes = open_match.any(axis=1)
            preferred = open_match & has_heading[None, :]
            choice = np.where(preferred.any(axis=1), np.argmax(preferred, axis=1),
                              np.argmax(open_match, axis=1))
            taking = np.nonzero(takes)[0]
            consumed[taking, choice[taking]] = True
            dcg = dcg + np.where(takes, _discount(position + 1), 0.0)
        dcg_at[position + 1] = dcg
    for i, k in enumerate(ks):
        if k <= 0:
            continue
        idcg = sum(_discount(j) for j in range(1, min(n_entries, k) + 1))
        ndcg[i] = dcg_at.get(min(k, depth), dcg) / idcg
    return recall, ndcg, rr


def score_hits(expected: Sequence[tuple[str, str | None]], hits: Sequence[tuple[str, str | None]],
               k_values: Sequence[int]) -> QueryMetrics:
    """recall@k, RR and nDCG@k of one list of `(path, heading)` hits with the vectorised code
    (`score_query` is the reference it must equal)."""
    import numpy as np

    rel = np.array([[[entry_matches(e, h) for e in expected] for h in hits]], dtype=bool)
    rel = rel.reshape(1, len(hits), len(expected))
    has_heading = np.array([e[1] is not None for e in expected], dtype=bool)
    recall, ndcg, rr = rank_metrics(rel, has_heading, k_values)
    return QueryMetrics(
        {k: float(recall[i, 0]) for i, k in enumerate(k_values)}, float(rr[0]),
        {k: float(ndcg[i, 0]) for i, k in enumerate(k_values)},
    )


