"""The Postgres store's schema: numbered migrations, the connection, the KB registry.

Every row carries its knowledge base (`kb`, the id of a `groove_kb` row), so one database holds
many KBs; ids of documents and chunks are numbered per KB (as SQLite numbers them per file), so
the same notes indexed in the same order get the same ids on both stores. Migrations run once
per database, under a transaction-level advisory lock, and are recorded in `groove_schema`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from groove_cli.dburl import INSTALL_HINT, PgTarget, mask
from groove_cli.errors import GrooveError
from groove_cli.store.fts_tables import CJK_TABLE, TABLES, TRIGRAM_TABLE, WORDS_TABLE, FtsTable

if TYPE_CHECKING:
    import psycopg

MIN_SERVER = 130000
"""PostgreSQL 13: pgvector's HNSW needs it."""
MIGRATE_LOCK = 0x67726F6F  # "groo": the advisory lock key of schema changes
INDEXER_LOCK_CLASS = 0x67726F76  # "grov": with the KB's id, one indexer per KB


def _total_column(table: FtsTable) -> str:
    """A full-text table's token total on `groove_kb` (bm25's avgdl), as a column definition."""
    return f"{table.pg_total} bigint NOT NULL DEFAULT 0"


def _chunk_columns(table: FtsTable) -> str:
    """A full-text table's columns on `groove_chunks`, as column definitions."""
    h, c, b = table.pg_columns
    return (f"{h} text NOT NULL, {c} text NOT NULL, {b} text NOT NULL,\n"
            f"  {table.pg_length} integer NOT NULL")


def _trigram_index(table: FtsTable) -> str:
    """pg_trgm's GIN index over a trigram table's folded columns (candidates for LIKE)."""
    return ", ".join(f"{column} gin_trgm_ops" for column in table.pg_columns)


def add_table_sql(table: FtsTable) -> str:
    """The migration of a full-text table declared after migration 1: its columns, empty in
    the chunks already stored (and its GIN index, for a trigram table). The table must declare
    a tokeniser `version`: a KB written before the migration has none recorded for it, so the
    next `groove index` fills its columns (`PgStore.backfill_fts`)."""
    if table.version is None:
        raise ValueError(f"{table.name}: a table added to existing KBs needs a version")
    h, c, b = table.pg_columns
    sql = (f"ALTER TABLE groove_kb ADD COLUMN {_total_column(table)};\n"
           f"ALTER TABLE groove_chunks ADD COLUMN {h} text NOT NULL DEFAULT '', "
           f"ADD COLUMN {c} text NOT NULL DEFAULT '', ADD COLUMN {b} text NOT NULL DEFAULT '', "
           f"ADD COLUMN {table.pg_length} integer NOT NULL DEFAULT 0;\n")
    if table.substrings:
        sql += (f"CREATE INDEX groove_chunks_{table.pg_prefix}_trigram ON groove_chunks "
                f"USING gin ({_trigram_index(table)});\n")
    return sql


# Migration 1's full-text columns are those of the three tables declared first in
# fts_tables.py (column names are the stored data's: a declaration never renames them).
_WRITTEN: tuple[tuple[int, str], ...] = (
    (1, f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE TABLE groove_kb (
  id serial PRIMARY KEY,
  name text NOT NULL UNIQUE,
  dim integer,                                  -- the embedding dimension, once known
  vector_index text NOT NULL DEFAULT 'hnsw',    -- hnsw: pgvector column + HNSW; exact: bytea
  next_document bigint NOT NULL DEFAULT 1,      -- per-KB ids, never reused (AUTOINCREMENT)
  next_chunk bigint NOT NULL DEFAULT 1,
  chunks bigint NOT NULL DEFAULT 0,             -- BM25's N, then each table's token total
  {_total_column(TRIGRAM_TABLE)},
  {_total_column(WORDS_TABLE)},
  {_total_column(CJK_TABLE)},
  created text NOT NULL);
CREATE TABLE groove_meta (
  kb integer NOT NULL REFERENCES groove_kb(id) ON DELETE CASCADE,
  key text NOT NULL,
  value text NOT NULL,
  PRIMARY KEY (kb, key));
CREATE TABLE groove_documents (
  kb integer NOT NULL REFERENCES groove_kb(id) ON DELETE CASCADE,
  id bigint NOT NULL,
  path text NOT NULL,
  title text, topic text, category text, depth text,
  tags text NOT NULL DEFAULT '[]',
  date text,
  content_hash text NOT NULL,
  size_bytes bigint NOT NULL,
  last_indexed text NOT NULL,
  PRIMARY KEY (kb, id),
  UNIQUE (kb, path));
CREATE TABLE groove_chunks (
  kb integer NOT NULL,
  id bigint NOT NULL,
  document_id bigint NOT NULL,
  chunk_index integer NOT NULL,
  heading text, level integer,
  ancestry text NOT NULL DEFAULT '[]',
  content text NOT NULL,
  context_text text,
  token_count integer,
  quality_score double precision NOT NULL,
  line_start integer, line_end integer,
  {_chunk_columns(TRIGRAM_TABLE)},
  {_chunk_columns(WORDS_TABLE)},
  {_chunk_columns(CJK_TABLE)},
  embedding vector,                             -- vector_index = 'hnsw'
  embedding_f32 bytea,                          -- vector_index = 'exact' (little-endian f32)
  PRIMARY KEY (kb, id),
  UNIQUE (kb, document_id, chunk_index),
  FOREIGN KEY (kb, document_id) REFERENCES groove_documents(kb, id) ON DELETE CASCADE);
CREATE INDEX groove_chunks_quality ON groove_chunks (kb, quality_score);
CREATE INDEX groove_chunks_trigram ON groove_chunks
  USING gin ({_trigram_index(TRIGRAM_TABLE)});
CREATE TABLE groove_postings (
  kb integer NOT NULL,
  tbl smallint NOT NULL,                        -- the table's postings_code
  term text NOT NULL,
  chunk_id bigint NOT NULL,
  tf_heading integer NOT NULL, tf_context integer NOT NULL, tf_content integer NOT NULL,
  len integer NOT NULL,                         -- the chunk's token count in this table
  PRIMARY KEY (kb, tbl, term, chunk_id) INCLUDE (tf_heading, tf_context, tf_content, len));
-- no foreign key: a per-row check on the busiest insert; the store deletes a chunk's postings
-- with the chunk (same transaction) and doctor reports postings without their chunk
CREATE INDEX groove_postings_chunk ON groove_postings (kb, chunk_id);
CREATE TABLE groove_query_cache (
  kb integer NOT NULL REFERENCES groove_kb(id) ON DELETE CASCADE,
  key text NOT NULL,
  embedding bytea NOT NULL,
  created text NOT NULL,
  PRIMARY KEY (kb, key));
CREATE FUNCTION groove_occurrences(hay text, needle text, overlapping boolean)
RETURNS integer LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  n integer := 0;
  p integer;
  rest text := hay;
BEGIN
  IF NOT overlapping THEN
    RETURN (length(hay) - length(replace(hay, needle, ''))) / length(needle);
  END IF;
  LOOP
    p := strpos(rest, needle);
    EXIT WHEN p = 0;
    n := n + 1;
    rest := substr(rest, p + 1);
  END LOOP;
  RETURN n;
END $$;
"""),
    # several vectors per chunk (index.md §4, store.md): a long chunk's extra pieces; a
    # chunk's `pieces` is NULL while it is pending (see SQLite's 0005_chunk_pieces.sql)
    (2, """
ALTER TABLE groove_chunks ADD COLUMN pieces integer;
UPDATE groove_chunks c SET pieces = 1
 WHERE (embedding IS NOT NULL OR embedding_f32 IS NOT NULL) AND token_count IS NOT NULL
   AND token_count + 32 <= coalesce((SELECT value::integer FROM groove_meta m
                                     WHERE m.kb = c.kb AND m.key = 'embedding_max_length'), 0)
   AND coalesce((SELECT value FROM groove_meta m
                 WHERE m.kb = c.kb AND m.key = 'context_mode'), 'off') = 'off';
CREATE TABLE groove_chunk_pieces (
  kb integer NOT NULL,
  chunk_id bigint NOT NULL,
  piece integer NOT NULL,                       -- 1, 2, …: piece 0 is the chunk's own vector
  embedding vector,                             -- vector_index = 'hnsw'
  embedding_f32 bytea,                          -- vector_index = 'exact'
  PRIMARY KEY (kb, chunk_id, piece),
  FOREIGN KEY (kb, chunk_id) REFERENCES groove_chunks(kb, id) ON DELETE CASCADE);
"""),
)


def declared_migrations(tables: tuple[FtsTable, ...]) -> tuple[tuple[int, str], ...]:
    """The migrations that add the full-text tables declared after migration 1, each at the
    schema version its declaration names (`FtsTable.pg_migration`)."""
    return tuple((table.pg_migration, add_table_sql(table)) for table in tables
                 if table.pg_migration is not None)


def migrations(tables: tuple[FtsTable, ...]) -> tuple[tuple[int, str], ...]:
    """Every migration in order: the written ones and those the table declarations derive."""
    found = sorted((*_WRITTEN, *declared_migrations(tables)), key=lambda item: item[0])
    numbers = [number for number, _ in found]
    if numbers != list(range(1, len(found) + 1)):
        raise ValueError(f"Postgres migrations must be numbered 1, 2, …: {numbers}")
    return tuple(found)


MIGRATIONS = migrations(TABLES)
SCHEMA_VERSION = max(number for number, _ in MIGRATIONS)


def psycopg_module() -> Any:
    """psycopg, or the one-line error that says how to install it."""
    try:
        import psycopg
    except ImportError:
        raise GrooveError("the Postgres store needs psycopg, which is not installed",
                          hint=INSTALL_HINT) from None
    return psycopg


def connect(target: PgTarget) -> psycopg.Connection[Any]:
    """An autocommit connection (explicit transactions only); a clear error when the server
    cannot be reached, without the URL's password."""
    pg = psycopg_module()
    try:
        con: psycopg.Connection[Any] = pg.connect(
            target.url, autocommit=True, connect_timeout=10, application_name="groove")
    except pg.Error as exc:
        first = mask(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        raise GrooveError(f"cannot connect to the Postgres store {mask(target.url)}: {first}",
                          hint="check the URL, that the server is running and reachable, and "
                               "the user's password") from None
    version = int(con.info.server_version)
    if version < MIN_SERVER:
        con.close()
        raise GrooveError(f"the Postgres server at {mask(target.url)} is version "
                          f"{version // 10000}; groove needs 13 or newer")
    return con


def installed_version(con: psycopg.Connection[Any]) -> int:
    """The schema version recorded in the database; 0 before the first migration."""
    row = con.execute("SELECT to_regclass('groove_schema') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    found = con.execute("SELECT max(version) FROM groove_schema").fetchone()
    return int(found[0]) if found and found[0] is not None else 0


def migrate(con: psycopg.Connection[Any], target: PgTarget) -> None:
    """Apply pending migrations, one transaction each, under the schema advisory lock."""
    pg = psycopg_module()
    if installed_version(con) >= SCHEMA_VERSION:
        check_not_newer(con, target)
        return
    try:
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            con.execute("CREATE TABLE IF NOT EXISTS groove_schema "
                        "(version integer PRIMARY KEY, applied text NOT NULL)")
            current = installed_version(con)
            for number, sql in MIGRATIONS:
                if number > current:
                    con.execute(sql)
                    con.execute("INSERT INTO groove_schema(version, applied) "
                                "VALUES (%s, now()::text)", (number,))
    except (pg.errors.FeatureNotSupported, pg.errors.UndefinedFile,
            pg.errors.InsufficientPrivilege) as exc:
        raise missing_extension(target, exc) from None


def missing_extension(target: PgTarget, exc: Exception) -> GrooveError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return GrooveError(f"the Postgres server at {mask(target.url)} cannot enable the vector and "
                       f"pg_trgm extensions: {mask(first)}",
                       hint="install pgvector (and contrib's pg_trgm) on the server, or ask its "
                            "admin to run CREATE EXTENSION vector; CREATE EXTENSION pg_trgm")


def check_not_newer(con: psycopg.Connection[Any], target: PgTarget) -> None:
    version = installed_version(con)
    if version > SCHEMA_VERSION:
        raise GrooveError(f"the Postgres store {mask(target.url)} was written by a newer groove "
                          f"(schema version {version}; this groove supports up to "
                          f"{SCHEMA_VERSION})")


def kb_row(con: psycopg.Connection[Any], name: str) -> int | None:
    row = con.execute("SELECT id FROM groove_kb WHERE name = %s", (name,)).fetchone()
    return int(row[0]) if row else None


def create_kb(con: psycopg.Connection[Any], name: str, created: str) -> int:
    con.execute("INSERT INTO groove_kb(name, created) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                (name, created))
    found = kb_row(con, name)
    assert found is not None
    return found


def try_indexer_lock(con: psycopg.Connection[Any], kb: int) -> bool:
    """The KB's session-level advisory lock, taken without waiting (one indexer per KB)."""
    row = con.execute("SELECT pg_try_advisory_lock(%s, %s)", (INDEXER_LOCK_CLASS, kb)).fetchone()
    return bool(row and row[0])


def kb_list(con: psycopg.Connection[Any]) -> list[tuple[str, int, int, str | None]]:
    """Every KB in the database: (name, documents, chunks, last indexed)."""
    if installed_version(con) == 0:
        return []
    return [(str(name), int(docs), int(chunks), last) for name, docs, chunks, last in con.execute(
        "SELECT k.name, (SELECT count(*) FROM groove_documents d WHERE d.kb = k.id), k.chunks, "
        "(SELECT value FROM groove_meta m WHERE m.kb = k.id AND m.key = 'last_indexed') "
        "FROM groove_kb k ORDER BY k.name")]


def only_kb(con: psycopg.Connection[Any], target: PgTarget) -> PgTarget:
    """`target` naming the database's only KB (a search without a KB folder or `[store] kb`);
    several KBs are an error that lists them."""
    names = [str(r[0]) for r in con.execute("SELECT name FROM groove_kb ORDER BY name")]
    if len(names) == 1:
        return dataclasses.replace(target, kb=names[0])
    listed = ", ".join(names[:10]) or "none"
    raise GrooveError(f"the Postgres store {mask(target.url)} holds {len(names)} knowledge bases "
                      f"({listed}); say which one",
                      hint='set kb = "<name>" under [store] in groove.toml, or pass --kb-path')
