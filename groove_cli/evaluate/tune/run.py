"""`groove tune` as one core call: fetch each query's lists once, sweep in memory, decide.

tune.md §5: per usable query one vector search (all queries in one matrix product), the FTS
search once per bm25 weight set, the diagnostics' count — then every condition is fused and
scored in memory (sweep.py), selected under nested CV (select.py) and judged (verdict.py).
`on_phase` receives each phase's name and duration (bench/bench_tune.py times them).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from groove_cli import config, messages
from groove_cli.config import Settings
from groove_cli.dburl import IndexLocation
from groove_cli.evaluate.golden import golden_index_warnings, parse_k_values
from groove_cli.evaluate.golden_set import load_golden_set
from groove_cli.evaluate.tune.grid import (
    MAX_TUNE_K,
    RERUN_SPACES,
    SPACE_KEYS,
    Space,
    candidate_pool,
    grid,
    normalise_k_values,
    tune_limit,
    weight_sets,
)
from groove_cli.evaluate.tune.lists import (
    BUILTIN_BM25,
    ListFetcher,
    query_lists,
    scored_vector_lists,
    vector_lists,
)
from groove_cli.evaluate.tune.preflight import (
    RRF_SPACE_NOTE,
    RRF_SPACE_WHAT,
    SCOPE_NOTE_DEFAULTS,
    SCOPE_NOTE_STAGES,
    check_preflight,
)
from groove_cli.evaluate.tune.report import TuneReport, WrittenKeys
from groove_cli.evaluate.tune.select import loo_cv
from groove_cli.evaluate.tune.sweep import ranked_matrix, score_matrix
from groove_cli.evaluate.tune.verdict import Verdict, verdict
from groove_cli.evaluate.tune.write import (
    check_writable,
    creating_config_note,
    write_recommendation,
    write_refusal,
    write_target,
    written_note,
)
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.params import build_params
from groove_cli.retrieve.query import CompiledQuery, compile_query
from groove_cli.retrieve.searcher import Searcher
from groove_cli.types import ProgressSink

PhaseHook = Callable[[str, float], None]
"""Receives a phase name and its duration in seconds."""

PHASES = ("embedding", "fetch_vector", "golden_checks", "fetch_preflight", "preflight",
          "fetch_grid", "fetch_meta", "sweep", "loo_cv", "verdict")
"""run_tune's phases in order: query embedding (cache first), the vector lists, the golden
checks, the pre-flight lists and counts, the pre-flight check, the other weight sets' lists,
the chunks' (path, heading), the sweep, nested CV, and verdict plus report."""


@dataclass(frozen=True, slots=True)
class TuneRequest:
    settings: Settings
    db: IndexLocation
    kb: Path
    golden: Path | None
    k_values: tuple[int, ...]
    limit: int | None
    space: Space
    write: bool = False
    force: bool = False
    config_flag: Path | None = None
    new_config_folder: Path | None = None
    """Where `write` creates groove.toml when none was loaded (the command line: the working
    folder); None: writing needs a loaded config file."""


def tune_k_values(settings: Settings, flag: str | None) -> tuple[int, ...]:
    """tune's k list: `--k` when given, else `[eval].k_values`; 0s dropped, 5 always added."""
    raw = parse_k_values(flag) if flag is not None else [int(str(v)) for v in
                                                         settings.list_("eval.k_values")]
    return normalise_k_values(raw)


def _scope_notes(s: Settings, space: Space) -> None:
    if s.bool_("search.mmr.enabled") or s.bool_("search.parent_retriever.enabled"):
        messages.note(SCOPE_NOTE_STAGES)
    if space in RRF_SPACE_WHAT and s.str_("search.fusion.method") == "score":
        messages.note(RRF_SPACE_NOTE.format(space=space, what=RRF_SPACE_WHAT[space]))
    # restating a built-in value in groove.toml is not a difference (tune.md §1)
    specs = [spec for spec in config.SCHEMA
             if spec.key.startswith(("search.fusion.", "search.retrieval."))]
    if any(s[spec.key] != spec.default for spec in specs):
        messages.note(SCOPE_NOTE_DEFAULTS)


@contextmanager
def _timed(phase: str, on_phase: PhaseHook | None) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        if on_phase is not None:
            on_phase(phase, time.perf_counter() - start)


def run_tune(req: TuneRequest, *, on_phase: PhaseHook | None = None,
             progress: ProgressSink | None = None) -> TuneReport:
    """Sweep the grid, cross-validate, and (with --write) apply an adopted recommendation;
    `progress` hears of each query swept (the CLI draws one bar on a terminal)."""
    s = req.settings
    if req.write:  # a read-only config is refused before the sweep, not after it
        check_writable(write_target(s.config.path if s.config else None,
                                    req.new_config_folder))
    _scope_notes(s, req.space)
    golden = load_golden_set(s, req.kb, req.golden)
    limit = tune_limit(req.limit, req.k_values)
    if req.limit is not None and req.limit > MAX_TUNE_K:
        messages.note(f"limit {req.limit} exceeds the retrieval cap; using {MAX_TUNE_K}")
    # tune scores binary relevance: grade-0 entries (judged not relevant) are dropped
    judged = [replace(q, expected=tuple(e for e in q.expected if e.grade > 0))
              for q in golden.queries]
    usable = [q for q in judged if q.expected]
    for q in judged:
        if not q.expected:
            messages.warning(f"golden query {q.id} has no expected entries; tune skips it")
    pool = candidate_pool(limit)
    sets = weight_sets() if req.space == "fusion" else [BUILTIN_BM25]
    searcher = Searcher.from_settings(s, req.db, req.kb)
    try:
        searcher.require_vectors("tune")
        compiled = [compile_query(q.query) for q in usable]
        with _timed("embedding", on_phase):
            vectors = searcher.query_vectors([q.positive_text for q in compiled])
        scored = req.space == "fusion-method"  # score fusion needs the legs' scores
        with _timed("fetch_vector", on_phase):
            vec_scored = (scored_vector_lists(searcher, compiled, vectors, pool) if scored
                          else [])
            vec_lists = ([[cid for cid, _ in found] for found in vec_scored] if scored
                         else vector_lists(searcher, compiled, vectors, pool))
        store = searcher.store
        with store.read_transaction():
            with _timed("golden_checks", on_phase):
                golden_index_warnings(store, golden)  # expected entries the index lacks
            chunk_total = store.chunk_count()
            context_noop = not store.has_context_text()
            fetchers = [ListFetcher(store, q, pool, scored=scored) for q in compiled]
            with _timed("fetch_preflight", on_phase):
                diags = [fetcher.diagnostics(golden_query.id, vec_ids, chunk_total, limit)
                         for fetcher, golden_query, vec_ids in zip(fetchers, usable, vec_lists,
                                                                   strict=True)]
            with _timed("preflight", on_phase):
                effective = check_preflight(diags, context_axis_noop=context_noop)
            with _timed("fetch_grid", on_phase):
                lists = query_lists(fetchers, usable, vec_lists, sets,
                                    [[value for _, value in found] for found in vec_scored]
                                    if scored else None)
            with _timed("fetch_meta", on_phase):
                ids = {cid for ql in lists for cid in ql.vector_ids}
                ids.update(cid for ql in lists for leg_lists in ql.leg_ids.values()
                           for ids_ in leg_lists for cid in ids_)
                meta = {cid: (c.path, c.heading) for cid, c in store.chunks_by_id(ids).items()}
        ranked: list[list[list[int]]] = []
        if req.space in RERUN_SPACES:  # no fetched list holds these conditions (§5)
            with _timed("fetch_grid", on_phase):
                ranked = rerun_rankings(searcher, s, compiled, limit, req.space)
                extra = {cid for per in ranked for found in per for cid in found} - set(meta)
                meta.update({cid: (c.path, c.heading)
                             for cid, c in store.chunks_by_id(extra).items()})
        model_name = searcher.runtime.name
    finally:
        searcher.close()

    swept = itertools.count(1)

    def advance(line: str) -> None:
        messages.detail_line(line)
        if progress is not None:
            progress.advance(next(swept), 0)

    if progress is not None:
        progress.start(len(lists))
    with _timed("sweep", on_phase):
        sweep = (ranked_matrix(lists, meta, req.space, ranked, req.k_values, progress=advance)
                 if ranked else score_matrix(lists, meta, req.space, limit, req.k_values,
                                             progress=advance))
    if progress is not None:
        progress.finish()
    with _timed("loo_cv", on_phase):
        loo = loo_cv(sweep.ndcg5, effective, req.space)
    with _timed("verdict", on_phase):
        decision = verdict(sweep, loo)
    written = _maybe_write(req, decision) if req.write else None
    with _timed("verdict", on_phase):
        return TuneReport(str(req.kb), str(golden.path), model_name, limit, chunk_total,
                          context_noop, tuple(diags), sweep, loo, decision, written)


def rerun_rankings(searcher: Searcher, settings: Settings, compiled: list[CompiledQuery],
                   limit: int, space: Space) -> list[list[list[int]]]:
    """A re-run space's sweep input (tune.md §4, §5): every golden query through the search
    pipeline at each condition of the grid (its keys feed their SearchParams fields), the rest
    of the settings as configured, ranks before the relevance cuts (as every space) and
    without the optional stages; [condition][query] ranked chunk ids."""
    base = replace(build_params(settings, limit=limit, rerank=False, filters=FilterSpec(),
                                spans=False),
                   relevance_floor=0.0, unsupported_below=0.0, min_relevance=0.0, mmr=False,
                   parent_retriever=False)
    out = []
    for condition in grid(space):
        params = replace(base, **{spec.param: getattr(condition, spec.name)
                                  for spec in SPACE_KEYS[space] if spec.param})
        out.append([[hit.chunk.chunk_id for hit in result.hits]
                    for result in searcher.search_many(compiled, params)])
    return out


def _maybe_write(req: TuneRequest, decision: Verdict) -> WrittenKeys | None:
    loaded = req.settings.config.path if req.settings.config else None
    refusal = write_refusal(decision.decision, force=req.force, loaded=loaded,
                            user_config=config.user_config_path(), config_flag=req.config_flag)
    if refusal:
        messages.warning(refusal)
        return None
    target = write_target(loaded, req.new_config_folder)
    if loaded is None:
        messages.note(creating_config_note(target))
    written = write_recommendation(target, req.space, decision.refit,
                                   validate=config.validate_text)
    messages.note(written_note(written))
    return written
