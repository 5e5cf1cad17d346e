"""Aggregates, the EvalRun and JSON report shapes, and the text layout (eval.md §4, §7, §10)."""

from __future__ import annotations

import copy
import json
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from groove_cli.evaluate.golden import Expected, GoldenQuery
from groove_cli.evaluate.history import GOLDEN_CHANGED
from groove_cli.evaluate.metrics import HitRecord, QueryMetrics, score_query
from groove_cli.evaluate.report import (
    aggregate,
    build_json_report,
    build_run,
    format_timestamp,
    report_json_text,
)
from groove_cli.evaluate.stats import bootstrap_ci
from groove_cli.render.eval_report import GREEN, GREY, RED, RESET, diff_cell, render_eval_text

K_VALUES = (1, 5)
FP = {"model": "multilingual-e5-small", "reranker": None, "limit": 5, "k_values": [1, 5],
      "golden_hash": "g", "metric_version": 1, "fts_query_version": 1}
QUERIES = [
    GoldenQuery(index=0, id="alpha", query="alpha query", expected=(Expected("a.md", None),)),
    GoldenQuery(index=1, id="beta", query="beta query", expected=(Expected("b.md", None),)),
    GoldenQuery(index=2, id="gamma", query="gamma query", expected=()),
    GoldenQuery(index=3, id="delta", query="delta query", expected=(Expected("d.md", "Intro"),)),
]
D2 = 1 / math.log2(3)  # DCG discount of rank 2


def ranked(*paths: str) -> list[HitRecord]:
    return [HitRecord(rank=r, path=p, heading="Intro", score=1 / r) for r, p in enumerate(paths, 1)]


def make_run(timestamp: str, hit_lists: list[list[HitRecord]], corpus: dict[str, Any],
             findings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    metrics = [score_query(q.expected, h, K_VALUES) for q, h in zip(QUERIES, hit_lists, strict=True)]
    return build_run(timestamp=timestamp, fingerprint=FP, corpus=corpus, queries=QUERIES,
                     hits=hit_lists, metrics=metrics, k_values=K_VALUES, limit=5,
                     findings=findings or [])


PREV = make_run(
    "2026-08-20T09:00:00.000001Z",
    [ranked("a.md"), ranked("b.md"), ranked("a.md"), ranked("x.md")],
    {"documents": 2, "chunks": 3, "digest": "d1"},
)
NOW = make_run(
    "2026-08-21T10:00:00.123456Z",
    [ranked("a.md", "x.md"), ranked("x.md", "b.md"), ranked("a.md"), ranked("x.md")],
    {"documents": 3, "chunks": 4, "digest": "d2"},
)


def test_timestamp_format() -> None:
    moment = datetime(2026, 8, 21, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(moment) == "2026-08-21T10:00:00.123456Z"
    assert format_timestamp(datetime(2026, 8, 21, 10, 0, tzinfo=UTC)) == "2026-08-21T10:00:00.000000Z"


def test_aggregate_means_over_queries_with_expected_entries() -> None:
    metrics = [QueryMetrics({"recall": {1: 1.0, 5: 1.0}, "ndcg": {1: 1.0, 5: 1.0}}, {"mrr": 1.0}),
               QueryMetrics({"recall": {1: 0.0, 5: 1.0}, "ndcg": {1: 0.0, 5: D2}}, {"mrr": 0.5}),
               # empty E: left out
               QueryMetrics({"recall": {1: 1.0, 5: 1.0}, "ndcg": {1: 1.0, 5: 1.0}}, {"mrr": 1.0}),
               QueryMetrics({"recall": {1: 0.0, 5: 0.0}, "ndcg": {1: 0.0, 5: 0.0}}, {"mrr": 0.0})]
    block = aggregate(metrics, [1, 1, 0, 2], K_VALUES)
    assert list(block) == ["recall_at_k", "mrr", "ndcg_at_k", "query_count", "ci95"]
    assert block["recall_at_k"] == {"1": 1 / 3, "5": 2 / 3}
    assert block["mrr"] == (1.0 + 0.5 + 0.0) / 3
    assert block["ndcg_at_k"] == {"1": 1 / 3, "5": (1.0 + D2 + 0.0) / 3}
    assert block["query_count"] == 3
    ci = bootstrap_ci({"r1": [1.0, 0.0, 0.0], "mrr": [1.0, 0.5, 0.0], "n5": [1.0, D2, 0.0]})
    assert block["ci95"]["recall_at_k"]["1"] == list(ci["r1"] or ())
    assert block["ci95"]["mrr"] == list(ci["mrr"] or ())
    assert block["ci95"]["ndcg_at_k"]["5"] == list(ci["n5"] or ())


def test_aggregate_without_countable_queries() -> None:
    block = aggregate([QueryMetrics({"recall": {1: 0.0}, "ndcg": {1: 0.0}}, {"mrr": 0.0})], [0], [1])
    assert block == {"recall_at_k": {"1": 0.0}, "mrr": 0.0, "ndcg_at_k": {"1": 0.0},
                     "query_count": 0,
                     "ci95": {"recall_at_k": {"1": None}, "mrr": None, "ndcg_at_k": {"1": None}}}


def test_run_shape() -> None:
    assert list(NOW) == ["timestamp", "fingerprint", "corpus", "per_query", "aggregate"]
    beta = NOW["per_query"][1]
    assert beta == {
        "id": "beta", "query": "beta query", "expected": [{"path": "b.md", "heading": None}],
        "top_k": [{"rank": 1, "path": "x.md", "heading": "Intro", "score": 1.0},
                  {"rank": 2, "path": "b.md", "heading": "Intro", "score": 0.5}],
        "metrics": {"recall_at_k": {"1": 0.0, "5": 1.0}, "reciprocal_rank": 0.5,
                    "ndcg_at_k": {"1": 0.0, "5": D2}},
    }
    assert NOW["aggregate"]["recall_at_k"] == {"1": 1 / 3, "5": 2 / 3}
    finding = {"check": "golden-queries-quoted", "path": "a.md", "quoted": []}
    with_findings = make_run("t", [ranked("a.md")] * 4, {}, [finding])
    assert list(with_findings)[-1] == "findings"
    assert with_findings["findings"] == [finding]


def test_top_k_is_cut_at_the_limit() -> None:
    hits = ranked(*[f"{i}.md" for i in range(8)])
    run = build_run(timestamp="t", fingerprint=FP, corpus={}, queries=QUERIES[:1], hits=[hits],
                    metrics=[score_query(QUERIES[0].expected, hits, K_VALUES)], k_values=K_VALUES,
                    limit=3)
    assert [h["rank"] for h in run["per_query"][0]["top_k"]] == [1, 2, 3]


def test_json_report_without_a_compared_run() -> None:
    report = build_json_report(NOW, None, threshold=0.05)
    assert list(report) == ["timestamp", "fingerprint", "corpus", "corpus_changed", "aggregate",
                            "per_query", "findings", "previous", "diff", "regressions"]
    assert report["findings"] == []
    assert report["corpus_changed"] is None
    assert report["previous"] is report["diff"] is report["regressions"] is None
    text = report_json_text(report)
    assert text.endswith("}\n") and json.loads(text) == report


def test_json_report_with_a_compared_run() -> None:
    report = build_json_report(NOW, PREV, threshold=0.05)
    assert report["corpus_changed"] is True
    assert report["previous"] == PREV
    assert report["diff"] == {
        "recall_at_k": {"1": 1 / 3 - 2 / 3, "5": 2 / 3 - 2 / 3},
        "ndcg_at_k": {"1": 1 / 3 - 2 / 3, "5": (1 + D2) / 3 - 2 / 3},
        "mrr": (1 + 0.5) / 3 - 2 / 3,
    }
    assert report["regressions"] == [
        {"id": "beta", "metrics": {"reciprocal_rank": [1.0, 0.5], "ndcg@5": [1.0, D2]}}
    ]
    hidden = build_json_report(NOW, PREV, threshold=0.05, show_diff=False)
    assert hidden["corpus_changed"] is True
    assert hidden["previous"] is hidden["diff"] is hidden["regressions"] is None


def ci_text(report: dict[str, Any], *path: str) -> str:
    node: Any = report["aggregate"]["ci95"]
    for key in path:
        node = node[key]
    return f"[{node[0]:.3f}, {node[1]:.3f}]"


def test_text_report_with_compared_run_and_changed_corpus() -> None:
    report = build_json_report(NOW, PREV, threshold=0.05)
    text = render_eval_text(report, threshold=0.05, show_diff=True, color=False)
    assert text == "\n".join([
        "groove eval — 2026-08-21T10:00:00.123456Z",
        "  model: multilingual-e5-small    reranker: none    limit: 5    queries: 3",
        "  corpus: 3 docs / 4 chunks",
        "    ⚠️ corpus changed since the compared run (2 -> 3 documents, 3 -> 4 chunks)",
        "       a delta below may reflect that, not retrieval",
        "",
        "Aggregate (compared with run of 2026-08-20T09:00:00.000001Z)",
        f"  recall@1   0.333  {ci_text(report, 'recall_at_k', '1')}  (↓ 0.333)",
        f"  recall@5   0.667  {ci_text(report, 'recall_at_k', '5')}  (—       )",
        f"  MRR        0.500  {ci_text(report, 'mrr')}  (↓ 0.167)",
        f"  nDCG@5     {(1 + D2) / 3:.3f}  {ci_text(report, 'ndcg_at_k', '5')}  (↓ 0.123)",
        "  95% bootstrap CI over 3 queries (1000 resamples, seed 0)",
        "",
        "Per-query (regressions and misses, 3 of 4)",
        "  ↓ beta                     RR: 1.00 → 0.50, nDCG@5: 1.00 → 0.63",
        '      "beta query" → b.md; its note first at rank 2',
        "  ✗ gamma                    recall@5: 0.00",
        '      "gamma query" → no note expected',
        "  ✗ delta                    recall@5: 0.00",
        '      "delta query" → d.md § Intro; not in the top 1',
    ]) + "\n"


def test_text_report_colours_only_when_asked() -> None:
    report = build_json_report(NOW, PREV, threshold=0.05)
    coloured = render_eval_text(report, threshold=0.05, show_diff=True, color=True)
    assert f"  {RED}(↓ 0.333){RESET}" in coloured
    assert f"  {GREY}(—       ){RESET}" in coloured
    plain = render_eval_text(report, threshold=0.05, show_diff=True, color=False)
    assert "\x1b[" not in plain
    # With a threshold above every fall, nothing is red.
    assert RED not in render_eval_text(report, threshold=0.5, show_diff=True, color=True)


def test_diff_cell() -> None:
    assert diff_cell(0.056, threshold=0.05, color=False) == "  (↑ 0.056)"
    assert diff_cell(-0.056, threshold=0.05, color=False) == "  (↓ 0.056)"
    assert diff_cell(5e-10, threshold=0.05, color=False) == "  (—       )"
    assert diff_cell(0.056, threshold=0.05, color=True) == f"  {GREEN}(↑ 0.056){RESET}"
    assert diff_cell(-0.056, threshold=0.05, color=True) == f"  {RED}(↓ 0.056){RESET}"
    assert diff_cell(-0.02, threshold=0.05, color=True) == f"  {GREY}(↓ 0.020){RESET}"
    assert diff_cell(0.05, threshold=0.05, color=True) == f"  {GREY}(↑ 0.050){RESET}"  # strict


def test_text_report_no_diff_hides_delta_and_regression_lines() -> None:
    report = build_json_report(NOW, PREV, threshold=0.05)
    text = render_eval_text(report, threshold=0.05, show_diff=False, color=False)
    lines = text.splitlines()
    assert "Aggregate" in lines
    assert not any(line.startswith("Aggregate (") for line in lines)
    assert f"  recall@1   0.333  {ci_text(report, 'recall_at_k', '1')}" in lines
    assert "↓" not in text and "(—" not in text
    assert lines[-5:] == ["Per-query (regressions and misses, 2 of 4)",
                          "  ✗ gamma                    recall@5: 0.00",
                          '      "gamma query" → no note expected',
                          "  ✗ delta                    recall@5: 0.00",
                          '      "delta query" → d.md § Intro; not in the top 1']


def test_text_report_incompatible_history_header() -> None:
    report = build_json_report(NOW, None, threshold=0.05)
    text = render_eval_text(report, threshold=0.05, show_diff=True, color=False,
                            incompatibility=GOLDEN_CHANGED)
    lines = text.splitlines()
    at = lines.index(GOLDEN_CHANGED)
    assert lines[at - 1] == "" and lines[at + 1] == "Aggregate"
    assert "corpus changed" not in text
    assert "(↓" not in text


def test_text_report_same_counts_corpus_change() -> None:
    prev = {**PREV, "corpus": {"documents": 3, "chunks": 4, "digest": "old"}}
    text = render_eval_text(build_json_report(NOW, prev, threshold=0.05), threshold=0.05,
                            show_diff=True, color=False)
    assert ("    ⚠️ corpus changed since the compared run (same document and chunk counts, "
            "different contents)\n       a delta below may reflect that, not retrieval\n") in text


def test_text_report_without_countable_queries_or_misses() -> None:
    queries = [GoldenQuery(index=0, id="only", query="only query", expected=(Expected("a.md", None),))]
    hits = [ranked("a.md")]
    run = build_run(timestamp="t", fingerprint={**FP, "reranker": "bge-reranker-base"},
                    corpus={"documents": 1, "chunks": 1, "digest": "x"}, queries=queries,
                    hits=hits, metrics=[score_query(queries[0].expected, hits[0], K_VALUES)],
                    k_values=K_VALUES, limit=5)
    text = render_eval_text(build_json_report(run, None, threshold=0.05), threshold=0.05,
                            show_diff=True, color=False)
    assert "reranker: bge-reranker-base" in text
    assert "  recall@1   1.000  [1.000, 1.000]" in text
    assert "Per-query" not in text  # nothing to list


@pytest.mark.parametrize("show_diff", [True, False])
def test_null_intervals_render(show_diff: bool) -> None:
    run = build_run(timestamp="t", fingerprint=FP, corpus={"documents": 0, "chunks": 0,
                                                             "digest": "x"},
                    queries=QUERIES[2:3], hits=[[]],
                    metrics=[score_query((), [], K_VALUES)], k_values=K_VALUES, limit=5)
    text = render_eval_text(build_json_report(run, None, threshold=0.05), threshold=0.05,
                            show_diff=show_diff, color=False)
    assert "  MRR        0.000  [n/a]\n" in text
    assert "over 0 queries" in text


def test_text_report_escapes_control_characters_in_query_ids() -> None:
    """Issue 15 item 10: a golden id holding ESC must not drive the terminal."""
    now = copy.deepcopy(NOW)
    prev = copy.deepcopy(PREV)
    for run in (now, prev):
        for entry in run["per_query"]:
            if entry["id"] == "beta":
                entry["id"] = "be\x1b[2Jta"
    text = render_eval_text(build_json_report(now, prev, threshold=0.05), threshold=0.05,
                            show_diff=True, color=False)
    assert "be\\x1b[2Jta" in text
    assert "\x1b" not in text
