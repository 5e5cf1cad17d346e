"""`groove eval --format junit|markdown` and the GitHub step summary (issue 17 §2)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from groove_cli.render.junit import GateCheck, render_junit
from groove_cli.render.markdown import cell, table
from tests import test_eval_cli as e2e
from tests.test_eval_baseline import make_run
from tests.test_eval_cli import Sample, run_eval

warm = e2e.warm
sample = e2e.sample
_cli_env = e2e._cli_env

CASE_CHILDREN = {"failure", "skipped", "error", "system-out", "system-err"}


def check_junit_shape(root: ET.Element) -> ET.Element:
    """The common JUnit schema: testsuites > testsuite > (properties, testcase*), counts agree."""
    assert root.tag == "testsuites"
    suites = list(root)
    assert [s.tag for s in suites] == ["testsuite"]
    suite = suites[0]
    assert suite.get("name")
    children = list(suite)
    assert children[0].tag == "properties"
    assert all(p.tag == "property" and p.get("name") and p.get("value") is not None
               for p in children[0])
    cases = children[1:]
    assert all(c.tag == "testcase" and c.get("name") and c.get("classname") for c in cases)
    for case in cases:
        assert {child.tag for child in case} <= CASE_CHILDREN
        assert sum(child.tag in ("failure", "skipped") for child in case) <= 1
    failures = sum(1 for c in cases if c.find("failure") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    for element in (root, suite):
        assert element.get("tests") == str(len(cases))
        assert element.get("failures") == str(failures)
        assert element.get("skipped") == str(skipped)
        assert element.get("errors") == "0"
    return suite


def test_junit_has_one_testcase_per_golden_query(warm: Sample) -> None:
    report = e2e.eval_json(warm, "--no-history", "--k", "1,3")
    result = run_eval(warm, "--no-history", "--format", "junit", "--k", "1,3")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    suite = check_junit_shape(ET.fromstring(result.stdout))
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [q["id"] for q in report["per_query"]]
    assert {c.get("classname") for c in cases} == {"groove.eval.query"}
    misses = [q["id"] for q in report["per_query"] if q["metrics"]["recall_at_k"]["3"] == 0.0]
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == misses and failed  # the sample KB has misses at k = 3
    failure = cases[[c.get("name") for c in cases].index(failed[0])].find("failure")
    assert failure is not None and failure.get("message") == "no expected note in the top 3"
    props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    agg = report["aggregate"]
    assert float(props["ndcg@3"] or "nan") == agg["ndcg_at_k"]["3"]
    assert props["mrr.ci95"] == f"{agg['ci95']['mrr'][0]!r},{agg['ci95']['mrr'][1]!r}"
    assert props["query_count"] == "66"
    assert props["fingerprint.reranker"] == "null"


def test_junit_gate_testcase_fails_on_a_regression(sample: Sample, tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    assert run_eval(sample, "--no-history", "--save-baseline", str(baseline)).exit_code == 0
    result = run_eval(sample, "--no-history", "--format", "junit", "--baseline", str(baseline),
                      "--fail-on-regression", "--mode", "fts", "--min-score", "0.9")
    assert result.exit_code == 1
    suite = check_junit_shape(ET.fromstring(result.stdout))
    gate = [c for c in suite.findall("testcase") if c.get("classname") == "groove.eval.gate"]
    assert len(gate) == 1
    assert gate[0].get("name", "").startswith(f"nDCG@10 against baseline {baseline} (run of ")
    failure = gate[0].find("failure")
    assert failure is not None and "retrieval.mode (hybrid → fts)" in failure.get("message", "")


def test_junit_unjudged_query_is_skipped_and_gate_checks_render() -> None:
    run = make_run([1.0, 0.0])
    run["per_query"][1]["expected"] = []
    xml = render_junit(run, suite_name="s", checks=[
        GateCheck("regression gate", skipped="nothing to compare"), GateCheck("g", failure="x")])
    suite = check_junit_shape(ET.fromstring(xml))
    cases = suite.findall("testcase")
    assert [(c.get("name"), [ch.tag for ch in c]) for c in cases] == [
        ("q0", ["system-out"]), ("q1", ["skipped"]), ("regression gate", ["skipped"]),
        ("g", ["failure"])]
    assert suite.get("failures") == "1" and suite.get("skipped") == "2"


def test_markdown_report_and_step_summary(sample: Sample, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    baseline = tmp_path / "b.json"
    assert run_eval(sample, "--save-baseline", str(baseline)).exit_code == 0
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run_eval(sample, "--format", "json", "--baseline", str(baseline), "--mode", "fts")
    assert result.exit_code == 0
    report = json.loads(result.stdout)  # stdout stays JSON
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("earlier step\n## groove eval — .groove-eval.yml\n")
    agg = report["aggregate"]
    lo, hi = agg["ci95"]["mrr"]
    delta = report["diff"]
    assert delta is None  # a changed setting: no compatible history run
    assert f"| MRR | {agg['mrr']:.3f} | [{lo:.3f}, {hi:.3f}] |" in written.splitlines()
    primary = report["comparison"]["primary"]
    assert (f"| nDCG@10 | {primary['before']:.3f} | {primary['after']:.3f} | "
            f"{primary['delta']:+.3f} |") in written
    assert "| `retrieval.mode` | hybrid | fts |" in written.splitlines()
    assert "**Gate:** " in written

    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    markdown = run_eval(sample, "--format", "markdown")
    assert markdown.exit_code == 0
    lines = markdown.stdout.splitlines()
    assert lines[0] == "## groove eval — .groove-eval.yml"
    # the default-settings run compares with the first run in the history: a Δ column
    header = next(line for line in lines if line.startswith("| metric | value | 95% CI |"))
    assert header.startswith("| metric | value | 95% CI | Δ vs run of ")
    assert "| MRR | " in markdown.stdout and "| +0.000 |" in markdown.stdout


def test_markdown_table_escapes_cells() -> None:
    assert cell("a|b\nc") == "a\\|b c"
    assert table(["x", "y"], [[1, "p|q"]], ["l", "r"]) == [
        "| x | y |", "| --- | ---: |", "| 1 | p\\|q |"]


def test_junit_skips_a_query_judged_only_grade_0() -> None:
    run = make_run([0.0, 1.0])
    run["per_query"][0]["expected"] = [{"path": "a.md", "heading": None, "grade": 0}]
    root = ET.fromstring(render_junit(run, suite_name="s"))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["q0"].find("skipped") is not None and cases["q0"].find("failure") is None
    assert cases["q1"].find("skipped") is None and cases["q1"].find("failure") is None
