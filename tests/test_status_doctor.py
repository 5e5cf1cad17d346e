"""`groove status` and `groove doctor` (cli.md §3, §8, §9) against real indexes.

Most tests use the tiny-model sample KB of `test_index.py` (3 documents, 4 chunks with quality
1.0, 0.7, 1.0 and 0.1); the golden tests read the session's real `golden/` index. Doctor tests
damage an index by hand through a plain apsw connection, then check each finding.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import numpy as np
import pytest
import sqlite_vec
from typer.testing import CliRunner, Result

import groove_cli
from groove_cli.chunk import parse_document
from groove_cli.cli import app
from groove_cli.scan import collect_files
from groove_cli.store import SCHEMA_VERSION, Store
from tests.onnx_builders import model_dir
from tests.test_index import (
    BETA,
    DIM,
    KB_FILES,
    MAX_LENGTH,
    TINY_MODEL_TOML,
    Groove,
    chunk_ids,
    make_groove,
    meta,
    rows,
    table_dump,
    tiny_embedder_onnx,
    write,
    write_kb,
)

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-model") / "embedder"
    return model_dir(folder, tiny_embedder_onnx(), TINY_MODEL_TOML).resolve()


@pytest.fixture
def indexed(tiny_model: Path, workdir: Path, tmp_path: Path) -> Groove:
    """The sample KB indexed once with the tiny model."""
    groove = make_groove(workdir, tmp_path, tiny_model)
    write_kb(groove.kb)
    result = groove.index()
    assert result.exit_code == 0, result.stderr
    return groove


@contextmanager
def writable(db: Path) -> Iterator[apsw.Connection]:
    """A read-write connection with sqlite-vec loaded, to damage an index by hand."""
    con = apsw.Connection(str(db))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    try:
        yield con
    finally:
        con.close()


def status(groove: Groove, *args: str, kb: bool = True) -> Result:
    kb_args = ["--kb-path", str(groove.kb)] if kb else []
    return groove.run("status", *kb_args, *args)


def doctor(groove: Groove, *args: str, kb: bool = True) -> Result:
    kb_args = ["--kb-path", str(groove.kb)] if kb else []
    return groove.run("doctor", *kb_args, *args)


def schema_version(db: Path) -> int:
    value = rows(db, "PRAGMA user_version")[0][0]
    assert isinstance(value, int)
    return value


# =========================================================================== status


def test_status_text_reports_counts_model_and_nothing_pending(indexed: Groove) -> None:
    before = table_dump(indexed.db)
    result = status(indexed)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"Index: {indexed.db}",
        f"KB: {indexed.kb.resolve()}",
        f"Schema version: {schema_version(indexed.db)}",
        "Documents: 3",
        "Chunks: 4",
        f"Model: {indexed.model} ({DIM} dim, max_length {MAX_LENGTH})",
        "Context mode: off",
        f"Last indexed: {meta(indexed.db)['last_indexed']}",
        "Pending: 0 new / 0 changed / 0 deleted",
        # quality 1.0, 0.7, 1.0 pass the default 0.3; 0.1 does not
        "Quality filter (threshold=0.3): 3 passing, 1 below threshold",
    ]
    assert table_dump(indexed.db) == before


def test_status_json_counts_pending_changes_without_indexing(indexed: Groove) -> None:
    kb = indexed.kb
    write(kb, "new.md", BETA + "\n")  # new
    write(kb, "eng/search/beta.md", "the cat sat on the mat\n")  # changed
    (kb / "ops/gamma.md").unlink()  # deleted
    (kb / "alpha.md").rename(kb / "alpha-moved.md")  # a rename, as `index` then says (issue 28)
    before = table_dump(indexed.db)

    result = status(indexed, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc == {
        "index": str(indexed.db),
        "kb_path": str(kb.resolve()),
        "schema_version": schema_version(indexed.db),
        "documents": 3,
        "chunks": 4,
        "model": {"name": str(indexed.model), "dim": DIM, "max_length": MAX_LENGTH},
        "context_mode": "off",
        "last_indexed": meta(indexed.db)["last_indexed"],
        "pending": {"new": 1, "changed": 1, "deleted": 1, "renamed": 1, "skipped": 0, "files": [
            {"change": "renamed", "path": "alpha-moved.md", "from": "alpha.md"},
            {"change": "changed", "path": "eng/search/beta.md"},
            {"change": "new", "path": "new.md"},
            {"change": "deleted", "path": "ops/gamma.md"}]},
        "pending_vectors": 0,
        "piece_vectors": 0,
        "pieces_switch": None,
        "quality_filter": {"threshold": 0.3, "passing": 3, "below": 1},
    }
    assert list(doc) == ["index", "kb_path", "schema_version", "documents", "chunks", "model",
                         "context_mode", "last_indexed", "pending", "pending_vectors",
                         "piece_vectors", "pieces_switch", "quality_filter"]
    assert result.stdout.endswith("}\n") and '\n  "index"' in result.stdout
    assert table_dump(indexed.db) == before

    text = status(indexed)
    assert "Pending: 1 new / 1 changed / 1 deleted / 1 renamed" in text.stdout.splitlines()
    done = indexed.index()
    assert "(2 updated, 1 renamed, 1 deleted, 0 skipped)" in done.stderr


def test_hidden_folders_are_not_pending_unless_configured(indexed: Groove) -> None:
    write(indexed.kb, ".github/pull_request_template.md", BETA + "\n")
    assert "Pending: 0 new / 0 changed / 0 deleted" in status(indexed).stdout.splitlines()
    indexed.configure("index_hidden_dirs = true\n")
    assert "Pending: 1 new / 0 changed / 0 deleted" in status(indexed).stdout.splitlines()
    assert "(1 updated, 0 renamed, 0 deleted, 0 skipped)" in indexed.index().stderr


def test_status_pairs_renames_as_index_does(indexed: Groove) -> None:
    # two files with one content: one vanished path pairs with one of the two new paths
    kb = indexed.kb
    (kb / "alpha.md").rename(kb / "a1.md")
    shutil.copy2(kb / "a1.md", kb / "a2.md")
    doc = json.loads(status(indexed, "--format", "json").stdout)
    assert doc["pending"] == {"new": 1, "changed": 0, "deleted": 0, "renamed": 1, "skipped": 0,
                              "files": [{"change": "renamed", "path": "a1.md", "from": "alpha.md"},
                                        {"change": "new", "path": "a2.md"}]}
    assert "(1 updated, 1 renamed, 0 deleted, 0 skipped)" in indexed.index().stderr


def test_pending_keeps_too_large_files_and_drops_refused_links(indexed: Groove) -> None:
    kb = indexed.kb
    os.truncate(kb / "eng/search/beta.md", 50 * 1024 * 1024 + 1)  # skipped, rows kept
    (kb / "ops/gamma.md").unlink()
    os.symlink(kb / "alpha.md", kb / "ops/gamma.md")  # refused: counts as not seen
    result = status(indexed)
    assert "Pending: 0 new / 0 changed / 1 deleted" in result.stdout.splitlines()


def test_status_quality_filter_threshold_and_disabled(indexed: Groove) -> None:
    indexed.configure("[quality_filter]\nthreshold = 0.75\n")
    result = status(indexed)
    assert result.stdout.splitlines()[-1] == (  # gamma (0.1) is the one below
        "Quality filter (threshold=0.75): 3 passing, 1 below threshold")
    indexed.configure("[quality_filter]\nthreshold = 0.1\n")  # gamma scores exactly 1 - 0.6 - 0.3
    assert status(indexed).stdout.splitlines()[-1] == (
        "Quality filter (threshold=0.1): 4 passing, 0 below threshold")

    indexed.configure("[quality_filter]\nenabled = false\n")
    text = status(indexed)
    assert text.stdout.splitlines()[-1] == "Pending: 0 new / 0 changed / 0 deleted"
    assert not any(line.startswith("Quality filter") for line in text.stdout.splitlines())
    doc = json.loads(status(indexed, "--format", "json").stdout)
    assert doc["quality_filter"] is None


def test_status_with_db_only_has_no_pending(indexed: Groove) -> None:
    result = status(indexed, kb=False)
    assert result.exit_code == 0, result.stderr
    assert not any(line.startswith("Pending") for line in result.stdout.splitlines())
    assert "Documents: 3" in result.stdout.splitlines()
    doc = json.loads(status(indexed, "--format", "json", kb=False).stdout)
    assert doc["pending"] is None
    assert doc["kb_path"] == str(indexed.kb.resolve())


def test_status_without_an_index_is_a_note_and_exit_0(indexed: Groove, tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    result = indexed.run("status", "--kb-path", str(indexed.kb), db=missing)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"groove: note: no index found at {missing}. Run `groove index --kb-path {indexed.kb}` "
        "first.")
    bare = indexed.run("status", db=missing)
    assert bare.exit_code == 0 and bare.stdout == ""
    assert bare.stderr.splitlines()[-1] == (
        f"groove: note: no index found at {missing}. Run `groove index --kb-path <path>` first.")
    assert not missing.exists()


def test_status_of_the_golden_index(golden_index: tuple[Path, Path], workdir: Path) -> None:
    kb, db = golden_index
    files = collect_files(kb, exclude_dirs=(), extensions=("md",)).files
    scores = [chunk.quality_score
              for f in files for chunk in parse_document(f.path.read_text("utf-8"), f.rel).chunks]
    assert (len(files), len(scores)) == (27, 106)
    passing = sum(1 for q in scores if q >= 0.3)

    result = runner.invoke(app, ["--db", str(db), "status", "--kb-path", str(kb),
                                 "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["documents"], doc["chunks"]) == (27, 106)
    assert doc["model"] == {"name": "multilingual-e5-small", "dim": 384, "max_length": 512}
    assert doc["pending"] == {"new": 0, "changed": 0, "deleted": 0, "renamed": 0,
                              "skipped": 0, "files": []}
    assert doc["quality_filter"] == {"threshold": 0.3, "passing": passing,
                                     "below": 106 - passing}


# =========================================================================== doctor


def test_doctor_clean_index(indexed: Groove) -> None:
    before = table_dump(indexed.db)
    result = doctor(indexed)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "groove doctor — 3 document(s), 4 chunk(s)\nNo issues found.\n"
    as_json = doctor(indexed, "--format", "json", kb=False)
    assert as_json.exit_code == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {"documents": 3, "chunks": 4, "findings": [],
                                          "pending_vectors": 0}
    assert table_dump(indexed.db) == before


def test_doctor_reports_each_kind_of_damage(indexed: Groove) -> None:
    db = indexed.db
    (gamma,) = chunk_ids(db, "ops/gamma.md")
    (beta,) = chunk_ids(db, "eng/search/beta.md")
    with writable(db) as con:
        con.execute("DELETE FROM vec_chunks WHERE chunk_id = ?", (gamma,))
        con.execute("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (9001, ?)",
                    (np.ones(DIM, dtype="<f4").tobytes(),))
        con.execute("DELETE FROM fts_chunks WHERE rowid = ?", (beta,))
        con.execute("INSERT INTO fts_chunks(rowid, heading, context, content) "
                    "VALUES (9002, '', '', 'stray text')")
        con.execute("INSERT INTO documents(path, content_hash, size_bytes, last_indexed) "
                    "VALUES ('ghost.md', 'x', 0, '2026-01-01T00:00:00Z')")

    result = doctor(indexed, "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert (doc["documents"], doc["chunks"]) == (4, 4)
    assert doc["pending_vectors"] == 1  # gamma's: `groove index` embeds it, no damage
    force = "groove index --force"
    expected = [
        ("orphan-embedding", 1, ["9001"], force),
        ("missing-fts-row", 1, [str(beta)], "groove index (a plain run backfills)"),
        ("orphan-fts-row", 1, ["9002"], force),
        ("document-without-chunks", 1, ["ghost.md"], force),
    ]
    findings = doc["findings"]
    assert [(f["check"], f["count"], f["samples"], f["remedy"]) for f in findings] == expected
    assert all(f["severity"] == "error" and f["summary"] for f in findings)
    assert all(list(f) == ["check", "severity", "summary", "count", "samples", "remedy"]
               for f in findings)

    text = doctor(indexed)
    assert text.exit_code == 1
    lines = text.stdout.splitlines()
    assert lines[0] == "groove doctor — 4 document(s), 4 chunk(s)"
    report = ["Pending: 1 chunk(s) wait for their vectors (not damage: `groove index` embeds them)"]
    for f in findings:
        report += [f"[error] {f['check']}: {f['summary']}",
                   *(f"    {s}" for s in f["samples"]), f"  fix: {f['remedy']}"]
    assert lines[1:] == report


def test_doctor_lists_five_samples_and_the_rest_as_a_count(indexed: Groove) -> None:
    with writable(indexed.db) as con:
        for cid in range(9001, 9008):
            con.execute("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (?, ?)",
                        (cid, np.ones(DIM, dtype="<f4").tobytes()))
    result = doctor(indexed)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("[error] orphan-embedding")))
    assert lines[start + 1 : start + 8] == [
        *(f"    {cid}" for cid in range(9001, 9006)), "    ... and 2 more",
        "  fix: groove index --force"]
    doc = json.loads(doctor(indexed, "--format", "json").stdout)
    assert [(f["check"], f["count"], f["samples"]) for f in doc["findings"]] == [
        ("orphan-embedding", 7, [str(cid) for cid in range(9001, 9006)])]


def test_chunks_without_vectors_are_pending_not_damage_and_index_embeds_them(
        indexed: Groove) -> None:
    ids = sorted(int(str(r[0])) for r in rows(indexed.db, "SELECT id FROM chunks"))
    with writable(indexed.db) as con:  # the state a kill in phase 2 leaves on a first run
        for cid in ids[:3]:
            con.execute("DELETE FROM vec_chunks WHERE chunk_id = ?", (cid,))
    for snapshot in indexed.db.parent.glob(f"{indexed.db.name}.vectors*"):
        snapshot.unlink()
    result = doctor(indexed)
    assert result.exit_code == 0, result.stdout
    assert result.stdout == ("groove doctor — 3 document(s), 4 chunk(s)\n"
                             "Pending: 3 chunk(s) wait for their vectors (not damage: `groove "
                             "index` embeds them)\nNo issues found.\n")
    assert "Embedding 3 chunks..." in indexed.index_ok().stderr.splitlines()
    assert json.loads(doctor(indexed, "--format", "json").stdout)["pending_vectors"] == 0


def test_doctor_finds_a_chunk_without_document(indexed: Groove) -> None:
    with writable(indexed.db) as con:  # foreign keys are off on a plain connection
        con.execute("INSERT INTO chunks(id, document_id, chunk_index, content, quality_score) "
                    "VALUES (9003, 9999, 0, 'lost', 0.1)")
        for table in ("fts_chunks", "fts_words", "fts_cjk"):  # a row in each FTS table
            con.execute(f"INSERT INTO {table}(rowid, heading, context, content) "
                        "VALUES (9003, '', '', 'lost')")
        con.execute("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (9003, ?)",
                    (np.ones(DIM, dtype="<f4").tobytes(),))
    doc = json.loads(doctor(indexed, "--format", "json").stdout)
    assert [(f["check"], f["count"], f["samples"], f["remedy"]) for f in doc["findings"]] == [
        ("chunk-without-document", 1, ["9003"], "groove index --force")]
    assert (doc["documents"], doc["chunks"]) == (3, 5)


def test_doctor_findings_still_fail_when_the_reader_stops_early(indexed: Groove) -> None:
    # `groove doctor | head -1`: a closed pipe ends quietly with exit 0 (issue 28), but
    # findings are a verdict that a pipe must not turn into a pass
    import subprocess
    import sys

    def piped() -> subprocess.CompletedProcess[str]:
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            return subprocess.run(
                [sys.executable, "-m", "groove_cli", "--db", str(indexed.db), "doctor",
                 "--kb-path", str(indexed.kb)], stdout=write_end, stderr=subprocess.PIPE,
                text=True, cwd=indexed.work, timeout=120, check=False)
        finally:
            os.close(write_end)

    clean = piped()
    assert (clean.returncode, clean.stderr) == (0, "")
    with writable(indexed.db) as con:
        con.execute("DELETE FROM fts_words WHERE rowid = (SELECT min(id) FROM chunks)")
    found = piped()
    assert (found.returncode, found.stderr) == (1, "")


def test_doctor_checks_the_word_level_fts_table_too(indexed: Groove) -> None:
    db = indexed.db
    (gamma,) = chunk_ids(db, "ops/gamma.md")
    (beta,) = chunk_ids(db, "eng/search/beta.md")
    with writable(db) as con:
        con.execute("DELETE FROM fts_words WHERE rowid = ?", (gamma,))  # trigram row kept
        con.execute("INSERT INTO fts_words(rowid, heading, context, content) "
                    "VALUES (9004, '', '', 'stray words')")
        # both tables miss beta / hold 9005: one chunk id each, listed once
        for table in ("fts_chunks", "fts_words"):
            con.execute(f"DELETE FROM {table} WHERE rowid = ?", (beta,))
            con.execute(f"INSERT INTO {table}(rowid, heading, context, content) "
                        "VALUES (9005, '', '', 'stray text')")
    doc = json.loads(doctor(indexed, "--format", "json").stdout)
    assert [(f["check"], f["count"], f["samples"], f["remedy"]) for f in doc["findings"]] == [
        ("missing-fts-row", 2, [str(i) for i in sorted((gamma, beta))],
         "groove index (a plain run backfills)"),
        ("orphan-fts-row", 2, ["9004", "9005"], "groove index --force"),
    ]
    assert indexed.index("--force").exit_code == 0
    assert doctor(indexed).exit_code == 0


def test_doctor_missing_vector_table(indexed: Groove) -> None:
    with writable(indexed.db) as con:
        con.execute("DROP TABLE vec_chunks")
    result = doctor(indexed)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1:] == [
        "[error] vector-table-missing: the vec_chunks table does not exist",
        "  fix: groove index --force"]
    doc = json.loads(doctor(indexed, "--format", "json").stdout)
    assert [(f["check"], f["count"], f["samples"]) for f in doc["findings"]] == [
        ("vector-table-missing", 1, [])]


def test_doctor_warns_when_the_model_is_unavailable(tiny_model: Path, workdir: Path,
                                                   tmp_path: Path) -> None:
    model = tmp_path / "model-copy"
    shutil.copytree(tiny_model, model)
    groove = make_groove(workdir, tmp_path, model)
    write_kb(groove.kb)
    assert groove.index().exit_code == 0
    shutil.rmtree(model)
    result = doctor(groove, "--format", "json")
    assert result.exit_code == 1
    (finding,) = json.loads(result.stdout)["findings"]
    assert (finding["check"], finding["severity"], finding["samples"], finding["remedy"]) == (
        "model-unavailable", "warning", [str(model)], f"groove models resolve {model}")
    text = doctor(groove)
    assert f"[warning] model-unavailable: {finding['summary']}" in text.stdout.splitlines()


def test_doctor_remedies_repair_the_index(indexed: Groove) -> None:
    db = indexed.db
    (beta,) = chunk_ids(db, "eng/search/beta.md")
    with writable(db) as con:
        con.execute("DELETE FROM fts_chunks WHERE rowid = ?", (beta,))
    assert doctor(indexed).exit_code == 1
    plain = indexed.index()
    assert "Backfilled 1 chunks into FTS index" in plain.stderr.splitlines()
    assert doctor(indexed).exit_code == 0

    (gamma,) = chunk_ids(db, "ops/gamma.md")
    with writable(db) as con:
        con.execute("DELETE FROM vec_chunks WHERE chunk_id = ?", (gamma,))
    assert doctor(indexed).exit_code == 1
    assert indexed.index("--force").exit_code == 0
    result = doctor(indexed)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "No issues found."
    assert {path: len(chunk_ids(db, path)) for path in KB_FILES} == {
        "alpha.md": 2, "eng/search/beta.md": 1, "ops/gamma.md": 1}


def test_doctor_without_an_index_is_an_error(indexed: Groove, tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    result = indexed.run("doctor", "--kb-path", str(indexed.kb), db=missing)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"groove: error: no index found at {missing}. Run `groove index --kb-path {indexed.kb}` "
        "first.")
    bare = indexed.run("doctor", db=missing)
    assert bare.exit_code == 1 and bare.stdout == ""
    assert bare.stderr.splitlines()[-1] == (
        f"groove: error: no index found at {missing}. Run `groove index --kb-path <path>` "
        "first.")
    assert not missing.exists()


def test_doctor_on_the_golden_index(golden_index: tuple[Path, Path], real_models_dir: Path,
                                    workdir: Path) -> None:
    kb, db = golden_index
    (workdir / "groove.toml").write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n")
    result = runner.invoke(app, ["--db", str(db), "doctor", "--kb-path", str(kb)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout == "groove doctor — 27 document(s), 106 chunk(s)\nNo issues found.\n"


MIGRATIONS = Path(groove_cli.__file__).parent / "migrations"


def schema_v1_copy(db: Path, dest: Path) -> None:
    """`db` rebuilt by hand as a schema-version-1 index at `dest`: only 0001_initial.sql applied,
    then its meta, documents, chunks and vectors copied and one trigram FTS row written per chunk
    (what a version-1 indexer wrote); no `fts_words` table."""
    con = apsw.Connection(str(dest))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    try:
        con.execute((MIGRATIONS / "0001_initial.sql").read_text(encoding="utf-8"))
        con.execute("ATTACH DATABASE ? AS src", (str(db),))
        (vec_sql,), = con.execute(
            "SELECT sql FROM src.sqlite_master WHERE name = 'vec_chunks'").fetchall()
        con.execute(str(vec_sql))
        for table in ("index_meta", "documents", "chunks"):  # the columns schema 1 had
            columns = ", ".join(str(r[1]) for r in con.execute(f"PRAGMA main.table_info({table})"))
            con.execute(f"INSERT INTO main.{table} SELECT {columns} FROM src.{table}")
        con.execute("INSERT INTO main.vec_chunks(chunk_id, embedding) "
                    "SELECT chunk_id, embedding FROM src.vec_chunks")
        con.execute("DETACH DATABASE src")
        con.execute("INSERT INTO fts_chunks(rowid, heading, context, content) "
                    "SELECT id, coalesce(heading, ''), coalesce(context_text, ''), content "
                    "FROM chunks")
        con.execute("PRAGMA user_version = 1")
    finally:
        con.close()


def test_migration_2_adds_and_backfills_the_word_level_table(indexed: Groove,
                                                              tmp_path: Path) -> None:
    db = indexed.db
    chunks = {int(str(r[0])) for r in rows(db, "SELECT id FROM chunks")}
    old = tmp_path / "v1.db"
    schema_v1_copy(db, old)
    for suffix in ("", "-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    old.rename(db)
    assert schema_version(db) == 1
    assert rows(db, "SELECT name FROM sqlite_master WHERE name = 'fts_words'") == []
    # reading never migrates (cli.md §3): status asks for an index run
    refused = status(indexed)
    assert refused.exit_code == 1
    assert refused.stderr.splitlines()[-1] == (
        f"groove: error: the index at {db} uses schema version 1; run `groove index --kb-path "
        f"{indexed.kb}` to upgrade it.")

    store = Store.open_for_index(db)
    store.close()
    assert SCHEMA_VERSION == 5 and schema_version(db) == 5
    assert {int(str(r[0])) for r in rows(db, "SELECT rowid FROM fts_words")} == chunks
    # the backfilled rows are word-level and stemmed: "swimming" finds the "swims" of BETA
    # and GAMMA, and no other chunk
    (beta,), (gamma,) = chunk_ids(db, "eng/search/beta.md"), chunk_ids(db, "ops/gamma.md")
    found = rows(db, "SELECT rowid FROM fts_words WHERE fts_words MATCH ?", ('"swimming"',))
    assert sorted(int(str(r[0])) for r in found) == sorted([beta, gamma])

    result = doctor(indexed)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout == "groove doctor — 3 document(s), 4 chunk(s)\nNo issues found.\n"
    # and the migrated index serves the word leg: nothing left to index
    again = indexed.index_ok()
    assert "Backfilled" not in again.stderr
    searched = indexed.run("search", "swimming", "--mode", "fts", "--format", "files",
                           "--include-low-quality")  # gamma's chunk scores 0.1
    assert searched.exit_code == 0, searched.stderr
    assert sorted(searched.stdout.splitlines()) == [
        os.path.relpath(indexed.kb / "eng/search/beta.md"), os.path.relpath(indexed.kb / "ops/gamma.md")]


def test_migration_4_adds_chunk_lines_and_the_next_index_fills_them(indexed: Groove) -> None:
    db = indexed.db
    filled = rows(db, "SELECT id, line_start, line_end FROM chunks ORDER BY id")
    assert all(start is not None and end is not None for _, start, end in filled)
    # an index written before schema 4: no line columns, no pieces, and the chunker of
    # version 1
    with writable(db) as con:
        con.execute("DROP TABLE chunk_pieces")
        con.execute("ALTER TABLE chunks DROP COLUMN pieces")
        con.execute("ALTER TABLE chunks DROP COLUMN line_start")
        con.execute("ALTER TABLE chunks DROP COLUMN line_end")
        con.execute("UPDATE index_meta SET value = ? WHERE key = 'chunker_fingerprint'",
                    (hashlib.sha256(b"[1, []]").hexdigest(),))
        con.execute("PRAGMA user_version = 3")
    vectors_before = meta(db)["vectors_version"]
    refused = status(indexed)  # reading never migrates: the error names the upgrade
    assert refused.exit_code == 1
    assert "uses schema version 3; run `groove index --kb-path" in refused.stderr
    again = indexed.index_ok()
    assert ("groove: note: chunking settings changed since the last run; every file is re-read"
            in again.stderr.splitlines())
    assert rows(db, "SELECT id, line_start, line_end FROM chunks ORDER BY id") == filled
    assert meta(db)["vectors_version"] == vectors_before  # nothing was re-embedded


@pytest.mark.parametrize("command", ["status", "doctor"])
def test_schema_too_old_or_too_new_is_an_error(indexed: Groove, tmp_path: Path,
                                               command: str) -> None:
    old = tmp_path / "old.db"
    with writable(old) as con:  # groove's table, never migrated: schema version 0
        con.execute("CREATE TABLE index_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    result = indexed.run(command, "--kb-path", str(indexed.kb), db=old)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"groove: error: the index at {old} uses schema version 0; run `groove index --kb-path "
        f"{indexed.kb}` to upgrade it.")
    foreign = tmp_path / "foreign.db"
    with writable(foreign) as con:  # another application's tables: not an index at all
        con.execute("CREATE TABLE t(x)")
    result = indexed.run(command, "--kb-path", str(indexed.kb), db=foreign)
    assert result.exit_code == 1
    assert f"{foreign} is an SQLite database but not a groove index" in result.stderr

    with writable(indexed.db) as con:
        con.execute("PRAGMA user_version = 99")
    newer = indexed.run(command, "--kb-path", str(indexed.kb))
    assert newer.exit_code == 1 and newer.stdout == ""
    assert newer.stderr.splitlines()[-1] == (
        f"groove: error: the index at {indexed.db} was written by a newer groove (schema version "
        f"99; this groove supports up to {SCHEMA_VERSION}).")
