"""The query-embedding cache's writer (index.md §8): a short connection of its own, so a search
stores its query vectors without ever waiting on a running `index`."""

from __future__ import annotations

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
