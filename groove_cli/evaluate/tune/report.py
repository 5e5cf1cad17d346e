"""Tune's report (tune.md §9): `TuneReport`, whose `to_json()` is the `--format json` document."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groove_cli.config import FUSION_METHODS
from groove_cli.evaluate.metrics import metric_blocks
from groove_cli.evaluate.tune.grid import (
    BM25_WEIGHT_VALUES,
    CJK_WEIGHTS,
    FEEDBACK_BETAS,
    LENGTH_TIERS,
    PER_NOTE_VALUES,
    PRIMARY_K,
    RRF_K_VALUES,
    SCORE_ALPHAS,
    SCORE_CJK_WEIGHTS,
    candidate_pool,
    grid,
    vector_k,
)
from groove_cli.evaluate.tune.preflight import QueryDiagnostics
from groove_cli.evaluate.tune.select import LooResult, Selection, select_detail
from groove_cli.evaluate.tune.sweep import SweepScores
from groove_cli.evaluate.tune.verdict import Aggregate, Verdict

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
    return {**metric_blocks(agg.k_values, agg.metrics.value), "query_count": agg.query_count}


def _grid_json(sweep: SweepScores, selection: Selection) -> dict[str, Any]:
    conditions = grid(sweep.space)

    def entry(index: int) -> dict[str, Any]:
        return {"condition": conditions[index].values(), "ndcg": float(selection.means[index])}

    top = sorted(selection.phase1, key=lambda i: -float(selection.means[i]))[:5]
    if sweep.space == "feedback":
        return {"vector_betas": list(FEEDBACK_BETAS),
                "beta_sweep": [entry(i) for i in selection.phase1]}
    if sweep.space == "per-note":
        return {"per_note_values": list(PER_NOTE_VALUES),
                "per_note_sweep": [entry(i) for i in selection.phase1]}
    if sweep.space == "fusion-method":
        return {
            "methods": list(FUSION_METHODS),
            "score_alphas": list(SCORE_ALPHAS),
            "score_cjk_weights": list(SCORE_CJK_WEIGHTS),
            "length_tiers": [list(tier) for tier in LENGTH_TIERS],
            "alpha_sweep": [entry(i) for i in top],
            "cjk_sweep": [entry(i) for i in selection.phase2],
        }
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


@dataclass(frozen=True, slots=True)
class TuneReport:
    """Everything a tune run decided, typed; `to_json()` is the §9 document (keys in spec
    order) that `--format json` prints and `render_tune_text` renders."""

    kb_path: str
    golden_path: str
    model: str
    limit: int
    chunk_total: int
    context_axis_noop: bool
    diagnostics: tuple[QueryDiagnostics, ...]
    sweep: SweepScores
    loo: LooResult
    verdict: Verdict
    written: WrittenKeys | None = None

    def __post_init__(self) -> None:
        if tuple(d.id for d in self.diagnostics) != self.sweep.query_ids:
            raise ValueError("diagnostics and sweep must cover the same queries in the same order")

    def to_json(self) -> dict[str, Any]:
        """The §9 JSON document."""
        diagnostics, sweep, loo, verdict = self.diagnostics, self.sweep, self.loo, self.verdict
        effective = [i for i, d in enumerate(diagnostics) if d.effective]
        selection = select_detail(sweep.ndcg5, effective, sweep.space)
        pool = candidate_pool(self.limit)
        conditions = grid(sweep.space)
        impact = verdict.impact
        verdict_json: dict[str, Any]
        if verdict.decision == "adopt":
            verdict_json = {"decision": "adopt", "condition": verdict.refit.values(),
                            "toml_snippet": verdict.toml_snippet}
        else:
            verdict_json = {"decision": "keep_default", "reasons": list(verdict.reasons)}
        written = self.written
        return {
            "kb_path": self.kb_path,
            "golden_path": self.golden_path,
            "model": self.model,
            "reranker": None,
            "space": sweep.space,
            "limit": self.limit,
            "candidate_pool": pool,
            "vector_k": vector_k(pool),
            "primary_k": PRIMARY_K,
            "k_values": list(sweep.k_values),
            "chunk_total": self.chunk_total,
            "context_axis_noop": self.context_axis_noop,
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
                "sign_test": {"improved": loo.sign_test.improved,
                              "degraded": loo.sign_test.degraded,
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


def build_tune_json(*, kb_path: str, golden_path: str, model: str, limit: int, chunk_total: int,
                    context_axis_noop: bool, diagnostics: Sequence[QueryDiagnostics],
                    sweep: SweepScores, loo: LooResult, verdict: Verdict,
                    written: WrittenKeys | None = None) -> dict[str, Any]:
    """The §9 JSON document of a `TuneReport` built from these parts.

    Raises:
        ValueError: `diagnostics` and the sweep do not list the same queries in the same order.
    """
    return TuneReport(kb_path, golden_path, model, limit, chunk_total, context_axis_noop,
                      tuple(diagnostics), sweep, loo, verdict, written).to_json()
