"""Eval's searches on two readers pinned to one state of the index (eval.md §2).

A large golden set runs its searches on the session's connection and one more read-only
connection, in two threads; both read transactions start while a short-lived connection holds
the write lock, so they see the same committed state. These tests check that state is shared,
the fallback when the lock is busy, and that the parallel results equal the sequential ones.
"""

from __future__ import annotations

import math
from pathlib import Path

import apsw
import numpy as np
import pytest

from groove_cli.evaluate.runner import hit_records
from groove_cli.retrieve import searcher as runner
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.pipeline import search
from groove_cli.retrieve.query import compile_query
from groove_cli.retrieve.searcher import Batch, search_all
from groove_cli.store import Store
from groove_cli.vectors import vec0_knn
from tests.test_pipeline import Chunk, Note, build

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
NOTES = [
    Note(f"n{i:02}.md", [Chunk(
        f"{WORDS[i % 6]} {WORDS[(i * 5) % 6]} note {i} 東京の天気{'晴れ' * (i % 3)}です",
        (math.cos(i / 7), math.sin(i / 7)))])
    for i in range(40)
]
QUERIES = [f"{WORDS[i % 6]} {WORDS[(i + 2) % 6]}" for i in range(30)] + [
    "東京の天気", "晴れです", "alpha 東京", "-beta gamma delta"] * 10


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return build(tmp_path / "index.db", NOTES)


def set_probe(db: Path, value: str) -> None:
    """Commit a change from an unrelated connection."""
    con = apsw.Connection(str(db))
    con.execute("INSERT OR REPLACE INTO index_meta(key, value) VALUES ('probe', ?)", (value,))
    con.close()


def test_pinned_readers_see_one_state_while_another_connection_commits(store: Store) -> None:
    set_probe(store.path, "before")
    with store.pinned_readers(1) as stores:
        assert len(stores) == 2 and stores[0] is store
        set_probe(store.path, "after")  # lands after both transactions started
        assert [s.meta()["probe"] for s in stores] == ["before", "before"]
    assert store.meta()["probe"] == "after"
    with pytest.raises(apsw.ConnectionClosedError):
        stores[1].meta()  # the extra reader is closed with the transaction


def test_a_busy_write_lock_leaves_a_single_reader(store: Store) -> None:
    writer = apsw.Connection(str(store.path))
    writer.execute("BEGIN IMMEDIATE")  # an `index` run holding the write lock
    try:
        with store.pinned_readers(1) as stores:
            assert stores == [store]
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    with store.pinned_readers(1) as stores:
        assert len(stores) == 2


def queries_and_vectors(store: Store) -> tuple[list, dict, dict]:
    compiled = [compile_query(q) for q in QUERIES]
    vectors = {i: np.array([math.cos(i / 5), math.sin(i / 5)], dtype=np.float32)
               for i in range(len(compiled))}
    knn = vec0_knn(store)
    neighbours = {i: knn(v, 50) for i, v in vectors.items()}
    return compiled, vectors, neighbours


def test_two_readers_give_the_sequential_results_in_file_order(store: Store) -> None:
    compiled, vectors, neighbours = queries_and_vectors(store)
    params = SearchParams(limit=10)
    expected = [[(h.chunk.path, h.score) for h in search(
        store, q, params, vector=vectors[i], knn=vec0_knn(store), dim=2).hits]
        for i, q in enumerate(compiled)]
    assert sum(1 for e in expected if e) > 30  # the queries do find notes
    with store.pinned_readers(1) as stores:
        assert len(stores) == 2
        results = search_all(stores, Batch(tuple(compiled), params, vectors, neighbours, None), 2)
    hits = [hit_records(r) for r in results]
    assert [[(h.path, h.score) for h in q] for q in hits] == expected
    assert [[h.rank for h in q] for q in hits] == [list(range(1, len(e) + 1)) for e in expected]


def test_an_error_in_either_thread_reaches_the_caller(store: Store) -> None:
    compiled, _, neighbours = queries_and_vectors(store)
    with store.pinned_readers(1) as stores, pytest.raises(ValueError, match="no query vector"):
        # hybrid searches without their query vectors
        search_all(stores, Batch(tuple(compiled), SearchParams(), {}, neighbours, None), 2)


def test_a_second_reader_only_for_large_sets_without_a_reranker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 2)
    assert runner.extra_readers(runner.PARALLEL_MIN_QUERIES, rerank=False) == 1
    assert runner.extra_readers(runner.PARALLEL_MIN_QUERIES - 1, rerank=False) == 0
    assert runner.extra_readers(1000, rerank=True) == 0
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 1)
    assert runner.extra_readers(1000, rerank=False) == 0
