"""The sweep (tune.md §5): every grid condition fused in memory for every query and scored.

Fusion is search's weighted RRF or score fusion, vectorised (`retrieve.fuse.fuse_rows`,
`score_fuse_rows`); scoring is eval's
metrics, vectorised (each registered metric's vectorised form: `evaluate.metrics.rank_metrics`),
so a condition ranks and scores a query exactly as `groove search` and `groove eval` would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from groove_cli.arrays import BoolArray, FloatArray, IntArray
from groove_cli.evaluate.metrics import METRICS, Ranked, entry_matches, rank_metrics
from groove_cli.evaluate.tune.grid import (
    BUILTIN_CJK_WEIGHT,
    BUILTIN_RRF_K,
    CJK_WEIGHTS,
    MIN_SCORES,
    PRIMARY_K,
    PRIMARY_METRIC,
    WEIGHT_RATIOS,
    Space,
    fusion_grid,
    method_grid,
    normalise_k_values,
    retrieval_grid,
    weight_sets,
)
from groove_cli.retrieve.fuse import (
    FusedRows,
    FusionRows,
    ScoredLeg,
    fuse_rows,
    score_fuse_rows,
)
from groove_cli.retrieve.legs import registered


@dataclass(frozen=True, slots=True)
class QueryLists:
    """One usable query's fetched lists, best first.

    `leg_ids` holds, per full-text leg name (retrieve/legs.py), one list per bm25 weight set of
    the space: 64 in weight_index order for the fusion space, only the built-in set for the
    retrieval and fusion-method spaces; no lists for a leg the query gives no expression (it
    does not run). The fusion-method space also needs the scores (`vector_scores`: cosines;
    `leg_scores`: bm25 magnitudes), parallel to the ids.
    """

    id: str
    expected: tuple[tuple[str, str | None], ...]
    vector_ids: tuple[int, ...]
    leg_ids: Mapping[str, tuple[tuple[int, ...], ...]]
    vector_scores: tuple[float, ...] = ()
    leg_scores: Mapping[str, tuple[tuple[float, ...], ...]] = field(default_factory=dict)
    cjk_text: bool = False
    """The query has CJK text (score fusion's alpha follows it, search.md §5)."""
    word_terms: int = 0
    """The query's word-level terms (score fusion's alpha follows their number)."""

    def fusion_lists(self) -> list[tuple[str, tuple[tuple[int, ...], ...]]]:
        """(weight key, lists) of every registered leg in fusion order, for `fuse_rows`."""
        return [(leg.weight, self.leg_ids.get(leg.name, ())) for leg in registered()]

    def scored_lists(self) -> list[tuple[str, ScoredLeg]]:
        """(score-weight key, scored list) of the vector leg and every full-text leg that runs,
        in fusion order (the first weight set's list), for `score_fuse_rows`."""
        if len(self.vector_scores) != len(self.vector_ids) or any(
                len(self.leg_scores.get(name, ((),))[0]) != len(lists[0])
                for name, lists in self.leg_ids.items() if lists):
            raise ValueError(f"query {self.id!r}: score fusion needs every list's scores")
        legs = [("score_vector_weight",
                 ScoredLeg(1.0, self.vector_ids, self.vector_scores, spread=True))]
        legs += [(leg.score_weight, ScoredLeg(1.0, self.leg_ids[leg.name][0],
                                              self.leg_scores[leg.name][0]))
                 for leg in registered() if self.leg_ids.get(leg.name)]
        return legs


ChunkMeta = Mapping[int, tuple[str, str | None]]
"""chunk id → (document path, chunk heading or None)."""



def _leg_weights(fts: FloatArray, cjk: FloatArray) -> dict[str, FloatArray]:
    """Every leg weight key's weight per row: the grid sweeps `fts_weight` (as the vector
    weight's ratio) and `cjk_weight`; a leg weighed by another key keeps its built-in default."""
    from groove_cli.retrieve.params import SearchParams

    swept = {"fts_weight": fts, "cjk_weight": cjk}
    return {leg.weight: swept.get(leg.weight, np.full(fts.size, getattr(SearchParams(), leg.weight)))
            for leg in registered()}


def _method_weights(query: QueryLists) -> dict[str, FloatArray]:
    """The fusion-method grid's score-fusion rows (conditions 1…) for one query: each
    score-weight key's weight per row, at the alpha each row gives this query."""
    from groove_cli.retrieve.params import SearchParams

    rows = [SearchParams(fusion="score", score_alpha=c.score_alpha,
                         score_alpha_short=c.score_alpha_short,
                         score_alpha_mid=c.score_alpha_mid,
                         score_alpha_long=c.score_alpha_long,
                         short_query_words=c.short_query_words,
                         mid_query_words=c.mid_query_words,
                         score_cjk_weight=c.score_cjk_weight) for c in method_grid()[1:]]
    rows = [replace(p, query_alpha=p.alpha_for(query.cjk_text, query.word_terms)[0])
            for p in rows]
    keys = {"score_vector_weight", *(leg.score_weight for leg in registered())}
    return {key: np.array([float(getattr(p, key)) for p in rows]) for key in keys}


def _fuse(query: QueryLists, rows: FusionRows, score_rows: Mapping[str, FloatArray] | None,
          limit: int) -> FusedRows:
    """One query fused under every row of the space: weighted RRF rows, then (the
    fusion-method space) the score-fusion rows `score_rows`."""
    rrf = fuse_rows(query.vector_ids, query.fusion_lists(), rows, limit)
    if score_rows is None:
        return rrf
    scored = score_fuse_rows(query.scored_lists(), score_rows, limit)
    # both fuse the same candidates (one list per leg), so both are cut to the same width
    return FusedRows(np.concatenate([rrf.ids, scored.ids]), np.concatenate([rrf.raw, scored.raw]),
                     np.concatenate([rrf.score, scored.score]),
                     np.concatenate([rrf.valid, scored.valid]))


def _space_rows(space: Space) -> tuple[FusionRows, IntArray, FloatArray]:
    """The RRF rows of a space and, per condition, its row and its `min_score` floor (the
    fusion-method space: one RRF row, the built-in, then one row per score condition)."""
    if space == "fusion-method":
        conditions = method_grid()
        rows = FusionRows(np.ones(1), _leg_weights(np.ones(1), np.full(1, BUILTIN_CJK_WEIGHT)),
                          np.zeros(1, dtype=np.int64), np.full(1, BUILTIN_RRF_K))
        return rows, np.arange(len(conditions), dtype=np.int64), np.zeros(len(conditions))
    if space == "fusion":
        conditions = fusion_grid()
        rows = FusionRows(
            np.ones(len(conditions)),
            _leg_weights(np.ones(len(conditions)), np.full(len(conditions), BUILTIN_CJK_WEIGHT)),
            np.array([c.weight_index for c in conditions], dtype=np.int64),
            np.array([c.rrf_k for c in conditions]),
        )
        return rows, np.arange(len(conditions), dtype=np.int64), np.zeros(len(conditions))
    pairs = [(ratio, cjk) for ratio in WEIGHT_RATIOS for cjk in CJK_WEIGHTS]
    rows = FusionRows(np.array([p[0] for p in pairs]),
                      _leg_weights(np.ones(len(pairs)), np.array([p[1] for p in pairs])),
                      np.zeros(len(pairs), dtype=np.int64), np.full(len(pairs), BUILTIN_RRF_K))
    conditions = retrieval_grid()
    row_of = np.array([c.index // len(MIN_SCORES) for c in conditions], dtype=np.int64)
    floors = np.array([c.min_score for c in conditions])
    return rows, row_of, floors



# --------------------------------------------------------------------------- the sweep (§5)


@dataclass(frozen=True, slots=True)
class SweepScores:
    """Per-(condition, query) values of every registered metric, by metric name: arrays are
    indexed [k, condition, query] for a metric scored at each k, else [condition, query]."""

    space: Space
    k_values: tuple[int, ...]
    query_ids: tuple[str, ...]
    scores: Mapping[str, FloatArray]

    @property
    def ndcg5(self) -> FloatArray:
        """The primary metric (nDCG@5) per (condition, query): the matrix the selection works on."""
        primary: FloatArray = self.scores[PRIMARY_METRIC][self.k_values.index(PRIMARY_K)]
        return primary


def progress_line(i: int, n: int, conditions: int, query_id: str) -> str:
    """`  [{i}/{n}] sweeping {c} conditions for {id}` (an unprefixed progress line)."""
    return f"  [{i}/{n}] sweeping {conditions} conditions for {query_id}"


def score_matrix(queries: Sequence[QueryLists], chunk_meta: ChunkMeta, space: Space, limit: int,
                 k_values: Sequence[int], *, progress: Callable[[str], None] | None = None
                 ) -> SweepScores:
    """Fuse every condition of `space` for every query in memory and score it (§5).

    Args:
        queries: the usable queries with their fetched lists.
        chunk_meta: (path, heading) of every chunk id the lists hold.
        space: `fusion` (each query needs 64 FTS lists), `retrieval` (1 list) or
            `fusion-method` (1 list, with scores).
        limit: the fused list is cut to this many hits (the eval depth).
        k_values: metric cut-offs; normalised, so 5 is always present.
        progress: receives one progress line per query (e.g. `messages.progress`).

    Returns:
        every registered metric for every (condition, query), binary relevance (tune.md §2).

    Raises:
        ValueError: a query has the wrong number of FTS lists or a list repeats an id.
        KeyError: a listed chunk id is missing from `chunk_meta`.
    """
    ks = normalise_k_values(k_values)
    rows, row_of, floors = _space_rows(space)
    n_lists = len(weight_sets()) if space == "fusion" else 1
    n_cond = row_of.size
    scores = {m.name: np.zeros(((len(ks),) if m.at_k else ()) + (n_cond, len(queries)))
              for m in METRICS}
    for q, query in enumerate(queries):
        if progress is not None:
            progress(progress_line(q + 1, len(queries), n_cond, query.id))
        _check_lists(query, n_lists)
        score_rows = _method_weights(query) if space == "fusion-method" else None
        fused = _fuse(query, rows, score_rows, max(limit, 1))
        valid = fused.valid[row_of] & (fused.score[row_of] >= floors[:, None])
        ids = fused.ids[row_of]
        rel = _relevance(query, chunk_meta, ids, valid)
        has_heading = np.array([e[1] is not None for e in query.expected], dtype=bool)
        for name, values in rank_metrics(Ranked(rel, has_heading), ks).items():
            scores[name][..., q] = values
    return SweepScores(space, ks, tuple(q.id for q in queries), scores)


def ranked_matrix(queries: Sequence[QueryLists], chunk_meta: ChunkMeta, space: Space,
                  ranked: Sequence[Sequence[Sequence[int]]], k_values: Sequence[int], *,
                  progress: Callable[[str], None] | None = None) -> SweepScores:
    """`score_matrix` for a space whose conditions are not fusions of fetched lists (the
    re-run spaces: feedback's second vector pass needs a KNN per condition, the per-note cap
    the candidates' notes): `ranked[c][q]` is condition c's ranked chunk ids for query q, as
    search returned them; scored the same way."""
    ks = normalise_k_values(k_values)
    n_cond = len(ranked)
    scores = {m.name: np.zeros(((len(ks),) if m.at_k else ()) + (n_cond, len(queries)))
              for m in METRICS}
    for q, query in enumerate(queries):
        if progress is not None:
            progress(progress_line(q + 1, len(queries), n_cond, query.id))
        width = max(1, max(len(ranked[c][q]) for c in range(n_cond)))
        ids = np.zeros((n_cond, width), dtype=np.int64)
        valid = np.zeros((n_cond, width), dtype=bool)
        for c in range(n_cond):
            found = list(ranked[c][q])
            ids[c, :len(found)] = found
            valid[c, :len(found)] = True
        rel = _relevance(query, chunk_meta, ids, valid)
        has_heading = np.array([e[1] is not None for e in query.expected], dtype=bool)
        for name, values in rank_metrics(Ranked(rel, has_heading), ks).items():
            scores[name][..., q] = values
    return SweepScores(space, ks, tuple(q.id for q in queries), scores)


def _check_lists(query: QueryLists, n_lists: int) -> None:
    names = {leg.name for leg in registered()}
    for name, lists in query.leg_ids.items():
        if name not in names:
            raise ValueError(f"query {query.id!r}: no full-text leg is named {name!r}")
        if lists and len(lists) != n_lists:
            raise ValueError(f"query {query.id!r}: expected 0 or {n_lists} {name} list(s), "
                             f"got {len(lists)}")
    for ids in (query.vector_ids, *(ids for lists in query.leg_ids.values() for ids in lists)):
        if len(set(ids)) != len(ids):
            raise ValueError(f"query {query.id!r}: a candidate list repeats a chunk id")


def _relevance(query: QueryLists, chunk_meta: ChunkMeta, ids: IntArray, valid: BoolArray
               ) -> BoolArray:
    """rel[c, p, e]: the hit at position p of condition c matches expected entry e."""
    universe = np.unique(ids[valid])
    table = np.zeros((universe.size + 1, len(query.expected)), dtype=bool)
    paths = {path for path, _ in query.expected}
    for row, chunk_id in enumerate(universe.tolist()):
        if chunk_id not in chunk_meta:
            raise KeyError(f"chunk id {chunk_id} of query {query.id!r} is not in chunk_meta")
        hit = chunk_meta[chunk_id]
        if hit[0] in paths:
            table[row] = [entry_matches(e, hit) for e in query.expected]
    slot = np.searchsorted(universe, ids)
    slot = np.where(valid, slot, universe.size)
    return table[slot]


