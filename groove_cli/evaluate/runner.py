"""`groove eval` as one core call: golden → query vectors → searches → metrics → history.

eval.md §2: every query vector is taken from the cache or computed (and stored) first; then all
searches, the corpus snapshot and the finding scan see one consistent state of the index: one
read transaction, or for a large golden set on several cores two read transactions pinned to
the same committed state (`Store.pinned_readers`), each searching part of the queries.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from groove_cli import config, messages
from groove_cli.config import Settings
from groove_cli.evaluate import history
from groove_cli.evaluate.corpus import corpus_block, corpus_digest
from groove_cli.evaluate.findings import findings_warning_text, quoted_findings, quoted_needles
from groove_cli.evaluate.fingerprint import FingerprintInputs, build_fingerprint
from groove_cli.evaluate.golden import GoldenSet, expected_warnings, find_golden, load_golden
from groove_cli.evaluate.metrics import HitRecord, QueryMetrics, score_query
from groove_cli.evaluate.report import build_json_report, build_run, utc_timestamp
from groove_cli.evaluate.stats import warm_draws
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.pipeline import (
    MAX_LIMIT,
    Knn,
    SearchParams,
    fetch_size,
    legs_to_run,
    pool_sizes,
    search,
)
from groove_cli.retrieve.query import CompiledQuery, compile_query
from groove_cli.searching import build_params, query_warnings, settings_warnings
from groove_cli.session import ReadSession, open_session
from groove_cli.store import Store


def parse_k_values(text: str) -> tuple[int, ...]:
    """`--k 1,5,10`: integers ≥ 0, each capped at 1000, sorted, deduplicated."""
    from groove_cli.errors import UsageError

    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise UsageError(f"--k expects comma-separated integers, got {part!r}") from None
        if value < 0:
            raise UsageError(f"--k values must be >= 0, got {value}")
        values.append(value)
    if not values:
        raise UsageError("--k needs at least one value")
    return normalise_k(values)


def normalise_k(values: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted({min(int(v), MAX_LIMIT) for v in values}))


def effective_limit(limit: int | None, k_values: Sequence[int]) -> int:
    """`--limit` or the largest k (1 when it is 0), capped at 1000 with the spec's note."""
    value = limit if limit is not None else max(max(k_values), 1)
    if value > MAX_LIMIT:
        messages.note(f"limit {value} exceeds the retrieval cap; using {MAX_LIMIT}")
        value = MAX_LIMIT
    return value


@dataclass(frozen=True, slots=True)
class EvalRequest:
    settings: Settings
    db: Path
    kb: Path
    golden: Path | None
    k_values: tuple[int, ...]
    limit: int
    reranker: str | None
    no_history: bool = False
    no_diff: bool = False
    fail_on_regression: bool = False


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    report: dict[str, Any]
    """The §10 JSON report (diff members null under --no-diff)."""
    full_report: dict[str, Any]
    """The same report with the diff kept, which the text renderer hides itself."""
    threshold: float
    show_diff: bool
    incompatibility: str | None
    regression_error: str | None


def fingerprint_inputs(settings: Settings, params: SearchParams, *, model: str,
                       reranker: str | None, limit: int, k_values: tuple[int, ...],
                       golden_hash: str, context_mode: str) -> FingerprintInputs:
    s = settings
    return FingerprintInputs(
        model=model, reranker=reranker, limit=limit, k_values=k_values, golden_hash=golden_hash,
        max_length_override=s.int_("max_length"),
        mmr=(params.mmr_lambda, params.mmr_same_doc_penalty) if params.mmr else None,
        parent_retriever=((params.whole_doc_threshold_tokens, params.max_expanded_tokens)
                          if params.parent_retriever else None),
        rrf_k=params.rrf_k, bm25_heading_weight=params.bm25_weights[0],
        bm25_context_weight=params.bm25_weights[1], bm25_content_weight=params.bm25_weights[2],
        preset=params.preset, mode=params.mode, dense_top_k=params.dense_top_k,
        sparse_top_k=params.sparse_top_k, vector_weight=params.vector_weight,
        fts_weight=params.fts_weight, cjk_weight=params.cjk_weight, min_score=params.min_score,
        context_mode=context_mode,
    )


def load_golden_set(settings: Settings, kb: Path, explicit: Path | None) -> GoldenSet:
    """Locate and validate the golden file (eval.md §1); shared with tune."""
    path = find_golden(explicit, settings.path("eval.golden"), kb)

    def check(text: str) -> None:
        compile_query(text)

    golden = load_golden(path, check_query=check)
    if golden.has_defaults:
        messages.note("golden defaults are ignored")
    return golden


def golden_index_warnings(session: ReadSession, golden: GoldenSet) -> None:
    headings = session.store.headings_by_path()
    for text in expected_warnings(golden, has_path=lambda p: p in headings,
                                  headings_of=lambda p: headings.get(p, set())):
        messages.warning(text)


def run_eval(req: EvalRequest) -> EvalOutcome:
    """Run every golden query through the shared pipeline and compare with the history."""
    s = req.settings
    golden = load_golden_set(s, req.kb, req.golden)
    depth = max(max(req.k_values), req.limit, 1)
    params = build_params(s, limit=depth, rerank=req.reranker is not None,
                          filters=FilterSpec(quality_threshold=0.0), spans=False)
    settings_warnings(s, params)
    session = open_session(req.db, req.kb, model=s.str_("model"), max_length=s.int_("max_length"),
                           models_dir=config.models_dir(s), offline=config.offline_mode())
    try:
        compiled = [compile_query(q.query) for q in golden.queries]
        query_warnings(compiled)
        need_vec = [i for i, q in enumerate(compiled) if legs_to_run(q, params).vector]
        vectors = session.query_vectors([compiled[i].positive_text for i in need_vec])
        by_query = dict(zip(need_vec, vectors, strict=True))
        reranker = session.reranker(req.reranker)
        neighbours = _batch_neighbours(session, compiled, params, by_query)
        readers = _extra_readers(len(compiled), reranker is not None)
        with session.store.pinned_readers(readers) as stores:
            golden_index_warnings(session, golden)
            rows = list(session.store.corpus_rows())
            documents = session.store.document_count()
            chunks = session.store.chunk_count()
            # Work that needs no search result runs on a helper thread meanwhile: the searches
            # spend most of their time inside SQLite, with the GIL free.
            with ThreadPoolExecutor(1, thread_name_prefix="groove-eval-side") as side:
                scan = side.submit(quoted_needles, golden.queries,
                                   [(r[0], r[2], r[4], r[3]) for r in rows])
                side.submit(warm_draws, sum(1 for q in golden.queries if q.expected))
                hits = _search_all(stores, compiled, params, by_query, neighbours, reranker,
                                   session.dim)
        metrics: list[QueryMetrics] = [
            score_query(q.expected, h, req.k_values) for q, h in zip(golden.queries, hits, strict=True)
        ]
        corpus = corpus_block(documents, chunks, corpus_digest(rows))
        top_paths = {q.id: [h.path for h in hs[: req.limit]] for q, hs in zip(golden.queries, hits,
                                                                               strict=True)}
        findings = quoted_findings(golden.queries, scan.result(), top_paths)
        if findings:
            messages.warning(findings_warning_text(findings))
        fingerprint = build_fingerprint(fingerprint_inputs(
            s, params, model=session.runtime.name, reranker=req.reranker, limit=req.limit,
            k_values=req.k_values, golden_hash=golden.golden_hash,
            context_mode=session.context_mode))
    finally:
        session.close()

    run = build_run(timestamp=utc_timestamp(), fingerprint=fingerprint, corpus=corpus,
                    queries=golden.queries, hits=hits, metrics=metrics, k_values=req.k_values,
                    limit=req.limit, findings=findings)
    threshold = s.float_("eval.regression_threshold")
    compared = None
    incompatibility = None
    if not req.no_history:
        runs = history.load_history(req.kb)
        compared = history.find_compared(runs, fingerprint)
        incompatibility = history.incompatibility_header(runs, fingerprint)
        history.save_history(req.kb, runs, run, s.int_("eval.history_size") or 10)
    report = build_json_report(run, compared, threshold=threshold, show_diff=not req.no_diff)
    error = None
    if req.fail_on_regression and not req.no_history:
        if compared is None:
            messages.note(history.NO_COMPARED_NOTE)
        elif history.aggregate_regressed(compared["aggregate"], run["aggregate"], threshold):
            change = history.corpus_change_text(compared["corpus"], run["corpus"])
            error = history.regression_error_text(threshold, change)
    full = build_json_report(run, compared, threshold=threshold, show_diff=True)
    return EvalOutcome(report, full, threshold, not (req.no_diff or req.no_history),
                       incompatibility, error)


def _batch_neighbours(session: ReadSession, compiled: Sequence[CompiledQuery],
                      params: SearchParams, vectors: dict[int, Any]
                      ) -> dict[int, list[tuple[int, float]]]:
    """Every query's vector-leg neighbours from one matrix product per block of queries.

    Each query gets the k its vector leg asks for (×10 with exclusions); a prefix of a longer
    list ordered by (distance, id) is exactly the shorter list, so one k serves all.
    """
    if not vectors:
        return {}
    pools = pool_sizes(params)
    k = max(min(fetch_size(pools.vec, compiled[i].negative_expr is not None
                           or compiled[i].word_negative_expr is not None), 4096) for i in vectors)
    order = sorted(vectors)
    found = session.snapshot().knn_batch(np.vstack([vectors[i] for i in order]), k)
    return dict(zip(order, found, strict=True))


# Below this many queries a second reader is not worth opening.
PARALLEL_MIN_QUERIES = 64


def _extra_readers(queries: int, rerank: bool) -> int:
    """Connections beyond the session's own for the searches: one more on a multi-core
    machine for a large golden set. The full-text legs run inside SQLite, which releases the
    GIL, so two readers keep two cores busy. Not with a reranker: its inference already uses
    every core."""
    if rerank or queries < PARALLEL_MIN_QUERIES or (os.cpu_count() or 1) < 2:
        return 0
    return 1


def _listed(found: list[tuple[int, float]]) -> Knn:
    """A KNN answering from one query's precomputed neighbours (a prefix serves any k)."""
    return lambda _vector, k: found[:k]


def _search_all(stores: Sequence[Store], compiled: Sequence[CompiledQuery],
                params: SearchParams, vectors: dict[int, Any],
                neighbours: dict[int, list[tuple[int, float]]], reranker: Any,
                dim: int) -> list[list[HitRecord]]:
    """Every query's hit records, in file order; with several stores (one consistent state,
    see `Store.pinned_readers`) each thread takes the next query off a shared counter."""
    hits: list[list[HitRecord]] = [[] for _ in compiled]
    counter = itertools.count()
    errors: list[BaseException] = []

    def work(store: Store) -> None:
        try:
            for i in counter:
                if i >= len(compiled) or errors:
                    return
                result = search(store, compiled[i], params, vector=vectors.get(i),
                                knn=_listed(neighbours.get(i, [])), reranker=reranker, dim=dim)
                hits[i] = [HitRecord(rank=r + 1, path=h.chunk.path, heading=h.chunk.heading,
                                     score=h.score) for r, h in enumerate(result.hits)]
        except BaseException as exc:  # Ctrl-C included: the other threads stop, then re-raised
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(store,), name="groove-eval", daemon=True)
               for store in stores[1:]]
    for thread in threads:
        thread.start()
    try:
        work(stores[0])
    finally:
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
    return hits
