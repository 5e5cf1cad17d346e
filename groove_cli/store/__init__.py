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
from groove_cli.store.fts_tables import FTS_TABLES
from groove_cli.store.reader import IndexReader
from groove_cli.store.runtime import (
    MIN_SQLITE,
    MIN_SQLITE_VEC,
    SCHEMA_VERSION,
    check_runtime,
    stamp,
    utc_now,
    vec_extension_path,
)
from groove_cli.store.sqlite import IntegrityReport, Store

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from groove_cli.store.postgres import PgStore
REBUILD_KEY = "rebuild_started"
"""`index_meta` key a full build (`index --force`, or the first run) sets when it wipes the
index and clears (to "") when a run finishes uninterrupted: set, the index holds only part of
the KB, and reading commands say so instead of answering from it silently."""


def incomplete_rebuild(meta: dict[str, str], db: object, kb_hint: str) -> str | None:
    """The warning for an index whose full build never finished, else None."""
    if not meta.get(REBUILD_KEY):
        return None
    return (f"the index at {db} is incomplete: a full build (`groove index --force`, or the "
            f"first `groove index`) stopped before it finished, so results cover only the notes "
            f"indexed so far; run `groove index --kb-path {kb_hint}` to finish it")


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


def copy_database(source: Path, target: Path) -> None:
    """Copy the SQLite file `source` (its committed `-wal` content included) to a new file
    `target` with SQLite's online backup, so a reader or a leftover journal never makes the
    copy inconsistent; the copy keeps `source`'s journal mode."""
    import apsw

    src = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
    dest = apsw.Connection(str(target))
    try:
        with dest.backup("main", src, "main") as backup:
            backup.step(-1)
    finally:
        dest.close()
        src.close()


def schema_version(path: Path) -> int:
    """The groove schema version an SQLite file records (`PRAGMA user_version`; 0: not a groove
    index)."""
    import apsw

    con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(str(con.execute("PRAGMA user_version").fetchall()[0][0]))
    finally:
        con.close()


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
    "REBUILD_KEY",
    "SCHEMA_VERSION",
    "IndexReader",
    "IntegrityReport",
    "Store",
    "cache_put",
    "check_runtime",
    "copy_database",
    "incomplete_rebuild",
    "open_reader",
    "open_writer",
    "put_cache",
    "schema_version",
    "stamp",
    "utc_now",
    "vec_extension_path",
]
