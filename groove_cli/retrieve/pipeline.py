"""The shared search pipeline (search.md §1): legs → weighted RRF → rerank → MMR → parent → spans.

`search` is shared by `groove search` and `groove eval`. It takes an already-compiled query and
an already-computed query vector, so callers can batch embeddings and reuse cached ones; every
stage records its ranks and timings for `--explain`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from groove_cli import messages
from groove_cli.config import DEFAULT_CJK_WEIGHT
from groove_cli.retrieve.confidence import low_confidence
from groove_cli.retrieve.expand import DocChunk, expand_hit, whole_doc_row_limit
from groove_cli.retrieve.filters import FilterSpec, RowFilter, compile_filters
from groove_cli.retrieve.fuse import Fused, apply_min_score, weighted_rrf
from groove_cli.retrieve.query import CompiledQuery
from groove_cli.retrieve.spans import match_spans
from groove_cli.store import Store
from groove_cli.types import IndexedChunk

if TYPE_CHECKING:  # numpy is imported only where vectors are used (fts-only runs skip it)
    import numpy as np
    import numpy.typing as npt

MAX_LIMIT = 1000
Knn = Callable[["npt.NDArray[np.float32]", int], list[tuple[int, float]]]


class Reranker(Protocol):
    """A cross-encoder: one raw score per (query, document) pair."""

    def score(self, query: str, documents: Sequence[str]) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Effective settings of one search (already resolved: flag > config > preset > default)."""

    limit: int = 5
    mode: str = "hybrid"
    preset: str | None = None
    dense_top_k: int | None = None
    dense_top_k_from_preset: bool = False
    sparse_top_k: int | None = None
    sparse_top_k_from_preset: bool = False
    vector_weight: float = 1.0
    fts_weight: float = 1.0
    cjk_weight: float = DEFAULT_CJK_WEIGHT
    min_score: float = 0.0
    rrf_k: float = 60.0
    bm25_weights: tuple[float, float, float] = (2.0, 1.0, 1.0)
    rerank: bool = False
    mmr: bool = False
    mmr_lambda: float = 0.7
    mmr_same_doc_penalty: float = 0.0
    parent_retriever: bool = False
    whole_doc_threshold_tokens: int = 100
    max_expanded_tokens: int = 2000
    min_confidence_ratio: float = 1.5
    filters: FilterSpec = field(default_factory=FilterSpec)
    spans: bool = True


@dataclass(frozen=True, slots=True)
class HitExplain:
    """A hit's 1-based rank in every stage (None when the stage did not run or lacks it)."""

    fts_rank: int | None
    fts_word_rank: int | None
    fts_cjk_rank: int | None
    vec_rank: int | None
    fused_rank: int | None
    fused_raw: float | None
    fused_score: float | None
    rerank_rank: int | None
    rerank_score: float | None
    mmr_rank: int | None


@dataclass(frozen=True, slots=True)
class SearchHit:
    chunk: IndexedChunk
    score: float
    content: str
    match_spans: tuple[tuple[int, int], ...] | None
    expanded_from: dict[str, object] | None
    explain: HitExplain


@dataclass(frozen=True, slots=True)
class SearchTrace:
    """What `--explain` prints on stderr."""

    fts_expr: str | None
    word_expr: str | None
    cjk_expr: str | None
    pool_vec: int
    pool_fts: int
    fused: int
    dropped_by_min_score: int
    timings_ms: dict[str, float | None]


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[SearchHit, ...]
    low_confidence: bool
    trace: SearchTrace


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
    has its own weight (`cjk_weight`); the trigram and word legs share `fts_weight`."""
    has_tri, has_words = query.match_expr is not None, query.word_expr is not None
    has_cjk = query.cjk_expr is not None
    if params.mode == "vector":
        return Legs(True, False, False, False)
    if params.mode == "fts":
        return Legs(False, has_tri, has_words, has_cjk)
    text_on = params.fts_weight > 0
    return Legs(params.vector_weight > 0, text_on and has_tri, text_on and has_words,
                params.cjk_weight > 0 and has_cjk)


@dataclass(frozen=True, slots=True)
class Pools:
    vec: int
    fts: int
    fused: int | None
    """How many fused candidates are kept; None = all (the MMR path)."""


def pool_sizes(params: SearchParams) -> Pools:
    """Per-leg candidate counts and the fused size per path (search.md §6)."""
    limit = min(params.limit, MAX_LIMIT)
    pool = max(limit * 5, 50)
    if params.mmr:
        leg, fused = pool, None
    elif params.rerank:
        leg, fused = max(pool * 5, 50), pool
    else:
        leg, fused = pool, limit
    dense = params.dense_top_k
    if dense is not None and params.dense_top_k_from_preset and params.rerank:
        dense = None
    sparse = params.sparse_top_k
    if sparse is not None and params.sparse_top_k_from_preset and params.rerank:
        sparse = None
    return Pools(dense if dense is not None else leg, sparse if sparse is not None else leg, fused)


def fetch_size(count: int, filtered: bool) -> int:
    """Over-fetch ×10 (capped at 10,000) when any filter is active (search.md §3)."""
    return min(count * 10, 10_000) if filtered else count


def _keep(store: Store, ids: Sequence[int], count: int, row_filter: RowFilter,
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


def fts_leg(store: Store, expr: str, params: SearchParams, count: int, row_filter: RowFilter,
            table: str = "fts_chunks", excluded: set[int] | None = None) -> list[int]:
    """A full-text leg's ranked ids; `excluded` drops ids an exclusion matched elsewhere."""
    filtered = row_filter.active or excluded is not None
    ids = store.fts_search_ids(expr, params.bm25_weights, fetch_size(count, filtered), table)
    return _keep(store, ids, count, row_filter, excluded)


def vector_leg(knn: Knn, store: Store, vector: npt.NDArray[np.float32], count: int,
               row_filter: RowFilter, excluded: set[int] | None) -> list[int]:
    """The vector leg's ranked ids (search.md §4)."""
    filtered = row_filter.active or excluded is not None
    k = min(fetch_size(count, filtered), 4096)
    return _keep(store, [cid for cid, _ in knn(vector, k)], count, row_filter, excluded)


def rerank_document(chunk: IndexedChunk) -> str:
    """The reranker's document: breadcrumb + content in static mode, else content (§7)."""
    if chunk.context_text and chunk.context_text.strip():
        return f"{chunk.context_text}\n\n{chunk.content}"
    return chunk.content


@dataclass
class _Candidate:
    chunk: IndexedChunk
    fused: Fused
    fused_rank: int
    score: float
    rerank_rank: int | None = None
    rerank_score: float | None = None
    mmr_rank: int | None = None
    content: str = ""
    expanded_from: dict[str, object] | None = None
    spans: tuple[tuple[int, int], ...] | None = None


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def search(store: Store, query: CompiledQuery, params: SearchParams, *,
           vector: npt.NDArray[np.float32] | None, knn: Knn | None, reranker: Reranker | None = None,
           dim: int | None = None, embed_ms: float | None = None) -> SearchResult:
    """Run the pipeline for one compiled query (search.md §1–§12)."""
    total_start = time.perf_counter()
    timings: dict[str, float | None] = {k: None for k in (
        "embed", "vec", "fts", "fuse", "rerank", "mmr", "parent", "spans", "total")}
    timings["embed"] = embed_ms
    row_filter = compile_filters(_effective_filters(store, params.filters))
    pools = pool_sizes(params)
    legs = legs_to_run(query, params)

    # Exclusions: the trigram expression carries its NOT; the word leg and the vector leg drop
    # the ids either table's negative expression matches, so every leg excludes the same chunks.
    # Word-level negatives (2-letter words, stems) can match rows the trigram NOT keeps, so with
    # them the trigram leg drops those ids as well.
    word_negatives = (query.word_negative_expr or query.cjk_negative_expr) is not None
    needs_ids = legs.vector or legs.words or legs.cjk or (legs.fts and word_negatives)
    excluded = excluded_ids(store, query) if needs_ids else None
    fts_rows: list[int] = []
    word_rows: list[int] = []
    cjk_rows: list[int] = []
    if legs.fts or legs.words or legs.cjk:
        start = time.perf_counter()
        if legs.fts:
            assert query.match_expr is not None
            fts_rows = fts_leg(store, query.match_expr, params, pools.fts, row_filter,
                               "fts_chunks", excluded if word_negatives else None)
        if legs.words:
            assert query.word_expr is not None
            word_rows = fts_leg(store, query.word_expr, params, pools.fts, row_filter,
                                "fts_words", excluded)
        if legs.cjk:
            assert query.cjk_expr is not None
            cjk_rows = fts_leg(store, query.cjk_expr, params, pools.fts, row_filter,
                               "fts_cjk", excluded)
        timings["fts"] = _ms(start)
    vec_rows: list[int] = []
    if legs.vector:
        if vector is None or knn is None:
            raise ValueError("the vector leg runs but no query vector or KNN was given")
        start = time.perf_counter()
        vec_rows = vector_leg(knn, store, vector, pools.vec, row_filter, excluded)
        timings["vec"] = _ms(start)

    start = time.perf_counter()
    ranked: list[tuple[float, Sequence[int]]] = []
    if legs.vector:
        ranked.append((params.vector_weight, vec_rows))
    if legs.fts:
        ranked.append((params.fts_weight, fts_rows))
    if legs.words:
        ranked.append((params.fts_weight, word_rows))
    if legs.cjk:
        ranked.append((params.cjk_weight, cjk_rows))
    fused_all = weighted_rrf(ranked, params.rrf_k)
    fused = apply_min_score(fused_all, params.min_score)
    dropped = len(fused_all) - len(fused)
    if pools.fused is not None:
        fused = fused[: pools.fused]
    by_id = store.chunks_by_id(f.chunk_id for f in fused)
    candidates = [_Candidate(by_id[f.chunk_id], f, i + 1, f.score)
                  for i, f in enumerate(fused) if f.chunk_id in by_id]
    timings["fuse"] = _ms(start)

    limit = min(params.limit, MAX_LIMIT)
    if reranker is not None and params.rerank and candidates:
        start = time.perf_counter()
        scores = reranker.score(query.positive_text,
                                [rerank_document(c.chunk) for c in candidates])
        order = sorted(range(len(candidates)), key=lambda i: -float(scores[i]))
        candidates = [candidates[i] for i in order]
        for rank, cand in enumerate(candidates, 1):
            cand.rerank_rank = rank
            cand.rerank_score = float(scores[order[rank - 1]])
            cand.score = cand.rerank_score
        timings["rerank"] = _ms(start)
    if params.mmr and candidates:
        start = time.perf_counter()
        candidates = _mmr(store, candidates, params, limit, dim)
        timings["mmr"] = _ms(start)
    candidates = candidates[:limit]

    for cand in candidates:
        cand.content = cand.chunk.content
    if params.parent_retriever and candidates:
        start = time.perf_counter()
        for cand in candidates:
            expansion = _expand(store, cand.chunk, params)
            if expansion is not None:
                cand.content, cand.expanded_from = expansion
        timings["parent"] = _ms(start)

    if params.spans:
        start = time.perf_counter()
        for cand in candidates:
            found = match_spans(query.positive_text, cand.content)
            cand.spans = tuple(found) if found is not None else None
        timings["spans"] = _ms(start)

    vec_rank = {cid: i + 1 for i, cid in enumerate(vec_rows)}
    fts_rank = {cid: i + 1 for i, cid in enumerate(fts_rows)}
    word_rank = {cid: i + 1 for i, cid in enumerate(word_rows)}
    cjk_rank = {cid: i + 1 for i, cid in enumerate(cjk_rows)}
    hits = tuple(
        SearchHit(
            chunk=c.chunk,
            score=c.score,
            content=c.content,
            match_spans=c.spans,
            expanded_from=c.expanded_from,
            explain=HitExplain(
                fts_rank=fts_rank.get(c.chunk.chunk_id),
                fts_word_rank=word_rank.get(c.chunk.chunk_id),
                fts_cjk_rank=cjk_rank.get(c.chunk.chunk_id),
                vec_rank=vec_rank.get(c.chunk.chunk_id),
                fused_rank=c.fused_rank,
                fused_raw=c.fused.raw,
                fused_score=c.fused.score,
                rerank_rank=c.rerank_rank,
                rerank_score=c.rerank_score,
                mmr_rank=c.mmr_rank,
            ),
        )
        for c in candidates
    )
    timings["total"] = _ms(total_start) + (embed_ms or 0.0)
    trace = SearchTrace(query.match_expr if legs.fts else None,
                        query.word_expr if legs.words else None,
                        query.cjk_expr if legs.cjk else None, pools.vec if legs.vector else 0,
                        pools.fts if legs.fts or legs.words or legs.cjk else 0, len(fused),
                        dropped, timings)
    return SearchResult(hits, low_confidence([h.score for h in hits], params.min_confidence_ratio),
                        trace)


def _effective_filters(store: Store, spec: FilterSpec) -> FilterSpec:
    """A quality threshold no chunk falls below filters nothing: drop it, so the legs need not
    over-fetch ×10 and read filter columns (one indexed min() tells; results are identical)."""
    if spec.quality_threshold > 0:
        lowest = store.min_quality()
        if lowest is None or lowest >= spec.quality_threshold:
            return dataclasses.replace(spec, quality_threshold=0.0)
    return spec


def excluded_ids(store: Store, query: CompiledQuery) -> set[int] | None:
    """Chunks the query's exclusions match in any full-text table (dropped from the other legs
    so every leg agrees on what was excluded); None without exclusions."""
    if (query.negative_expr or query.word_negative_expr or query.cjk_negative_expr) is None:
        return None
    ids: set[int] = set()
    if query.negative_expr is not None:
        ids |= store.fts_match_ids(query.negative_expr)
    if query.word_negative_expr is not None:
        ids |= store.fts_match_ids(query.word_negative_expr, "fts_words")
    if query.cjk_negative_expr is not None:
        ids |= store.fts_match_ids(query.cjk_negative_expr, "fts_cjk")
    return ids


def _mmr(store: Store, candidates: list[_Candidate], params: SearchParams, limit: int,
         dim: int | None) -> list[_Candidate]:
    from groove_cli.retrieve.mmr import mmr_select

    ids = [c.chunk.chunk_id for c in candidates]
    stored = store.vectors_by_id(ids, dim or 0) if dim else {}
    picked = mmr_select(
        [c.score for c in candidates],
        [stored.get(cid) for cid in ids],
        [c.chunk.document_id for c in candidates],
        mmr_lambda=params.mmr_lambda,
        same_doc_penalty=params.mmr_same_doc_penalty,
        limit=limit,
    )
    chosen = [candidates[i] for i in picked]
    for rank, cand in enumerate(chosen, 1):
        cand.mmr_rank = rank
    return chosen


def _doc_chunk(chunk: IndexedChunk) -> DocChunk:
    return DocChunk(chunk.chunk_index, chunk.level, chunk.ancestry, chunk.content,
                    chunk.token_count)


def _expand(store: Store, chunk: IndexedChunk,
            params: SearchParams) -> tuple[str, dict[str, object]] | None:
    """Parent retriever for one hit; a database error leaves the hit unchanged (§9)."""
    import apsw

    try:
        limit = whole_doc_row_limit(params.max_expanded_tokens)
        rows = store.document_chunks(chunk.document_id, limit)
        capped = len(rows) >= limit
        if capped:
            rows = store.document_chunks(chunk.document_id, 1_000_000)
    except apsw.Error as exc:
        messages.warning(f"parent retriever skipped {chunk.path}: {exc}")
        return None
    expansion = expand_hit(chunk.chunk_index, [_doc_chunk(r) for r in rows],
                           whole_doc_threshold_tokens=params.whole_doc_threshold_tokens,
                           max_expanded_tokens=params.max_expanded_tokens, rows_capped=capped)
    return expansion.content, expansion.expanded_from
