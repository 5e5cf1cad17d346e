"""The public Python API (`groove_cli.open` → `Index`): the README example, thread safety,
warnings returned as data, and the same JSON the CLI prints."""

from __future__ import annotations

import contextlib
import io
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import groove_cli
from groove_cli.api import setting_key
from groove_cli.cli import app
from groove_cli.errors import UsageError

REPO = Path(__file__).resolve().parent.parent
QUERIES = (
    "how do retry budgets stop retry storms?",
    "障害が起きたときの連絡手順",
    "retry budget",
    "database backup restore drill",
    "rate limiting tokens per second",
    "キャッシュの無効化",
)



def readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API"):]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def test_the_readme_example_runs(sample_kb: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(readme_example(), "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert len(lines) == 5  # three hits, the warnings line, the fts line
    assert all(re.match(r"\S+\.md:\d+ ", line) for line in lines[:3])
    assert lines[3] == "() True"
    count, chunks = lines[4].split()
    assert 1 <= int(count) <= 5 and int(chunks) > 0


def test_results_json_is_what_the_cli_prints(sample_kb: Path) -> None:
    with groove_cli.open(sample_kb) as kb:
        document = kb.search("retry budget", limit=3).to_json()
    printed = CliRunner().invoke(app, ["search", "--kb-path", str(sample_kb), "--limit", "3",
                                       "retry budget"])
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout) == document


def test_results_are_public_hit_records_in_rank_order(sample_kb: Path) -> None:
    with groove_cli.open(sample_kb) as kb:
        results = kb.search("retry budget", limit=3)
    hits = list(results)
    assert len(results) == len(hits) == 3 and hits == list(results.hits)
    assert all(isinstance(hit, groove_cli.Hit) for hit in hits)
    assert [hit.to_json() for hit in hits] == results.to_json()["results"]
    assert hits[0].abs_path == str(sample_kb / hits[0].path)
    assert hits[0].explain is not None and "fused_rank" in hits[0].explain
    assert not hasattr(hits[0], "chunk")  # the engine's records stay inside
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_concurrent_searches_get_the_sequential_hits(sample_kb: Path) -> None:
    """Two threads searching one Index at once get exactly what one thread gets in turn."""
    with groove_cli.open(sample_kb) as kb:
        sequential = {q: [(h.path, h.line_start, h.score) for h in kb.search(q).hits]
                      for q in QUERIES}

        def run(query: str) -> tuple[str, list[tuple[str, int | None, float]]]:
            return query, [(h.path, h.line_start, h.score) for h in kb.search(query).hits]

        with ThreadPoolExecutor(2) as pool:
            concurrent = list(pool.map(run, QUERIES * 4))
    assert all(hits == sequential[query] for query, hits in concurrent)
    assert all(sequential[q] for q in QUERIES)


def test_warnings_come_back_on_the_result_not_stderr(sample_kb: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Per-call warnings and notes (an MMR setting with MMR off, more hits asked than the cap)
    are returned with the result of the call that caused them; nothing goes to stderr."""
    with groove_cli.open(sample_kb) as kb:
        quiet = kb.search("retry budget", mode="fts")
        capped = kb.search("retry budget", mode="fts", limit=5000, mmr_lambda=0.5)
    assert (quiet.warnings, quiet.notes) == ((), ())
    assert capped.notes == ("--limit 5000 clamped to 1000",)
    assert len(capped.warnings) == 1 and "effective MMR is off" in capped.warnings[0]
    assert capsys.readouterr().err == ""


def test_overrides_by_key_or_last_part() -> None:
    assert setting_key("rrf_k") == "search.fusion.rrf_k"
    assert setting_key("search.fusion.rrf_k") == "search.fusion.rrf_k"
    with pytest.raises(UsageError, match="unknown setting 'rrf'"):
        setting_key("rrf")


def test_bad_values_are_usage_errors(sample_kb: Path) -> None:
    with groove_cli.open(sample_kb) as kb:
        with pytest.raises(UsageError, match="rrf_k 0 is out of range"):
            kb.search("retry", rrf_k=0)
        with pytest.raises(UsageError, match="limit 0"):
            kb.search("retry", limit=0)
        with pytest.raises(groove_cli.GrooveError):
            kb.search("   ")


def test_evaluate_returns_the_report_with_its_messages(sample_kb: Path) -> None:
    with groove_cli.open(sample_kb) as kb:
        report = kb.evaluate(k=[1, 5], history=False)
    aggregate = report.to_json()["aggregate"]
    assert 0.0 < aggregate["ndcg_at_k"]["5"] <= 1.0 and aggregate["query_count"] == 66
    assert not (sample_kb / ".groove-eval-history.json").exists()


def test_a_search_decides_its_legs_once(sample_kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Searcher decides which legs a query runs once and hands that down the pipeline
    (the door, the Searcher and the pipeline used to decide it each)."""
    from groove_cli.retrieve import legs as legs_module
    from groove_cli.retrieve import pipeline, searcher

    calls: list[str] = []
    real = legs_module.legs_to_run

    def counted(query: Any, params: Any) -> Any:
        calls.append(query.positive_text)
        return real(query, params)

    for module in (legs_module, pipeline, searcher):
        monkeypatch.setattr(module, "legs_to_run", counted)
    with groove_cli.open(sample_kb) as kb:
        kb.search("retry budget")
        assert calls == ["retry budget"]
        calls.clear()
        kb.search("retry budget", files=True, limit=3)  # several rounds, one decision
        assert calls == ["retry budget"]
