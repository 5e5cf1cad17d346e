"""The text report of `groove tune`, rendered from the §9 JSON document."""

from __future__ import annotations

import random
from typing import Any

from groove_cli.evaluate import tune as T
from groove_cli.render.tune_report import render_tune_summary, render_tune_text


def _cond(ratio: float, floor: float) -> dict[str, float]:
    return {"vector_weight": ratio, "fts_weight": 1.0, "min_score": floor}


KEEP_REPORT: dict[str, Any] = {
    "kb_path": "/notes", "golden_path": "/notes/.groove-eval.yml", "model": "multilingual-e5-small",
    "reranker": None, "space": "retrieval", "limit": 10, "candidate_pool": 50, "vector_k": 50,
    "primary_k": 5, "k_values": [1, 5, 10], "chunk_total": 812, "context_axis_noop": True,
    "query_count": 3, "effective_query_count": 2,
    "diagnostics": [
        {"id": "rrf-basics", "fts_candidates": 50, "fts_total_matches": 433, "vec_fts_overlap": 12,
         "bm25_sensitive": True, "idf_clamped": True, "rrf_ties": 2, "effective": True},
        {"id": "setup", "fts_candidates": 7, "fts_total_matches": 7, "vec_fts_overlap": 3,
         "bm25_sensitive": False, "idf_clamped": False, "rrf_ties": 0, "effective": True},
        {"id": "tiny", "fts_candidates": 1, "fts_total_matches": 1, "vec_fts_overlap": 0,
         "bm25_sensitive": False, "idf_clamped": False, "rrf_ties": 0, "effective": False},
    ],
    "grid": {
        "weight_ratios": [0.5, 0.67, 1, 1.5, 2], "min_scores": [0, 0.2, 0.3, 0.4],
        "ratio_sweep": [
            {"condition": _cond(1.5, 0.0), "ndcg": 0.8},
            {"condition": _cond(1.0, 0.0), "ndcg": 0.75},
            {"condition": _cond(2.0, 0.0), "ndcg": 0.75},
            {"condition": _cond(0.67, 0.0), "ndcg": 0.7},
            {"condition": _cond(0.5, 0.0), "ndcg": 0.6},
        ],
        "min_score_sweep": [
            {"condition": _cond(1.5, 0.0), "ndcg": 0.8},
            {"condition": _cond(1.5, 0.2), "ndcg": 0.8},
            {"condition": _cond(1.5, 0.3), "ndcg": 0.7},
            {"condition": _cond(1.5, 0.4), "ndcg": 0.5},
        ],
    },
    "loo": {
        "refit": _cond(1.5, 0.0), "folds": 2, "held_out_diffs": [0.1, 0.0], "mean_delta": 0.05,
        "paired_se": 0.05, "selection_stability": 0.5,
        "sign_test": {"improved": 1, "degraded": 0, "tied": 1, "p_value": 1.0},
    },
    "secondary_metrics": {
        "baseline": {"recall_at_k": {"1": 0.5, "5": 0.75, "10": 1.0}, "mrr": 0.6,
                     "ndcg_at_k": {"1": 0.5, "5": 0.7, "10": 0.8}, "query_count": 3},
        "refit": {"recall_at_k": {"1": 0.625, "5": 0.75, "10": 0.875}, "mrr": 0.65,
                  "ndcg_at_k": {"1": 0.6, "5": 0.75, "10": 0.8}, "query_count": 3},
        "violations": ["recall@10 would drop from 1.000 to 0.875"],
    },
    "per_query_impact": {"improved": 1, "degraded": 1, "worst_delta": -0.125, "worst_id": "tiny"},
    "verdict": {"decision": "keep_default", "reasons": [
        "held-out mean delta 0.0500 is not above 3.0 × paired SE (0.1500)",
        "selection stability 0.50 is not above 0.5",
        "recall@10 would drop from 1.000 to 0.875",
    ]},
    "written": None,
}

KEEP_TEXT = """\
groove tune — /notes
  golden: /notes/.groove-eval.yml   model: multilingual-e5-small   reranker: none (tune always \
measures the plain fusion stage)
  space: retrieval   limit: 10   candidate pool: 50 (floor, not a cap)   vector k: 50   chunks: 812
  queries: 3 total / 2 effective (FTS candidates >= 2)   primary metric: nDCG@5

## Query diagnostics
  query         fts  docfreq  overlap  bm25?  idf   ties
  rrf-basics     50      433       12  yes    CLMP     2
  setup           7        7        3  no     ok       0
  tiny            1        1        0  no     ok       0
  fts = FTS candidates (the query is effective when fts >= 2); docfreq = chunks the FTS
  expression matches; overlap = chunks in both legs; bm25? = the FTS order changes between
  heading-heavy and content-heavy bm25 weights; idf = CLMP when the expression matches at
  least half of the chunks (FTS5 clamps its IDF to nearly 0), else ok; ties = adjacent equal
  fused scores at the default condition.

## Grid (coordinate descent over 2 effective queries)
  Phase 1: top 5 of the 15 (weight ratio, CJK weight) pairs at min_score 0.0 by mean nDCG@5
    vector_weight=1.5 fts_weight=1.0 min_score=0.0 nDCG@5 0.8000
    vector_weight=1.0 fts_weight=1.0 min_score=0.0 nDCG@5 0.7500
    vector_weight=2.0 fts_weight=1.0 min_score=0.0 nDCG@5 0.7500
    vector_weight=0.67 fts_weight=1.0 min_score=0.0 nDCG@5 0.7000
    vector_weight=0.5 fts_weight=1.0 min_score=0.0 nDCG@5 0.6000
  Phase 2: every min_score at the phase-1 weights (a floor can only cost here)
    vector_weight=1.5 fts_weight=1.0 min_score=0.0 nDCG@5 0.8000  ← refit
    vector_weight=1.5 fts_weight=1.0 min_score=0.2 nDCG@5 0.8000
    vector_weight=1.5 fts_weight=1.0 min_score=0.3 nDCG@5 0.7000
    vector_weight=1.5 fts_weight=1.0 min_score=0.4 nDCG@5 0.5000

## Nested leave-one-query-out CV
  refit (all 2 effective queries): vector_weight=1.5 fts_weight=1.0 min_score=0.0
  folds: 2 (one held-out query each)
  held-out mean delta nDCG@5: +0.0500 (adoption needs > 0.02)
  paired SE: 0.0500   3.0 × SE: 0.1500
  sign test: 1 improved / 0 degraded / 1 tied, p = 1.0000 (reported only)
  selection stability: 0.50 (adoption needs > 0.5)

## Secondary metrics (all 3 golden queries)
  metric      default → refit (Δ)
  recall@1    0.500 → 0.625 (+0.125)
  recall@5    0.750 → 0.750 (+0.000)
  recall@10   1.000 → 0.875 (-0.125)
  MRR         0.600 → 0.650 (+0.050)
  DEGRADED: recall@10 would drop from 1.000 to 0.875

## Per-query impact (refit vs default)
  improved: 1   degraded: 1   worst Δ nDCG@5: -0.1250 (tiny)

## Verdict
  Recommendation: keep the built-in defaults (vector_weight=1.0 fts_weight=1.0 cjk_weight=6.0 min_score=0.0).
    - held-out mean delta 0.0500 is not above 3.0 × paired SE (0.1500)
    - selection stability 0.50 is not above 0.5
    - recall@10 would drop from 1.000 to 0.875
"""


def test_keep_default_report_full_text() -> None:
    assert render_tune_text(KEEP_REPORT) == KEEP_TEXT


KEEP_SUMMARY = """\
groove tune — /notes   space: retrieval   2 of 3 queries effective   metric: nDCG@5
  best condition: vector_weight=1.5 fts_weight=1.0 min_score=0.0
  held-out Δ nDCG@5: +0.0500 (paired SE 0.0500; adoption needs > 0.02 and > 3.0 × SE)   stability 0.50

  Recommendation: keep the built-in defaults (vector_weight=1.0 fts_weight=1.0 cjk_weight=6.0 min_score=0.0).
    - held-out mean delta 0.0500 is not above 3.0 × paired SE (0.1500)
    - selection stability 0.50 is not above 0.5
    - recall@10 would drop from 1.000 to 0.875

  Full report (diagnostics, grid, CV, secondary metrics): groove tune --verbose
"""


def test_default_summary_is_the_verdict_and_its_evidence() -> None:
    assert render_tune_summary(KEEP_REPORT) == KEEP_SUMMARY


def test_infinite_se_and_fusion_default_label() -> None:
    report = dict(KEEP_REPORT, space="fusion")
    report["loo"] = dict(KEEP_REPORT["loo"], paired_se=None, mean_delta=0.0)
    report["grid"] = {
        "rrf_k": [5, 10, 20, 30, 60, 100], "bm25_weights": [0.5, 1.0, 2.0, 4.0],
        "top_weight_conditions": [], "rrf_k_sweep": [],
    }
    report["loo"]["refit"] = T.default_condition("fusion").values()
    text = render_tune_text(report)
    assert "  paired SE: inf   3.0 × SE: inf\n" in text
    assert "  held-out mean delta nDCG@5: +0.0000 (adoption needs > 0.02)\n" in text
    assert ("  Recommendation: keep the built-in defaults (h=2.0 ctx=1.0 content=1.0 k=60).\n"
            in text)
    assert "  Phase 1: top 5 of the 64 bm25 weight sets at k=60 by mean nDCG@5\n" in text


def _adopt_report() -> dict[str, Any]:
    """A fusion sweep where weight set h=4.0 ctx=1.0 content=0.5 finds every answer first."""
    rng = random.Random(5)
    winner = (3 * 4 + 1) * 4 + 0
    meta: dict[int, tuple[str, str | None]] = {}
    queries = []
    for q in range(6):
        noise = [100 + 40 * q + i for i in range(30)]
        for i in noise:
            meta[i] = (f"noise{i}.md", None)
        meta[q] = (f"answer{q}.md", "Answer")
        vec = tuple(rng.sample(noise[10:], 10))  # disjoint from the FTS lists
        lists = tuple((q, *noise[:9]) if w == winner else (*noise[:9], q) for w in range(64))
        queries.append(T.QueryLists(f"query-{q}", ((f"answer{q}.md", "answer"),), vec,
                                    {"fts": lists}))
    sweep = T.score_matrix(queries, meta, "fusion", 10, [1, 10])
    diags = [T.diagnostics(q.id, q.vector_ids, q.leg_ids["fts"][T.DEFAULT_WEIGHT_INDEX],
                           probe_heading_heavy=q.leg_ids["fts"][48],
                           probe_content_heavy=q.leg_ids["fts"][3],
                           fts_total_matches=10, chunk_total=400, limit=10) for q in queries]
    loo = T.loo_cv(sweep.ndcg5, range(6), "fusion")
    return T.build_tune_json(kb_path="/kb", golden_path="/kb/g.yml", model="m", limit=10,
                             chunk_total=400, context_axis_noop=False, diagnostics=diags,
                             sweep=sweep, loo=loo, verdict=T.verdict(sweep, loo))


def test_adopt_report_sections_and_snippet() -> None:
    text = render_tune_text(_adopt_report())
    headers = [line for line in text.splitlines() if line.startswith("## ")]
    assert headers == [
        "## Query diagnostics",
        "## Grid (coordinate descent over 6 effective queries)",
        "## Nested leave-one-query-out CV",
        "## Secondary metrics (all 6 golden queries)",
        "## Per-query impact (refit vs default)",
        "## Verdict",
    ]
    assert text.startswith("groove tune — /kb\n")
    assert "    h=4.0 ctx=1.0 content=0.5 k=60     nDCG@5 1.0000\n" in text
    assert "    h=4.0 ctx=1.0 content=0.5 k=20     nDCG@5 1.0000  ← refit\n" in text
    assert text.endswith(
        "## Verdict\n"
        "  Recommendation: h=4.0 ctx=1.0 content=0.5 k=20\n"
        "  Confirm it with `groove eval` (with your reranker, if you use one) before relying\n"
        "  on it. Add to groove.toml:\n"
        "\n"
        "[search.fusion]\n"
        "rrf_k = 20.0\n"
        "bm25_heading_weight = 4.0\n"
        "bm25_context_weight = 1.0\n"
        "bm25_content_weight = 0.5\n"
        "\n"
        "  or run groove tune --write\n"
    )


def test_adopt_summary_carries_the_snippet_and_no_report_sections() -> None:
    report = _adopt_report()
    summary = render_tune_summary(report)
    assert not any(line.startswith("## ") for line in summary.splitlines())
    assert "  best condition: h=4.0 ctx=1.0 content=0.5 k=20\n" in summary
    assert report["verdict"]["toml_snippet"] in summary
    assert "  or run groove tune --write\n" in summary
    assert len(summary.splitlines()) < len(render_tune_text(report).splitlines()) // 2
