"""The pure core of `groove tune` (tune.md): grids, in-memory fusion, selection, nested CV, verdict.

The runner fetches, once per usable query, the vector list and the FTS list of every bm25 weight
set of the space; everything after that happens here, in memory and without SQL:

1. `score_matrix` fuses every grid condition for every query exactly as search.md §5 does and
   scores the cut lists with the eval formulas (eval.md §4). It is vectorised with numpy over the
   conditions of a query, so a full 384-condition sweep over a few hundred queries takes seconds.
2. `select` picks a condition by coordinate descent with a plateau rule that prefers the default,
   then the grid centre (§6).
3. `loo_cv` runs the selection inside nested leave-one-query-out cross-validation (§7), so that the
   reported gain is measured on queries the selection never saw.
4. `verdict` applies the adoption criteria (§8), conservative on purpose: a tuned condition is only
   recommended when its held-out gain clears a floor, a multiple of its paired standard error and a
   stability bar, and it costs no recall or MRR.

RRF: G. V. Cormack, C. L. A. Clarke and S. Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
and individual Rank Learning Methods", SIGIR 2009. nDCG: K. Järvelin and J. Kekäläinen,
"Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4), 2002. Sign test: W. J. Dixon
and A. M. Mood, "The statistical sign test", JASA 41(236), 1946.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from groove_cli import messages
from groove_cli.config import DEFAULT_CJK_WEIGHT
from groove_cli.errors import TuneNotApplicable

Space = Literal["fusion", "retrieval"]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# --------------------------------------------------------------------------- constants (§8)

ADOPT_MIN_MEAN_DELTA = 0.02
"""Criterion 2: the held-out mean nDCG@5 gain must exceed this floor."""
ADOPT_SE_MULTIPLIER = 3.0
"""Criterion 3: the held-out mean must exceed this many paired standard errors (calibrated, §8)."""
STABILITY_MIN = 0.5
"""Criterion 4: the share of folds that select the refit condition must exceed this."""
SMALL_N_WARN = 50
"""Below this many effective queries the verdict is flagged as indicative (IR convention)."""
PRIMARY_K = 5
"""The primary metric is nDCG@5; 5 is always part of the k list."""
MAX_TUNE_K = 1000
"""Cap on every k and on the limit, as in eval."""
PLATEAU_EPS = 1e-9
"""Scores within this of the best join the selection plateau."""
TIE_EPS = 1e-12
"""Per-query differences within this count as ties (sign test, impact, criterion 5)."""

# --------------------------------------------------------------------------- grids (§4)

RRF_K_VALUES: tuple[float, ...] = (5.0, 10.0, 20.0, 30.0, 60.0, 100.0)
BM25_WEIGHT_VALUES: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
WEIGHT_RATIOS: tuple[float, ...] = (0.5, 0.67, 1.0, 1.5, 2.0)
MIN_SCORES: tuple[float, ...] = (0.0, 0.2, 0.3, 0.4)
CJK_WEIGHTS: tuple[float, ...] = (0.5 * DEFAULT_CJK_WEIGHT, DEFAULT_CJK_WEIGHT,
                                  2.0 * DEFAULT_CJK_WEIGHT)
"""The CJK leg's weight (issue #13): half, equal to and twice the built-in value."""

BUILTIN_RRF_K = 60.0
BUILTIN_BM25_WEIGHTS: tuple[float, float, float] = (2.0, 1.0, 1.0)
BUILTIN_LEG_WEIGHT = 1.0
BUILTIN_CJK_WEIGHT = DEFAULT_CJK_WEIGHT
BUILTIN_MIN_SCORE = 0.0

DEFAULT_K_INDEX = 4
DEFAULT_WEIGHT_INDEX = (2 * 4 + 1) * 4 + 1
"""(h=2.0, ctx=1.0, content=1.0) = grid indices (2, 1, 1) ⇒ 37."""
DEFAULT_FUSION_INDEX = DEFAULT_WEIGHT_INDEX * len(RRF_K_VALUES) + DEFAULT_K_INDEX
"""(2, 1, 1, 4) ⇒ 37 × 6 + 4 = 226."""
DEFAULT_RATIO_INDEX = 2
DEFAULT_CJK_INDEX = 1
DEFAULT_RETRIEVAL_INDEX = (DEFAULT_RATIO_INDEX * len(CJK_WEIGHTS) + DEFAULT_CJK_INDEX) * len(
    MIN_SCORES)
"""(ratio 1, cjk ×1, min_score 0) = indices (2, 1, 0) ⇒ (2 × 3 + 1) × 4 = 28."""

BM25_PROBE_WEIGHT_INDICES: tuple[int, int] = ((3 * 4 + 0) * 4 + 0, (0 * 4 + 0) * 4 + 3)
"""Weight sets behind `bm25_sensitive`: (h=4, ctx=0.5, c=0.5) = 48, (h=0.5, ctx=0.5, c=4) = 3."""

FUSION_KEYS = ("rrf_k", "bm25_heading_weight", "bm25_context_weight", "bm25_content_weight")
RETRIEVAL_KEYS = ("vector_weight", "fts_weight", "cjk_weight", "min_score")
TABLES: dict[Space, str] = {"fusion": "search.fusion", "retrieval": "search.retrieval"}


@dataclass(frozen=True, slots=True)
class Condition:
    """One grid point; the members of the other space stay at the built-in values."""

    space: Space
    index: int
    rrf_k: float = BUILTIN_RRF_K
    bm25_heading_weight: float = BUILTIN_BM25_WEIGHTS[0]
    bm25_context_weight: float = BUILTIN_BM25_WEIGHTS[1]
    bm25_content_weight: float = BUILTIN_BM25_WEIGHTS[2]
    vector_weight: float = BUILTIN_LEG_WEIGHT
    fts_weight: float = BUILTIN_LEG_WEIGHT
    cjk_weight: float = BUILTIN_CJK_WEIGHT
    min_score: float = BUILTIN_MIN_SCORE

    @property
    def grid_indices(self) -> tuple[int, ...]:
        """Fusion: (h, ctx, content, k) indices; retrieval: (ratio, cjk, min_score) indices."""
        return grid_indices(self.space, self.index)

    @property
    def weight_index(self) -> int:
        """The FTS list this condition reads: its bm25 weight set (fusion), always 0 (retrieval)."""
        return self.index // len(RRF_K_VALUES) if self.space == "fusion" else 0

    def values(self) -> dict[str, float]:
        """The config keys this space writes, in spec order (the JSON `condition` object)."""
        keys = FUSION_KEYS if self.space == "fusion" else RETRIEVAL_KEYS
        return {key: float(getattr(self, key)) for key in keys}


def weight_sets() -> list[tuple[float, float, float]]:
    """The 64 bm25 (heading, context, content) weight triples in weight_index order."""
    return [(h, c, t) for h in BM25_WEIGHT_VALUES for c in BM25_WEIGHT_VALUES
            for t in BM25_WEIGHT_VALUES]


def fusion_grid() -> list[Condition]:
    """The 384 fusion conditions; index = weight_index × 6 + k_index."""
    grid: list[Condition] = []
    for weight_index, (h, c, t) in enumerate(weight_sets()):
        for k_index, rrf_k in enumerate(RRF_K_VALUES):
            grid.append(Condition(
                "fusion", weight_index * len(RRF_K_VALUES) + k_index, rrf_k=rrf_k,
                bm25_heading_weight=h, bm25_context_weight=c, bm25_content_weight=t,
            ))
    return grid


def retrieval_grid() -> list[Condition]:
    """The 60 retrieval conditions; index = (ratio_index × 3 + cjk_index) × 4 + min_score_index."""
    return [
        Condition("retrieval", (r * len(CJK_WEIGHTS) + c) * len(MIN_SCORES) + m,
                  vector_weight=ratio, fts_weight=1.0, cjk_weight=cjk, min_score=floor)
        for r, ratio in enumerate(WEIGHT_RATIOS) for c, cjk in enumerate(CJK_WEIGHTS)
        for m, floor in enumerate(MIN_SCORES)
    ]


def grid(space: Space) -> list[Condition]:
    """The grid of `space`, in condition-index order."""
    return fusion_grid() if space == "fusion" else retrieval_grid()


def default_index(space: Space) -> int:
    """The condition index of the built-in defaults in `space`."""
    return DEFAULT_FUSION_INDEX if space == "fusion" else DEFAULT_RETRIEVAL_INDEX


def default_condition(space: Space) -> Condition:
    """The built-in defaults as a grid condition."""
    return grid(space)[default_index(space)]


def grid_indices(space: Space, index: int) -> tuple[int, ...]:
    """Per-axis grid indices of a condition index."""
    if space == "fusion":
        weight_index, k_index = divmod(index, len(RRF_K_VALUES))
        h, rest = divmod(weight_index, 16)
        c, t = divmod(rest, 4)
        return (h, c, t, k_index)
    pair, m = divmod(index, len(MIN_SCORES))
    return (*divmod(pair, len(CJK_WEIGHTS)), m)


def _num(value: float) -> str:
    """A float as Python writes it, so it always carries a decimal point (4.0, 0.67)."""
    return repr(float(value))


def _rrf_k_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else _num(value)


def label_of(values: Mapping[str, float]) -> str:
    """Label of a JSON `condition` object (its keys tell the space)."""
    if "rrf_k" in values:
        return (f"h={_num(values['bm25_heading_weight'])} ctx={_num(values['bm25_context_weight'])}"
                f" content={_num(values['bm25_content_weight'])} k={_rrf_k_text(values['rrf_k'])}")
    cjk = f" cjk_weight={_num(values['cjk_weight'])}" if "cjk_weight" in values else ""
    return (f"vector_weight={_num(values['vector_weight'])} fts_weight={_num(values['fts_weight'])}"
            f"{cjk} min_score={_num(values['min_score'])}")


def label(condition: Condition) -> str:
    """`h=4.0 ctx=1.0 content=0.5 k=10` or `vector_weight=1.5 fts_weight=1.0 min_score=0.2`."""
    return label_of(condition.values())


def toml_snippet(condition: Condition) -> str:
    """The config table that applies `condition`; numbers always carry a decimal point."""
    lines = [f"[{TABLES[condition.space]}]"]
    lines += [f"{key} = {_num(value)}" for key, value in condition.values().items()]
    return "\n".join(lines)


# --------------------------------------------------------------------------- inputs (§2, §3)


def normalise_k_values(values: Iterable[int]) -> tuple[int, ...]:
    """Zeros dropped, 5 always added, each capped at 1000, sorted and deduplicated."""
    kept = {min(int(k), MAX_TUNE_K) for k in values if int(k) > 0}
    kept.add(PRIMARY_K)
    return tuple(sorted(kept))


def tune_limit(limit: int | None, k_values: Sequence[int]) -> int:
    """`max(limit or max k, max k)`, capped at 1000 (the runner writes eval's cap note)."""
    largest = max(k_values) if k_values else PRIMARY_K
    return min(max(limit if limit is not None else largest, largest), MAX_TUNE_K)


def candidate_pool(limit: int) -> int:
    """Per-leg candidate pool `P = max(limit × 5, 50)`."""
    return max(limit * 5, 50)


def vector_k(pool: int, has_exclusions: bool = False) -> int:
    """The vector leg's k: `min(P, 4096)`, or `min(P × 10, 4096)` for a query with exclusions."""
    return min(pool * 10 if has_exclusions else pool, 4096)


@dataclass(frozen=True, slots=True)
class QueryLists:
    """One usable query's fetched lists, best first.

    `fts_ids_by_weight` holds one list per bm25 weight set of the space: 64 in weight_index order
    for the fusion space, only the built-in set for the retrieval space.
    """

    id: str
    expected: tuple[tuple[str, str | None], ...]
    vector_ids: tuple[int, ...]
    fts_ids_by_weight: tuple[tuple[int, ...], ...]
    word_ids_by_weight: tuple[tuple[int, ...], ...] = ()
    """The word-level table's lists, one per weight set like `fts_ids_by_weight`; empty when
    the query has no Latin word (the leg does not run)."""
    cjk_ids_by_weight: tuple[tuple[int, ...], ...] = ()
    """The CJK table's lists, likewise; empty when the query has no CJK text."""


ChunkMeta = Mapping[int, tuple[str, str | None]]
"""chunk id → (document path, chunk heading or None)."""


# --------------------------------------------------------------------------- fusion in memory


@dataclass(frozen=True, slots=True)
class _Rows:
    """Distinct fused orderings of a query: one per (leg weights, FTS list, rrf_k)."""

    vector_weight: FloatArray
    fts_weight: FloatArray
    fts_list: IntArray
    rrf_k: FloatArray
    cjk_weight: FloatArray


@dataclass(frozen=True, slots=True)
class _Fused:
    """Top `limit` of every row: ids (−1 padding), raw RRF sums (−inf padding), scores."""

    ids: IntArray
    raw: FloatArray
    score: FloatArray
    valid: BoolArray


def _ranks(universe: IntArray, ids: Sequence[int]) -> FloatArray:
    """1-based rank of every universe id in `ids`, +inf where absent."""
    ranks = np.full(universe.size, np.inf)
    if len(ids):
        ranks[np.searchsorted(universe, np.asarray(ids, dtype=np.int64))] = np.arange(
            1, len(ids) + 1, dtype=np.float64)
    return ranks


def _add_leg(raw: FloatArray, present: BoolArray, best: FloatArray, universe: IntArray,
             lists: Sequence[Sequence[int]], weight: FloatArray, rows: _Rows
             ) -> tuple[FloatArray, BoolArray, FloatArray]:
    """One more full-text leg (one list per weight set) added to every row, in leg order."""
    if not lists:
        return raw, present, best
    rank = np.stack([_ranks(universe, ids) for ids in lists])[rows.fts_list]
    lengths = np.array([len(ids) for ids in lists])[rows.fts_list]
    return (raw + weight[:, None] / (rows.rrf_k[:, None] + rank), present | np.isfinite(rank),
            np.where(lengths > 0, best + weight / (rows.rrf_k + 1), best))


def _fuse_rows(vector_ids: Sequence[int], fts_lists: Sequence[Sequence[int]],
               word_lists: Sequence[Sequence[int]], rows: _Rows, limit: int,
               cjk_lists: Sequence[Sequence[int]] = ()) -> _Fused:
    """Weighted RRF of search.md §5 for many rows at once, over up to four legs.

    Every candidate of the query (the union of all lists) is a column; a leg contributes
    `w / (k + rank)`, which is exactly 0.0 where the candidate is absent (rank +inf), so the
    float64 sum vector + trigram + words + CJK is the reference's, term for term in leg order. A
    stable sort on −raw over id-sorted columns then breaks ties by chunk id. Row r uses the
    trigram and word lists of weight set `rows.fts_list[r]`.
    """
    n_rows = rows.rrf_k.size
    arrays = [np.asarray(ids, dtype=np.int64)
              for ids in (vector_ids, *fts_lists, *word_lists, *cjk_lists)]
    universe = np.unique(np.concatenate(arrays)) if arrays else np.empty(0, dtype=np.int64)
    k = rows.rrf_k[:, None]
    vec_rank = _ranks(universe, vector_ids)[None, :]
    fts_rank = np.stack([_ranks(universe, ids) for ids in fts_lists])[rows.fts_list]
    raw = rows.vector_weight[:, None] / (k + vec_rank) + rows.fts_weight[:, None] / (k + fts_rank)
    present = np.isfinite(vec_rank) | np.isfinite(fts_rank)
    best = np.zeros(n_rows)
    if len(vector_ids):
        best = best + rows.vector_weight / (rows.rrf_k + 1)
    fts_lengths = np.array([len(ids) for ids in fts_lists])[rows.fts_list]
    best = np.where(fts_lengths > 0, best + rows.fts_weight / (rows.rrf_k + 1), best)
    raw, present, best = _add_leg(raw, present, best, universe, word_lists, rows.fts_weight, rows)
    raw, present, best = _add_leg(raw, present, best, universe, cjk_lists, rows.cjk_weight, rows)
    raw = np.where(present, raw, -np.inf)
    order = np.argsort(-raw, axis=1, kind="stable")[:, :limit]
    top_raw = np.take_along_axis(raw, order, axis=1)
    valid = np.isfinite(top_raw)
    top_ids = np.where(valid, universe[order], -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(valid, top_raw / np.where(best > 0, best, 1.0)[:, None], -np.inf)
    return _Fused(top_ids, top_raw, score, valid)


def fuse_lists(vector_ids: Sequence[int], fts_ids: Sequence[int], *, limit: int,
               rrf_k: float = BUILTIN_RRF_K, vector_weight: float = BUILTIN_LEG_WEIGHT,
               fts_weight: float = BUILTIN_LEG_WEIGHT, min_score: float = BUILTIN_MIN_SCORE,
               word_ids: Sequence[int] | None = None, cjk_ids: Sequence[int] | None = None,
               cjk_weight: float = BUILTIN_CJK_WEIGHT) -> list[tuple[int, float]]:
    """One condition fused as search.md §5: `(chunk id, normalised score)` pairs, best first.

    `word_ids` / `cjk_ids` are the word-level and CJK full-text legs (None when they did not run).
    """
    rows = _Rows(np.array([vector_weight]), np.array([fts_weight]), np.array([0]),
                 np.array([float(rrf_k)]), np.array([cjk_weight]))
    fused = _fuse_rows(vector_ids, [fts_ids], [] if word_ids is None else [word_ids], rows, limit,
                       [] if cjk_ids is None else [cjk_ids])
    keep = fused.valid[0] & (fused.score[0] >= min_score)
    return [(int(i), float(s)) for i, s in zip(fused.ids[0][keep], fused.score[0][keep],
                                                strict=True)]


def _space_rows(space: Space) -> tuple[_Rows, IntArray, FloatArray]:
    """The rows of a space and, per condition, its row and its `min_score` floor."""
    if space == "fusion":
        conditions = fusion_grid()
        rows = _Rows(
            np.ones(len(conditions)), np.ones(len(conditions)),
            np.array([c.weight_index for c in conditions], dtype=np.int64),
            np.array([c.rrf_k for c in conditions]),
            np.full(len(conditions), BUILTIN_CJK_WEIGHT),
        )
        return rows, np.arange(len(conditions), dtype=np.int64), np.zeros(len(conditions))
    pairs = [(ratio, cjk) for ratio in WEIGHT_RATIOS for cjk in CJK_WEIGHTS]
    rows = _Rows(np.array([p[0] for p in pairs]), np.ones(len(pairs)),
                 np.zeros(len(pairs), dtype=np.int64), np.full(len(pairs), BUILTIN_RRF_K),
                 np.array([p[1] for p in pairs]))
    conditions = retrieval_grid()
    row_of = np.array([c.index // len(MIN_SCORES) for c in conditions], dtype=np.int64)
    floors = np.array([c.min_score for c in conditions])
    return rows, row_of, floors


# --------------------------------------------------------------------------- metrics (eval.md §4)


def _entry_matches(entry: tuple[str, str | None], hit: tuple[str, str | None]) -> bool:
    """The hit rule of eval.md §3."""
    path, heading = entry
    if path != hit[0]:
        return False
    if heading is None:
        return True
    return hit[1] is not None and heading.strip().lower() == hit[1].strip().lower()


def _discount(position: int) -> float:
    return 1.0 / math.log2(position + 1)


def _rank_metrics(rel: BoolArray, has_heading: BoolArray, k_values: Sequence[int]
                  ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """recall@k, nDCG@k (shape (len(k), R)) and RR (R,) of R ranked lists.

    `rel[r, p, e]` says whether the hit at 0-based position p of list r matches entry e (False on
    padding). nDCG walks the positions in rank order with the one-to-one greedy matching of eval.md
    §4 (a hit consumes an unconsumed entry it matches, one with a heading first, else the lowest
    index); DCG is summed in rank order exactly like the per-query reference.
    """
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


@dataclass(frozen=True, slots=True)
class HitMetrics:
    """Metrics of one ranked list (used to check the vectorised maths against eval.md §4)."""

    recall_at_k: dict[int, float]
    reciprocal_rank: float
    ndcg_at_k: dict[int, float]


def score_hits(expected: Sequence[tuple[str, str | None]], hits: Sequence[tuple[str, str | None]],
               k_values: Sequence[int]) -> HitMetrics:
    """recall@k, RR and nDCG@k of one list of `(path, heading)` hits with the vectorised code."""
    rel = np.array([[[_entry_matches(e, h) for e in expected] for h in hits]], dtype=bool)
    rel = rel.reshape(1, len(hits), len(expected))
    has_heading = np.array([e[1] is not None for e in expected], dtype=bool)
    recall, ndcg, rr = _rank_metrics(rel, has_heading, k_values)
    return HitMetrics(
        {k: float(recall[i, 0]) for i, k in enumerate(k_values)}, float(rr[0]),
        {k: float(ndcg[i, 0]) for i, k in enumerate(k_values)},
    )


# --------------------------------------------------------------------------- the sweep (§5)


@dataclass(frozen=True, slots=True)
class SweepScores:
    """Per-(condition, query) metrics of a sweep; arrays are indexed [k, condition, query]."""

    space: Space
    k_values: tuple[int, ...]
    query_ids: tuple[str, ...]
    ndcg: FloatArray
    recall: FloatArray
    rr: FloatArray

    @property
    def ndcg5(self) -> FloatArray:
        """nDCG@5 per (condition, query): the matrix the selection works on."""
        primary: FloatArray = self.ndcg[self.k_values.index(PRIMARY_K)]
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
        space: `fusion` (each query needs 64 FTS lists) or `retrieval` (1 list).
        limit: the fused list is cut to this many hits (the eval depth).
        k_values: metric cut-offs; normalised, so 5 is always present.
        progress: receives one progress line per query (e.g. `messages.progress`).

    Returns:
        nDCG@k, recall@k and RR for every (condition, query).

    Raises:
        ValueError: a query has the wrong number of FTS lists or a list repeats an id.
        KeyError: a listed chunk id is missing from `chunk_meta`.
    """
    ks = normalise_k_values(k_values)
    rows, row_of, floors = _space_rows(space)
    n_lists = len(weight_sets()) if space == "fusion" else 1
    n_cond = row_of.size
    ndcg = np.zeros((len(ks), n_cond, len(queries)))
    recall = np.zeros((len(ks), n_cond, len(queries)))
    rr = np.zeros((n_cond, len(queries)))
    for q, query in enumerate(queries):
        if progress is not None:
            progress(progress_line(q + 1, len(queries), n_cond, query.id))
        _check_lists(query, n_lists)
        fused = _fuse_rows(query.vector_ids, query.fts_ids_by_weight, query.word_ids_by_weight,
                           rows, max(limit, 1), query.cjk_ids_by_weight)
        valid = fused.valid[row_of] & (fused.score[row_of] >= floors[:, None])
        ids = fused.ids[row_of]
        rel = _relevance(query, chunk_meta, ids, valid)
        has_heading = np.array([e[1] is not None for e in query.expected], dtype=bool)
        recall[:, :, q], ndcg[:, :, q], rr[:, q] = _rank_metrics(rel, has_heading, ks)
    return SweepScores(space, ks, tuple(q.id for q in queries), ndcg, recall, rr)


def _check_lists(query: QueryLists, n_lists: int) -> None:
    if len(query.fts_ids_by_weight) != n_lists:
        raise ValueError(f"query {query.id!r}: expected {n_lists} FTS list(s), "
                         f"got {len(query.fts_ids_by_weight)}")
    for name, lists in (("word", query.word_ids_by_weight), ("CJK", query.cjk_ids_by_weight)):
        if lists and len(lists) != n_lists:
            raise ValueError(f"query {query.id!r}: expected 0 or {n_lists} {name} list(s), "
                             f"got {len(lists)}")
    for ids in (query.vector_ids, *query.fts_ids_by_weight, *query.word_ids_by_weight,
                *query.cjk_ids_by_weight):
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
            table[row] = [_entry_matches(e, hit) for e in query.expected]
    slot = np.searchsorted(universe, ids)
    slot = np.where(valid, slot, universe.size)
    return table[slot]


# --------------------------------------------------------------------------- diagnostics (§3)


@dataclass(frozen=True, slots=True)
class QueryDiagnostics:
    """The pre-flight diagnostics of one usable query (§3)."""

    id: str
    fts_candidates: int
    fts_total_matches: int
    vec_fts_overlap: int
    bm25_sensitive: bool
    idf_clamped: bool
    rrf_ties: int
    effective: bool


def diagnostics(query_id: str, vector_ids: Sequence[int], fts_ids: Sequence[int], *,
                probe_heading_heavy: Sequence[int], probe_content_heavy: Sequence[int],
                fts_total_matches: int, chunk_total: int, limit: int) -> QueryDiagnostics:
    """Diagnostics of one query from its lists at the built-in settings.

    Args:
        query_id: the golden query id.
        vector_ids: the vector list (pool P, exclusions dropped).
        fts_ids: the FTS list at the built-in bm25 weights.
        probe_heading_heavy: the FTS list at (h=4, ctx=0.5, c=0.5) (weight set 48).
        probe_content_heavy: the FTS list at (h=0.5, ctx=0.5, c=4) (weight set 3).
        fts_total_matches: rows the FTS expression matches (0 without an expression).
        chunk_total: chunks in the index.
        limit: the tune limit; `rrf_ties` counts adjacent equal scores in the fused top `limit`.
    """
    fused = fuse_lists(vector_ids, fts_ids, limit=max(limit, 1))
    ties = sum(1 for a, b in itertools.pairwise(fused) if a[1] == b[1])
    return QueryDiagnostics(
        id=query_id,
        fts_candidates=len(fts_ids),
        fts_total_matches=fts_total_matches,
        vec_fts_overlap=len(set(vector_ids) & set(fts_ids)),
        bm25_sensitive=list(probe_heading_heavy) != list(probe_content_heavy),
        idf_clamped=chunk_total > 0 and 2 * fts_total_matches >= chunk_total,
        rrf_ties=ties,
        effective=len(fts_ids) >= 2,
    )


SCOPE_NOTE_STAGES = ("[search.mmr] / [search.parent_retriever] are enabled in groove.toml but tune "
                     "measures the plain fusion stage only.")
SCOPE_NOTE_DEFAULTS = ("[search.fusion] / [search.retrieval] differ from the built-in defaults; "
                       "tune still measures deltas against the BUILT-IN defaults, not your values.")
CONTEXT_NOOP_NOTE = "no chunk has a contextual breadcrumb, so the context weight axis is a no-op"


def effective_note(effective: int, total: int) -> str:
    """`{e} of {n} golden queries are effective`."""
    return f"{effective} of {total} golden queries are effective"


def insensitive_note(query_id: str, fts_candidates: int) -> str:
    """`insensitive: {id} (FTS candidates = {c})`."""
    return f"insensitive: {query_id} (FTS candidates = {fts_candidates})"


def small_n_warning(effective: int) -> str:
    """The warning when fewer than 50 queries are effective."""
    return (f"effective N = {effective} is below the IR convention of {SMALL_N_WARN} topics; "
            "treat the verdict as indicative")


def no_effective_query_error(diags: Sequence[QueryDiagnostics]) -> TuneNotApplicable:
    """The exit-2 error when no usable query has 2 or more FTS candidates (§3)."""
    lines = [
        f"none of the {len(diags)} golden queries is sensitive to the fusion parameters (every "
        "query has fewer than 2 FTS candidates), so the grid was not run.",
        "  Fusion weights and the RRF constant can only reorder results when the full-text leg "
        "returns at",
        "  least two candidates for a query. Add golden queries that share words, names or "
        "identifiers with",
        "  the notes, or check that the index is not empty.",
    ]
    lines += [f"  {d.id}: FTS candidates = {d.fts_candidates}" for d in diags]
    return TuneNotApplicable("\n".join(lines))


def check_preflight(diags: Sequence[QueryDiagnostics], *, context_axis_noop: bool
                    ) -> tuple[int, ...]:
    """Write the §3 stderr notes and return the indices of the effective queries.

    Raises:
        TuneNotApplicable: no query is effective (exit 2, nothing on stdout).
    """
    if context_axis_noop:
        messages.note(CONTEXT_NOOP_NOTE)
    effective = tuple(i for i, d in enumerate(diags) if d.effective)
    if not effective:
        raise no_effective_query_error(diags)
    messages.note(effective_note(len(effective), len(diags)))
    for d in diags:
        if not d.effective:
            messages.note(insensitive_note(d.id, d.fts_candidates))
    if len(effective) < SMALL_N_WARN:
        messages.warning(small_n_warning(len(effective)))
    return effective


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
    min_score 0."""
    if space == "fusion":
        return tuple(w * len(RRF_K_VALUES) + DEFAULT_K_INDEX for w in range(len(weight_sets())))
    return tuple(p * len(MIN_SCORES) for p in range(len(WEIGHT_RATIOS) * len(CJK_WEIGHTS)))


def phase2_conditions(space: Space, phase1_choice: int) -> tuple[int, ...]:
    """Fusion: the 6 k values at the chosen weights; retrieval: the 4 floors at the chosen
    weights."""
    size = len(RRF_K_VALUES) if space == "fusion" else len(MIN_SCORES)
    base = phase1_choice - phase1_choice % size
    return tuple(base + i for i in range(size))


def _centre_distance(space: Space, index: int) -> float:
    centre = (1.5, 1.5, 1.5, 2.5) if space == "fusion" else (2.0, 1.0, 0.0)
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


# --------------------------------------------------------------------------- verdict (§8)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Mean metrics over the usable queries for one condition (eval.md's aggregate, no CIs)."""

    recall_at_k: dict[int, float]
    mrr: float
    ndcg_at_k: dict[int, float]
    query_count: int


def aggregate(sweep: SweepScores, condition: int) -> Aggregate:
    """Aggregate of one condition over every query of the sweep."""
    n = len(sweep.query_ids)

    def mean(values: FloatArray) -> float:
        return float(values.mean()) if n else 0.0

    return Aggregate(
        {k: mean(sweep.recall[i, condition]) for i, k in enumerate(sweep.k_values)},
        mean(sweep.rr[condition]),
        {k: mean(sweep.ndcg[i, condition]) for i, k in enumerate(sweep.k_values)},
        n,
    )


@dataclass(frozen=True, slots=True)
class Impact:
    """Per-query nDCG@5 change of the refit against the default over all usable queries."""

    improved: int
    degraded: int
    worst_delta: float | None
    worst_id: str | None


def per_query_impact(sweep: SweepScores, refit: int) -> Impact:
    """Improved / degraded counts (|Δ| > 1e-12) and the lowest Δ with its query (first on ties)."""
    default = default_index(sweep.space)
    deltas = [float(d) for d in sweep.ndcg5[refit] - sweep.ndcg5[default]]
    if not deltas:
        return Impact(0, 0, None, None)
    worst = min(range(len(deltas)), key=lambda i: (deltas[i], i))
    return Impact(sum(1 for d in deltas if d > TIE_EPS), sum(1 for d in deltas if d < -TIE_EPS),
                  deltas[worst], sweep.query_ids[worst])


def secondary_violations(baseline: Aggregate, refit: Aggregate) -> list[str]:
    """Criterion 5: a reason per recall@k or MRR that drops by more than 1e-12."""
    reasons = [
        f"recall@{k} would drop from {baseline.recall_at_k[k]:.3f} to {refit.recall_at_k[k]:.3f}"
        for k in baseline.recall_at_k
        if baseline.recall_at_k[k] - refit.recall_at_k[k] > TIE_EPS
    ]
    if baseline.mrr - refit.mrr > TIE_EPS:
        reasons.append(f"MRR would drop from {baseline.mrr:.3f} to {refit.mrr:.3f}")
    return reasons


@dataclass(frozen=True, slots=True)
class Verdict:
    """Adopt the refit or keep the defaults, with the evidence behind the decision."""

    decision: Literal["adopt", "keep_default"]
    refit: Condition
    reasons: tuple[str, ...]
    toml_snippet: str | None
    baseline: Aggregate
    refit_metrics: Aggregate
    violations: tuple[str, ...]
    impact: Impact


def verdict(sweep: SweepScores, loo: LooResult) -> Verdict:
    """Apply the five adoption criteria of §8; every failed one contributes its reason."""
    space = sweep.space
    refit = grid(space)[loo.refit]
    baseline = aggregate(sweep, default_index(space))
    refit_metrics = aggregate(sweep, loo.refit)
    violations = secondary_violations(baseline, refit_metrics)
    mean, se = loo.mean_delta, loo.paired_se
    reasons: list[str] = []
    if loo.refit == default_index(space):
        reasons.append("the refit selection is the built-in default")
    if not mean > ADOPT_MIN_MEAN_DELTA:
        reasons.append(f"held-out mean delta {mean:.4f} is not above {ADOPT_MIN_MEAN_DELTA}")
    bar = ADOPT_SE_MULTIPLIER * se
    if not (math.isfinite(bar) and mean > bar):
        reasons.append(f"held-out mean delta {mean:.4f} is not above {ADOPT_SE_MULTIPLIER} × "
                       f"paired SE ({bar:.4f})")
    if not loo.stability > STABILITY_MIN:
        reasons.append(f"selection stability {loo.stability:.2f} is not above {STABILITY_MIN}")
    reasons += violations
    adopt = not reasons
    return Verdict(
        decision="adopt" if adopt else "keep_default",
        refit=refit,
        reasons=tuple(reasons),
        toml_snippet=toml_snippet(refit) if adopt else None,
        baseline=baseline,
        refit_metrics=refit_metrics,
        violations=tuple(violations),
        impact=per_query_impact(sweep, loo.refit),
    )


# --------------------------------------------------------------------------- report (§9)


@dataclass(frozen=True, slots=True)
class WrittenKeys:
    """What `--write` changed: the file, the table and the keys, in spec order."""

    path: Path
    table: str
    keys: tuple[str, ...]


def _finite(value: float | None) -> float | None:
    """JSON has no NaN or ∞: those become null."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _aggregate_json(agg: Aggregate) -> dict[str, Any]:
    return {
        "recall_at_k": {str(k): v for k, v in agg.recall_at_k.items()},
        "mrr": agg.mrr,
        "ndcg_at_k": {str(k): v for k, v in agg.ndcg_at_k.items()},
        "query_count": agg.query_count,
    }


def _grid_json(sweep: SweepScores, selection: Selection) -> dict[str, Any]:
    conditions = grid(sweep.space)

    def entry(index: int) -> dict[str, Any]:
        return {"condition": conditions[index].values(), "ndcg": float(selection.means[index])}

    top = sorted(selection.phase1, key=lambda i: -float(selection.means[i]))[:5]
    if sweep.space == "fusion":
        return {
            "rrf_k": [int(k) for k in RRF_K_VALUES],
            "bm25_weights": list(BM25_WEIGHT_VALUES),
            "top_weight_conditions": [entry(i) for i in top],
            "rrf_k_sweep": [entry(i) for i in selection.phase2],
        }
    return {
        "weight_ratios": [0.5, 0.67, 1, 1.5, 2],
        "cjk_weights": list(CJK_WEIGHTS),
        "min_scores": [0, 0.2, 0.3, 0.4],
        "ratio_sweep": [entry(i) for i in top],
        "min_score_sweep": [entry(i) for i in selection.phase2],
    }


def build_tune_json(*, kb_path: str, golden_path: str, model: str, limit: int, chunk_total: int,
                    context_axis_noop: bool, diagnostics: Sequence[QueryDiagnostics],
                    sweep: SweepScores, loo: LooResult, verdict: Verdict,
                    written: WrittenKeys | None = None) -> dict[str, Any]:
    """The §9 JSON document (keys in spec order); `render_tune_text` renders the same dict.

    Raises:
        ValueError: `diagnostics` and the sweep do not list the same queries in the same order.
    """
    if tuple(d.id for d in diagnostics) != sweep.query_ids:
        raise ValueError("diagnostics and sweep must cover the same queries in the same order")
    effective = [i for i, d in enumerate(diagnostics) if d.effective]
    selection = select_detail(sweep.ndcg5, effective, sweep.space)
    pool = candidate_pool(limit)
    conditions = grid(sweep.space)
    impact = verdict.impact
    verdict_json: dict[str, Any]
    if verdict.decision == "adopt":
        verdict_json = {"decision": "adopt", "condition": verdict.refit.values(),
                        "toml_snippet": verdict.toml_snippet}
    else:
        verdict_json = {"decision": "keep_default", "reasons": list(verdict.reasons)}
    return {
        "kb_path": kb_path,
        "golden_path": golden_path,
        "model": model,
        "reranker": None,
        "space": sweep.space,
        "limit": limit,
        "candidate_pool": pool,
        "vector_k": vector_k(pool),
        "primary_k": PRIMARY_K,
        "k_values": list(sweep.k_values),
        "chunk_total": chunk_total,
        "context_axis_noop": context_axis_noop,
        "query_count": len(diagnostics),
        "effective_query_count": len(effective),
        "diagnostics": [
            {"id": d.id, "fts_candidates": d.fts_candidates,
             "fts_total_matches": d.fts_total_matches, "vec_fts_overlap": d.vec_fts_overlap,
             "bm25_sensitive": d.bm25_sensitive, "idf_clamped": d.idf_clamped,
             "rrf_ties": d.rrf_ties, "effective": d.effective}
            for d in diagnostics
        ],
        "grid": _grid_json(sweep, selection),
        "loo": {
            "refit": conditions[loo.refit].values(),
            "folds": len(loo.fold_queries),
            "held_out_diffs": list(loo.held_out_diffs),
            "mean_delta": _finite(loo.mean_delta),
            "paired_se": _finite(loo.paired_se),
            "selection_stability": loo.stability,
            "sign_test": {"improved": loo.sign_test.improved, "degraded": loo.sign_test.degraded,
                          "tied": loo.sign_test.tied, "p_value": loo.sign_test.p_value},
        },
        "secondary_metrics": {
            "baseline": _aggregate_json(verdict.baseline),
            "refit": _aggregate_json(verdict.refit_metrics),
            "violations": list(verdict.violations),
        },
        "per_query_impact": {"improved": impact.improved, "degraded": impact.degraded,
                             "worst_delta": impact.worst_delta, "worst_id": impact.worst_id},
        "verdict": verdict_json,
        "written": None if written is None else {
            "path": str(written.path), "table": written.table, "keys": list(written.keys)},
    }
