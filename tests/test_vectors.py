"""The numpy vector snapshot against plain vec0 KNN, and its version stamp (vectors.py)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from groove_cli.index import RuntimeModel
from groove_cli.retrieve.legs import cosines
from groove_cli.retrieve.searcher import Searcher
from groove_cli.store import Store
from groove_cli.types import ChunkRow, ChunkVectors, DocumentRow
from groove_cli.vectors import (
    SnapshotStamp,
    VectorSnapshot,
    duplicate_rows,
    expected_max,
    refresh_snapshot,
    vec0_knn,
)

DIM = 6
ROWS = 300
ZERO_ROW = 77  # position of the zero vector; its chunk id is ZERO_ROW + 1
TIED = (3, 10, 200)  # positions holding one and the same vector
PAIR = (49, 50)


def _vectors() -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(20250521)
    vectors = rng.normal(size=(ROWS, DIM)).astype(np.float32)
    for position in TIED[1:]:
        vectors[position] = vectors[TIED[0]]
    vectors[PAIR[1]] = vectors[PAIR[0]]
    vectors[ZERO_ROW] = 0.0
    return vectors


def _write(store: Store, vectors: npt.NDArray[np.float32], start: int = 0) -> None:
    with store.transaction():
        for offset, vector in enumerate(vectors):
            i = start + offset
            doc = DocumentRow(f"n{i}.md", None, None, None, None, (), None, f"h{i}", 1, "t")
            chunk = ChunkRow(0, None, None, (), f"chunk {i}", None, None, 1.0)
            store.write_document(doc, [chunk], vector[None, :], None)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Store]]:
    """300 random 6-dim vectors (chunk id = position + 1), three identical, two identical, one zero."""
    db = tmp_path_factory.mktemp("vectors") / "index.db"
    store = Store.open_for_index(db)
    store.create_vec_table(DIM)
    _write(store, _vectors())
    store.close()
    reader = Store.open_readonly(db)
    yield db, reader
    reader.close()


def _reference(query: npt.NDArray[np.float32], k: int) -> list[int]:
    """Exact cosine KNN in float64, zero vectors dropped, ties by chunk id."""
    vectors = _vectors().astype(np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    q = query.astype(np.float64)
    ranked = sorted(
        (1.0 - float(vectors[i] @ q) / (norms[i] * np.linalg.norm(q)), i + 1)
        for i in range(ROWS) if norms[i] > 0
    )
    return [cid for _, cid in ranked[:k]]


def _queries() -> list[npt.NDArray[np.float32]]:
    vectors = _vectors()
    rng = np.random.default_rng(7)
    return [vectors[TIED[0]], vectors[PAIR[0]], vectors[5],
            *rng.normal(size=(12, DIM)).astype(np.float32)]


KS = (1, 2, 3, 4, 10, 57, 298, 299, 300, 1000)


def test_snapshot_drops_the_zero_vector_and_sorts_ids(index: tuple[Path, Store]) -> None:
    _, store = index
    snapshot = VectorSnapshot.from_store(store, DIM)
    assert snapshot.ids.tolist() == [i + 1 for i in range(ROWS) if i != ZERO_ROW]
    assert np.allclose(np.linalg.norm(snapshot.matrix, axis=1), 1.0, atol=1e-6)


def test_rows_by_id_are_the_stored_vectors_normalised(index: tuple[Path, Store]) -> None:
    """The pipeline's cosines read hits' vectors from the snapshot: the same directions as the
    store's rows; ids the snapshot lacks (the zero vector, unknown ids) are left out."""
    _, store = index
    snapshot = VectorSnapshot.from_store(store, DIM)
    wanted = [ROWS, 1, ZERO_ROW + 1, 5, 10**9, 5]
    rows = snapshot.rows_by_id(wanted)
    assert sorted(rows) == sorted({ROWS, 1, 5})
    stored = store.vectors_by_id(sorted(rows), DIM)
    for cid, row in rows.items():
        raw = stored[cid].astype(np.float64)
        assert np.allclose(row, raw / np.linalg.norm(raw), atol=1e-6)
    assert snapshot.rows_by_id([]) == {}


@pytest.mark.parametrize("k", KS)
def test_snapshot_knn_equals_vec0_knn(index: tuple[Path, Store], k: int) -> None:
    _, store = index
    snapshot = VectorSnapshot.from_store(store, DIM)
    vec0 = vec0_knn(store)
    for query in _queries():
        expected = _reference(query, k)
        from_snapshot = [cid for cid, _ in snapshot.knn(query, k)]
        from_vec0 = [cid for cid, _ in vec0(query, k)]
        assert from_snapshot == expected
        assert from_vec0 == expected
        assert ZERO_ROW + 1 not in from_vec0


def test_ties_at_the_kth_distance_go_to_the_lower_chunk_id(index: tuple[Path, Store]) -> None:
    # The query equals the vector shared by chunks 4, 11 and 201: all three at distance ~0.
    _, store = index
    query = _vectors()[TIED[0]]
    snapshot = VectorSnapshot.from_store(store, DIM)
    for knn in (snapshot.knn, vec0_knn(store)):
        assert [cid for cid, _ in knn(query, 1)] == [4]
        assert [cid for cid, _ in knn(query, 2)] == [4, 11]
        top3 = knn(query, 3)
        assert [cid for cid, _ in top3] == [4, 11, 201]
        assert top3[0][1] == top3[1][1] == top3[2][1]


def test_every_usable_row_comes_back_despite_the_zero_vector(index: tuple[Path, Store]) -> None:
    # vec0 alone returns the zero vector's NULL distance inside its k rows; it must not cost a slot.
    _, store = index
    query = _queries()[-1]
    assert len(vec0_knn(store)(query, ROWS - 1)) == ROWS - 1
    assert len(VectorSnapshot.from_store(store, DIM).knn(query, ROWS - 1)) == ROWS - 1
    assert len(vec0_knn(store)(query, 0)) == 0


def test_batch_knn_matches_single_queries(index: tuple[Path, Store]) -> None:
    # Same ids in the same order; distances may differ in the last bits (one matrix product).
    _, store = index
    snapshot = VectorSnapshot.from_store(store, DIM)
    queries = np.stack(_queries())
    batch = snapshot.knn_batch(queries, 10)
    assert [[cid for cid, _ in row] for row in batch] == [_reference(q, 10) for q in queries]


def _session(store: Store, db: Path) -> Searcher:
    runtime = RuntimeModel("test", DIM, 512, None, "")
    return Searcher(store, db, store.meta(), runtime, db.parent, offline=True)


def test_stale_stamp_is_ignored(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    store = Store.open_for_index(db)
    store.create_vec_table(DIM)
    vectors = _vectors()[:40]
    _write(store, vectors)
    refresh_snapshot(store, db)
    old_version = SnapshotStamp.of(store)
    assert VectorSnapshot.load(db, old_version, DIM) is not None
    assert VectorSnapshot.load(db, old_version, DIM + 1) is None  # wrong dimension

    # A new vector identical to the query bumps the version; the old snapshot lacks it.
    query = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=np.float32)
    _write(store, query[None, :], start=40)
    new_version = SnapshotStamp.of(store)
    assert new_version != old_version
    assert VectorSnapshot.load(db, new_version, DIM) is None
    store.close()

    reader = Store.open_readonly(db)
    try:
        session = _session(reader, db)
        # stale: the session falls back to vec0, which sees chunk 41
        assert session.knn()(query, 1)[0][0] == 41
        # a stale snapshot built in memory for batch commands sees it too
        batch = _session(reader, db)
        assert batch.snapshot().ids.tolist() == list(range(1, 42))
    finally:
        reader.close()

    writer = Store.open_for_index(db)
    refresh_snapshot(writer, db)
    writer.close()
    assert VectorSnapshot.load(db, new_version, DIM) is not None


def test_a_current_stamp_is_trusted(tmp_path: Path) -> None:
    # The reader does not re-check a current snapshot's content against vec0: the stamp decides.
    db = tmp_path / "index.db"
    store = Store.open_for_index(db)
    store.create_vec_table(DIM)
    _write(store, _vectors()[:20])
    version = SnapshotStamp.of(store)
    store.close()
    planted = VectorSnapshot(np.array([999], dtype=np.int64),
                             np.eye(1, DIM, dtype=np.float32))
    planted.save(db, version)
    reader = Store.open_readonly(db)
    try:
        assert _session(reader, db).knn()(np.ones(DIM, dtype=np.float32), 5)[0][0] == 999
    finally:
        reader.close()


def test_duplicate_rows_get_one_distance_in_any_batch() -> None:
    # 2,000 random 384-dim rows with one vector copied to rows spread over the matrix: whatever
    # block of the BLAS kernel a copy falls in, and whatever the batch size, every copy gets the
    # first copy's distance, so the chunk-id tie-break decides (eval's batches = search's 1 query).
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(2000, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    copies = [5, 17, 250, 1023, 1999]
    matrix[copies[1:]] = matrix[copies[0]]
    snapshot = VectorSnapshot(np.arange(1, 2001, dtype=np.int64), matrix,
                              duplicate_rows(matrix))
    assert snapshot.duplicates.tolist() == [[17, 5], [250, 5], [1023, 5], [1999, 5]]
    queries = rng.normal(size=(96, 384)).astype(np.float32)
    for batch in (queries[:1], queries[:7], queries):
        dist = snapshot.distances(batch)
        assert all(len(set(row[copies].tolist())) == 1 for row in dist)


def test_duplicates_survive_save_and_load(tmp_path: Path) -> None:
    matrix = np.eye(4, dtype=np.float32)
    matrix[3] = matrix[1]
    snapshot = VectorSnapshot(np.array([10, 11, 12, 13], dtype=np.int64), matrix,
                              duplicate_rows(matrix))
    db = tmp_path / "index.db"
    stamp = SnapshotStamp("0f" * 16, "7")
    snapshot.save(db, stamp)
    loaded = VectorSnapshot.load(db, stamp, 4)
    assert loaded is not None and loaded.duplicates.tolist() == [[3, 1]]
    # a snapshot written before duplicates were recorded is stale: rebuilt, never half-used
    stamp_file = db.with_name(db.name + ".vectors.json")
    document = json.loads(stamp_file.read_text())
    del document["duplicates"]
    stamp_file.write_text(json.dumps(document))
    assert VectorSnapshot.load(db, stamp, 4) is None


def test_expected_max_of_n_standard_normals() -> None:
    """e(n) by numerical integration against its closed forms: e(1) = 0, e(2) = 1/√π,
    e(3) = 3/(2√π); e(5) from the standard tables."""
    got = expected_max(np.arange(6))
    assert got[:2].tolist() == [0.0, 0.0]
    assert got[2] == pytest.approx(1 / math.sqrt(math.pi), abs=1e-9)
    assert got[3] == pytest.approx(3 / (2 * math.sqrt(math.pi)), abs=1e-9)
    assert got[5] == pytest.approx(1.16296447, abs=1e-7)


def _unit(cos: float) -> npt.NDArray[np.float32]:
    """A 2-dim unit vector whose cosine with (1, 0) is `cos`."""
    return np.asarray([cos, math.sqrt(1 - cos * cos)], dtype=np.float32)


def _pieces_index(tmp_path: Path, firsts: dict[str, float], extras: dict[str, list[float]]
                  ) -> tuple[Path, dict[str, int]]:
    """An index of one chunk per path whose first piece and extra pieces have the given cosines
    with the query (1, 0); returns the database and each path's chunk id."""
    db = tmp_path / "index.db"
    store = Store.open_for_index(db)
    store.create_vec_table(2)
    with store.transaction():
        for path in firsts:
            doc = DocumentRow(path, None, None, None, None, (), None, path, 1, "t")
            store.write_document(doc, [ChunkRow(0, None, None, (), path, None, None, 1.0)],
                                 None, None)
    ids = {path: cid for cid, path in
           store.con.execute("SELECT c.id, d.path FROM chunks c JOIN documents d "
                             "ON d.id = c.document_id")}
    with store.transaction():
        store.write_chunk_vectors([
            ChunkVectors(ids[path], _unit(cos),
                         np.asarray([_unit(x) for x in extras[path]],
                                    dtype=np.float32).reshape(-1, 2), 600)
            for path, cos in firsts.items()])
    store.close()
    return db, ids


QUERY = np.asarray([1.0, 0.0], dtype=np.float32)
"""The query of the pieces tests: `_unit(cos)` has cosine `cos` with it."""


def _assert_ranked(db: Path, sigma: float, want: dict[int, float], order: list[int]) -> None:
    """The query's σ over the extra pieces is `sigma`; each chunk's vector-leg score is
    `want[cid]` (from the store and from the snapshot), and both KNN paths return `order`'s
    first k at distance 1 − score, for k = 1 … len(order)."""
    reader = Store.open_readonly(db)
    try:
        snapshot = VectorSnapshot.from_store(reader, 2)
        assert snapshot.piece_spread(QUERY) == pytest.approx(sigma, abs=1e-6)
        for source in (None, snapshot):
            assert cosines(reader, order, QUERY, 2, source) == {
                cid: pytest.approx(v, abs=1e-6) for cid, v in want.items()}
        for knn in (snapshot.knn, vec0_knn(reader)):
            for k in range(1, len(order) + 1):
                got = knn(QUERY, k)
                assert [cid for cid, _ in got] == order[:k]
                assert [d for _, d in got] == pytest.approx([1 - want[c] for c in order[:k]],
                                                            abs=1e-5)
    finally:
        reader.close()


def test_a_two_piece_chunk_pays_sigma_times_e2_for_its_extra_chance(tmp_path: Path) -> None:
    """Query (1, 0). a: one piece, cosine 0.80. b: first piece 0.0, extra piece 0.85.
    c: first piece −0.5, extra piece 0.45. σ over the extra pieces {0.85, 0.45} = 0.2, so a
    2-piece chunk loses 0.2 · e(2) = 0.2/√π ≈ 0.1128: b (0.85 − 0.1128 = 0.7372) beats a by
    less than that and ranks below it; the plain best piece would put b first."""
    firsts = {"a.md": 0.80, "b.md": 0.0, "c.md": -0.5}
    extras = {"a.md": [], "b.md": [0.85], "c.md": [0.45]}
    db, ids = _pieces_index(tmp_path, firsts, extras)
    penalty = 0.2 / math.sqrt(math.pi)
    want = {ids["a.md"]: 0.80, ids["b.md"]: 0.85 - penalty, ids["c.md"]: 0.45 - penalty}
    order = [ids["a.md"], ids["b.md"], ids["c.md"]]
    _assert_ranked(db, 0.2, want, order)
    reader = Store.open_readonly(db)
    try:
        first_only = VectorSnapshot.from_store(reader, 2, pieces=False)
        assert [c for c, _ in first_only.knn(QUERY, 3)] == order  # b's first piece is far
        plain_best = {cid: max([firsts[p], *extras[p]]) for p, cid in ids.items()}
        assert max(plain_best, key=lambda c: plain_best[c]) == ids["b.md"]
    finally:
        reader.close()


def test_a_chunk_is_never_ranked_below_its_first_piece(tmp_path: Path) -> None:
    """Query (1, 0). a: one piece, 0.69. b: first piece 0.0, extra piece 0.85. d: first piece
    0.70, extra piece 0.72. σ over the extra pieces {0.85, 0.72} = 0.065, so a later piece
    counts less 0.065 · e(2) = 0.065/√π ≈ 0.0367: b scores 0.85 − 0.0367 = 0.8133; d's extra
    piece gives 0.6833, below its first piece, so d keeps 0.70 and ranks above a (charging d's
    best piece would put it at 0.6833, below a)."""
    firsts = {"a.md": 0.69, "b.md": 0.0, "d.md": 0.70}
    extras = {"a.md": [], "b.md": [0.85], "d.md": [0.72]}
    db, ids = _pieces_index(tmp_path, firsts, extras)
    penalty = 0.065 / math.sqrt(math.pi)
    want = {ids["b.md"]: 0.85 - penalty, ids["d.md"]: 0.70, ids["a.md"]: 0.69}
    _assert_ranked(db, 0.065, want, [ids["b.md"], ids["d.md"], ids["a.md"]])
