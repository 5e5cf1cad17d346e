"""`groove tune` as one core call: fetch each query's lists once, sweep in memory, decide.

tune.md §5: per usable query one vector search (all queries in one matrix product), the FTS
search once per bm25 weight set, the diagnostics' count — then every condition is fused and
scored in memory by `evaluate.tune`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from groove_cli import config, messages
from groove_cli.config import Settings
from groove_cli.evaluate import tune
from groove_cli.evaluate.golden import GoldenQuery
from groove_cli.evaluate.runner import golden_index_warnings, load_golden_set
from groove_cli.evaluate.tune_write import (
    creating_config_note,
    write_recommendation,
    write_refusal,
    write_target,
    written_note,
)
from groove_cli.retrieve.pipeline import excluded_ids, fetch_size
from groove_cli.retrieve.query import CompiledQuery, compile_query
from groove_cli.session import ReadSession, open_session
from groove_cli.store import Store

BUILTIN_BM25 = (2.0, 1.0, 1.0)
HEADING_HEAVY = (4.0, 0.5, 0.5)
CONTENT_HEAVY = (0.5, 0.5, 4.0)


@dataclass(frozen=True, slots=True)
class TuneRequest:
    settings: Settings
    db: Path
    kb: Path
    golden: Path | None
    k_values: tuple[int, ...]
    limit: int | None
    space: tune.Space
    write: bool = False
    force: bool = False
    config_flag: Path | None = None


def _scope_notes(s: Settings) -> None:
    if s.bool_("search.mmr.enabled") or s.bool_("search.parent_retriever.enabled"):
        messages.note(tune.SCOPE_NOTE_STAGES)
    # restating a built-in value in groove.toml is not a difference (tune.md §1)
    specs = [spec for spec in config.SCHEMA
             if spec.key.startswith(("search.fusion.", "search.retrieval."))]
    if any(s[spec.key] != spec.default for spec in specs):
        messages.note(tune.SCOPE_NOTE_DEFAULTS)


def _vector_lists(session: ReadSession, compiled: list[CompiledQuery], pool: int) -> list[list[int]]:
    """Each query's vector list: one matrix product for all; exclusions over-fetched, dropped."""
    vectors = session.query_vectors([q.positive_text for q in compiled])
    if not vectors:
        return []
    snapshot = session.snapshot()
    k = tune.vector_k(pool, any(q.negative_expr or q.word_negative_expr or q.cjk_negative_expr
                                for q in compiled))
    neighbours = snapshot.knn_batch(np.vstack(vectors), k)
    lists: list[list[int]] = []
    for query, found in zip(compiled, neighbours, strict=True):
        ids = [cid for cid, _ in found]
        excluded = excluded_ids(session.store, query)
        if excluded is not None:
            ids = [cid for cid in ids if cid not in excluded]
        lists.append(ids[:pool])
    return lists


class _ListFetcher:
    """One query's ranked FTS lists per table and bm25 weight set, each fetched at most once.

    Pre-flight needs only the built-in and the two probe weight sets; the other sets of the
    fusion grid are fetched after pre-flight, so a run that exits 2 has not paid for them.
    """

    def __init__(self, store: Store, query: CompiledQuery, pool: int) -> None:
        self.store = store
        self.pool = pool
        self.exprs = {"fts_chunks": query.match_expr, "fts_words": query.word_expr,
                      "fts_cjk": query.cjk_expr}
        # as the search's legs: the word and CJK lists always, the trigram list with negatives
        # only those tables can hold
        other_negatives = query.word_negative_expr or query.cjk_negative_expr
        self.filtered = {"fts_words", "fts_cjk"} | ({"fts_chunks"} if other_negatives else set())
        runs = any(self.exprs[table] for table in self.filtered)
        self.excluded = excluded_ids(store, query) if runs else None
        self.cache: dict[tuple[str, tuple[float, float, float]], tuple[int, ...]] = {}

    def fetch(self, table: str, weights: tuple[float, float, float]) -> tuple[int, ...]:
        """The table's ranked list at `weights`; the word list drops excluded ids (over-fetched
        like the search's word leg) because its expression cannot hold CJK negatives, and the
        trigram list does when word-level negatives may match rows its NOT keeps."""
        expr = self.exprs[table]
        if expr is None:
            return ()
        key = (table, weights)
        if key not in self.cache:
            drop = self.excluded if table in self.filtered else None
            n = fetch_size(self.pool, drop is not None)
            ids = self.store.fts_search_ids(expr, weights, n, table)
            self.cache[key] = tuple([i for i in ids if not drop or i not in drop][: self.pool])
        return self.cache[key]

    def combined(self, weights: tuple[float, float, float]) -> list[int]:
        """Every table's candidates (trigram first), for the diagnostics."""
        return list(dict.fromkeys((*self.fetch("fts_chunks", weights),
                                   *self.fetch("fts_words", weights),
                                   *self.fetch("fts_cjk", weights))))

    def lists(self, table: str, weight_sets: Sequence[tuple[float, float, float]]
              ) -> tuple[tuple[int, ...], ...]:
        return tuple(self.fetch(table, w) for w in weight_sets)

    def diagnostics(self, query_id: str, vec_ids: Sequence[int], chunk_total: int,
                    limit: int) -> tune.QueryDiagnostics:
        matches = max((self.store.fts_count(expr, table)
                       for table, expr in self.exprs.items() if expr), default=0)
        return tune.diagnostics(
            query_id, vec_ids, self.combined(BUILTIN_BM25),
            probe_heading_heavy=self.combined(HEADING_HEAVY),
            probe_content_heavy=self.combined(CONTENT_HEAVY),
            fts_total_matches=matches, chunk_total=chunk_total, limit=limit)


def query_lists(fetchers: Sequence[_ListFetcher], usable: Sequence[GoldenQuery],
                vector_lists: Sequence[Sequence[int]],
                weight_sets: Sequence[tuple[float, float, float]]) -> list[tune.QueryLists]:
    """Every usable query's lists for the sweep: the vector list and, per weight set, the
    trigram list, and the word-level and CJK lists when the query has Latin words / CJK text."""
    return [
        tune.QueryLists(
            id=golden_query.id,
            expected=tuple((e.path, e.heading) for e in golden_query.expected),
            vector_ids=tuple(vec_ids),
            fts_ids_by_weight=fetcher.lists("fts_chunks", weight_sets),
            word_ids_by_weight=(fetcher.lists("fts_words", weight_sets)
                                if fetcher.exprs["fts_words"] else ()),
            cjk_ids_by_weight=(fetcher.lists("fts_cjk", weight_sets)
                               if fetcher.exprs["fts_cjk"] else ()),
        )
        for fetcher, golden_query, vec_ids in zip(fetchers, usable, vector_lists, strict=True)
    ]


def run_tune(req: TuneRequest) -> dict[str, Any]:
    """Sweep the grid, cross-validate, and (with --write) apply an adopted recommendation."""
    s = req.settings
    _scope_notes(s)
    golden = load_golden_set(s, req.kb, req.golden)
    limit = tune.tune_limit(req.limit, req.k_values)
    if req.limit is not None and req.limit > tune.MAX_TUNE_K:
        messages.note(f"limit {req.limit} exceeds the retrieval cap; using {tune.MAX_TUNE_K}")
    usable = [q for q in golden.queries if q.expected]
    for q in golden.queries:
        if not q.expected:
            messages.warning(f"golden query {q.id} has no expected entries; tune skips it")
    pool = tune.candidate_pool(limit)
    weight_sets = tune.weight_sets() if req.space == "fusion" else [BUILTIN_BM25]
    session = open_session(req.db, req.kb, model=s.str_("model"), max_length=s.int_("max_length"),
                           models_dir=config.models_dir(s), offline=config.offline_mode())
    try:
        compiled = [compile_query(q.query) for q in usable]
        vector_lists = _vector_lists(session, compiled, pool)
        store = session.store
        with store.read_transaction():
            golden_index_warnings(session, golden)  # expected entries the index lacks, as eval
            chunk_total = store.chunk_count()
            context_noop = not store.has_context_text()
            fetchers = [_ListFetcher(store, q, pool) for q in compiled]
            diags = [
                fetcher.diagnostics(golden_query.id, vec_ids, chunk_total, limit)
                for fetcher, golden_query, vec_ids in zip(fetchers, usable, vector_lists,
                                                          strict=True)
            ]
            effective = tune.check_preflight(diags, context_axis_noop=context_noop)
            lists = query_lists(fetchers, usable, vector_lists, weight_sets)
            ids = {cid for ql in lists for cid in ql.vector_ids}
            ids.update(cid for ql in lists
                       for fts in (*ql.fts_ids_by_weight, *ql.word_ids_by_weight,
                                   *ql.cjk_ids_by_weight) for cid in fts)
            meta = {cid: (c.path, c.heading) for cid, c in store.chunks_by_id(ids).items()}
        model_name = session.runtime.name
    finally:
        session.close()

    sweep = tune.score_matrix(lists, meta, req.space, limit, req.k_values,
                              progress=messages.progress)
    loo = tune.loo_cv(sweep.ndcg5, effective, req.space)
    decision = tune.verdict(sweep, loo)
    written = _maybe_write(req, decision) if req.write else None
    return tune.build_tune_json(
        kb_path=str(req.kb), golden_path=str(golden.path), model=model_name, limit=limit,
        chunk_total=chunk_total, context_axis_noop=context_noop, diagnostics=diags, sweep=sweep,
        loo=loo, verdict=decision, written=written)


def _maybe_write(req: TuneRequest, decision: tune.Verdict) -> tune.WrittenKeys | None:
    loaded = req.settings.config.path if req.settings.config else None
    refusal = write_refusal(decision.decision, force=req.force, loaded=loaded,
                            user_config=config.user_config_path(), config_flag=req.config_flag)
    if refusal:
        messages.warning(refusal)
        return None
    target = write_target(loaded, Path.cwd())
    if loaded is None:
        messages.note(creating_config_note(target))
    written = write_recommendation(target, req.space, decision.refit,
                                   validate=config.validate_text)
    messages.note(written_note(written))
    return written
