"""The retrieval legs (search.md §3–§5), once for every caller: search, eval, tune and bench.

A leg turns a compiled query into a ranked list of chunk ids: the trigram full-text leg
(`fts_chunks`), the word-level full-text leg (`fts_words`), the CJK full-text leg (`fts_cjk`)
and the vector leg (KNN over the chunk vectors). Which legs run is decided by `legs_to_run`;
the ids the query's exclusions match are computed once (`leg_exclusions`) and every leg drops
the same ones. A new leg (another full-text table) is one more function here, one more member
of `Legs` and of `FTS_LEGS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from groove_cli.config import MAX_TOP_K
from groove_cli.retrieve.filters import FilterSpec, RowFilter, compile_filters
from groove_cli.retrieve.query import CompiledQuery

if TYPE_CHECKING:  # numpy is imported only where vectors are used (fts-only runs skip it)
    import numpy as np
    import numpy.typing as npt

    from groove_cli.retrieve.params import SearchParams
    from groove_cli.store import IndexReader

Knn = Callable[["npt.NDArray[np.float32]", int], list[tuple[int, float]]]
"""A KNN source: (query vector, k) → up to k (chunk id, distance) pairs, nearest first, ties by
id, so a prefix of a longer answer is exactly the shorter answer."""

VectorRows = Callable[[Sequence[int]], "dict[int, npt.NDArray[np.float32]]"]
"""Stored vectors by chunk id from memory (the KNN snapshot's `rows_by_id`); ids it lacks are
left out."""

BM25Weights = tuple[float, float, float]

NO_FILTER: RowFilter = compile_filters(FilterSpec())
"""The filter eval and tune run with: nothing is dropped, nothing over-fetched."""


class Legs(NamedTuple):
    """Which legs run: the vector leg and the three full-text legs (trigram, word-level, CJK)."""

    vector: bool
    fts: bool
    words: bool
    cjk: bool = False

    @property
    def any(self) -> bool:
        return self.vector or self.fts or self.words or self.cjk


def legs_to_run(query: CompiledQuery, params: SearchParams) -> Legs:
    """The legs a mode runs (search.md §5); a full-text leg needs its expression. The CJK leg
    has its own weight (`cjk_weight`; 0 switches it off in every mode); the trigram and word
    legs share `fts_weight`."""
    has_tri, has_words = query.match_expr is not None, query.word_expr is not None
    cjk_on = params.cjk_weight > 0 and query.cjk_expr is not None
    if params.mode == "vector":
        return Legs(True, False, False, False)
    if params.mode == "fts":
        return Legs(False, has_tri, has_words, cjk_on)
    text_on = params.fts_weight > 0
    return Legs(params.vector_weight > 0, text_on and has_tri, text_on and has_words, cjk_on)


def candidate_pool(limit: int) -> int:
    """A leg's candidate count for a plain search of `limit` hits: `max(limit × 5, 50)`."""
    return max(limit * 5, 50)


def fetch_size(count: int, filtered: bool) -> int:
    """Over-fetch ×10 (capped at 10,000) when any filter is active (search.md §3)."""
    return min(count * 10, 10_000) if filtered else count


def has_exclusions(query: CompiledQuery) -> bool:
    """True when the query excludes something in any full-text table."""
    return (query.negative_expr or query.word_negative_expr or query.cjk_negative_expr) is not None


def has_table_negatives(query: CompiledQuery) -> bool:
    """True when the query has exclusions the trigram NOT cannot express (word-level or CJK
    ones): the trigram leg then drops the excluded ids as well."""
    return (query.word_negative_expr or query.cjk_negative_expr) is not None


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
    if query.negative_expr is not None:
        ids |= store.fts_match_ids(query.negative_expr)
    if query.word_negative_expr is not None:
        ids |= store.fts_match_ids(query.word_negative_expr, "fts_words")
    if query.cjk_negative_expr is not None:
        ids |= store.fts_match_ids(query.cjk_negative_expr, "fts_cjk")
    return ids


def leg_exclusions(store: IndexReader, query: CompiledQuery, legs: Legs) -> set[int] | None:
    """The excluded ids when a running leg needs them as a set, else None.

    The trigram expression carries its own NOT; the word, CJK and vector legs drop the ids any
    table's negative expression matches, so every leg excludes the same chunks. Word-level
    negatives (2-letter words, stems) and CJK ones (1–2 characters) can match rows the trigram
    NOT keeps, so with them the trigram leg drops those ids as well.
    """
    if legs.vector or legs.words or legs.cjk or (legs.fts and has_table_negatives(query)):
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


def fts_leg(store: IndexReader, expr: str, weights: BM25Weights, count: int, row_filter: RowFilter,
            table: str = "fts_chunks", excluded: set[int] | None = None) -> list[int]:
    """A full-text table's ranked ids for `expr`; `excluded` drops ids an exclusion matched
    elsewhere (the leg then over-fetches like a filtered one)."""
    filtered = row_filter.active or excluded is not None
    ids = store.fts_search_ids(expr, weights, fetch_size(count, filtered), table)
    return keep(store, ids, count, row_filter, excluded)


def trigram_leg(store: IndexReader, query: CompiledQuery, weights: BM25Weights, count: int,
                row_filter: RowFilter, excluded: set[int] | None) -> list[int]:
    """The trigram full-text leg (`fts_chunks`); [] when the query has no trigram phrase.

    Its expression carries the trigram NOT itself; `excluded` is applied only when the query
    has word-level or CJK negatives, which can match rows that NOT keeps.
    """
    if query.match_expr is None:
        return []
    drop = excluded if has_table_negatives(query) else None
    return fts_leg(store, query.match_expr, weights, count, row_filter, "fts_chunks", drop)


def word_leg(store: IndexReader, query: CompiledQuery, weights: BM25Weights, count: int,
             row_filter: RowFilter, excluded: set[int] | None) -> list[int]:
    """The word-level full-text leg (`fts_words`); [] when the query has no Latin word.

    Its expression cannot hold CJK negatives, so it always drops `excluded`.
    """
    if query.word_expr is None:
        return []
    return fts_leg(store, query.word_expr, weights, count, row_filter, "fts_words", excluded)


def cjk_leg(store: IndexReader, query: CompiledQuery, weights: BM25Weights, count: int,
            row_filter: RowFilter, excluded: set[int] | None) -> list[int]:
    """The CJK full-text leg (`fts_cjk`, groove's unigram + bigram tokens); [] when the query
    has no CJK text. Its expression holds no NOT, so it always drops `excluded`."""
    if query.cjk_expr is None:
        return []
    return fts_leg(store, query.cjk_expr, weights, count, row_filter, "fts_cjk", excluded)


FtsLeg = Callable[["IndexReader", CompiledQuery, BM25Weights, int, RowFilter, "set[int] | None"],
                 list[int]]
"""A full-text leg: (reader, query, bm25 weights, count, filter, excluded ids) → ranked ids."""

FTS_LEGS: dict[str, FtsLeg] = {"fts_chunks": trigram_leg, "fts_words": word_leg,
                               "fts_cjk": cjk_leg}
"""Every full-text leg by its table, in fusion order (trigram, word-level, CJK)."""


def fts_exprs(query: CompiledQuery) -> dict[str, str | None]:
    """The query's MATCH expression per full-text table (None where that leg cannot run)."""
    return {"fts_chunks": query.match_expr, "fts_words": query.word_expr,
            "fts_cjk": query.cjk_expr}


def vector_leg(knn: Knn, store: IndexReader, vector: npt.NDArray[np.float32], count: int,
               row_filter: RowFilter, excluded: set[int] | None) -> list[int]:
    """The vector leg's ranked ids (search.md §4)."""
    filtered = row_filter.active or excluded is not None
    k = vector_k(count, filtered)
    return keep(store, [cid for cid, _ in knn(vector, k)], count, row_filter, excluded)


def listed_knn(found: Sequence[tuple[int, float]]) -> Knn:
    """A KNN answering from one query's precomputed neighbours (a prefix serves any k)."""
    answer = list(found)
    return lambda _vector, k: answer[:k]
