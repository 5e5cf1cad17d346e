"""No silent wrong results from a damaged or unfinished index (issue 29 items 4, 5, 8).

A vector snapshot damaged with its stamp intact is never used and a plain `index` rewrites it;
a plain `index` on a file with a damaged page or cut short refuses before writing anything
(naming `--force`), so the damage stays for `doctor` to report; an `index --force` that stopped
before it finished makes every reading command say so. Uses the tiny model of `test_index.py`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import apsw
import numpy as np
import pytest

from groove_cli.index import index_kb
from groove_cli.store import Store
from groove_cli.vectors import SnapshotStamp, VectorSnapshot
from tests.test_data_safety import (
    NOTES_A,
    NOTES_B,
    doctor_checks,
    groove,  # noqa: F401  (the fixture)
    indexed_sample,
    ok,
    top_files,
)
from tests.test_index import Groove, tiny_model  # noqa: F401  (the session fixture)

FORCE_HINT = "`groove index --force` moves the damaged file aside and rebuilds the index"


def _snapshot_matrix(db: Path) -> Path:
    return db.with_name(db.name + ".vectors.npy")


def _current(db: Path) -> tuple[SnapshotStamp, int]:
    store = Store.open_readonly(db)
    try:
        dim = store.vec_dim()
        assert dim is not None
        return SnapshotStamp.of(store), dim
    finally:
        store.close()


# --------------------------------------------------------------------------- item 4


def test_a_damaged_snapshot_with_its_stamp_intact_is_not_used_and_index_rewrites_it(
        groove: Groove) -> None:  # noqa: F811
    indexed_sample(groove)
    matrix = _snapshot_matrix(groove.db)
    good = matrix.read_bytes()
    stamp, dim = _current(groove.db)
    assert VectorSnapshot.load(groove.db, stamp, dim) is not None
    # b1.md's row (the 4th of 6, by chunk id) becomes a copy of a1.md's row: a search for b1's
    # own text would rank a1.md first if the snapshot were used
    loaded = np.load(matrix)
    rows = loaded.shape[0]
    header = len(good) - loaded.nbytes
    row = 4 * dim
    damaged = bytearray(good)
    damaged[header + 3 * row : header + 4 * row] = good[header : header + row]
    matrix.write_bytes(bytes(damaged))
    assert rows == 6 and VectorSnapshot.load(groove.db, stamp, dim) is None
    assert top_files(groove, NOTES_B["b1.md"].strip(), "--mode", "vector")[0] == "b1.md"
    assert doctor_checks(groove) == (1, ["vector-snapshot-mismatch"])
    ok(groove.index())  # a plain run rewrites it
    assert matrix.read_bytes() == good
    assert doctor_checks(groove) == (0, [])


def test_a_snapshot_from_before_checksums_is_stale_not_damaged(groove: Groove) -> None:  # noqa: F811
    # an index written by an older groove: the same stamp, no checksum; searches read the
    # index instead, doctor says the snapshot is out of date (a warning) and index rewrites it
    indexed_sample(groove)
    stamp_path = groove.db.with_name(groove.db.name + ".vectors.json")
    document = json.loads(stamp_path.read_text(encoding="utf-8"))
    del document["crc32"]
    stamp_path.write_text(json.dumps(document), encoding="utf-8")
    stamp, dim = _current(groove.db)
    assert VectorSnapshot.load(groove.db, stamp, dim) is None
    result = groove.run("doctor", "--kb-path", str(groove.kb))
    assert "[warning] stale-vector-snapshot: the vector snapshot beside the index was written " \
           "from an older groove (without a checksum)" in result.stdout
    ok(groove.index())
    assert "crc32" in json.loads(stamp_path.read_text(encoding="utf-8"))
    assert doctor_checks(groove) == (0, [])


# --------------------------------------------------------------------------- item 5


def _page_of(db: Path, table: str) -> int:
    con = apsw.Connection(str(db))
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (page,) = [int(str(r[0])) for r in con.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,))]
        return page
    finally:
        con.close()


def test_a_plain_index_refuses_a_damaged_page_it_would_not_touch(groove: Groove) -> None:  # noqa: F811
    indexed_sample(groove)
    # the page of sqlite_sequence: a run with nothing to write never reads it
    page = _page_of(groove.db, "sqlite_sequence")
    with groove.db.open("r+b") as handle:
        handle.seek((page - 1) * 4096)
        handle.write(b"\0" * 4096)
    before = groove.db.read_bytes()
    result = groove.index()
    assert result.exit_code == 1, result.stderr
    assert "groove: error: the index file is damaged (" in result.stderr
    assert FORCE_HINT in result.stderr and "Done in" not in result.stderr
    assert groove.db.read_bytes() == before
    assert doctor_checks(groove) == (1, ["database-damaged"])
    ok(groove.index("--force"))
    assert doctor_checks(groove) == (0, [])


def _with_wal_frames(db: Path, scratch: Path) -> None:
    """Leave `db` as a killed writer does: its last transaction only in the `-wal` file (the
    files are copied while a connection holds them, then put back)."""
    con = apsw.Connection(str(db))
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("INSERT INTO index_meta(key, value) VALUES ('killed', 'writer')")
    scratch.mkdir()
    for suffix in ("", "-wal"):
        shutil.copy2(f"{db}{suffix}", scratch / f"db{suffix}")
    con.close()
    for suffix in ("", "-wal"):
        shutil.copy2(scratch / f"db{suffix}", f"{db}{suffix}")


@pytest.mark.parametrize("cut", [1000, 3 * 4096])
def test_a_refused_index_does_not_extend_a_cut_file(groove: Groove, tmp_path: Path,  # noqa: F811
                                                    cut: int) -> None:
    indexed_sample(groove)
    _with_wal_frames(groove.db, tmp_path / "scratch")
    size = groove.db.stat().st_size
    with groove.db.open("r+b") as handle:
        handle.truncate(size - cut)
    result = groove.index()
    assert result.exit_code == 1 and FORCE_HINT in result.stderr, result.stderr
    assert groove.db.stat().st_size == size - cut
    assert doctor_checks(groove) == (1, ["database-damaged"])


# --------------------------------------------------------------------------- item 8


@pytest.mark.parametrize("search_mode", ["fts", "hybrid"])
def test_search_after_an_interrupted_force_says_the_index_is_incomplete(
        groove: Groove, search_mode: str) -> None:  # noqa: F811
    indexed_sample(groove)
    asked = iter(range(1_000))
    report = index_kb(groove.options(force=True), should_stop=lambda: next(asked) >= 2)
    assert report.interrupted and report.documents < len(NOTES_A) + len(NOTES_B)
    warning = (f"groove: warning: the index at {groove.db} is incomplete: a full build "
               "(`groove index --force`, or the first `groove index`) stopped before it "
               "finished, so results cover only the notes indexed so far; run `groove index "
               f"--kb-path {groove.kb.resolve()}` to finish it")
    result = groove.run("search", "bird flies over the green tree", "--kb-path", str(groove.kb),
                        "--mode", search_mode)
    assert result.exit_code == 0, result.stderr
    assert warning in result.stderr.replace("\n", " ").replace("  ", " ")
    ok(groove.index())  # a plain run finishes the build
    after = ok(groove.run("search", "bird flies over the green tree", "--kb-path",
                          str(groove.kb), "--mode", search_mode, "--format", "json"))
    assert "incomplete" not in after.stderr
    assert json.loads(after.stdout)["results"][0]["path"] == "b1.md"
