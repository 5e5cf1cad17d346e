"""Baselines and the paired regression gate (issue 17 §1): pure statistics, then end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groove_cli.evaluate.baseline import (
    BaselineError,
    compare,
    load_baseline,
    save_baseline,
    settings_diff,
)
from groove_cli.evaluate.metrics import QueryMetrics
from groove_cli.evaluate.paired import holm, paired_delta, randomization_p
from groove_cli.evaluate.report import aggregate
from tests import test_eval_cli as e2e
from tests.test_eval_cli import Sample, history_runs, run_eval

# the end-to-end fixtures of test_eval_cli: an indexed sample KB with a warm query cache
warm = e2e.warm
sample = e2e.sample
_cli_env = e2e._cli_env

FP = {"model": "m", "reranker": None, "limit": 1, "k_values": [1], "golden_hash": "g" * 64,
      "metric_version": 1, "fts_query_version": 1}


def make_run(ndcg: list[float], fingerprint: dict[str, Any] | None = None,
             digest: str = "d") -> dict[str, Any]:
    """A stored-run dict with one query per value (recall@1 = nDCG@1 = RR = the value)."""
    per_query = [{"id": f"q{i}", "query": f"q{i}", "expected": [{"path": "a.md", "heading": None}],
                  "top_k": [], "metrics": {"recall_at_k": {"1": v}, "reciprocal_rank": v,
                                           "ndcg_at_k": {"1": v}}}
                 for i, v in enumerate(ndcg)]
    return {"timestamp": "2026-01-01T00:00:00.000000Z", "fingerprint": fingerprint or dict(FP),
            "corpus": {"documents": 1, "chunks": 1, "digest": digest}, "per_query": per_query,
            "aggregate": aggregate(
                [QueryMetrics({"recall": {1: v}, "ndcg": {1: v}}, {"mrr": v}) for v in ndcg],
                [1] * len(ndcg), [1])}


# --------------------------------------------------------------------------- statistics


def test_paired_delta_matches_queries_by_id_and_skips_unjudged() -> None:
    before = make_run([1.0, 0.5, 0.0])
    after = make_run([0.5, 0.5, 1.0])
    after["per_query"].reverse()  # order does not matter: pairs are made by id
    after["per_query"].append({**after["per_query"][0], "id": "new-query"})  # unpaired
    before["per_query"][2]["expected"] = []  # q2 is unjudged in the baseline: left out
    delta = paired_delta(before, after, "ndcg@1")
    assert delta.pairs == 2
    assert (delta.before, delta.after, delta.delta) == (0.75, 0.5, -0.25)
    assert sorted(delta.deltas) == [-0.5, 0.0]


def test_paired_delta_ci_of_constant_deltas_is_that_value() -> None:
    delta = paired_delta(make_run([1.0] * 5), make_run([0.75] * 5), "mrr")
    assert delta.ci95 == (-0.25, -0.25)


def test_randomization_test_and_holm() -> None:
    # three deltas of +1: of the 8 equally likely sign patterns, 2 reach |mean| >= 1
    assert abs(randomization_p([1.0, 1.0, 1.0]) - 0.25) < 0.02
    assert randomization_p([0.0, 0.0]) == 1.0
    assert randomization_p([]) == 1.0
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, 2*0.03, max(0.06, 1*0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


@pytest.mark.parametrize(
    ("after", "regressed"),
    [
        ([0.0] * 8, True),                   # drop 1.0, every delta -1: p = 2/256
        ([0.0] + [1.0] * 7, False),          # drop 0.125 but one query: p = 1
        ([0.995] * 8, False),                # significant, but a drop of 0.005 <= 0.01
    ],
    ids=["significant-drop", "noise", "within-max-drop"],
)
def test_gate_needs_a_drop_above_max_drop_and_a_significant_test(after: list[float],
                                                                regressed: bool) -> None:
    result = compare(make_run([1.0] * 8), make_run(after), against="baseline", source="B",
                     metric="ndcg@1", max_drop=0.01)
    assert result.regressed is regressed


def test_the_gate_and_eval_compare_apply_one_rule() -> None:
    # issue 28: the gate failed on a bootstrap CI below 0 while compare's test gave p = 0.249.
    # Four queries that all drop: the percentile CI is [-1, -1], yet no test on 4 pairs can
    # reach p < 0.05 (the smallest two-sided sign-flip p is 2/16): neither output calls it
    # significant; with 8 such queries (p = 2/256) both do.
    from groove_cli.evaluate.compare import compare_runs

    for n, worse in ((4, False), (8, True)):
        before, after = make_run([1.0] * n), make_run([0.0] * n)
        gate = compare(before, after, against="baseline", source="B", metric="ndcg@1",
                       max_drop=0.01)
        report = compare_runs(before, after, label_a="A", label_b="B")
        row = next(m for m in report["metrics"] if m["metric"] == report["gate_metric"])
        assert report["gate_metric"] == "ndcg@1"
        assert gate.primary.ci95 == (-1.0, -1.0)
        assert row["p"] == gate.primary.p and row["ci95"] == [-1.0, -1.0]
        assert gate.regressed is worse and row["significantly_worse"] is worse
        assert (0.12 < gate.primary.p < 0.13) if n == 4 else gate.primary.p < 0.01


def test_settings_diff_names_defaults_that_absent_members_imply() -> None:
    changed = {**FP, "golden_hash": "h" * 64, "retrieval": {"mode": "fts", "min_score": 0.9},
               "mmr": {"lambda": 0.7, "same_doc_penalty": 0.0}}
    assert settings_diff(FP, changed) == [
        {"setting": "golden_hash", "before": "g" * 64, "after": "h" * 64},
        {"setting": "retrieval.mode", "before": "hybrid", "after": "fts"},
        {"setting": "retrieval.min_score", "before": 0.0, "after": 0.9},
        {"setting": "mmr", "before": "off", "after": {"lambda": 0.7, "same_doc_penalty": 0.0}},
    ]
    assert settings_diff(FP, dict(FP)) == []


def test_error_text_names_metric_settings_and_corpus() -> None:
    changed = {**FP, "retrieval": {"mode": "fts"}}
    result = compare(make_run([1.0] * 8), make_run([0.0] * 8, changed, digest="e"),
                     against="baseline", source="B.json", metric="ndcg@1", max_drop=0.01)
    assert result.error_text() == (
        "retrieval-quality regression against baseline B.json: nDCG@1 fell 1.000 → 0.000 "
        "(Δ -1.000, 95% CI [-1.000, -1.000], paired randomization p 0.0072 over 8 queries), "
        "more than --max-drop 0.010. "
        "Settings that differ: retrieval.mode (hybrid → fts). The corpus digest also differs "
        "(same counts, different contents). Exiting with code 1 because --fail-on-regression "
        "was set.")


# --------------------------------------------------------------------------- baseline files


def test_baseline_file_round_trips(tmp_path: Path) -> None:
    run = make_run([1.0, 0.5])
    path = tmp_path / "b.json"
    save_baseline(path, run, "9.9.9")
    document = json.loads(path.read_text(encoding="utf-8"))
    assert list(document)[:3] == ["format", "version", "groove_version"]
    assert load_baseline(path) == {**run, "groove_version": "9.9.9"}
    assert not path.with_name("b.json.tmp").exists()


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        ('{"format": "groove-eval-baseline", "version": 1, "timest', "invalid JSON"),
        ('{"runs": []}', 'not a groove baseline'),
        ('{"format": "groove-eval-baseline", "version": 7}', "unsupported baseline version 7"),
        (None, "per_query[1].metrics.ndcg_at_k.1 is missing or not a number"),
    ],
    ids=["truncated", "history-file", "version", "missing-metric"],
)
def test_damaged_baseline_is_a_usage_error(tmp_path: Path, content: str | None,
                                           detail: str) -> None:
    path = tmp_path / "b.json"
    if content is None:
        save_baseline(path, make_run([1.0, 0.5]), "1")
        document = json.loads(path.read_text(encoding="utf-8"))
        del document["per_query"][1]["metrics"]["ndcg_at_k"]["1"]
        content = json.dumps(document)
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BaselineError) as caught:
        load_baseline(path)
    assert caught.value.exit_code == 2
    assert caught.value.message.startswith(f"baseline {path} is damaged: ")
    assert detail in caught.value.message


def test_baseline_without_the_gate_metric_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_baseline(path, make_run([1.0]), "1")
    with pytest.raises(BaselineError, match=r"has no nDCG@10: it was scored at k = 1"):
        load_baseline(path, "ndcg@10")
    with pytest.raises(BaselineError, match="no baseline file at"):
        load_baseline(tmp_path / "missing.json")


# --------------------------------------------------------------------------- end to end


def test_settings_change_fails_against_a_baseline_and_names_the_settings(
        sample: Sample, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    saved = run_eval(sample, "--save-baseline", str(baseline), "--no-history")
    assert saved.exit_code == 0, saved.output
    assert f"groove: note: wrote baseline {baseline}" in saved.stderr.splitlines()

    changed = run_eval(sample, "--mode", "fts", "--min-score", "0.9", "--fail-on-regression",
                       "--baseline", str(baseline))
    assert changed.exit_code == 1, changed.output
    error = changed.stderr.splitlines()[-1]
    assert error.startswith(f"groove: error: retrieval-quality regression against baseline "
                            f"{baseline}: nDCG@10 fell ")
    assert "retrieval.mode (hybrid → fts), retrieval.min_score (0.0 → 0.9)" in error
    lines = changed.stdout.splitlines()
    assert "    retrieval.mode       hybrid → fts" in lines
    assert "    retrieval.min_score  0.0 → 0.9" in lines
    assert "  corpus: same digest" in lines

    same = run_eval(sample, "--fail-on-regression", "--baseline", str(baseline),
                    "--format", "json")
    assert same.exit_code == 0, same.output
    comparison = json.loads(same.stdout)["comparison"]
    assert comparison["settings_diff"] == [] and comparison["regressed"] is False
    assert comparison["primary"]["delta"] == 0.0 and comparison["primary"]["pairs"] == 66

    # without --fail-on-regression the verdict is reported, the exit code untouched
    reported = run_eval(sample, "--mode", "fts", "--min-score", "0.9", "--baseline", str(baseline))
    assert reported.exit_code == 0
    assert reported.stdout.splitlines()[-1].endswith(
        " < 0.05 (not enforced without --fail-on-regression)")
    assert ("  test: two-sided paired randomization (10000 sign flips), as `groove eval compare`"
            in reported.stdout.splitlines())
    # a drop is tolerated up to --max-drop
    loose = run_eval(sample, "--mode", "fts", "--min-score", "0.9", "--fail-on-regression",
                     "--baseline", str(baseline), "--max-drop", "0.5")
    assert loose.exit_code == 0, loose.output


def test_damaged_baseline_exits_2_before_any_output(sample: Sample, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text("{ not json", encoding="utf-8")
    result = run_eval(sample, "--fail-on-regression", "--baseline", str(baseline))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"groove: error: baseline {baseline} is damaged: invalid JSON" in result.stderr
    assert not (sample.kb / ".groove" / "eval-history.json").exists()


def test_gate_without_baseline_compares_with_the_newest_run_on_the_same_inputs(
        sample: Sample) -> None:
    assert run_eval(sample).exit_code == 0
    changed = run_eval(sample, "--mode", "fts", "--min-score", "0.9", "--fail-on-regression")
    assert changed.exit_code == 1, changed.output
    first = history_runs(sample)[1]["timestamp"]
    assert (f"groove: note: no run with identical settings; comparing with the run of {first} "
            "on the same golden file and corpus; settings that differ: retrieval.mode (hybrid "
            "→ fts), retrieval.min_score (0.0 → 0.9)") in changed.stderr.splitlines()
    assert changed.stderr.splitlines()[-1].startswith(
        f"groove: error: retrieval-quality regression against the run of {first} (same golden "
        "file and corpus): nDCG@10 fell")


def test_gate_metric_is_checked(sample: Sample) -> None:
    result = run_eval(sample, "--gate-metric", "recall@7", "--no-history")
    assert result.exit_code == 2
    assert "--gate-metric recall@7: k is not one of --k 1,5,10" in result.stderr
    result = run_eval(sample, "--gate-metric", "map", "--no-history")
    assert result.exit_code == 2
    assert "unknown metric 'map'" in result.stderr


def test_eval_report_json_carries_the_comparison_only_when_one_was_made() -> None:
    from groove_cli.evaluate.report import EvalReport

    baseline, run = make_run([1.0] * 8), make_run([0.0] * 8)
    comparison = compare(baseline, run, against="baseline", source="b.json", metric="ndcg@1",
                         max_drop=0.01)
    plain = EvalReport(run, None, 0.05, no_history=True)
    assert "comparison" not in plain.to_json() and "comparison" not in plain.full_json()
    gated = EvalReport(run, None, 0.05, no_diff=True, comparison=comparison)
    document = gated.to_json()
    assert list(document)[-1] == "comparison" and document["previous"] is None
    member = document["comparison"]
    assert (member["against"], member["source"], member["regressed"]) == ("baseline", "b.json",
                                                                          True)
    assert member["primary"] == {"metric": "ndcg@1", "before": 1.0, "after": 0.0, "delta": -1.0,
                                 "ci95": [-1.0, -1.0], "p": comparison.primary.p, "pairs": 8}
    assert gated.full_json()["comparison"] == member


def test_a_query_judged_only_grade_0_is_not_paired() -> None:
    """Grade 0 means judged not relevant: such a query is left out of the aggregates, so the
    paired gate must leave it out too (else its 0 would dilute every mean delta)."""
    before, after = make_run([1.0, 1.0]), make_run([0.0, 1.0])
    for run in (before, after):
        run["per_query"][0]["expected"] = [{"path": "a.md", "heading": None, "grade": 0}]
    delta = paired_delta(before, after, "ndcg@1")
    assert (delta.pairs, delta.before, delta.after, delta.delta) == (1, 1.0, 1.0, 0.0)
