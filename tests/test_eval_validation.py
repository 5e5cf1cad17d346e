"""Numbers read back from baselines and the eval history are checked, and a golden file that
judges nothing measures nothing (issue 29 item 6; eval.md §1, §7, §11, §13).

A stored metric outside [0, 1] (1e308 made the gate's CI `[-inf, 0]` and passed) refuses a
baseline like a damaged one (exit 2) and sets a history aside like a damaged one. Uses the tiny
model of `test_index.py` for the end-to-end runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from groove_cli.evaluate.ablate import ONE_QUERY
from groove_cli.evaluate.baseline import BaselineError, load_baseline, save_baseline
from groove_cli.evaluate.history import HISTORY_NAME, history_problem
from tests.test_data_safety import groove, indexed_sample, ok  # noqa: F401  (the fixture)
from tests.test_eval_baseline import make_run
from tests.test_index import Groove, tiny_model  # noqa: F401  (the session fixture)

BAD_VALUES = [1e308, -5, 1.5, float("nan"), float("inf")]


def _set(document: dict[str, Any], where: str, value: object) -> None:
    """Set the member at the dotted path `where` (list positions as numbers)."""
    *parents, last = where.split(".")
    node: Any = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[last] = value


@pytest.mark.parametrize("value", BAD_VALUES, ids=str)
@pytest.mark.parametrize("where", ["per_query.1.metrics.ndcg_at_k.1",
                                   "per_query.0.metrics.reciprocal_rank",
                                   "aggregate.ndcg_at_k.1", "aggregate.mrr"])
def test_a_baseline_metric_outside_0_to_1_is_refused_as_damaged(tmp_path: Path, where: str,
                                                                value: float) -> None:
    path = tmp_path / "b.json"
    save_baseline(path, make_run([1.0, 0.5]), "1")
    document = json.loads(path.read_text(encoding="utf-8"))
    _set(document, where, value)
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(BaselineError) as caught:
        load_baseline(path, "ndcg@1")
    assert caught.value.exit_code == 2
    assert caught.value.message.startswith(f"baseline {path} is damaged: ")
    assert "not a number from 0 to 1" in caught.value.message


@pytest.mark.parametrize("where", ["per_query.0.metrics.ndcg_at_k.1", "aggregate.recall_at_k.1"])
def test_a_history_metric_outside_0_to_1_makes_the_history_damaged(tmp_path: Path,
                                                                  where: str) -> None:
    document = {"runs": [make_run([1.0, 0.5])]}
    _set(document["runs"][0], where, 1e308)
    (tmp_path / HISTORY_NAME).write_text(json.dumps(document), encoding="utf-8")
    problem = history_problem(tmp_path / HISTORY_NAME)
    assert problem is not None and "not a number from 0 to 1" in problem


# --------------------------------------------------------------------------- end to end

GOLDEN = [
    {"id": "bird", "query": "bird flies", "expected": [{"path": "b1.md"}]},
    {"id": "fish", "query": "fish sea", "expected": [{"path": "a3.md"}]},
]


def _golden(groove: Groove, queries: list[dict[str, Any]]) -> Path:  # noqa: F811
    path = groove.work / "golden.yml"
    path.write_text(yaml.safe_dump({"queries": queries}, sort_keys=False), encoding="utf-8")
    return path


def _eval(groove: Groove, golden: Path, *args: str) -> Any:  # noqa: F811
    return groove.run("eval", "--kb-path", str(groove.kb), "--golden", str(golden),
                      "--no-history", *args)


def test_the_gate_refuses_a_baseline_with_an_impossible_metric(groove: Groove) -> None:  # noqa: F811
    indexed_sample(groove)
    golden = _golden(groove, GOLDEN)
    baseline = groove.work / "baseline.json"
    ok(_eval(groove, golden, "--save-baseline", str(baseline)))
    document = json.loads(baseline.read_text(encoding="utf-8"))
    for entry in document["per_query"]:
        entry["metrics"]["ndcg_at_k"]["10"] = 1e308
    baseline.write_text(json.dumps(document), encoding="utf-8")
    result = _eval(groove, golden, "--baseline", str(baseline), "--fail-on-regression")
    assert (result.exit_code, result.stdout) == (2, "")
    errors = [line for line in result.stderr.splitlines() if line.startswith("groove: error:")]
    assert errors == [f"groove: error: baseline {baseline} is damaged: per_query[0].metrics."
                      "ndcg_at_k.10 is missing or not a number from 0 to 1"]


@pytest.mark.parametrize("expected", [[], [{"path": "b1.md", "grade": 0}]], ids=["empty", "grade-0"])
@pytest.mark.parametrize("ablate", [False, True], ids=["eval", "ablate"])
def test_a_golden_file_that_judges_nothing_is_refused(groove: Groove, ablate: bool,  # noqa: F811
                                                      expected: list[dict[str, Any]]) -> None:
    indexed_sample(groove)
    golden = _golden(groove, [{**q, "expected": expected} for q in GOLDEN])
    result = _eval(groove, golden, *(["--ablate"] if ablate else []))
    assert (result.exit_code, result.stdout) == (1, "")
    assert (f"groove: error: golden file {golden} has no judged query: every expected list is "
            "empty or holds only grade 0, so there is nothing to measure") in result.stderr


def test_ablate_over_one_judged_query_warns_that_its_intervals_say_nothing(
        groove: Groove) -> None:  # noqa: F811
    indexed_sample(groove)
    one = _golden(groove, [GOLDEN[0], {**GOLDEN[1], "expected": []}])
    result = ok(_eval(groove, one, "--ablate", "--format", "json"))
    assert f"groove: warning: {ONE_QUERY}" in result.stderr.replace("\n", " ")
    assert json.loads(result.stdout)["query_count"] == 1
    two = ok(_eval(groove, _golden(groove, GOLDEN), "--ablate", "--format", "json"))
    assert "warning" not in two.stderr
