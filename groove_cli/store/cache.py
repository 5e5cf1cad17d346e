"""The query-embedding cache's writer (index.md §8): a short connection of its own, so a search
stores its query vectors without ever waiting on a running `index`."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from groove_cli.store.rows import f32_blob
from groove_cli.store.runtime import utc_now

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

QUERY_CACHE_MAX_ROWS = 10_000
"""The cache keeps the newest this many query vectors."""


def cache_put(db: Path, rows: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> bool:
    """Store query embeddings without waiting; False when the index cannot be written now.

    A separate short connection with no busy timeout, so a running `index` never blocks a
    search (index.md §8). Keeps only the newest 10,000 rows.
    """
    if not rows:
        return True
    try:
        con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READWRITE)
        con.execute("PRAGMA busy_timeout=0")
        now = utc_now()
        con.execute("BEGIN IMMEDIATE")
        try:
            for key, vector in rows:
                con.execute(
                    "INSERT OR REPLACE INTO query_cache(key, embedding, created) VALUES (?, ?, ?)",
                    (key, f32_blob(vector), now),
                )
            con.execute(
                "DELETE FROM query_cache WHERE key NOT IN (SELECT key FROM query_cache "
                "ORDER BY created DESC, key DESC LIMIT ?)", (QUERY_CACHE_MAX_ROWS,))
            con.execute("COMMIT")
        except apsw.Error:
            con.execute("ROLLBACK")
            raise
        finally:
            con.close()
    except apsw.Error:
        return False
    return True


class DeferredCache:
    """Query embeddings a long-lived reader (the server) keeps in memory and writes in batches
    from a background thread, so no search waits on the cache write (serve.md §8).

    `get` answers from the pending entries first; a background thread writes them with
    `cache_put` (its own short connection, never blocking readers: WAL) once `delay_s` has
    passed since the first of them, and keeps them for the next round when the index cannot
    be written now (a running `index`). `close` writes what is left. A crash loses only the
    pending entries: the cache is an optimisation, the index stays valid.
    """

    def __init__(self, db: Path, delay_s: float = 1.0) -> None:
        self.db = db
        self.delay_s = delay_s
        self._pending: dict[str, npt.NDArray[np.float32]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def get(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The pending vectors of `keys` (not yet in the database)."""
        with self._lock:
            return {key: self._pending[key] for key in keys if key in self._pending}

    def put(self, rows: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        """Keep `rows` for the next write (the newest QUERY_CACHE_MAX_ROWS at most)."""
        if not rows:
            return
        with self._lock:
            if self._closed:
                return
            for key, vector in rows:
                self._pending.pop(key, None)
                self._pending[key] = vector
            while len(self._pending) > QUERY_CACHE_MAX_ROWS:
                del self._pending[next(iter(self._pending))]
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="groove-query-cache",
                                                daemon=True)
                self._thread.start()
        self._wake.set()

    def flush(self) -> bool:
        """Write every pending entry now; False when the index could not be written (they
        stay pending)."""
        with self._write_lock:
            with self._lock:
                rows = list(self._pending.items())
            if not rows or not cache_put(self.db, rows):
                return not rows
            with self._lock:
                for key, vector in rows:
                    if self._pending.get(key) is vector:
                        del self._pending[key]
            return True

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.wait(self.delay_s):  # gather a batch: one write for many searches
                return  # close() writes the rest
            self._wake.clear()
            if not self.flush():
                self._wake.set()  # the index is busy: try again after the next delay

    def close(self) -> None:
        """Stop the thread and write what is pending (best effort)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._stop.set()
        self._wake.set()
        if thread is not None:
            thread.join()
        self.flush()
