"""Maximal Marginal Relevance diversity selection (search.md §8).

J. Carbonell and J. Goldstein, "The Use of MMR, Diversity-Based Reranking for Reordering
Documents and Producing Summaries", SIGIR 1998. Each step picks the candidate that best trades
relevance against similarity to what is already selected, so near-duplicate chunks do not fill
the top of the list. Relevance is min-max normalised over the pool so λ does not depend on the
score scale (fused scores in (0, 1] or reranker logits).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

RELEVANCE_EPSILON = 1.1920929e-07  # float32 machine epsilon: a smaller spread counts as flat


def _relevance(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Min-max normalise; all 0 when the spread is not above the epsilon."""
    low, high = float(scores.min()), float(scores.max())
    if high - low > RELEVANCE_EPSILON:
        result: npt.NDArray[np.float64] = (scores - low) / (high - low)
        return result
    return np.zeros_like(scores)


def _unit_rows(rows: list[npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
    """Stack same-dimension vectors as unit rows; a zero or non-finite norm becomes a zero row."""
    matrix = np.vstack(rows)
    norms = np.linalg.norm(matrix, axis=1)
    usable = np.isfinite(norms) & (norms > 0)
    unit = np.zeros_like(matrix)
    unit[usable] = matrix[usable] / norms[usable, None]
    return unit


def mmr_select(
    scores: Sequence[float],
    vectors: Sequence[npt.NDArray[np.floating] | None],
    doc_ids: Sequence[int],
    *,
    mmr_lambda: float,
    same_doc_penalty: float,
    limit: int,
) -> list[int]:
    """Select up to `limit` pool positions by MMR.

    Args:
        scores: the pool's current scores (fused or reranked), in pool order.
        vectors: each candidate's stored embedding, or None when it has none (then dropped).
        doc_ids: each candidate's document id, for the same-document penalty.
        mmr_lambda: λ in `λ·rel − (1 − λ)·max cos − penalty·[same doc selected]`.
        same_doc_penalty: subtracted when the candidate's document is already selected.
        limit: the number of hits wanted.

    Returns:
        Pool positions (indices into the inputs) in selection order; ties go to the lower
        position. Cosine is 0 when a norm is 0 or the dimensions differ.
    """
    if not (len(scores) == len(vectors) == len(doc_ids)):
        raise ValueError("scores, vectors and doc_ids must have the same length")
    kept = [i for i, vector in enumerate(vectors) if vector is not None]
    target = min(limit, len(kept))
    if target <= 0:
        return []

    rel = _relevance(np.array([scores[i] for i in kept], dtype=np.float64))
    flat = [np.asarray(vectors[i], dtype=np.float64).ravel() for i in kept]
    # Group by dimension: cosine across groups is 0, within a group one matrix product.
    groups: dict[int, list[int]] = {}
    for local, vector in enumerate(flat):
        groups.setdefault(vector.shape[0], []).append(local)
    members = {dim: np.array(locals_, dtype=np.intp) for dim, locals_ in groups.items()}
    units = {dim: _unit_rows([flat[i] for i in locals_]) for dim, locals_ in groups.items()}
    row_in_group = np.empty(len(kept), dtype=np.intp)
    for locals_arr in members.values():
        row_in_group[locals_arr] = np.arange(len(locals_arr))
    docs = np.array([doc_ids[i] for i in kept], dtype=np.int64)

    max_sim = np.zeros(len(kept), dtype=np.float64)
    same_doc = np.zeros(len(kept), dtype=np.float64)
    available = np.ones(len(kept), dtype=bool)
    selected: list[int] = []
    for step in range(target):
        value = mmr_lambda * rel - (1.0 - mmr_lambda) * max_sim - same_doc_penalty * same_doc
        value[~available] = -np.inf
        pick = int(np.argmax(value))  # first maximum: the lower pool position wins ties
        selected.append(kept[pick])
        available[pick] = False
        same_doc[docs == docs[pick]] = 1.0

        dim = flat[pick].shape[0]
        sims = np.zeros(len(kept), dtype=np.float64)
        sims[members[dim]] = units[dim] @ units[dim][row_in_group[pick]]
        max_sim = sims if step == 0 else np.maximum(max_sim, sims)
    return selected
