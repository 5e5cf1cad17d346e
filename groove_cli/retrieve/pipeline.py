"""The search pipeline (search.md §1): legs → fusion (weighted RRF or score fusion) → rerank →
MMR → parent → spans.

`search` runs one compiled query; `Searcher` (retrieve/searcher.py) is how every command calls
it. It takes an already-computed query vector and KNN source, so a batch can share one
embedding batch and one batched KNN; the legs themselves are in retrieve/legs.py. Every stage
records its ranks and timings for `--explain`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groove_cli import messages
from groove_cli.config import MAX_LIMIT
from groove_cli.errors import IndexReadError
from groove_cli.retrieve.confidence import low_confidence
from groove_cli.retrieve.expand import expand_hit, whole_doc_row_limit
from groove_cli.retrieve.feedback import feedback_vector
from groove_cli.retrieve.filters import FilterSpec, compile_filters
from groove_cli.retrieve.fuse import (
    Fused,
    ScoredLeg,
    apply_min_score,
    per_note,
    score_fuse,
    weighted_rrf,
)
from groove_cli.retrieve.legs import (
    Knn,
    Legs,
    VectorRows,
    candidate_pool,
    cosines,
    leg_exclusions,
    legs_to_run,
    registered,
    run_leg,
    run_leg_scored,
    vector_leg,
    vector_leg_scored,
)
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.query import CompiledQuery
from groove_cli.retrieve.relevance import FALLBACK, features, relevance
from groove_cli.retrieve.relevance import low_confidence as weak_best
from groove_cli.retrieve.rerank import Reranker, rerank
from groove_cli.retrieve.spans import match_spans
from groove_cli.store import IndexReader
from groove_cli.types import IndexedChunk

if TYPE_CHECKING:  # numpy is imported only where vectors are used (fts-only runs skip it)
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class LegRank:
    """A hit's rank in one full-text leg: the leg's name, its JSON explain key, the rank."""

    name: str
    key: str
    rank: int | None


@dataclass(frozen=True, slots=True)
class HitExplain:
    """A hit's 1-based rank in every stage (None when the stage did not run or lacks it)."""

    leg_ranks: tuple[LegRank, ...]
    """Every registered full-text leg's rank, in fusion order."""
    vec_rank: int | None
    fused_rank: int | None
    fused_raw: float | None
    fused_score: float | None
    rerank_rank: int | None
    rerank_score: float | None
    mmr_rank: int | None
    fusion: str = "rrf"
    """The fusion method that ranked the hit (search.md §5)."""
    alpha: float | None = None
    """Score fusion: the query's vector share (`SearchParams.alpha_of`); None under RRF."""
    leg_scores: tuple[tuple[str, float | None], ...] = ()
    """Score fusion: the hit's normalised score per leg that ran (`vec`, then the full-text
    legs by name), None where the leg did not return it; empty for weighted RRF."""

    def rank(self, leg: str) -> int | None:
        """The hit's rank in the full-text leg named `leg` (None: not found there)."""
        return next((r.rank for r in self.leg_ranks if r.name == leg), None)


@dataclass(frozen=True, slots=True)
class SearchHit:
    chunk: IndexedChunk
    score: float
    content: str
    match_spans: tuple[tuple[int, int], ...] | None
    expanded_from: dict[str, object] | None
    explain: HitExplain
    relevance: float | None = None
    """Estimated probability that the hit is relevant (retrieve/relevance.py); None when the
    vector leg did not run (its cosine is the model's main evidence)."""
    features: tuple[float, ...] = ()
    """The evidence `relevance` was computed from (relevance.FEATURES order)."""

    @property
    def path(self) -> str:
        """The note's path relative to the KB folder (POSIX separators)."""
        return self.chunk.path

    @property
    def line_start(self) -> int | None:
        return self.chunk.line_start

    @property
    def line_end(self) -> int | None:
        return self.chunk.line_end

    @property
    def heading(self) -> str | None:
        return self.chunk.heading

    @property
    def title(self) -> str | None:
        return self.chunk.title


@dataclass(frozen=True, slots=True)
class SearchTrace:
    """What `--explain` prints on stderr."""

    exprs: tuple[tuple[str, str | None], ...]
    """Every registered full-text leg's MATCH expression (None: the leg did not run)."""
    pool_vec: int
    pool_fts: int
    fused: int
    dropped_by_min_score: int
    timings_ms: dict[str, float | None]
    alpha: tuple[float, str] | None = None
    """Score fusion: the query's vector share and why (`SearchParams.alpha_of`); None: RRF."""
    text_found: int = 0
    """How many chunks the full-text legs returned, together (0: the query's terms are in no
    note, or no full-text leg ran): what the relevance floor reads (search.md §12)."""

    def expr(self, leg: str) -> str | None:
        """The MATCH expression the full-text leg named `leg` ran (None: it did not run)."""
        return dict(self.exprs).get(leg)


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[SearchHit, ...]
    low_confidence: bool
    trace: SearchTrace


@dataclass(frozen=True, slots=True)
class Pools:
    vec: int
    fts: int
    fused: int | None
    """How many fused candidates are kept; None = all (the MMR path)."""


def pool_sizes(params: SearchParams) -> Pools:
    """Per-leg candidate counts and the fused size per path (search.md §6)."""
    limit = min(params.limit, MAX_LIMIT)
    pool = candidate_pool(limit)
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


def search(store: IndexReader, query: CompiledQuery, params: SearchParams, *,
           vector: npt.NDArray[np.float32] | None, knn: Knn | None, reranker: Reranker | None = None,
           dim: int | None = None, embed_ms: float | None = None,
           vectors: VectorRows | None = None, legs: Legs | None = None) -> SearchResult:
    """Run the pipeline for one compiled query (search.md §1–§12). `vectors` serves the hits'
    stored vectors from memory (the KNN snapshot); without it they are read from the store.
    `legs`: which legs run, when the caller (the Searcher) has decided it already."""
    total_start = time.perf_counter()
    timings: dict[str, float | None] = {k: None for k in (
        "embed", "vec", "fts", "fuse", "feedback", "rerank", "mmr", "parent", "spans",
        "total")}
    timings["embed"] = embed_ms
    row_filter = compile_filters(_effective_filters(store, params.filters))
    pools = pool_sizes(params)
    legs = legs if legs is not None else legs_to_run(query, params)

    excluded = leg_exclusions(store, query, legs)
    scored = params.fusion == "score"  # only score fusion reads the legs' scores
    text_rows: dict[str, list[int]] = {}
    scores: dict[str, list[float]] = {}
    if legs.text:
        start = time.perf_counter()
        for leg in legs.text:
            if scored:
                listed = run_leg_scored(leg, store, query, params.bm25_weights, pools.fts,
                                        row_filter, excluded)
                text_rows[leg.name] = [cid for cid, _ in listed]
                scores[leg.name] = [value for _, value in listed]
            else:
                text_rows[leg.name] = run_leg(leg, store, query, params.bm25_weights, pools.fts,
                                              row_filter, excluded)
        timings["fts"] = _ms(start)
    vec_rows: list[int] = []

    def run_vector_leg(source: Knn, query_vector: npt.NDArray[np.float32]) -> list[int]:
        if not scored:
            return vector_leg(source, store, query_vector, pools.vec, row_filter, excluded)
        listed = vector_leg_scored(source, store, query_vector, pools.vec, row_filter, excluded,
                                   dim=dim, vectors=vectors)
        scores["vec"] = [value for _, value in listed]
        return [cid for cid, _ in listed]

    if legs.vector:
        if vector is None or knn is None:
            raise ValueError("the vector leg runs but no query vector or KNN was given")
        start = time.perf_counter()
        vec_rows = run_vector_leg(knn, vector)
        timings["vec"] = _ms(start)
    nearest = list(vec_rows[:1])  # the vector leg's first hit: the query's best cosine

    start = time.perf_counter()
    fusing = params.for_query(query)  # score fusion's alpha follows the query (search.md §5)
    fused_all, fused_legs = _fuse(fusing, legs, vec_rows, text_rows, scores)
    if params.feedback_beta > 0 and vector is not None and knn is not None and fused_all:
        feedback_start = time.perf_counter()  # search.md §5.1: Rocchio, then fuse again
        moved = feedback_vector(store, vector,
                                [f.chunk_id for f in fused_all[: params.feedback_docs]],
                                params.feedback_beta, dim, vectors)
        if moved is not None:
            vec_rows = run_vector_leg(knn, moved)
            fused_all, fused_legs = _fuse(fusing, legs, vec_rows, text_rows, scores)
        timings["feedback"] = _ms(feedback_start)
    fused = apply_min_score(fused_all, params.min_score)
    dropped = len(fused_all) - len(fused)
    by_id = None
    if params.per_note > 0:  # search.md §5.2: a note's further chunks leave the list
        by_id = store.chunks_by_id(f.chunk_id for f in fused)
        fused = per_note(fused, {cid: c.document_id for cid, c in by_id.items()},
                         params.per_note)
    if pools.fused is not None:
        fused = fused[: pools.fused]
    if by_id is None:
        by_id = store.chunks_by_id(f.chunk_id for f in fused)
    candidates = [_Candidate(by_id[f.chunk_id], f, i + 1, f.score)
                  for i, f in enumerate(fused) if f.chunk_id in by_id]
    timings["fuse"] = _ms(start) - (timings["feedback"] or 0.0)

    limit = min(params.limit, MAX_LIMIT)
    if reranker is not None and params.rerank and candidates:
        start = time.perf_counter()
        order = rerank(reranker, query.positive_text, [c.chunk for c in candidates])
        reordered = [candidates[i] for i, _ in order]
        for rank, (cand, (_, score)) in enumerate(zip(reordered, order, strict=True), 1):
            cand.rerank_rank = rank
            cand.rerank_score = score
            cand.score = score
        candidates = reordered
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
    ranks = {leg.name: {cid: i + 1 for i, cid in enumerate(text_rows.get(leg.name, ()))}
             for leg in registered()}
    leg_ranks = {c.chunk.chunk_id: tuple(LegRank(leg.name, leg.explain_key,
                                                 ranks[leg.name].get(c.chunk.chunk_id))
                                         for leg in registered())
                 for c in candidates}
    found_cosines = cosines(store, [c.chunk.chunk_id for c in candidates] + nearest, vector, dim,
                            vectors)
    best = max(found_cosines.values()) if found_cosines else None
    evidence = []
    for c in candidates:
        text, cjk = _evidence_ranks(leg_ranks[c.chunk.chunk_id])
        evidence.append(features(found_cosines.get(c.chunk.chunk_id), text, None, cjk,
                                 best_cosine=best))
    calibration = params.calibration or FALLBACK
    hits = tuple(
        SearchHit(
            chunk=c.chunk,
            score=c.score,
            content=c.content,
            match_spans=c.spans,
            expanded_from=c.expanded_from,
            explain=HitExplain(
                leg_ranks=leg_ranks[c.chunk.chunk_id],
                vec_rank=vec_rank.get(c.chunk.chunk_id),
                fused_rank=c.fused_rank,
                fused_raw=c.fused.raw,
                fused_score=c.fused.score,
                rerank_rank=c.rerank_rank,
                rerank_score=c.rerank_score,
                mmr_rank=c.mmr_rank,
                fusion=params.fusion,
                alpha=fusing.query_alpha,
                leg_scores=tuple(zip(fused_legs, c.fused.leg_scores, strict=True)),
            ),
            relevance=(relevance(calibration, x, c.rerank_score, params.rerank_calibration)
                       if vector is not None else None),
            features=x,
        )
        for c, x in zip(candidates, evidence, strict=True)
    )
    weak_dropped = False
    if params.min_relevance > 0 and vector is not None:
        kept = tuple(h for h in hits if (h.relevance or 0.0) >= params.min_relevance)
        weak_dropped, hits = bool(hits) and not kept, kept
    text_found = len({cid for rows in text_rows.values() for cid in rows})
    if vector is not None and legs.text:  # search.md §12: nothing neither leg supports
        hits = unsupported_dropped(hits, params, text_found)
    timings["total"] = _ms(total_start) + (embed_ms or 0.0)
    running = {leg.name for leg in legs.text}
    trace = SearchTrace(tuple((leg.name, leg.expr(query) if leg.name in running else None)
                              for leg in registered()),
                        pools.vec if legs.vector else 0, pools.fts if legs.text else 0,
                        len(fused), dropped, timings,
                        params.alpha_of(query) if params.fusion == "score" else None,
                        text_found)
    if not hits:  # search.md §12: nothing found is nothing to trust
        weak = True
    elif vector is not None:  # search.md §12: the best hit's relevance
        weak = weak_dropped or weak_best([h.relevance or 0.0 for h in hits],
                                         params.low_confidence_below)
    else:  # no relevance without the vector leg: the shape of the fused scores
        weak = low_confidence([h.score for h in hits], params.min_confidence_ratio)
    return SearchResult(hits, weak, trace)


def unsupported_dropped(hits: tuple[SearchHit, ...], params: SearchParams,
                        text_found: int) -> tuple[SearchHit, ...]:
    """Hybrid's hits without what neither leg supports (search.md §12): when the full-text
    legs found nothing, a hit needs relevance >= `relevance_floor`; otherwise a hit no
    full-text leg found needs relevance >= `unsupported_below` (noise at relevance ≈ 0)."""
    def found(hit: SearchHit) -> bool:
        return any(r.rank is not None for r in hit.explain.leg_ranks)

    if not text_found:
        floor = params.relevance_floor
        return tuple(h for h in hits if (h.relevance or 0.0) >= floor) if floor > 0 else hits
    least = params.unsupported_below
    if least <= 0:
        return hits
    return tuple(h for h in hits if found(h) or (h.relevance or 0.0) >= least)


def _fuse(params: SearchParams, legs: Legs, vec_rows: list[int], text_rows: dict[str, list[int]],
          scores: dict[str, list[float]]) -> tuple[list[Fused], tuple[str, ...]]:
    """The fused candidates by `params.fusion` (search.md §5), and the names of the legs their
    `leg_scores` follow (`vec`, then the full-text legs in fusion order; none for RRF)."""
    if params.fusion != "score":
        ranked: list[tuple[float, Sequence[int]]] = []
        if legs.vector:
            ranked.append((params.vector_weight, vec_rows))
        ranked.extend((float(getattr(params, leg.weight)), text_rows[leg.name])
                      for leg in legs.text)
        return weighted_rrf(ranked, params.rrf_k), ()
    scored: list[tuple[str, ScoredLeg]] = []
    if legs.vector:
        scored.append(("vec", ScoredLeg(params.score_vector_weight, vec_rows, scores["vec"],
                                        spread=True)))
    scored.extend((leg.name, ScoredLeg(float(getattr(params, leg.score_weight)),
                                       text_rows[leg.name], scores[leg.name]))
                  for leg in legs.text)
    return score_fuse([leg for _, leg in scored]), tuple(name for name, _ in scored)


def _evidence_ranks(leg_ranks: Sequence[LegRank]) -> tuple[int | None, int | None]:
    """The relevance model's rank evidence from the legs' ranks (Leg.evidence): the best rank
    among the `text` legs and among the `cjk` legs."""
    best: dict[str, int] = {}
    for leg, found in zip(registered(), leg_ranks, strict=True):
        if leg.evidence is not None and found.rank is not None:
            best[leg.evidence] = min(found.rank, best.get(leg.evidence, found.rank))
    return best.get("text"), best.get("cjk")


def _effective_filters(store: IndexReader, spec: FilterSpec) -> FilterSpec:
    """A quality threshold no chunk falls below filters nothing: drop it, so the legs need not
    over-fetch ×10 and read filter columns (one indexed min() tells; results are identical)."""
    if spec.quality_threshold > 0:
        lowest = store.min_quality()
        if lowest is None or lowest >= spec.quality_threshold:
            return dataclasses.replace(spec, quality_threshold=0.0)
    return spec


def _mmr(store: IndexReader, candidates: list[_Candidate], params: SearchParams, limit: int,
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


def _expand(store: IndexReader, chunk: IndexedChunk,
            params: SearchParams) -> tuple[str, dict[str, object]] | None:
    """Parent retriever for one hit; a failed read leaves the hit unchanged (§9)."""
    try:
        limit = whole_doc_row_limit(params.max_expanded_tokens)
        rows = store.document_chunks(chunk.document_id, limit)
        capped = len(rows) >= limit
        if capped:
            rows = store.document_chunks(chunk.document_id, 1_000_000)
    except IndexReadError as exc:
        messages.warning(f"parent retriever skipped {chunk.path}: {exc}")
        return None
    expansion = expand_hit(chunk.chunk_index, rows,
                           whole_doc_threshold_tokens=params.whole_doc_threshold_tokens,
                           max_expanded_tokens=params.max_expanded_tokens, rows_capped=capped)
    return expansion.content, expansion.expanded_from
