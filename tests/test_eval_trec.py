"""TREC run/qrels/topics files and graded relevance (issue 17 §2, part 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from groove_cli.errors import GoldenError
from groove_cli.evaluate.golden import Expected
from groove_cli.evaluate.metrics import HitRecord, score_query
from groove_cli.evaluate.trec import (
    decode_docno,
    encode_docno,
    read_qrels,
    read_run,
    read_topics,
    run_lines,
)
from tests import test_eval_cli as e2e
from tests.test_eval_baseline import make_run
from tests.test_eval_cli import Sample, run_eval

warm = e2e.warm
_cli_env = e2e._cli_env


def hit(rank: int, path: str, heading: str | None = None) -> HitRecord:
    return HitRecord(rank=rank, path=path, heading=heading, score=1.0 / rank)


@pytest.mark.parametrize(("path", "heading"), [
    ("a.md", None), ("dir/my notes.md", "Set up #2"), ("100%~x.md", "tab\there"),
    ("incidents/2025-06-バックアップ失敗.md", "原因 と 対策")])
def test_docno_is_one_token_and_decodes_back(path: str, heading: str | None) -> None:
    docno = encode_docno(path, heading)
    assert len(docno.split()) == 1 and docno == docno.strip()
    assert decode_docno(docno) == (path, heading)
    assert decode_docno(docno + "~3") == (path, heading)


def test_graded_ndcg_uses_the_grade_as_gain() -> None:
    expected = [Expected("a.md", None, 3), Expected("b.md", None, 1)]
    metrics = score_query(expected, [hit(1, "b.md"), hit(2, "a.md")], [2])
    # DCG = 1/log2(2) + 3/log2(3) = 2.892789; IDCG = 3/log2(2) + 1/log2(3) = 3.630930
    assert metrics.at_k["ndcg"][2] == pytest.approx(0.796708, abs=1e-6)
    assert metrics.at_k["recall"][2] == 1.0 and metrics.whole["mrr"] == 1.0
    # a grade-0 entry is judged not relevant: it counts in no metric
    zero = score_query([Expected("a.md", None, 0)], [hit(1, "a.md")], [1])
    assert (zero.at_k["recall"][1], zero.whole["mrr"], zero.at_k["ndcg"][1]) == (0.0, 0.0, 0.0)
    # the higher grade is consumed first when one hit matches two entries
    both = [Expected("a.md", None, 1), Expected("a.md", "Setup", 2)]
    assert score_query(both, [hit(1, "a.md", "Setup")], [1]).at_k["ndcg"][1] == 1.0


def test_run_lines_keep_groove_order_for_score_sorting_tools() -> None:
    run = make_run([1.0])
    run["per_query"][0]["id"] = "two words"
    run["per_query"][0]["top_k"] = [
        {"rank": 1, "path": "a.md", "heading": "H", "score": 0.5},
        {"rank": 2, "path": "a.md", "heading": "H", "score": 0.5},
        {"rank": 3, "path": "b c.md", "heading": None, "score": 0.7}]
    lines = run_lines(run)
    assert [line.split()[:4] for line in lines] == [
        ["two%20words", "Q0", "a.md#H", "1"], ["two%20words", "Q0", "a.md#H~2", "2"],
        ["two%20words", "Q0", "b%20c.md", "3"]]
    scores = [float(line.split()[4]) for line in lines]
    assert scores[0] == 0.5 and scores[0] > scores[1] > scores[2]


def test_topics_and_qrels_readers(tmp_path: Path) -> None:
    tsv = tmp_path / "topics.tsv"
    tsv.write_text("q1\tbackup retention\nq2\t  restore a table \n", encoding="utf-8")
    assert read_topics(tsv) == [("q1", "backup retention"), ("q2", "restore a table")]
    sgml = tmp_path / "topics.txt"
    sgml.write_text("<top>\n<num> Number: 401\n<title> foreign minorities\n<desc> x\n</top>\n",
                    encoding="utf-8")
    assert read_topics(sgml) == [("401", "foreign minorities")]
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 a.md#Setup 2\nq1 0 b.md 0\n", encoding="utf-8")
    assert read_qrels(qrels) == {"q1": [Expected("a.md", "Setup", 2), Expected("b.md", None, 0)]}
    qrels.write_text("q1 0 a.md\n", encoding="utf-8")
    with pytest.raises(GoldenError, match="line 1: expected `qid iteration docno relevance`"):
        read_qrels(qrels)
    run = tmp_path / "run"
    run.write_text("q1 Q0 a.md 1 0.5 groove\nq1 Q0 b.md 2 high groove\n", encoding="utf-8")
    with pytest.raises(GoldenError, match=r"run, line 2: expected `qid Q0 docno rank score tag`"):
        read_run(run)


def to_trec(golden: Path, qrels: Path, topics: Path) -> None:
    """Write the YAML golden file as qrels + a TSV topics file (grade 1 for every entry)."""
    document = yaml.safe_load(golden.read_text(encoding="utf-8"))
    qlines, tlines = [], []
    for q in document["queries"]:
        qid = q.get("id") or q["query"][:32]
        assert " " not in qid and "\t" not in q["query"]
        tlines.append(f"{qid}\t{q['query']}")
        qlines += [f"{qid} 0 {encode_docno(e['path'], e.get('heading'))} {e.get('grade', 1)}"
                   for e in q["expected"]]
    qrels.write_text("\n".join(qlines) + "\n", encoding="utf-8")
    topics.write_text("\n".join(tlines) + "\n", encoding="utf-8")


def test_trec_run_round_trips_and_qrels_golden_scores_the_same(warm: Sample,
                                                               tmp_path: Path) -> None:
    run_file = tmp_path / "run.txt"
    result = run_eval(warm, "--no-history", "--format", "json", "--trec-run", str(run_file))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    hits = read_run(run_file)
    assert list(hits) == [q["id"] for q in report["per_query"]]
    for entry in report["per_query"]:
        expected = [Expected(e["path"], e["heading"], e.get("grade", 1))
                    for e in entry["expected"]]
        rescored = score_query(expected, hits[entry["id"]], [1, 5, 10])
        assert {str(k): v for k, v in rescored.at_k["recall"].items()} == \
            entry["metrics"]["recall_at_k"]
        assert {str(k): v for k, v in rescored.at_k["ndcg"].items()} == entry["metrics"]["ndcg_at_k"]
        assert rescored.whole["mrr"] == entry["metrics"]["reciprocal_rank"]

    qrels, topics = tmp_path / "golden.qrels", tmp_path / "topics.tsv"
    to_trec(warm.kb / ".groove-eval.yml", qrels, topics)
    from_trec = run_eval(warm, "--no-history", "--format", "json", "--golden", str(qrels),
                         "--topics", str(topics))
    assert from_trec.exit_code == 0, from_trec.output
    trec_report = json.loads(from_trec.stdout)
    assert [(q["id"], q["metrics"]) for q in trec_report["per_query"]] == \
        [(q["id"], q["metrics"]) for q in report["per_query"]]
    assert trec_report["aggregate"] == report["aggregate"]
    judged = read_qrels(qrels)
    for entry in report["per_query"]:
        rescored = score_query(judged.get(entry["id"], []), hits[entry["id"]], [10])
        assert rescored.at_k["ndcg"][10] == entry["metrics"]["ndcg_at_k"]["10"]


def test_topics_without_golden_is_a_usage_error(warm: Sample, tmp_path: Path) -> None:
    result = run_eval(warm, "--no-history", "--topics", str(tmp_path / "t.tsv"))
    assert result.exit_code == 2
    assert "--topics needs --golden QRELS" in result.stderr


def test_golden_grade_is_validated_and_recorded(warm: Sample, workdir: Path) -> None:
    (workdir / "g.yml").write_text(
        "queries:\n  - id: pitr\n    query: restore the database to an exact moment\n"
        "    expected:\n      - path: operations/backups/database-backups.md\n        grade: 3\n"
        "      - path: x.md\n        grade: 0\n", encoding="utf-8")
    report = e2e.eval_json(warm, "--no-history", "--golden", "g.yml")
    assert report["per_query"][0]["expected"] == [
        {"path": "operations/backups/database-backups.md", "heading": None, "grade": 3},
        {"path": "x.md", "heading": None, "grade": 0}]
    assert report["per_query"][0]["metrics"]["recall_at_k"]["10"] == 1.0  # x.md is not counted
    (workdir / "bad.yml").write_text(
        "queries:\n  - query: backup\n    expected:\n      - path: a.md\n        grade: 4\n",
        encoding="utf-8")
    result = run_eval(warm, "--no-history", "--golden", "bad.yml")
    assert result.exit_code == 1
    assert "queries[0].expected[0].grade: expected an integer from 0 to 3" in result.stderr
