"""Eval history file, compared run, diff and regression rules (eval.md §7, §8)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groove_cli import messages
from groove_cli.errors import GrooveError
from groove_cli.evaluate.history import (
    CONFIG_CHANGED,
    GOLDEN_CHANGED,
    HISTORY_NAME,
    LEGACY_HISTORY,
    MAX_HISTORY_BYTES,
    NO_COMPARED_NOTE,
    aggregate_regressed,
    corpus_change_text,
    corpus_changed,
    diff_aggregates,
    find_compared,
    incompatibility_header,
    is_miss,
    load_history,
    query_regressions,
    regression_error_text,
    save_history,
)

FP = {"model": "m", "reranker": None, "limit": 10, "k_values": [1, 5, 10], "golden_hash": "g1",
      "metric_version": 1, "fts_query_version": 1}


@pytest.fixture
def stderr_lines() -> Iterator[list[str]]:
    lines: list[str] = []
    messages.set_sink(lines.append)
    yield lines
    messages.set_sink(None)


def make_run(label: str, fingerprint: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    run: dict[str, Any] = {
        "timestamp": f"2026-08-21T10:00:00.{label:0>6}Z",
        "fingerprint": fingerprint or FP,
        "corpus": {"documents": 2, "chunks": 3, "digest": "d"},
        "per_query": [],
        "aggregate": {"recall_at_k": {"1": 0.5}, "mrr": 0.5, "ndcg_at_k": {"1": 0.5},
                      "query_count": 2, "ci95": {}},
    }
    run.update(extra)
    return run


def test_history_name_and_cap() -> None:
    assert HISTORY_NAME == "eval-history.json"
    assert LEGACY_HISTORY == ".groove-eval-history.json"
    assert MAX_HISTORY_BYTES == 64 * 1024 * 1024


def test_no_file_means_empty_history(tmp_path: Path) -> None:
    assert load_history(tmp_path / HISTORY_NAME) == []


def test_save_writes_pretty_json_newest_first_and_rotates(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = []
    for label in ("1", "2", "3"):
        runs = save_history(tmp_path / HISTORY_NAME, runs, make_run(label, note="é"), history_size=2)
    assert [r["timestamp"] for r in runs] == ["2026-08-21T10:00:00.000003Z",
                                              "2026-08-21T10:00:00.000002Z"]
    text = (tmp_path / HISTORY_NAME).read_text(encoding="utf-8")
    assert text == json.dumps({"runs": runs}, indent=2, ensure_ascii=False) + "\n"
    assert '"note": "é"' in text
    assert load_history(tmp_path / HISTORY_NAME) == runs
    assert not (tmp_path / (HISTORY_NAME + ".tmp")).exists()


def test_write_is_atomic_when_the_rename_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_history(tmp_path / HISTORY_NAME, [], make_run("1"), history_size=10)
    before = (tmp_path / HISTORY_NAME).read_bytes()
    seen: list[bytes] = []

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append(Path(src).read_bytes())  # the new content is complete in the .tmp file
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(GrooveError) as caught:
        path = tmp_path / HISTORY_NAME
        save_history(path, load_history(path), make_run("2"), history_size=10)
    assert caught.value.message == (
        f"cannot write eval history {tmp_path / HISTORY_NAME}: No space left on device"
    )
    assert (tmp_path / HISTORY_NAME).read_bytes() == before
    assert json.loads(seen[0])["runs"][0]["timestamp"].endswith("000002Z")
    assert not (tmp_path / (HISTORY_NAME + ".tmp")).exists()


def test_stale_tmp_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    (tmp_path / (HISTORY_NAME + ".tmp")).symlink_to(victim)
    save_history(tmp_path / HISTORY_NAME, [], make_run("1"), history_size=10)
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert load_history(tmp_path / HISTORY_NAME)[0]["timestamp"].endswith("000001Z")


def test_size_cap_drops_the_oldest_runs(tmp_path: Path, stderr_lines: list[str]) -> None:
    runs = [make_run(str(i), pad="x" * 400) for i in range(5, 0, -1)]  # newest first
    one = len((json.dumps({"runs": runs[:1]}, indent=2, ensure_ascii=False) + "\n").encode())
    three = len((json.dumps({"runs": [make_run("6", pad="x" * 400), *runs[:2]]}, indent=2,
                            ensure_ascii=False) + "\n").encode())
    assert one < three
    saved = save_history(tmp_path / HISTORY_NAME, runs, make_run("6", pad="x" * 400), history_size=10,
                         max_bytes=three + 10)
    assert [r["timestamp"][-7:-1] for r in saved] == ["000006", "000005", "000004"]
    assert len((tmp_path / HISTORY_NAME).read_bytes()) == three
    assert stderr_lines == [
        f"groove: warning: eval history would exceed {three + 10} bytes; dropped the 3 oldest "
        "run(s)"
    ]


def test_single_run_over_the_cap_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(GrooveError) as caught:
        save_history(tmp_path / HISTORY_NAME, [], make_run("1", pad="x" * 2000), history_size=10,
                     max_bytes=1000)
    assert caught.value.message.startswith("this eval run alone takes ")
    assert caught.value.message.endswith(
        " bytes, over the 1000 bytes history cap; the history was not written"
    )
    assert not (tmp_path / HISTORY_NAME).exists()


@pytest.mark.parametrize("content", [b"{not json", b'{"runs": {}}', b"[]", b'{"runs": [1]}',
                                     b'{"runs": [{"timestamp": "t"}]}', b"\xff\xfe"])
def test_unparseable_history_is_kept_aside_with_a_warning(
    tmp_path: Path, stderr_lines: list[str], content: bytes
) -> None:
    path = tmp_path / HISTORY_NAME
    path.write_bytes(content)
    assert load_history(tmp_path / HISTORY_NAME) == []
    (backup,) = tmp_path.glob(HISTORY_NAME + ".corrupt-*")
    assert backup.read_bytes() == content
    assert not path.exists()
    assert len(stderr_lines) == 1
    assert stderr_lines[0].startswith(f"groove: warning: eval history {path} cannot be parsed (")
    assert stderr_lines[0].endswith(f"; kept it as {backup} and starting a new history")
    save_history(tmp_path / HISTORY_NAME, [], make_run("1"), history_size=10)  # a fresh start
    assert len(load_history(tmp_path / HISTORY_NAME)) == 1


def test_every_damaged_history_is_kept(tmp_path: Path, stderr_lines: list[str]) -> None:
    path = tmp_path / HISTORY_NAME
    for content in (b"{first damage", b"{second damage", b"{third damage"):
        path.write_bytes(content)
        assert load_history(tmp_path / HISTORY_NAME) == []
    kept = sorted(tmp_path.glob(HISTORY_NAME + ".corrupt-*"))
    assert [p.read_bytes() for p in kept] == [b"{first damage", b"{second damage", b"{third damage"]
    assert [line.rsplit("kept it as ", 1)[1] for line in stderr_lines] == [
        f"{p} and starting a new history" for p in kept]


def refused_message(path: Path) -> GrooveError:
    with pytest.raises(GrooveError) as caught:
        load_history(path)
    assert caught.value.hint is not None and "--no-history" in caught.value.hint
    return caught.value


def test_unreadable_history_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / HISTORY_NAME
    real = tmp_path / "real.json"
    real.write_text('{"runs": []}', encoding="utf-8")

    path.symlink_to(real)
    assert refused_message(tmp_path / HISTORY_NAME).message == (
        f"refusing to read eval history {path}: it is a symbolic link"
    )
    path.unlink()

    os.link(real, path)
    assert refused_message(tmp_path / HISTORY_NAME).message.startswith(
        f"refusing to read eval history {path}: it is a hard link"
    )
    path.unlink()

    path.mkdir()
    assert refused_message(tmp_path / HISTORY_NAME).message == (
        f"refusing to read eval history {path}: it is not a regular file"
    )
    path.rmdir()

    with open(path, "wb") as handle:  # sparse: no 64 MiB actually written
        handle.truncate(MAX_HISTORY_BYTES + 1)
    assert refused_message(tmp_path / HISTORY_NAME).message == (
        f"refusing to read eval history {path}: it is larger than 64 MiB"
    )
    assert not list(tmp_path.glob(HISTORY_NAME + ".corrupt-*"))  # errors never move the file


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores file modes")
def test_permission_error_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / HISTORY_NAME
    path.write_text('{"runs": []}', encoding="utf-8")
    path.chmod(0)
    try:
        assert refused_message(tmp_path / HISTORY_NAME).message == (
            f"cannot read eval history {path}: Permission denied"
        )
    finally:
        path.chmod(0o644)


def test_compared_run_is_the_newest_with_an_equal_fingerprint() -> None:
    other_config = {**FP, "limit": 20}
    runs = [make_run("3", other_config), make_run("2", FP), make_run("1", FP)]
    assert find_compared(runs, FP) is runs[1]
    assert find_compared(runs, {**FP, "k_values": (1, 5, 10)}) is runs[1]  # JSON equality
    assert find_compared(runs, {**FP, "golden_hash": "g2"}) is None
    assert find_compared([], FP) is None


def test_incompatibility_header_is_judged_against_the_newest_run() -> None:
    assert incompatibility_header([], FP) is None
    assert incompatibility_header([make_run("1", FP)], FP) is None
    golden_changed = [make_run("2", {**FP, "golden_hash": "g0"}), make_run("1", {**FP, "limit": 5})]
    assert incompatibility_header(golden_changed, FP) == GOLDEN_CHANGED
    config_changed = [make_run("2", {**FP, "limit": 5}), make_run("1", {**FP, "golden_hash": "g0"})]
    assert incompatibility_header(config_changed, FP) == CONFIG_CHANGED
    assert incompatibility_header([make_run("1", {**FP, "metric_version": 2})], FP) == CONFIG_CHANGED
    assert GOLDEN_CHANGED == "⚠️ golden changed since last run, diff disabled"
    assert CONFIG_CHANGED == "⚠️ config or metric version changed since last run, diff disabled"
    assert NO_COMPARED_NOTE == "no compatible previous run; nothing to compare against"


def agg(recall: dict[str, float], mrr: float, ndcg: dict[str, float]) -> dict[str, Any]:
    return {"recall_at_k": recall, "mrr": mrr, "ndcg_at_k": ndcg}


def test_diff_is_now_minus_previous() -> None:
    prev = agg({"1": 0.5, "5": 0.75}, 0.6, {"1": 0.5, "5": 0.7})
    now = agg({"1": 0.75, "5": 0.5}, 0.5, {"1": 0.75, "5": 0.7})
    assert diff_aggregates(prev, now) == {
        "recall_at_k": {"1": 0.75 - 0.5, "5": 0.5 - 0.75},
        "ndcg_at_k": {"1": 0.75 - 0.5, "5": 0.7 - 0.7},
        "mrr": 0.5 - 0.6,
    }


def test_aggregate_regression_rules() -> None:
    base = agg({"1": 0.5, "5": 0.8}, 0.6, {"1": 0.5, "5": 0.7})
    assert not aggregate_regressed(base, base, 0.05)
    assert aggregate_regressed(base, agg({"1": 0.4, "5": 0.8}, 0.6, {"1": 0.5, "5": 0.7}), 0.05)
    assert aggregate_regressed(base, agg({"1": 0.5, "5": 0.8}, 0.5, {"1": 0.5, "5": 0.7}), 0.05)
    assert aggregate_regressed(base, agg({"1": 0.5, "5": 0.8}, 0.6, {"1": 0.5, "5": 0.6}), 0.05)
    # Strict: a fall of exactly the threshold is not a regression (0.75 - 0.5 == 0.25 exactly).
    assert not aggregate_regressed(agg({"1": 0.75}, 0.5, {}), agg({"1": 0.5}, 0.5, {}), 0.25)
    assert aggregate_regressed(agg({"1": 0.75}, 0.5, {}), agg({"1": 0.5}, 0.5, {}), 0.2)
    # Improvements never regress; a k missing before counts as 0.0.
    assert not aggregate_regressed(base, agg({"1": 0.9, "5": 0.9, "10": 0.2}, 0.9,
                                             {"1": 0.9, "5": 0.9, "10": 0.1}), 0.05)
    # Non-finite values are skipped.
    assert not aggregate_regressed(agg({"1": math.nan}, math.inf, {}), agg({"1": 0.0}, 0.0, {}), 0.05)


def query_entry(qid: str, recall: float, rr: float, ndcg: float,
                expected: int = 1) -> dict[str, Any]:
    return {"id": qid, "query": qid, "expected": [{"path": "a.md", "heading": None}] * expected,
            "top_k": [], "metrics": {"recall_at_k": {"1": 0.0, "10": recall},
                                     "reciprocal_rank": rr, "ndcg_at_k": {"10": ndcg}}}


def test_query_regressions_and_misses() -> None:
    prev = {"per_query": [query_entry("q1", 1.0, 1.0, 1.0), query_entry("q2", 1.0, 0.5, 0.6),
                          query_entry("gone", 1.0, 1.0, 1.0)]}
    now = {"per_query": [query_entry("q1", 0.5, 1 / 3, 0.97), query_entry("q2", 1.0, 0.47, 0.6),
                         query_entry("new", 0.0, 0.0, 0.0)]}
    assert query_regressions(prev, now, 10, 0.05) == [
        {"id": "q1", "metrics": {"recall@10": [1.0, 0.5], "reciprocal_rank": [1.0, 1 / 3]}}
    ]
    assert query_regressions(prev, now, 10, 0.7) == []
    assert is_miss(query_entry("new", 0.0, 0.0, 0.0), 10)
    assert is_miss(query_entry("empty", 0.0, 0.0, 0.0, expected=0), 10)
    assert not is_miss(query_entry("q1", 0.5, 1.0, 0.5), 10)


def test_corpus_change_text_both_forms() -> None:
    prev = {"documents": 20, "chunks": 60, "digest": "a"}
    assert corpus_change_text(prev, dict(prev)) is None
    assert not corpus_changed(prev, dict(prev))
    assert corpus_change_text(prev, {"documents": 21, "chunks": 64, "digest": "b"}) == (
        "20 -> 21 documents, 60 -> 64 chunks"
    )
    assert corpus_change_text(prev, {**prev, "digest": "b"}) == "same counts, different contents"
    assert corpus_changed(prev, {**prev, "documents": 19})


def test_regression_error_text() -> None:
    assert regression_error_text(0.05, None) == (
        "retrieval-quality regression detected (delta > 0.050 on at least one of recall@k / MRR / "
        "nDCG@k). Exiting with code 1 because --fail-on-regression was set."
    )
    assert regression_error_text(0.05, "20 -> 21 documents, 60 -> 64 chunks") == (
        "retrieval-quality regression detected (delta > 0.050 on at least one of recall@k / MRR / "
        "nDCG@k). The indexed corpus also changed since the compared run (20 -> 21 documents, "
        "60 -> 64 chunks), which shifts rankings on its own. Exiting with code 1 because "
        "--fail-on-regression was set."
    )


@pytest.mark.parametrize(("aggregate", "reason"), [
    ({"recall_at_k": {"1": 0.5}, "ndcg_at_k": {"1": 0.5}}, "runs[0].aggregate.mrr is missing"),
    ({"recall_at_k": {"1": 0.5}, "ndcg_at_k": {"1": 0.5}, "mrr": None},
     "runs[0].aggregate.mrr is missing"),
    ({"recall_at_k": {"1": 0.5}, "ndcg_at_k": {"1": 0.5}, "mrr": "0.5"},
     "runs[0].aggregate.mrr is missing"),
    ({"recall_at_k": {"1": "high"}, "ndcg_at_k": {"1": 0.5}, "mrr": 0.5},
     "runs[0].aggregate.recall_at_k.1 is not a number"),
    ({"ndcg_at_k": {"1": 0.5}, "mrr": 0.5}, "runs[0].aggregate.recall_at_k is missing"),
])
def test_damaged_metrics_never_look_like_a_regression(
    tmp_path: Path, stderr_lines: list[str], aggregate: dict[str, Any], reason: str
) -> None:
    """Issue 15 item 8: the damaged newest run is set aside with a warning, not compared."""
    path = tmp_path / HISTORY_NAME
    path.write_text(json.dumps({"runs": [make_run("2", aggregate=aggregate), make_run("1")]}),
                    encoding="utf-8")
    assert load_history(tmp_path / HISTORY_NAME) == []
    (aside,) = tmp_path.glob(HISTORY_NAME + ".corrupt-*")  # kept, timestamped (issue 14)
    assert len(stderr_lines) == 1 and f"cannot be parsed ({reason}" in stderr_lines[0]
    assert str(aside) in stderr_lines[0]
