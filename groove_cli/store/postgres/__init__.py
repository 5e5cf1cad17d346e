"""The Postgres store (issue 18): one database, many knowledge bases, pgvector + pg_trgm.

`PgStore` implements the same methods as the SQLite `Store` (the `IndexReader` seam and the
indexer's writes), so the engine, `index`, `status`, `doctor`, `eval` and `tune` run on either.
psycopg is imported only when a Postgres URL is used (the `postgres` extra).
"""

from __future__ import annotations

from groove_cli.store.postgres.schema import SCHEMA_VERSION, kb_list
from groove_cli.store.postgres.store import PgStore

__all__ = ["SCHEMA_VERSION", "PgStore", "kb_list"]
