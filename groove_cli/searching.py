"""`groove search` as one core call: settings → SearchParams → session → pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from groove_cli import config, messages
from groove_cli.config import Settings
from groove_cli.retrieve.filters import FilterSpec, compile_filters, filter_applied
from groove_cli.retrieve.fuse import min_score_warning
from groove_cli.retrieve.pipeline import MAX_LIMIT, SearchParams, SearchResult, legs_to_run, search
from groove_cli.retrieve.query import MAX_CJK_TERMS, CompiledQuery, compile_query
from groove_cli.session import open_session

NOTHING_TO_SEARCH = ("the query has no full-text phrase of 3 or more characters nor a Latin word "
                     "of 2 or more letters, and the vector leg is off; nothing to search")


def clamp_limit(limit: int, *, note: str | None = None) -> int:
    """Limits above 1000 are clamped, with a note (cli.md §5/§6)."""
    if limit > MAX_LIMIT:
        messages.note(note or f"--limit {limit} clamped to {MAX_LIMIT}")
        return MAX_LIMIT
    return limit


def build_params(settings: Settings, *, limit: int, rerank: bool, filters: FilterSpec,
                 spans: bool = True) -> SearchParams:
    """The effective search settings from a resolved Settings (flag > file > preset > default)."""
    s = settings
    return SearchParams(
        limit=limit,
        mode=s.str_("search.retrieval.mode") or "hybrid",
        preset=s.str_("search.retrieval.preset"),
        dense_top_k=s.int_("search.retrieval.dense_top_k"),
        dense_top_k_from_preset=s.source("search.retrieval.dense_top_k") == "preset",
        sparse_top_k=s.int_("search.retrieval.sparse_top_k"),
        sparse_top_k_from_preset=s.source("search.retrieval.sparse_top_k") == "preset",
        vector_weight=s.float_("search.retrieval.vector_weight"),
        fts_weight=s.float_("search.retrieval.fts_weight"),
        cjk_weight=s.float_("search.retrieval.cjk_weight"),
        min_score=s.float_("search.retrieval.min_score"),
        rrf_k=s.float_("search.fusion.rrf_k"),
        bm25_weights=(s.float_("search.fusion.bm25_heading_weight"),
                      s.float_("search.fusion.bm25_context_weight"),
                      s.float_("search.fusion.bm25_content_weight")),
        rerank=rerank,
        mmr=s.bool_("search.mmr.enabled"),
        mmr_lambda=s.float_("search.mmr.lambda"),
        mmr_same_doc_penalty=s.float_("search.mmr.same_doc_penalty"),
        parent_retriever=s.bool_("search.parent_retriever.enabled"),
        whole_doc_threshold_tokens=s.int_("search.parent_retriever.whole_doc_threshold_tokens") or 0,
        max_expanded_tokens=s.int_("search.parent_retriever.max_expanded_tokens") or 2000,
        min_confidence_ratio=s.float_("search.min_confidence_ratio"),
        filters=filters,
        spans=spans,
    )


def search_reranker(settings: Settings) -> str | None:
    """The reranker `search` runs: a flag always; one from config only with rerank_by_default."""
    value = settings.str_("reranker")
    if not value or value == "none":
        return None
    if settings.source("reranker") == "flag" or settings.bool_("rerank_by_default"):
        return value
    return None


def settings_warnings(settings: Settings, params: SearchParams) -> None:
    """The MMR and min_score warnings of cli.md §5, once per run."""
    mmr_flags = {"search.mmr.lambda", "search.mmr.same_doc_penalty"} & settings.flags
    if not params.mmr and mmr_flags:
        messages.warning("MMR override values were provided but effective MMR is off; "
                         "values ignored")
    if params.mmr and params.mmr_lambda == 1.0 and params.mmr_same_doc_penalty == 0:
        messages.warning("MMR lambda 1.0 with no same-doc penalty ranks by relevance only")
    text = min_score_warning(params.mode, params.vector_weight, params.fts_weight, params.min_score)
    if text:
        messages.warning(text)


def query_warnings(queries: Sequence[CompiledQuery]) -> None:
    """The phrase-cap warnings, once per run: for one search, or summed over eval's queries."""
    phrases = sum(1 for q in queries if q.phrases_capped and not q.cjk_terms)
    tokens = sum(1 for q in queries if q.phrases_capped and q.cjk_terms)
    negatives = sum(1 for q in queries if q.negatives_capped)
    if tokens:
        which = "the query has" if len(queries) == 1 else f"{tokens} of {len(queries)} queries have"
        messages.warning(f"{which} more than {MAX_CJK_TERMS} CJK tokens (or 32 words); only the "
                         "first are searched")
    if len(queries) == 1:
        if phrases:
            messages.warning("the query has more than 32 distinct phrases; only the first 32 "
                             "are searched")
        if negatives:
            messages.warning("the query has more than 32 distinct exclusions; only the first "
                             "32 apply")
        return
    if phrases:
        messages.warning(f"{phrases} of {len(queries)} queries have more than 32 distinct "
                         "phrases; only the first 32 of each are searched")
    if negatives:
        messages.warning(f"{negatives} of {len(queries)} queries have more than 32 distinct "
                         "exclusions; only the first 32 of each apply")


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    result: SearchResult
    params: SearchParams
    filter_applied: dict[str, object]


def run_search(settings: Settings, db: Path, kb: Path | None, text: str, *, limit: int,
               filters: FilterSpec, explicit_ratio: float | None) -> SearchOutcome:
    """Compile, check, open the index, embed (cache first) and run the pipeline once."""
    query = compile_query(text)
    compile_filters(filters)  # malformed globs are usage errors before any work
    reranker_name = search_reranker(settings)
    params = build_params(settings, limit=clamp_limit(limit), rerank=reranker_name is not None,
                          filters=filters)
    settings_warnings(settings, params)
    query_warnings([query])
    applied = filter_applied(filters, explicit_min_confidence_ratio=explicit_ratio)
    legs = legs_to_run(query, params)
    session = open_session(db, kb, model=settings.str_("model"), max_length=settings.int_("max_length"),
                           models_dir=config.models_dir(settings), offline=config.offline_mode())
    try:
        if not legs.any:
            messages.note(NOTHING_TO_SEARCH)
        vector = session.query_vectors([query.positive_text])[0] if legs.vector else None
        reranker = session.reranker(reranker_name) if reranker_name else None
        knn = session.knn() if legs.vector else None
        result = search(session.store, query, params, vector=vector, knn=knn, reranker=reranker,
                        dim=session.dim, embed_ms=session.embed_ms if legs.vector else None)
    finally:
        session.close()
    return SearchOutcome(result, params, applied)
