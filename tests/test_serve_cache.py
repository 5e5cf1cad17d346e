"""The server's deferred query-cache writes: a warm Index keeps new query vectors in memory and a
background thread writes them in batches; they reach the database, a later search uses them,
closing (the server's shutdown) writes what is pending, and a busy index loses nothing."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from groove_cli.api import Index, resolve
from groove_cli.retrieve.searcher import Searcher, cache_key
from groove_cli.serve.state import read_state
from groove_cli.store.cache import DeferredCache
from tests.serve_helpers import make_kb, serving, state_file
from tests.waiting import wait_until


@pytest.fixture
def kb_env(golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
    return kb, env


def served_index(kb: Path) -> Index:
    """An Index opened the way `groove serve` opens it."""
    settings, kb_dir, location, values = resolve(kb)
    return Index(settings, kb_dir, location, values, defer_cache=True)


def cached_keys(db: Path) -> set[str]:
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {str(row[0]) for row in con.execute("SELECT key FROM query_cache")}
    finally:
        con.close()


def key_of(searcher: Searcher, text: str) -> str:
    runtime = searcher.runtime
    assert runtime.sha256 is not None
    return cache_key(runtime.sha256, runtime.max_length, runtime.query_prefix, text)


def shared(index: Index) -> Searcher:
    searcher = index._searcher
    assert searcher is not None
    return searcher


def test_a_served_search_leaves_the_cache_write_to_the_background(
        kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, _ = kb_env
    db = kb / ".groove.db"
    with served_index(kb) as index:
        index.search("deferred cache first query", mode="vector")
        searcher = shared(index)
        deferred = searcher.deferred
        assert deferred is not None
        key = key_of(searcher, "deferred cache first query")
        assert key in deferred.get([key])  # kept in memory, answered from there
        deferred.delay_s = 0.05  # the next put wakes a quicker round
        index.search("deferred cache second query", mode="vector")
        second = key_of(searcher, "deferred cache second query")
        # the thread writes both, no flush asked
        wait_until(lambda: {key, second} <= cached_keys(db), what="the deferred cache write")
        assert deferred.get([key, second]) == {}
    # a fresh reader finds the vector in the database: no model is loaded for it
    with Index(*resolve(kb)) as fresh:
        fresh.search("deferred cache first query", mode="vector")
        assert shared(fresh).loaded_model is False


def test_closing_writes_what_is_pending(kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, _ = kb_env
    db = kb / ".groove.db"
    index = served_index(kb)
    index.search("closing flushes this query", mode="vector")
    searcher = shared(index)
    assert searcher.deferred is not None
    searcher.deferred.delay_s = 3600.0  # only close() can write it now
    key = key_of(searcher, "closing flushes this query")
    assert key not in cached_keys(db)
    index.close()
    assert key in cached_keys(db)


def test_a_busy_index_keeps_the_entries_for_the_next_round(
        kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, _ = kb_env
    db = kb / ".groove.db"
    deferred = DeferredCache(db, delay_s=3600.0)
    import numpy as np

    vector = np.arange(384, dtype=np.float32) / 384
    writer = apsw.Connection(str(db))
    writer.execute("BEGIN IMMEDIATE")  # a running `groove index` holds the write lock
    try:
        deferred.put([("k-busy", vector)])
        assert deferred.flush() is False
        assert set(deferred.get(["k-busy"])) == {"k-busy"}
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert deferred.flush() is True
    assert "k-busy" in cached_keys(db)
    assert deferred.get(["k-busy"]) == {}
    deferred.close()


def test_the_server_writes_pending_queries_when_it_stops(
        kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    db = kb / ".groove.db"
    text = "a query only the stopping server saw"
    with serving(kb, env) as server:
        status, body, _ = server.get("/search", q=text, mode="vector")
        assert status == 200, body
        assert read_state(state_file(kb)) is not None
    assert server.proc.returncode == 0
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = con.execute("SELECT count(*) FROM query_cache").fetchall()[0][0]
    finally:
        con.close()
    assert rows >= 1
    with Index(*resolve(kb)) as fresh:  # the vector is there: no model load for it
        fresh.search(text, mode="vector")
        assert shared(fresh).loaded_model is False



def test_a_search_reads_on_a_connection_no_other_thread_is_using(
        kb_env: tuple[Path, dict[str, str]]) -> None:
    """The server's threads search one Index at once; apsw refuses a connection that is busy
    in another thread, so every read of a search goes through the pool."""
    import threading

    kb, _ = kb_env
    with served_index(kb) as index:
        index.search("warm the model", mode="hybrid")
        searcher = shared(index)
        busy, done = threading.Event(), threading.Event()

        def hold() -> None:  # a long read on the Searcher's own connection, in another thread
            with searcher.reader() as store:
                assert store is searcher.store
                busy.set()
                store.con.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                                  "FROM n WHERE i < 3000000) SELECT count(*) FROM n").fetchall()
            done.set()

        holder = threading.Thread(target=hold)
        holder.start()
        busy.wait(10)
        try:
            results = index.search("retry budget", mode="hybrid", limit=3)
            assert not done.is_set()  # it ran while the other read was still going
        finally:
            holder.join()
        assert results.hits
