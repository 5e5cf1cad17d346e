"""`groove eval compare A B` (issue 17 §3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groove_cli.errors import UsageError
from groove_cli.evaluate.baseline import save_baseline
from groove_cli.evaluate.compare import compare_runs, resolve_run
from tests import test_eval_cli as e2e
from tests.test_eval_baseline import FP, make_run
from tests.test_eval_cli import Sample, invoke, run_eval

warm = e2e.warm
sample = e2e.sample
_cli_env = e2e._cli_env


def test_compare_runs_pairs_queries_and_corrects_across_metrics() -> None:
    a = make_run([1.0, 1.0, 1.0, 1.0])
    b = make_run([0.0, 0.0, 0.0, 0.0], {**FP, "retrieval": {"mode": "fts"}})
    report = compare_runs(a, b, label_a="A", label_b="B")
    assert report["pairs"] == 4
    assert [m["metric"] for m in report["metrics"]] == ["recall@1", "mrr", "ndcg@1"]
    for m in report["metrics"]:
        assert (m["a"], m["b"], m["delta"], m["ci95"]) == (1.0, 0.0, -1.0, [-1.0, -1.0])
        # four deltas of -1: 2 of the 16 sign patterns reach |mean| = 1
        assert m["p"] == pytest.approx(0.125, abs=0.015)
        # three equal p-values: Holm multiplies the smallest by 3 and keeps the rest monotone
        assert m["p_holm"] == pytest.approx(min(1.0, 3 * report["metrics"][0]["p"]))
    assert report["settings_diff"] == [
        {"setting": "retrieval.mode", "before": "hybrid", "after": "fts"}]
    assert report["corpus_change"] is None


def test_resolve_run_by_index_prefix_and_file(tmp_path: Path) -> None:
    runs = [make_run([1.0]), make_run([0.5])]
    runs[0]["timestamp"], runs[1]["timestamp"] = "2026-02-01T00:00:00Z", "2026-01-01T00:00:00Z"
    assert resolve_run("1", lambda: runs) == ("run 2026-01-01T00:00:00Z", runs[1])
    assert resolve_run("2026-02", lambda: runs)[1] is runs[0]
    with pytest.raises(UsageError, match=r"no history run 2: the history holds 2 run\(s\)"):
        resolve_run("2", lambda: runs)
    with pytest.raises(UsageError, match="2 history runs matches '2026-0'"):
        resolve_run("2026-0", lambda: runs)
    path = tmp_path / "b.json"
    save_baseline(path, runs[1], "1.2.3")
    label, run = resolve_run(str(path), lambda: [])
    assert label == str(path) and run["groove_version"] == "1.2.3"


def test_eval_compare_cli(sample: Sample, tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    assert run_eval(sample, "--save-baseline", str(baseline)).exit_code == 0
    assert run_eval(sample, "--mode", "fts").exit_code == 0

    result = invoke(["eval", "compare", str(baseline), "0", "--kb-path", str(sample.kb),
                     "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["pairs"] == 66
    names = [m["metric"] for m in report["metrics"]]
    assert names == ["recall@1", "recall@5", "recall@10", "mrr", "ndcg@1", "ndcg@5", "ndcg@10"]
    assert report["settings_diff"] == [
        {"setting": "retrieval.mode", "before": "hybrid", "after": "fts"}]
    ndcg = report["metrics"][-1]
    assert ndcg["delta"] < 0 and ndcg["ci95"][1] < 0 and ndcg["p_holm"] >= ndcg["p"]
    # issue 28: the CI gate judges the same two runs by the same numbers and the same rule
    assert report["gate_metric"] == "ndcg@10" and "significantly_worse" in ndcg
    gated = run_eval(sample, "--mode", "fts", "--baseline", str(baseline), "--no-history",
                     "--format", "json")
    primary = json.loads(gated.stdout)["comparison"]
    assert (primary["primary"]["p"], primary["primary"]["ci95"]) == (ndcg["p"], ndcg["ci95"])
    assert primary["regressed"] is (ndcg["significantly_worse"] and -ndcg["delta"] > 0.01)

    text = invoke(["eval", "compare", "1", "0", "--kb-path", str(sample.kb)])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == "groove eval compare"
    assert "  retrieval.mode: hybrid → fts" in lines
    assert any(line.startswith("The CI gate (`eval --fail-on-regression`) applies the same test "
                               "to the gate metric alone, nDCG@10") for line in lines)
    assert any(line.startswith("  nDCG@10 (gate) ") for line in lines)
    markdown = invoke(["eval", "compare", "1", "0", "--kb-path", str(sample.kb),
                       "--format", "markdown"])
    assert "| metric | A | B | Δ (B − A) | 95% CI of Δ | p | p (Holm) |" in markdown.stdout

    baseline.write_text("{}", encoding="utf-8")
    damaged = invoke(["eval", "compare", str(baseline), "0", "--kb-path", str(sample.kb)])
    assert damaged.exit_code == 2 and damaged.stdout == ""
    assert f"groove: error: baseline {baseline} is damaged" in damaged.stderr
    missing = invoke(["eval", "compare", "7", "0", "--kb-path", str(sample.kb)])
    assert missing.exit_code == 2
    assert "no history run 7: the history holds 2 run(s)" in missing.stderr
