"""The index store: SQL lives only in this package.

`sqlite.Store` is the SQLite index file (apsw + sqlite-vec); `runtime` checks the SQLite
runtime and holds the migrations; `reader.IndexReader` is the seam the retrieval engine talks
to, so another store (e.g. Postgres) can serve search, eval and tune by implementing it.
"""

from __future__ import annotations

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
from groove_cli.store.sqlite import (
    QUERY_CACHE_MAX_ROWS,
    IntegrityReport,
    Store,
    cache_put,
)

__all__ = [
    "FTS_TABLES", "MIN_SQLITE", "MIN_SQLITE_VEC", "QUERY_CACHE_MAX_ROWS", "SCHEMA_VERSION",
    "IndexReader", "IntegrityReport", "Store", "cache_put", "check_runtime", "utc_now",
    "vec_extension_path",
]
