"""`groove eval` as one core call: golden → query vectors → searches → metrics → history.

eval.md §2: every query vector is taken from the cache or computed (and stored) first; then all
searches, the corpus snapshot and the finding scan see one consistent state of the index: one
read transaction, or for a large golden set on several cores two read transactions pinned to
the same committed state (`Store.pinned_readers`), each searching part of the queries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from groove_cli import messages
from groove_cli.config import Settings
from groove_cli.dburl import IndexLocation
from groove_cli.errors import UsageError
from groove_cli.evaluate import history
from groove_cli.evaluate.baseline import gate_comparison, load_baseline, save_baseline
from groove_cli.evaluate.corpus import corpus_block, corpus_digest
from groove_cli.evaluate.findings import findings_warning_text, quoted_findings, quoted_needles
from groove_cli.evaluate.fingerprint import FingerprintInputs, build_fingerprint, search_member
from groove_cli.evaluate.golden import (
    GoldenSet,
    golden_index_warnings,
    judged_queries,
)
from groove_cli.evaluate.golden_set import load_golden_set
from groove_cli.evaluate.metrics import HitRecord, QueryMetrics, score_query
from groove_cli.evaluate.paired import check_metric, default_metric, run_has_metric
from groove_cli.evaluate.report import EvalReport, build_run, utc_timestamp
from groove_cli.evaluate.stats import warm_draws
from groove_cli.outfile import output_kind
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.legs import registered
from groove_cli.retrieve.params import (
    SearchParams,
    build_params,
    query_warnings,
    settings_warnings,
)
from groove_cli.retrieve.pipeline import SearchResult
from groove_cli.retrieve.query import CompiledQuery, compile_query
from groove_cli.retrieve.searcher import Searcher, extra_readers


def gate_metric_from(value: str | None, k_values: Sequence[int]) -> str | None:
    """`--gate-metric`: a known metric name (any case) at one of the run's k values."""
    if value is None:
        return None
    try:
        name = check_metric(value)
    except ValueError as exc:
        raise UsageError(f"--gate-metric: {exc}") from None
    if not run_has_metric({"fingerprint": {"k_values": list(k_values)}}, name):
        raise UsageError(f"--gate-metric {value}: k is not one of --k "
                         f"{','.join(str(k) for k in k_values)}")
    return name


QUERY_COMPILER: ContextVar[Callable[[str], CompiledQuery]] = ContextVar(
    "groove_query_compiler", default=compile_query)
"""How eval compiles the golden queries: `compile_query`, unless research on the compiler sets
another for a block (`engine.compiling_with`); a context variable, so no global is swapped and
other threads keep the real one."""

@dataclass(frozen=True, slots=True)
class EvalRequest:
    settings: Settings
    db: IndexLocation
    kb: Path
    golden: Path | None
    k_values: tuple[int, ...]
    limit: int
    reranker: str | None
    no_history: bool = False
    no_diff: bool = False
    fail_on_regression: bool = False
    baseline: Path | None = None
    """`--baseline FILE`: compare with this baseline whatever the settings (evaluate/baseline)."""
    save_baseline: Path | None = None
    max_drop: float = 0.01
    gate_metric: str | None = None
    """The baseline gate's primary metric (`gate_metric_from`); None: nDCG at the largest k."""
    topics: Path | None = None
    """`--topics FILE`: the golden file is TREC qrels, the queries come from this file."""
    trec_run: Path | None = None
    """`--trec-run FILE`: also write the run in TREC format."""


def leg_weights(params: SearchParams) -> tuple[tuple[str, float, float], ...]:
    """Each full-text leg weight key's (key, value, built-in default), in fusion order."""
    keys = dict.fromkeys(leg.weight for leg in registered())
    default = SearchParams()
    return tuple((key, float(getattr(params, key)), float(getattr(default, key))) for key in keys)


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
        leg_weights=leg_weights(params), min_score=params.min_score,
        score_fusion=((params.score_alpha, params.score_cjk_weight, params.score_alpha_short,
                       params.score_alpha_mid, params.score_alpha_long,
                       params.short_query_words, params.mid_query_words)
                      if params.fusion == "score" else None),
        context_mode=context_mode, search=search_member(settings, params),
    )


def eval_params(req: EvalRequest) -> SearchParams:
    """eval's search settings (eval.md §2): depth = max(largest k, --limit, 1), the selected
    reranker, no quality filter, no spans; the once-per-run settings warnings are given."""
    depth = max(max(req.k_values), req.limit, 1)
    params = build_params(req.settings, limit=depth, rerank=req.reranker is not None,
                          filters=FilterSpec(quality_threshold=0.0), spans=False)
    settings_warnings(req.settings, params)
    return params


def compile_golden(golden: GoldenSet) -> list[CompiledQuery]:
    """Every golden query compiled, with the once-per-run query warnings."""
    compile_golden = QUERY_COMPILER.get()
    compiled = [compile_golden(q.query) for q in golden.queries]
    query_warnings(compiled)
    return compiled


def run_eval(req: EvalRequest) -> EvalReport:
    """Run every golden query through the shared pipeline and compare with the history."""
    s = req.settings
    if 0 in req.k_values:
        from groove_cli.errors import UsageError

        raise UsageError("k = 0 measures nothing (recall@0 and nDCG@0 are always 0)",
                         hint="use cut-offs >= 1 in --k or [eval].k_values, e.g. --k 1,5,10")
    # an output path groove would refuse is refused before the run, not after it (outfile.py)
    for flag, target in (("--trec-run", req.trec_run), ("--save-baseline", req.save_baseline)):
        if target is not None:
            output_kind(target, flag)
    golden = load_golden_set(s, req.kb, req.golden, req.topics)
    judged_queries(golden)
    # a damaged baseline is a usage error before any search (eval.md §11)
    reference = None if req.baseline is None else load_baseline(
        req.baseline, req.gate_metric or default_metric(req.k_values))
    params = eval_params(req)
    searcher = Searcher.from_settings(s, req.db, req.kb, reranker=req.reranker)
    try:
        if params.mode != "fts":
            searcher.require_vectors("eval")
        compiled = compile_golden(golden)
        batch = searcher.prepare(compiled, params)
        readers = extra_readers(len(compiled), batch.reranker is not None)
        with searcher.pinned(readers) as pinned:
            store = pinned[0]
            golden_index_warnings(store, golden)
            rows = list(store.corpus_rows())
            documents = store.document_count()
            chunks = store.chunk_count()
            # Work that needs no search result runs on a helper thread meanwhile: the searches
            # spend most of their time inside SQLite, with the GIL free.
            with ThreadPoolExecutor(1, thread_name_prefix="groove-eval-side") as side:
                scan = side.submit(quoted_needles, golden.queries,
                                   [(r[0], r[2], r[4], r[3]) for r in rows])
                side.submit(warm_draws, sum(1 for q in golden.queries if q.expected))
                hits = [hit_records(result) for result in searcher.run_batch(batch, pinned)]
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
            s, params, model=searcher.runtime.name, reranker=req.reranker, limit=req.limit,
            k_values=req.k_values, golden_hash=golden.golden_hash,
            context_mode=searcher.context_mode))
    finally:
        searcher.close()

    run = build_run(timestamp=utc_timestamp(), fingerprint=fingerprint, corpus=corpus,
                    queries=golden.queries, hits=hits, metrics=metrics, k_values=req.k_values,
                    limit=req.limit, findings=findings)
    threshold = s.float_("eval.regression_threshold")
    compared = None
    incompatibility = None
    runs: list[history.Run] | None = None
    if req.trec_run is not None:
        from groove_cli.evaluate.trec import write_run

        write_run(req.trec_run, run)
    if req.save_baseline is not None:
        from groove_cli._version import version

        save_baseline(req.save_baseline, run, version())
        messages.note(f"wrote baseline {req.save_baseline}")
    if not req.no_history:
        where = history.history_path(req.kb, s.str_("store.location"))
        runs = history.load_history(where)
        compared = history.find_compared(runs, fingerprint)
        incompatibility = history.incompatibility_header(runs, fingerprint)
        history.save_history(where, runs, run, s.int_("eval.history_size") or 10)
    error = None
    comparison = gate_comparison(
        run, baseline=reference, baseline_path=req.baseline,
        history_runs=runs if req.fail_on_regression and compared is None else None,
        metric=req.gate_metric, max_drop=req.max_drop, enforced=req.fail_on_regression)
    if comparison is not None:
        if req.fail_on_regression and comparison.regressed:
            error = comparison.error_text()
    elif req.fail_on_regression and not req.no_history:
        if compared is None:
            messages.note(history.NO_COMPARED_NOTE)
        elif history.aggregate_regressed(compared["aggregate"], run["aggregate"], threshold):
            change = history.corpus_change_text(compared["corpus"], run["corpus"])
            error = history.regression_error_text(threshold, change)
    return EvalReport(run, compared, threshold, no_diff=req.no_diff, no_history=req.no_history,
                      incompatibility=incompatibility, regression_error=error,
                      comparison=comparison, golden=golden.path)


def hit_records(result: SearchResult) -> list[HitRecord]:
    """A search result as eval records it: rank, path, heading, score."""
    return [HitRecord(rank=r + 1, path=h.chunk.path, heading=h.chunk.heading, score=h.score)
            for r, h in enumerate(result.hits)]
