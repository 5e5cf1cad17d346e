"""The index store: SQL lives only in this package.

`sqlite.Store` is the SQLite index file (apsw + sqlite-vec); `runtime` checks the SQLite
runtime and holds the migrations; `reader.IndexReader` is the seam the retrieval engine talks
to; `postgres.PgStore` is one KB of a Postgres database, with the same methods. `open_reader`
and `open_writer` pick the store from where the index is (a file, or a `PgTarget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli.dburl import IndexLocation
from groove_cli.store.cache import QUERY_CACHE_MAX_ROWS, cache_put
from groove_cli.store.reader import IndexReader
from groove_cli.store.rows import FTS_TABLES
from groove_cli.store.runtime import (
    MIN_SQLITE,
    MIN_SQLITE_VEC,
    SCHEMA_VERSION,
    check_runtime,
    utc_now,
    vec_extension_path,
)
from groove_cli.store.sqlite import IntegrityReport, Store

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from groove_cli.store.postgres import PgStore

def open_reader(db: IndexLocation, kb_hint: str = "<path>") -> Store | PgStore:
    """The index at `db`, opened for reading (never created or migrated)."""
    if isinstance(db, Path):
        return Store.open_readonly(db, kb_hint)
    from groove_cli.store.postgres import PgStore

    return PgStore.open_readonly(db, kb_hint)


def open_writer(db: IndexLocation) -> Store | PgStore:
    """The index at `db`, created or migrated, for the indexer (Postgres: with its lock)."""
    if isinstance(db, Path):
        return Store.open_for_index(db)
    from groove_cli.store.postgres import PgStore

    return PgStore.open_for_index(db)


def put_cache(store: Store | PgStore, rows: Sequence[tuple[str, npt.NDArray[np.float32]]]
              ) -> bool:
    """Store query embeddings without waiting (SQLite: a short separate connection)."""
    if isinstance(store, Store):
        return cache_put(store.path, rows)
    return store.cache_put(rows)


__all__ = [
    "FTS_TABLES",
    "MIN_SQLITE",
    "MIN_SQLITE_VEC",
    "QUERY_CACHE_MAX_ROWS",
    "SCHEMA_VERSION",
    "IndexReader",
    "IntegrityReport",
    "Store",
    "cache_put",
    "check_runtime",
    "open_reader",
    "open_writer",
    "put_cache",
    "utc_now",
    "vec_extension_path",
]
