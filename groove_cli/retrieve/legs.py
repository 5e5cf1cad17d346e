"""The retrieval legs (search.md §3–§5), once for every caller: search, eval, tune and bench.

A leg turns a compiled query into a ranked list of chunk ids: the trigram full-text leg, the
word-level full-text leg, the CJK full-text leg (each reading the full-text table it declares,
store/fts_tables.py) and the vector leg (KNN over the chunk vectors). Each full-text leg is one
`Leg` declaration (registry below) that every stage loops over; which legs run is decided by
`legs_to_run`; the ids the query's exclusions match are computed once (`leg_exclusions`) and
every leg drops the same ones. Adding a leg: docs/design/code.md "Adding a leg".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

from groove_cli.config import MAX_TOP_K
from groove_cli.retrieve.filters import FilterSpec, RowFilter, compile_filters
from groove_cli.retrieve.query import CompiledQuery
from groove_cli.store.fts_tables import CJK_TABLE, TRIGRAM_TABLE, WORDS_TABLE, FtsTable

if TYPE_CHECKING:  # numpy is imported only where vectors are used (fts-only runs skip it)
    import numpy as np
    import numpy.typing as npt

    from groove_cli.retrieve.params import SearchParams
    from groove_cli.store import IndexReader

Knn = Callable[["npt.NDArray[np.float32]", int], list[tuple[int, float]]]
"""A KNN source: (query vector, k) → up to k (chunk id, distance) pairs, nearest first, ties by
id, so a prefix of a longer answer is exactly the shorter answer."""

class VectorRows(Protocol):
    """Stored vectors from memory (the KNN snapshot) for the hits' cosines."""

    def rows_by_id(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """Vectors by chunk id, shape (pieces, dim); ids it lacks are left out."""
        ...

    def piece_spread(self, query: npt.NDArray[np.float32]) -> float:
        """The query's σ over the extra pieces (search.md §4)."""
        ...

BM25Weights = tuple[float, float, float]

NO_FILTER: RowFilter = compile_filters(FilterSpec())
"""The filter eval and tune run with: nothing is dropped, nothing over-fetched."""


@dataclass(frozen=True, slots=True, eq=False)
class Leg:
    """A full-text leg, declared once: the pipeline, `--explain`, the relevance evidence,
    fusion, tune's lists and sweep, and `--ablate` all loop over `registered()` legs.

    The store part is `ids`/`scored`/`matches`/`count`: by default both stores' reads of the
    full-text table `storage` declares (its tokenizer, columns and writes: store/fts_tables.py);
    a leg over another source overrides them and declares no storage. Fusion order is
    registration order, after the vector leg.
    """

    name: str
    """Short name: `--explain`'s `fts=#1`, the key of its ranks and lists."""
    label: str
    """What `--ablate` calls it: `no {label} leg`."""
    storage: FtsTable | None
    """The full-text table it reads (None: a leg over another source, overriding the reads)."""
    expr: Callable[[CompiledQuery], str | None]
    """The query compiler's part: this leg's MATCH expression, None when it cannot run."""
    negative: Callable[[CompiledQuery], str | None] = lambda _query: None
    """The expression of what the query excludes in this leg's table (None: nothing)."""
    weight: str = "fts_weight"
    """The SearchParams field (and config key) that weighs it in RRF fusion (and switches it)."""
    score_weight: str = "score_text_weight"
    """The SearchParams attribute that weighs it in score fusion (search.md §5)."""
    explain_key: str = ""
    """Its rank's key in the JSON `explain` object."""
    evidence: str | None = None
    """Which relevance feature its rank feeds: `text` (best of those legs) or `cjk`."""
    own_switch: bool = False
    """True: its weight alone switches it, in every mode (0 = off); False: it runs in fts
    mode, and in hybrid mode when its weight is above 0."""
    own_not: bool = False
    """Its expression carries the query's NOT itself (only other tables' exclusions are
    dropped from its list afterwards)."""
    skip_reason: str = "nothing to match"
    """What `--explain` says when the query gives it no expression."""

    @property
    def table(self) -> str:
        """The name of the table it reads, as the stores' reads take it (a leg over another
        source: its own name, the key of its expressions in `fts_exprs`)."""
        return self.storage.name if self.storage is not None else self.name

    def ids(self, store: IndexReader, expr: str, weights: BM25Weights, k: int) -> list[int]:
        """Up to `k` ranked chunk ids for `expr` (bm25 order, ties by id)."""
        return store.fts_search_ids(expr, weights, k, self.table)

    def scored(self, store: IndexReader, expr: str, weights: BM25Weights, k: int
               ) -> list[tuple[int, float]]:
        """`ids` with each id's score, higher = better (the magnitude of FTS5's bm25)."""
        return store.fts_scored_ids(expr, weights, k, self.table)

    def matches(self, store: IndexReader, expr: str) -> set[int]:
        """Every chunk id `expr` matches (an exclusion's rows)."""
        return store.fts_match_ids(expr, self.table)

    def count(self, store: IndexReader, expr: str) -> int:
        """How many chunks `expr` matches (tune's diagnostics)."""
        return store.fts_count(expr, self.table)

    def enabled(self, params: SearchParams) -> bool:
        """Whether these settings run the leg at all (the query decides the rest)."""
        if params.mode == "vector" or self.name in params.disabled_legs:
            return False
        weight = float(getattr(params, self.weight))
        return weight > 0 if self.own_switch else params.mode == "fts" or weight > 0

    def skipped(self, params: SearchParams) -> str:
        """Why `--explain` found no expression for it under these settings."""
        if self.own_switch and params.mode == "vector":
            return "vector mode"
        if self.own_switch and float(getattr(params, self.weight)) == 0:
            return f"{self.weight} 0"
        return self.skip_reason


TRIGRAM = Leg("fts", "trigram", TRIGRAM_TABLE, lambda q: q.match_expr, lambda q: q.negative_expr,
              explain_key="fts_rank", evidence="text", own_not=True, skip_reason="no phrase")
WORDS = Leg("words", "word", WORDS_TABLE, lambda q: q.word_expr, lambda q: q.word_negative_expr,
            explain_key="fts_word_rank", evidence="text",
            skip_reason="no Latin word, or CJK text")
CJK = Leg("cjk", "CJK", CJK_TABLE, lambda q: q.cjk_expr, lambda q: q.cjk_negative_expr,
          weight="cjk_weight", score_weight="score_cjk_weight", explain_key="fts_cjk_rank",
          evidence="cjk", own_switch=True, skip_reason="no CJK text")

_LEGS: list[Leg] = [TRIGRAM, WORDS, CJK]


def registered() -> tuple[Leg, ...]:
    """Every full-text leg, in fusion order."""
    return tuple(_LEGS)


@contextmanager
def extra_leg(leg: Leg) -> Iterator[Leg]:
    """Register one more full-text leg inside the block (a plug-in, or a test's leg)."""
    if any(known.name == leg.name for known in _LEGS):
        raise ValueError(f"a leg named {leg.name!r} is registered already")
    _LEGS.append(leg)
    try:
        yield leg
    finally:
        _LEGS.remove(leg)


class Legs(NamedTuple):
    """Which legs run: the vector leg, and the full-text legs in fusion order."""

    vector: bool
    text: tuple[Leg, ...] = ()

    @property
    def any(self) -> bool:
        return self.vector or bool(self.text)

    def runs(self, name: str) -> bool:
        """Whether the full-text leg `name` runs."""
        return any(leg.name == name for leg in self.text)


def legs_to_run(query: CompiledQuery, params: SearchParams) -> Legs:
    """The legs a mode runs (search.md §5): each full-text leg its settings enable
    (`Leg.enabled`) that has an expression for the query; the vector leg outside fts mode
    when `vector_weight` is above 0."""
    vector = params.mode == "vector" or (params.mode == "hybrid" and params.vector_weight > 0)
    return Legs(vector, tuple(leg for leg in registered()
                              if leg.enabled(params) and leg.expr(query) is not None))


def candidate_pool(limit: int) -> int:
    """A leg's candidate count for a plain search of `limit` hits: `max(limit × 5, 50)`."""
    return max(limit * 5, 50)


def fetch_size(count: int, filtered: bool) -> int:
    """Over-fetch ×10 (capped at 10,000) when any filter is active (search.md §3)."""
    return min(count * 10, 10_000) if filtered else count


def has_exclusions(query: CompiledQuery) -> bool:
    """True when the query excludes something in any full-text table."""
    return any(leg.negative(query) is not None for leg in registered())


def _other_negatives(query: CompiledQuery, leg: Leg) -> bool:
    """True when another leg's table has exclusions `leg`'s own NOT cannot express."""
    return any(other.negative(query) is not None for other in registered() if other is not leg)


def vector_k(count: int, has_exclusions: bool = False) -> int:
    """The vector leg's k: `count`, ×10 when the leg drops rows (exclusions or an active
    filter), capped at 4096 (search.md §4)."""
    return min(fetch_size(count, has_exclusions), MAX_TOP_K)


def excluded_ids(store: IndexReader, query: CompiledQuery) -> set[int] | None:
    """Chunks the query's exclusions match in any full-text table (dropped from the other legs
    so every leg agrees on what was excluded); None without exclusions."""
    if not has_exclusions(query):
        return None
    ids: set[int] = set()
    for leg in registered():
        negative = leg.negative(query)
        if negative is not None:
            ids |= leg.matches(store, negative)
    return ids


def leg_exclusions(store: IndexReader, query: CompiledQuery, legs: Legs) -> set[int] | None:
    """The excluded ids when a running leg needs them as a set, else None.

    A leg whose expression carries its own NOT (the trigram leg) needs them only when another
    table has exclusions (2-letter words, stems and CJK pieces can match rows its NOT keeps);
    every other leg, the vector leg included, drops the ids any table's negative expression
    matches, so every leg excludes the same chunks.
    """
    if legs.vector or any(not leg.own_not or _other_negatives(query, leg) for leg in legs.text):
        return excluded_ids(store, query)
    return None


def keep(store: IndexReader, ids: Sequence[int], count: int, row_filter: RowFilter,
         excluded: set[int] | None) -> list[int]:
    """The first `count` ids that pass the filters and no exclusion.

    Filter metadata is read only when a filter is active, and then slice by slice in rank
    order, stopping once `count` ids passed: the ×10 over-fetch sets how deep the leg may go,
    not how much is read (the content itself is read later, for the fused pool only).
    """
    if excluded:
        ids = [cid for cid in ids if cid not in excluded]
    if not row_filter.active:
        return list(ids[:count])
    kept: list[int] = []
    step = max(count, 16)
    for start in range(0, len(ids), step):
        window = ids[start : start + step]
        meta = store.filter_meta(window)
        for cid in window:
            m = meta.get(cid)
            if m is not None and row_filter.passes(quality=m.quality, category=m.category,
                                                   topic=m.topic, path=m.path, tags=m.tags,
                                                   date=m.date):
                kept.append(cid)
                if len(kept) == count:
                    return kept
    return kept


def _leg_drop(leg: Leg, query: CompiledQuery, row_filter: RowFilter,
              excluded: set[int] | None) -> tuple[set[int] | None, bool]:
    """The ids a leg drops and whether it over-fetches: a leg carrying its own NOT drops the
    excluded ids only when other tables have exclusions."""
    drop = excluded if not leg.own_not or _other_negatives(query, leg) else None
    return drop, row_filter.active or drop is not None


def run_leg(leg: Leg, store: IndexReader, query: CompiledQuery, weights: BM25Weights,
            count: int, row_filter: RowFilter, excluded: set[int] | None) -> list[int]:
    """A full-text leg's ranked ids for the query ([] when it has no expression); `excluded`
    drops ids an exclusion matched elsewhere (the leg then over-fetches like a filtered one).
    A leg carrying its own NOT drops them only when other tables have exclusions."""
    expr = leg.expr(query)
    if expr is None:
        return []
    drop, filtered = _leg_drop(leg, query, row_filter, excluded)
    return keep(store, leg.ids(store, expr, weights, fetch_size(count, filtered)), count,
                row_filter, drop)


def run_leg_scored(leg: Leg, store: IndexReader, query: CompiledQuery, weights: BM25Weights,
                   count: int, row_filter: RowFilter, excluded: set[int] | None
                   ) -> list[tuple[int, float]]:
    """`run_leg` with each kept id's score (`Leg.scored`, higher = better): the same ids in
    the same order, the same filters and exclusions."""
    expr = leg.expr(query)
    if expr is None:
        return []
    drop, filtered = _leg_drop(leg, query, row_filter, excluded)
    found = leg.scored(store, expr, weights, fetch_size(count, filtered))
    score = dict(found)
    return [(cid, score[cid]) for cid in keep(store, [cid for cid, _ in found], count,
                                              row_filter, drop)]


def fts_exprs(query: CompiledQuery) -> dict[str, str | None]:
    """The query's MATCH expression per full-text table (None where that leg cannot run)."""
    return {leg.table: leg.expr(query) for leg in registered()}


def vector_leg(knn: Knn, store: IndexReader, vector: npt.NDArray[np.float32], count: int,
               row_filter: RowFilter, excluded: set[int] | None) -> list[int]:
    """The vector leg's ranked ids (search.md §4)."""
    filtered = row_filter.active or excluded is not None
    k = vector_k(count, filtered)
    return keep(store, [cid for cid, _ in knn(vector, k)], count, row_filter, excluded)


def vector_leg_scored(knn: Knn, store: IndexReader, vector: npt.NDArray[np.float32], count: int,
                      row_filter: RowFilter, excluded: set[int] | None, *, dim: int | None,
                      vectors: VectorRows | None = None) -> list[tuple[int, float]]:
    """`vector_leg` with each kept id's cosine similarity, computed per hit in float64
    (`cosines`) rather than taken from the KNN's float32 distances, whose last bits depend on
    the batch the query was in: so search, eval and tune give one hit the same score."""
    ids = vector_leg(knn, store, vector, count, row_filter, excluded)
    found = cosines(store, ids, vector, dim, vectors)
    return [(cid, found[cid]) for cid in ids if cid in found]


def cosines(store: IndexReader, ids: list[int], vector: npt.NDArray[np.float32] | None,
            dim: int | None, vectors: VectorRows | None = None) -> dict[int, float]:
    """Cosine similarity of the query vector and each chunk's first piece, or its best later
    piece less σ · e(n) for a chunk of n pieces when that is higher (search.md §4), in float64
    (`vectors`: from memory, the KNN snapshot; else read from the store); none without a query
    vector (the vector leg did not run)."""
    if vector is None or not ids or not dim:
        return {}
    import numpy as np

    from groove_cli.vectors import expected_max, piece_spread

    q = np.asarray(vector, dtype=np.float64)
    q_norm = float(np.linalg.norm(q))
    found: dict[int, float] = {}
    stored_vectors = (vectors.rows_by_id(ids) if vectors is not None
                      else store.piece_vectors_by_id(ids, dim))
    sigma: float | None = None
    for cid, stored in stored_vectors.items():
        v = np.asarray(stored, dtype=np.float64).reshape(-1, q.shape[0])
        norms = q_norm * np.linalg.norm(v, axis=1)
        ok = norms > 0
        if not ok.any():
            continue
        cos = np.full(v.shape[0], -np.inf)
        cos[ok] = (v[ok] @ q) / norms[ok]
        found[cid] = float(cos[0])
        if v.shape[0] > 1 and cos[1:].max() > cos[0]:
            if sigma is None:
                sigma = (vectors.piece_spread(vector) if vectors is not None
                         else piece_spread(store.piece_stats(vector)))
            later = float(cos[1:].max()) - sigma * float(expected_max(np.asarray(v.shape[0])))
            found[cid] = max(found[cid], later)
    return found


def listed_knn(found: Sequence[tuple[int, float]], *,
               own: npt.NDArray[np.float32] | None = None, others: Knn | None = None) -> Knn:
    """A KNN answering from one query's precomputed neighbours (a prefix serves any k). With
    `own` (the query's vector) and `others`, any other vector (vector feedback's, search.md
    §5.1) is answered by `others`."""
    answer = list(found)

    def knn(vector: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        if others is not None and own is not None and vector is not own:
            return others(vector, k)
        return answer[:k]

    return knn
