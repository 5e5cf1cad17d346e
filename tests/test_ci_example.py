"""examples/github-actions.yml parses and its groove commands run on the sample KB (issue 17 §6)."""

from __future__ import annotations

import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests import test_eval_cli as e2e
from tests.test_eval_cli import Sample, invoke

warm = e2e.warm
sample = e2e.sample
_cli_env = e2e._cli_env

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "github-actions.yml"


def workflow_commands() -> tuple[list[str], list[str]]:
    """(the commented baseline command, every `run:` command that calls groove, in job order)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    setup = [line.split("#", 1)[1].strip() for line in text.splitlines()
             if line.startswith("#   groove ")]
    document = yaml.safe_load(text)
    triggers = document.get("on", document.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) == {"pull_request", "schedule", "workflow_dispatch"}
    runs = []
    for job in document["jobs"].values():
        assert job["runs-on"] == "ubuntu-latest"
        for step in job["steps"]:
            assert "uses" in step or "run" in step
            command = step.get("run", "")
            if command.startswith("groove "):
                runs.append(command)
    return setup, runs


def run_command(command: str, sample: Sample, workdir: Path) -> str:
    """Run one workflow command in-process: `golden` is the sample KB, `> file` is honoured."""
    words = shlex.split(command)
    target = None
    if ">" in words:
        target = words[words.index(">") + 1]
        words = words[: words.index(">")]
    assert words[0] == "groove"
    args = [str(sample.kb) if w == "golden" else
            str(sample.kb / w.removeprefix("golden/")) if w.startswith("golden/") else w
            for w in words[1:]]
    result = invoke(["--db", str(sample.db), *args])
    assert result.exit_code == 0, (command, result.output)
    if target is not None:
        (workdir / target).write_text(result.stdout, encoding="utf-8")
    return result.stdout


def test_workflow_commands_run_on_the_sample_kb(sample: Sample, workdir: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    setup, runs = workflow_commands()
    assert setup == ["groove eval --kb-path golden --save-baseline golden/eval-baseline.json "
                     "--no-history"]
    assert [r.split()[1] for r in runs] == ["index", "eval", "eval", "index", "tune", "eval"]
    summary = workdir / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run_command(setup[0], sample, workdir)
    assert (sample.kb / "eval-baseline.json").is_file()
    for command in runs:
        run_command(command, sample, workdir)
    junit = ET.parse(workdir / "eval-junit.xml").getroot()
    cases = list(junit.iter("testcase"))
    queries = [c for c in cases if c.get("classname") == "groove.eval.query"]
    gate = [c for c in cases if c.get("classname") == "groove.eval.gate"]
    failing = [c for c in cases if c.find("failure") is not None]
    # one testcase per golden query, and the gate's, which passes; the sample set keeps hard
    # cross-lingual queries (an English question answered by one heading of a Japanese note)
    # that may miss the top 10
    assert junit.tag == "testsuites" and len(queries) == 66 and len(gate) == 1
    assert gate[0].find("failure") is None
    assert junit.get("failures") == str(len(failing)) and len(failing) <= 3
    assert (workdir / "eval.run").read_text(encoding="utf-8").count(" Q0 ") > 66
    written = summary.read_text(encoding="utf-8")
    for title in ("## groove eval — .groove-eval.yml", "## groove tune — fusion-method space",
                  "## groove eval --ablate"):
        assert title in written
    assert "**Gate:** ✅ pass" in written
