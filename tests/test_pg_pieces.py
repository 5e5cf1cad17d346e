"""Several vectors per long chunk on Postgres (index.md §4, store.md): the same pieces, the same
resumable fill and the same best-piece ranking as the SQLite store, with HNSW and with exact
vectors. The tiny model and the piece arithmetic of tests/test_vector_pieces.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from groove_cli.dburl import PgTarget
from groove_cli.index import IndexOptions, IndexReport, index_kb
from groove_cli.store import Store
from groove_cli.vectors import VectorSnapshot, vec0_knn
from tests.onnx_builders import model_dir
from tests.test_index import DIM, TINY_MODEL_TOML, expected_vector, tiny_embedder_onnx, write
from tests.test_vector_pieces import TAIL, filler, pieces_of

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[dev]')")

from groove_cli.store.postgres import PgStore

LONG = {"long-0.md": filler(300, seed=10), "long-1.md": filler(300, seed=11),
        "tail.md": filler(300, seed=12) + TAIL}
SHORT = {"short-0.md": "the cat sat on the mat\nthe dog sat on the mat",
         "short-1.md": "a bird flies over the green tree\nthe red house",
         "short-2.md": "the red fish swims\nthe red fish swims"}


def _kb(root: Path) -> Path:
    kb = root / "kb"
    for name, words in LONG.items():
        write(kb, name, " ".join(words) + "\n")
    for name, text in SHORT.items():
        write(kb, name, text + "\n")
    return kb


def _runs(options: IndexOptions) -> tuple[IndexReport, IndexReport]:
    """An index run stopped in phase 2 (after the 6 files, the token count and two model
    batches), then a run that finishes."""
    calls = iter(range(10_000))
    first = index_kb(options, should_stop=lambda: next(calls) >= 6 + 1 + 2)
    return first, index_kb(options)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return model_dir(tmp_path / "model" / "embedder", tiny_embedder_onnx(), TINY_MODEL_TOML)


@pytest.fixture(params=["hnsw", "exact"])
def stores(request: pytest.FixtureRequest, pg_url: str, pg_kb: str, tmp_path: Path,
           model: Path) -> Iterator[tuple[Store, PgStore, list[tuple[IndexReport, IndexReport]]]]:
    kb = _kb(tmp_path)
    target = PgTarget(pg_url, pg_kb, vector_index=request.param)
    runs = []
    for db in (tmp_path / "index.db", target):
        options = IndexOptions(kb=kb, db=db, model=str(model.resolve()), max_length=None,
                               models_dir=tmp_path / "models", quiet=True, vector_pieces=True)
        runs.append(_runs(options))
    lite = Store.open_readonly(tmp_path / "index.db")
    pg = PgStore.open_readonly(target)
    try:
        yield lite, pg, runs
    finally:
        lite.close()
        pg.close()


def test_pieces_fill_resume_and_rank_alike_on_both_stores(
        stores: tuple[Store, PgStore, list[tuple[IndexReport, IndexReport]]]) -> None:
    lite, pg, runs = stores
    # 300 tokens: 5 extra pieces (53, 104, 155, 206, 257); 330 tokens: 6 (… 308)
    assert [len(pieces_of(len(w))) for w in LONG.values()] == [5, 5, 6]
    total = 5 + 5 + 6
    (lite_first, _), (pg_first, _) = runs
    for first, second in runs:
        assert first.interrupted and not second.interrupted
        assert 0 < first.embedded < 6 and first.embedded + second.embedded == 6
        assert first.pieces + second.pieces == total  # no piece embedded twice
    assert (pg_first.embedded, pg_first.pieces) == (lite_first.embedded, lite_first.pieces)
    assert pg.pending_vectors() == lite.pending_vectors() == []
    assert pg.vector_count() == lite.vector_count() == 6

    lite_pieces, pg_pieces = list(lite.all_piece_vectors()), list(pg.all_piece_vectors())
    assert [c for c, _ in pg_pieces] == [c for c, _ in lite_pieces] and len(lite_pieces) == total
    for (_, a), (_, b) in zip(lite_pieces, pg_pieces, strict=True):
        assert np.allclose(np.frombuffer(a, "<f4"), np.frombuffer(b, "<f4"), atol=1e-6)
    tail_words = LONG["tail.md"]
    a, b = pieces_of(len(tail_words))[-1]
    tail_id = max(c for c, _ in lite_pieces)  # the last note written (sorted paths: tail.md)
    stored = pg.piece_vectors_by_id([tail_id], DIM)[tail_id]
    assert stored.shape == (7, DIM)  # first piece + 6
    assert np.allclose(stored[-1], expected_vector(" ".join(tail_words[a:b])), atol=1e-6)

    rng = np.random.default_rng(5)
    queries = [expected_vector("fish swims"), *rng.standard_normal((5, DIM)).astype(np.float32)]
    lite_knn, pg_knn = vec0_knn(lite), vec0_knn(pg)
    snapshot = VectorSnapshot.from_store(lite, DIM)
    for query in queries:
        want = snapshot.knn(query, 4)
        for got in (lite_knn(query, 4), pg_knn(query, 4)):
            assert [c for c, _ in got] == [c for c, _ in want]
            assert np.allclose([d for _, d in got], [d for _, d in want], atol=1e-5)
    assert snapshot.knn(queries[0], 1)[0][0] == tail_id  # the tail, by its best piece
