"""tune in CI (issue 17 §5): Markdown report, step summary, warning on repeated golden queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from groove_cli.evaluate.findings import normalize
from groove_cli.evaluate.golden import GoldenQuery, GoldenSet, repeated_queries_warning
from tests import test_eval_cli as e2e
from tests.test_eval_cli import Sample, invoke, run_eval

warm = e2e.warm
_cli_env = e2e._cli_env


def golden_of(*texts: str) -> GoldenSet:
    queries = tuple(GoldenQuery(index=i, id=f"q{i}", query=t, expected=())
                    for i, t in enumerate(texts))
    return GoldenSet(path=Path("g.yml"), queries=queries, golden_hash="", has_defaults=False)


def test_repeated_queries_warning_names_the_first_copy() -> None:
    assert repeated_queries_warning(golden_of("a b", "c"), normalize) is None
    text = repeated_queries_warning(golden_of("Retry  budget", "other", "retry budget",
                                              "OTHER"), normalize)
    assert text == (
        'golden: 2 of 4 queries repeat an earlier query (first: "q2" at queries[2] repeats '
        '"q0" at queries[0]); each copy counts again in every mean, which narrows the '
        "confidence intervals and lets tune adopt noise; remove the copies")


def doubled_golden(sample: Sample, workdir: Path) -> Path:
    """The sample golden file with every query copied once under a new id."""
    document = yaml.safe_load((sample.kb / ".groove-eval.yml").read_text(encoding="utf-8"))
    copies = [{**q, "id": f"copy-{q.get('id') or q['query'][:32]}"} for q in document["queries"]]
    document["queries"] += copies
    document.pop("defaults", None)
    path = workdir / "doubled.yml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    return path


def test_tune_markdown_step_summary_and_repeat_warning(warm: Sample, workdir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    summary = workdir / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = invoke(["--db", str(warm.db), "tune", "--kb-path", str(warm.kb),
                     "--format", "markdown"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "## groove tune — fusion-method space"  # score fusion in use
    assert any(line.startswith("**Verdict: ") for line in lines)
    assert "| nested leave-one-query-out CV | value | adoption needs |" in lines
    assert summary.read_text(encoding="utf-8") == result.stdout + "\n"
    assert "repeat an earlier query" not in result.stderr

    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    doubled = doubled_golden(warm, workdir)
    tuned = invoke(["--db", str(warm.db), "tune", "--kb-path", str(warm.kb), "--golden",
                    str(doubled), "--format", "json"])
    assert tuned.exit_code == 0, tuned.output
    json.loads(tuned.stdout)
    warning = [line for line in tuned.stderr.splitlines() if "repeat an earlier query" in line]
    assert len(warning) == 1 and warning[0].startswith("groove: warning: golden: 66 of 132 ")
    evaluated = run_eval(warm, "--golden", str(doubled), "--no-history")
    assert "groove: warning: golden: 66 of 132 queries repeat" in evaluated.stderr


def test_tune_drops_grade_zero_entries(warm: Sample, workdir: Path) -> None:
    document = yaml.safe_load((warm.kb / ".groove-eval.yml").read_text(encoding="utf-8"))
    first = document["queries"][0]
    first["expected"] = [{**e, "grade": 0} for e in first["expected"]]
    document["queries"][1]["expected"][0]["grade"] = 3
    path = workdir / "graded.yml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    result = invoke(["--db", str(warm.db), "tune", "--kb-path", str(warm.kb), "--golden",
                     str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert (f"groove: warning: golden query {first['id']} has no expected entries; tune skips it"
            in result.stderr.splitlines())
    assert json.loads(result.stdout)["query_count"] == 65
