"""Ctrl-C and a hard kill during `groove index` leave a valid index (index.md §6.2, cli.md §4).

`groove index` runs in a real subprocess over 600 one-chunk notes with the tiny model of
`test_index.py`: loading it takes milliseconds, so the run spends its time writing one
transaction per file (a few seconds in all), which is the window the signal must land in. The
test waits until documents appear in the index (polled through a read-only connection), sends
the signal, then checks the exit, `groove doctor`, and that a re-run indexes exactly the rest.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from tests.onnx_builders import model_dir
from tests.test_index import (
    TINY_MODEL_TOML,
    Counts,
    Groove,
    done,
    make_groove,
    rows,
    tiny_embedder_onnx,
    write,
)

NOTES = 600
INTERRUPTED = re.compile(r"Interrupted after (\d+) of (\d+) files; the index is valid and the next "
                         r"run continues from here\.")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-model") / "embedder"
    return model_dir(folder, tiny_embedder_onnx(), TINY_MODEL_TOML).resolve()


@pytest.fixture
def big_kb(tiny_model: Path, workdir: Path, tmp_path: Path) -> Groove:
    """600 short notes in 10 folders, one chunk each."""
    groove = make_groove(workdir, tmp_path, tiny_model)
    for i in range(NOTES):
        write(groove.kb, f"d{i % 10}/note-{i:04d}.md", f"note {i}: the cat sat on the mat\n")
    return groove


def start_index(groove: Groove) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "groove_cli", "--db", str(groove.db), "index",
         "--kb-path", str(groove.kb)],
        cwd=groove.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def document_count(db: Path) -> int:
    """Documents committed so far, or 0 while the index file or its schema does not exist yet."""
    try:
        con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return 0
    try:
        value = con.execute("SELECT count(*) FROM documents").fetchall()[0][0]
        return int(str(value))
    except apsw.Error:
        return 0
    finally:
        con.close()


def wait_until(proc: subprocess.Popen[str], reached: Callable[[], bool], what: str) -> None:
    """Poll until `reached()` while the index runs; fail if it ends first or 60 s pass."""
    deadline = time.monotonic() + 60
    while not reached():
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"index ended (exit {proc.returncode}) before the signal:\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.communicate()
            pytest.fail(f"index wrote no {what} within 60 s")
        time.sleep(0.002)


def kill_9(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the index run and reap it."""
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def wait_until_writing(groove: Groove, proc: subprocess.Popen[str], at_least: int = 10) -> None:
    wait_until(proc, lambda: document_count(groove.db) >= at_least, "documents")


def assert_doctor_clean(groove: Groove, documents: int, pending: int = 0) -> None:
    """No damage; chunks still waiting for phase 2 are mentioned, not reported as findings."""
    result = groove.run("doctor", "--kb-path", str(groove.kb))
    assert result.exit_code == 0, result.stdout + result.stderr
    waiting = (f"Pending: {pending:,} chunk(s) wait for their vectors (not damage: `groove "
               "index` embeds them)\n" if pending else "")
    assert result.stdout == (f"groove doctor — {documents} document(s), {documents} chunk(s)\n"
                             f"{waiting}No issues found.\n")


def vector_ids(db: Path) -> dict[int, bytes]:
    """The committed vectors by chunk id (0 rows while the table does not exist yet)."""
    try:
        return {int(str(cid)): bytes(blob) for cid, blob in  # type: ignore[call-overload]
                rows(db, "SELECT chunk_id, embedding FROM vec_chunks")}
    except apsw.Error:
        return {}


def embedding_count(stderr: str) -> int:
    """N of the run's `Embedding N chunks...` line: the chunks it embedded (0: none)."""
    found = re.findall(r"^Embedding ([\d,]+) chunks\.\.\.$", stderr, re.MULTILINE)
    return int(found[0].replace(",", "")) if found else 0


def written_ids(db: Path) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path, cid in rows(db, "SELECT d.path, c.id FROM documents d JOIN chunks c "
                              "ON c.document_id = d.id ORDER BY c.id"):
        found.setdefault(str(path), []).append(int(str(cid)))
    return found


def test_ctrl_c_exits_130_with_a_valid_index_and_the_rerun_finishes(big_kb: Groove) -> None:
    proc = start_index(big_kb)
    wait_until_writing(big_kb, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = err.splitlines()
    match = INTERRUPTED.fullmatch(lines[-1])
    assert match is not None, err
    processed, total = int(match.group(1)), int(match.group(2))
    assert total == NOTES
    assert not any(line.startswith("Done in") for line in lines)
    assert "Traceback" not in err
    # Every file processed before the stop was written whole; nothing else was.
    kept = written_ids(big_kb.db)
    assert len(kept) == processed and 0 < processed < NOTES
    assert_doctor_clean(big_kb, processed, pending=processed)  # stopped in phase 1

    rerun = big_kb.index()
    assert rerun.exit_code == 0, rerun.stderr
    assert embedding_count(rerun.stderr) == NOTES
    assert done(rerun) == Counts(docs=NOTES, updated=NOTES - processed, renamed=0, deleted=0,
                                 skipped=0, chunks=NOTES)
    after = written_ids(big_kb.db)
    assert {path: after[path] for path in kept} == kept  # the first run's rows were reused
    assert_doctor_clean(big_kb, NOTES)


def test_kill_leaves_a_valid_index_and_the_rerun_finishes(big_kb: Groove) -> None:
    proc = start_index(big_kb)
    wait_until_writing(big_kb, proc)
    kill_9(proc)

    kept = written_ids(big_kb.db)
    assert 0 < len(kept) < NOTES
    assert all(len(ids) == 1 for ids in kept.values())
    assert vector_ids(big_kb.db) == {}  # killed in phase 1: no vector yet
    assert_doctor_clean(big_kb, len(kept), pending=len(kept))
    fts = big_kb.run("search", "cat", "--mode", "fts", "--limit", "3", "--format", "files")
    assert fts.exit_code == 0 and fts.stdout.count("\n") == 3, fts.stderr

    rerun = big_kb.index()  # the lock died with the process
    assert rerun.exit_code == 0, rerun.stderr
    assert embedding_count(rerun.stderr) == NOTES
    assert done(rerun) == Counts(docs=NOTES, updated=NOTES - len(kept), renamed=0, deleted=0,
                                 skipped=0, chunks=NOTES)
    assert_doctor_clean(big_kb, NOTES)


def vector_count(db: Path) -> int:
    try:
        return int(str(rows(db, "SELECT count(*) FROM vec_chunks")[0][0]))
    except apsw.Error:
        return 0


def test_kill_during_phase_2_keeps_the_committed_vectors_and_the_rerun_embeds_only_the_rest(
        big_kb: Groove) -> None:
    proc = start_index(big_kb)
    # phase 2 has committed a few batches
    wait_until(proc, lambda: vector_count(big_kb.db) >= 40, "vectors")
    kill_9(proc)

    committed = vector_ids(big_kb.db)
    assert 40 <= len(committed) < NOTES, "the kill landed after phase 2"
    assert len(written_ids(big_kb.db)) == NOTES  # phase 1 had written every note
    assert_doctor_clean(big_kb, NOTES, pending=NOTES - len(committed))
    status = big_kb.run("status", "--format", "json")
    assert json.loads(status.stdout)["pending_vectors"] == NOTES - len(committed)
    fts = big_kb.run("search", "note 599", "--mode", "fts", "--limit", "1", "--format", "files")
    assert fts.stdout.endswith("d9/note-0599.md\n"), fts.stderr  # full text covers every note
    hybrid = big_kb.run("search", "cat", "--format", "json")
    assert hybrid.exit_code == 0, hybrid.stderr
    coverage = f"vectors for {len(committed):,} of {NOTES} chunks; full-text covers all"
    assert json.loads(hybrid.stdout)["notes"] == [coverage]
    assert f"groove: note: {coverage}" in hybrid.stderr.splitlines()

    rerun = big_kb.index()
    assert rerun.exit_code == 0, rerun.stderr
    assert embedding_count(rerun.stderr) == NOTES - len(committed)  # nothing embedded twice
    assert done(rerun) == Counts(docs=NOTES, updated=0, renamed=0, deleted=0, skipped=0,
                                 chunks=NOTES)
    after = vector_ids(big_kb.db)
    assert len(after) == NOTES
    assert {cid: after[cid] for cid in committed} == committed
    assert_doctor_clean(big_kb, NOTES)
    assert "notes" not in json.loads(big_kb.run("search", "cat", "--format", "json").stdout)
