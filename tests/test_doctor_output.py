"""doctor's report stays readable on a damaged file (issue 29 item 12): SQLite's multi-line
`Page N: never used` output is summarised, and a damaged vector snapshot lets no numpy
RuntimeWarning through."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from groove_cli.integrity import summarise_problems
from tests.test_index import DIM, Groove
from tests.test_status_doctor import (  # noqa: F401  (fixtures)
    doctor,
    indexed,
    tiny_model,
    writable,
)


def test_never_used_pages_are_one_line() -> None:
    sqlite_row = "*** in database main ***\n" + "\n".join(f"Page {n}: never used"
                                                       for n in range(3, 23))
    assert summarise_problems([sqlite_row, "Tree 4 page 9 cell 0: bad"]) == [
        "20 pages never used (3, 4, 5, 6, 7, …)", "Tree 4 page 9 cell 0: bad"]
    assert summarise_problems(["Page 7: never used"]) == ["1 page never used (7)"]
    assert summarise_problems([]) == []


def _free_pages_lost(db: Path) -> None:
    """Zero the header's freelist pointer and count: every free page becomes `never used`."""
    import apsw

    con = apsw.Connection(str(db))
    con.execute("CREATE TABLE filler(x); INSERT INTO filler VALUES (randomblob(200000));"
                "DROP TABLE filler; PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE")
    con.close()
    data = bytearray(db.read_bytes())
    data[32:40] = bytes(8)
    db.write_bytes(bytes(data))


def test_doctor_summarises_never_used_pages(indexed: Groove) -> None:  # noqa: F811
    _free_pages_lost(indexed.db)
    result = doctor(indexed)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert not any(line.strip().startswith("Page ") for line in lines), result.stdout
    assert any("pages never used (" in line for line in lines), result.stdout
    samples = json.loads(doctor(indexed, "--format", "json").stdout)["findings"][0]["samples"]
    assert all("\n" not in s for s in samples)


def test_doctor_on_garbage_vectors_lets_no_numpy_warning_through(
        indexed: Groove) -> None:  # noqa: F811
    huge = np.full(DIM, np.finfo(np.float32).max, dtype="<f4")
    huge[::2] *= -1
    with writable(indexed.db) as con:  # vectors whose norm overflows float32, stamp kept
        con.execute("UPDATE vec_chunks SET embedding = ? WHERE chunk_id = "
                    "(SELECT min(chunk_id) FROM vec_chunks)", (huge.tobytes(),))
    matrix_path = indexed.db.with_name(indexed.db.name + ".vectors.npy")
    matrix = np.load(matrix_path)
    np.save(matrix_path, np.where(np.arange(matrix.shape[1]) % 2, 1, -1)
            * np.finfo(np.float32).max * np.ones_like(matrix))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would now fail the command with a traceback
        result = doctor(indexed)
    assert result.exit_code == 1, result.output
    assert "vector-snapshot-mismatch" in result.stdout
    assert "Warning" not in result.stderr
