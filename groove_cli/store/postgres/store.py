"""`PgStore`: one knowledge base in a Postgres database, for the indexer and for searches.

The writer holds the KB's advisory lock for its whole run (a second indexer of the same KB
stops with one clear line) and writes each file in its own transaction; readers run in
REPEATABLE READ snapshots, so a search during an index run sees whole files and never waits.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from groove_cli.dburl import PgTarget, mask
from groove_cli.errors import GrooveError, IndexMissing
from groove_cli.store.cache import QUERY_CACHE_MAX_ROWS
from groove_cli.store.fts_tables import TABLES, FtsTable
from groove_cli.store.postgres import schema, tokens
from groove_cli.store.postgres.pieces import PgVectorWrites
from groove_cli.store.postgres.reads import binary_vector_type, vector_binary
from groove_cli.store.rows import f32_blob
from groove_cli.store.runtime import utc_now
from groove_cli.types import ChunkRow, DocumentRow, StoredDocument

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import psycopg

    from groove_cli.store.sqlite import IntegrityReport

HNSW_EF_CONSTRUCTION = 256
"""The HNSW build's candidate list (pgvector's default is 64; m stays at its default 16).
With 64 or 128 a real query could miss all of its true top 50 even at a high ef_search; with
256 every query was exact at groove's ef_search on vectors near real chunk embeddings, for a
one-off build and a per-chunk write cost small next to embedding the chunk (figures:
bench/results/backends.md, bench/results/code-notes.md#hnsw-build, docs/design/store.md)."""


@dataclasses.dataclass(slots=True)
class _Numbering:
    """The writer's own count of a KB's ids (see `PgStore._next_ids`)."""

    document: int
    chunk: int
    exact: bool
    """Vectors kept as float32 bytes (`vector_index = "exact"`), not in the pgvector column."""


_CHUNK_COLUMNS = ("kb", "id", "document_id", "chunk_index", "heading", "level", "ancestry",
                  "content", "context_text", "token_count", "quality_score", "line_start",
                  "line_end", "pieces",
                  *(c for t in TABLES for c in (*t.pg_columns, t.pg_length)))
"""The chunk row's columns as `write_document` inserts them, the vector's column left out:
the chunk's own, then each full-text table's heading, context, content and length."""
_ADD_TOTALS = ", ".join(f"{t.pg_total} = {t.pg_total} + %s" for t in TABLES)
"""The KB row's token total of every full-text table, each increased by a parameter."""
_LENGTHS = ", ".join(t.pg_length for t in TABLES)
_MISSING_POSTINGS = " OR ".join(
    f"(c.{t.pg_length} > 0 AND NOT EXISTS (SELECT 1 FROM groove_postings p WHERE "
    f"p.kb = c.kb AND p.tbl = {int(t.postings_code)} AND p.chunk_id = c.id))"
    for t in TABLES if t.postings_code is not None) or "false"
"""A chunk with tokens in a postings table but no postings there (doctor)."""


def _ints(values: Sequence[int]) -> str:
    return ",".join(map(str, values))


def _hnsw_name(kb: int) -> str:
    return f"groove_hnsw_kb{int(kb)}"


class PgStore(PgVectorWrites):
    """An open KB of a Postgres store (see the module doc)."""

    def __init__(self, con: psycopg.Connection[Any], target: PgTarget, kb: int, *,
                 readonly: bool) -> None:
        self.con = con
        self.target = target
        self.kb = kb
        self.ef_search = target.ef_search
        self.readonly = readonly
        self.path = target
        self._ids: _Numbering | None = None
        self._vector_type: type[bytes] | None = None

    # ------------------------------------------------------------------ opening

    @classmethod
    def open_for_index(cls, target: PgTarget) -> PgStore:
        """Connect, migrate, register the KB and take its indexer lock."""
        con = schema.connect(target)
        try:
            schema.migrate(con, target)
            kb = schema.kb_row(con, target.kb)
            created = kb is None
            if kb is None:
                kb = schema.create_kb(con, target.kb, utc_now())
            if not schema.try_indexer_lock(con, kb):
                raise GrooveError(f"another groove index is running on {target}",
                                  hint="wait for it to finish (searches keep working meanwhile)")
            # a server crash may lose the last few files' commits (never half a file): the
            # next run re-indexes them, their hashes were never recorded
            con.execute("SET synchronous_commit = off")
            store = cls(con, target, kb, readonly=False)
            # a new KB's rows are cut by today's tokenisers; a KB written before a table was
            # added has no version of it, and `backfill_fts` fills that table's columns
            versions = [t.version for t in TABLES if t.version is not None] if created else []
            with store.transaction():
                for key, value in (("index_id", secrets.token_hex(16)), *versions):
                    con.execute("INSERT INTO groove_meta(kb, key, value) VALUES (%s, %s, %s) "
                                "ON CONFLICT DO NOTHING", (kb, key, value))
            return store
        except BaseException:
            con.close()
            raise

    @classmethod
    def open_readonly(cls, target: PgTarget, kb_hint: str = "<path>") -> PgStore:
        """Open an existing KB for reading; never creates or migrates."""
        con = schema.connect(target)
        try:
            version = schema.installed_version(con)
            if not target.kb and version:
                target = schema.only_kb(con, target)
            kb = schema.kb_row(con, target.kb) if version else None
            if kb is None:
                raise IndexMissing(f"no index of KB {target.kb} in the Postgres store "
                                   f"{mask(target.url)}. Run `groove index --kb-path {kb_hint}` "
                                   "with the same --db first.")
            if version < schema.SCHEMA_VERSION:
                raise GrooveError(f"the Postgres store {mask(target.url)} uses schema version "
                                  f"{version}; run `groove index --kb-path {kb_hint}` to upgrade it.")
            schema.check_not_newer(con, target)
            return cls(con, target, kb, readonly=True)
        except BaseException:
            con.close()
            raise

    def close(self) -> None:
        self.con.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction; rolled back on any exception, Ctrl-C included (the ids it
        numbered are then read again from the KB row)."""
        try:
            with self.con.transaction():
                yield
        except BaseException:
            self._ids = None
            raise

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        """A REPEATABLE READ snapshot so several queries see one committed state."""
        if self.con.info.transaction_status != 0:  # already inside one
            yield
            return
        self.con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        try:
            yield
        finally:
            self.con.execute("COMMIT")

    @contextmanager
    def pinned_readers(self, extra: int) -> Iterator[list[PgStore]]:
        """This store's snapshot plus `extra` connections importing the same snapshot."""
        from psycopg import sql

        others: list[PgStore] = []
        with self.read_transaction():
            try:
                snapshot = self.con.execute("SELECT pg_export_snapshot()").fetchone()
                for _ in range(extra):
                    other = PgStore(schema.connect(self.target), self.target, self.kb,
                                    readonly=True)
                    others.append(other)
                    other.con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                    other.con.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(
                        sql.Literal(snapshot[0] if snapshot else "")))
                yield [self, *others]
            finally:
                for other in others:
                    other.con.close()

    @property
    def schema_version(self) -> int:
        """The Postgres store's own schema version (its migrations, not SQLite's)."""
        return schema.SCHEMA_VERSION

    def optimize_fts(self) -> None:
        """Refresh the planner's statistics of the tables a run changed a fair share of
        (Postgres has no full-text segments to merge; autovacuum would get there later)."""
        self.con.execute("ANALYZE groove_chunks, groove_postings")

    def length_problems(self) -> list[str]:
        return []

    # ------------------------------------------------------------------ meta

    def meta(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self._rows(
            "SELECT key, value FROM groove_meta WHERE kb = %s", (self.kb,))}

    def set_meta(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self.con.execute("INSERT INTO groove_meta(kb, key, value) VALUES (%s, %s, %s) "
                             "ON CONFLICT (kb, key) DO UPDATE SET value = excluded.value",
                             (self.kb, key, value))

    def create_vec_table(self, dim: int) -> None:
        """Set the KB's dimension and vector kind and drop its HNSW index: a new KB's index is
        built once its vectors are in (`build_vector_index`), much cheaper than growing it row
        by row (bench/results/code-notes.md#hnsw-bulk); until then the leg is an exact scan
        (the same answers, slower)."""
        self.con.execute(f"DROP INDEX IF EXISTS {_hnsw_name(self.kb)}")
        self.con.execute("DELETE FROM groove_chunk_pieces WHERE kb = %s", (self.kb,))
        self.con.execute("UPDATE groove_chunks SET embedding = NULL, embedding_f32 = NULL, "
                         "pieces = NULL WHERE kb = %s", (self.kb,))
        self.con.execute("UPDATE groove_kb SET dim = %s, vector_index = %s WHERE id = %s",
                         (int(dim), self.target.vector_index, self.kb))
        self._ids = None

    def build_vector_index(self) -> None:
        """The KB's HNSW index when it has none (end of an uninterrupted `index` run): a
        partial expression index, so KBs of other dimensions share the table. Later runs
        keep it up to date row by row."""
        dim = self.vec_dim()
        if dim is None or self.exact_vectors() or self._rows(
                "SELECT 1 FROM pg_class WHERE relname = %s", (_hnsw_name(self.kb),)):
            return
        with self.transaction():
            self.con.execute("SET LOCAL maintenance_work_mem = '512MB'")
            self.con.execute(f"CREATE INDEX {_hnsw_name(self.kb)} ON groove_chunks USING hnsw "
                             f"((embedding::vector({int(dim)})) vector_cosine_ops) "
                             f"WITH (ef_construction = {HNSW_EF_CONSTRUCTION}) "
                             f"WHERE kb = {int(self.kb)}")

    def bump_vectors_version(self) -> None:
        with self.con.cursor() as cur:
            self._bump_vectors_version(cur)

    def _bump_vectors_version(self, cur: psycopg.Cursor[Any]) -> None:
        cur.execute(
            "INSERT INTO groove_meta(kb, key, value) VALUES (%s, 'vectors_version', '1') "
            "ON CONFLICT (kb, key) DO UPDATE SET value = (groove_meta.value::bigint + 1)::text",
            (self.kb,))

    def index_id(self) -> str:
        return self.meta().get("index_id", "")

    def vectors_version(self) -> str:
        return self.meta().get("vectors_version", "0")

    # ------------------------------------------------------------------ counts

    def _scalar(self, sql: str, params: Sequence[object]) -> Any:
        return self._rows(sql, params)[0][0]

    def document_count(self) -> int:
        return int(self._scalar("SELECT count(*) FROM groove_documents WHERE kb = %s", (self.kb,)))

    def chunk_count(self) -> int:
        return int(self._scalar("SELECT count(*) FROM groove_chunks WHERE kb = %s", (self.kb,)))

    def quality_counts(self, threshold: float) -> tuple[int, int]:
        row = self._rows("SELECT count(*) FILTER (WHERE quality_score >= %s), "
                         "count(*) FILTER (WHERE quality_score < %s) FROM groove_chunks "
                         "WHERE kb = %s", (threshold, threshold, self.kb))[0]
        return int(row[0]), int(row[1])

    def min_quality(self) -> float | None:
        value = self._scalar("SELECT min(quality_score) FROM groove_chunks WHERE kb = %s",
                             (self.kb,))
        return None if value is None else float(value)

    def has_context_text(self) -> bool:
        return bool(self._rows("SELECT 1 FROM groove_chunks WHERE kb = %s AND context_text "
                               "IS NOT NULL AND context_text != '' LIMIT 1", (self.kb,)))

    # ------------------------------------------------------------------ indexer reads

    def documents(self) -> dict[str, StoredDocument]:
        return {str(path): StoredDocument(int(did), str(path), str(digest), str(when))
                for did, path, digest, when in self._rows(
                    "SELECT id, path, content_hash, last_indexed FROM groove_documents "
                    "WHERE kb = %s", (self.kb,))}

    def confirm_documents(self, ids: Sequence[int], when: str) -> None:
        """SQLite store's `confirm_documents`."""
        with self.con.cursor() as cur:
            cur.executemany("UPDATE groove_documents SET last_indexed = %s WHERE kb = %s AND id = %s",
                            [(when, self.kb, i) for i in ids])

    def chunk_rows(self, document_id: int) -> list[ChunkRow]:
        return [ChunkRow(int(idx), heading, level, tuple(json.loads(str(anc))), str(content), ctx,
                         tokens_, float(quality), start, end)
                for idx, heading, level, anc, content, ctx, tokens_, quality, start, end
                in self._rows(
                    "SELECT chunk_index, heading, level, ancestry, content, context_text, "
                    "token_count, quality_score, line_start, line_end FROM groove_chunks "
                    "WHERE kb = %s AND document_id = %s ORDER BY chunk_index",
                    (self.kb, document_id))]

    def path_hashes(self) -> dict[str, str]:
        return {str(p): str(h) for p, h in self._rows(
            "SELECT path, content_hash FROM groove_documents WHERE kb = %s", (self.kb,))}

    # ------------------------------------------------------------------ indexer writes

    def _add_stats(self, chunks: int, totals: Sequence[int]) -> None:
        """Add to the KB's chunk count and to each full-text table's token total."""
        self.con.execute(f"UPDATE groove_kb SET chunks = chunks + %s, {_ADD_TOTALS} "
                         "WHERE id = %s", (chunks, *totals, self.kb))

    def _delete_chunks(self, document_id: int) -> None:
        gone = self._rows("DELETE FROM groove_chunks WHERE kb = %s AND document_id = %s "
                          f"RETURNING id, {_LENGTHS}", (self.kb, document_id))
        if gone:
            self.con.execute("DELETE FROM groove_postings WHERE kb = %s AND chunk_id = ANY(%s)",
                             (self.kb, [int(r[0]) for r in gone]))
            self._add_stats(-len(gone), [-sum(r[1 + i] for r in gone)
                                         for i in range(len(TABLES))])

    @staticmethod
    def _doc_values(doc: DocumentRow) -> tuple[object, ...]:
        return (doc.path, doc.title, doc.topic, doc.category, doc.depth,
                json.dumps(list(doc.tags), ensure_ascii=False), doc.date, doc.content_hash,
                doc.size_bytes, doc.last_indexed)

    def _next_ids(self) -> _Numbering:
        """The KB row's next ids and vector keeping: read once, then counted here. Safe because
        this connection holds the KB's indexer lock (no other writer numbers this KB); a
        rolled-back transaction forgets them (`transaction`)."""
        if self._ids is None:
            doc, chunk, kept = self._rows("SELECT next_document, next_chunk, vector_index "
                                          "FROM groove_kb WHERE id = %s", (self.kb,))[0]
            self._ids = _Numbering(int(doc), int(chunk), kept == "exact")
        return self._ids

    def _vector_param(self, vector: npt.NDArray[np.float32]) -> bytes:
        if self._vector_type is None:
            self._vector_type = binary_vector_type(self.con)
        return self._vector_type(vector_binary(vector))

    def write_document(self, doc: DocumentRow, chunks: Sequence[ChunkRow],
                       vectors: npt.NDArray[np.float32] | None, existing_id: int | None) -> int:
        """Replace a document's rows (call inside a transaction). Returns the document id.
        With `vectors` None the chunks get no vector yet (phase 1, index.md §6.1).

        Ids are numbered here (`_next_ids`) so the whole document goes to the server as one
        pipeline: the KB row's counters and statistics, the document row, its chunk rows and
        their postings, without waiting for any answer before the commit. Vectors go in
        pgvector's binary form. (Statements each waited for, a COPY handshake and vectors printed
        as text cost far more client CPU: bench/results/code-notes.md#pg-writes.)"""
        if existing_id is not None:
            self._delete_chunks(existing_id)
        ids = self._next_ids()
        doc_id = existing_id if existing_id is not None else ids.document
        first = ids.chunk
        exact = ids.exact
        texts = [(chunk.heading, chunk.context_text, chunk.content) for chunk in chunks]
        # per full-text table, each chunk's row of it
        table_rows = [[tokens.table_row(table, *text) for text in texts] for table in TABLES]
        rows: list[tuple[object, ...]] = []
        postings: list[tuple[int, str, int, int, int, int, int]] = []
        for offset, chunk in enumerate(chunks):
            cid = first + offset
            vector = None if vectors is None else vectors[offset]
            fts_values: list[object] = []
            for table, of_table in zip(TABLES, table_rows, strict=True):
                row = of_table[offset]
                fts_values += (*row.streams, row.length)
                if table.postings_code is not None:
                    postings.extend((table.postings_code, term, cid, h, c, b, row.length)
                                    for term, h, c, b in row.postings)
            rows.append((self.kb, cid, doc_id, chunk.chunk_index, chunk.heading, chunk.level,
                         json.dumps(list(chunk.ancestry), ensure_ascii=False), chunk.content,
                         chunk.context_text, chunk.token_count, chunk.quality_score,
                         chunk.line_start, chunk.line_end, None if vectors is None else 1,
                         *fts_values, self._stored_vector(vector, exact)))
        new_docs = 0 if existing_id is not None else 1
        with self.con.pipeline(), self.con.cursor() as cur:
            cur.execute(
                "UPDATE groove_kb SET next_document = next_document + %s, "
                f"next_chunk = next_chunk + %s, chunks = chunks + %s, {_ADD_TOTALS} "
                "WHERE id = %s",
                (new_docs, len(chunks), len(chunks),
                 *(sum(row.length for row in of_table) for of_table in table_rows), self.kb))
            if existing_id is not None:
                cur.execute(
                    "UPDATE groove_documents SET path=%s, title=%s, topic=%s, category=%s, "
                    "depth=%s, tags=%s, date=%s, content_hash=%s, size_bytes=%s, "
                    "last_indexed=%s WHERE kb = %s AND id = %s",
                    (*self._doc_values(doc), self.kb, existing_id))
            else:
                cur.execute(
                    "INSERT INTO groove_documents(kb, id, path, title, topic, category, depth, "
                    "tags, date, content_hash, size_bytes, last_indexed) "
                    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (self.kb, doc_id, *self._doc_values(doc)))
            if rows:
                cur.executemany(
                    f"INSERT INTO groove_chunks({', '.join(_CHUNK_COLUMNS)}, "
                    + ("embedding_f32" if exact else "embedding") + ") VALUES ("
                    + ",".join(["%s"] * len(_CHUNK_COLUMNS)) + (",%s)" if exact else ",%b)"), rows)
            if postings:
                # one statement (COPY would end the pipeline); the columns go as delimited
                # text the server splits in C, far cheaper than psycopg's list adaptation
                # (bench/results/code-notes.md#pg-writes).
                # \x1f cannot occur in a term: unicode61 tokens hold only letters, digits and
                # private-use characters
                tbl, terms, cids, heading, context, content, lengths = zip(*postings, strict=True)
                cur.execute(
                    "INSERT INTO groove_postings (kb, tbl, term, chunk_id, tf_heading, "
                    "tf_context, tf_content, len) SELECT %s, * FROM unnest("
                    "string_to_array(%s, ',')::smallint[], string_to_array(%s, E'\\x1f'), "
                    "string_to_array(%s, ',')::bigint[], string_to_array(%s, ',')::integer[], "
                    "string_to_array(%s, ',')::integer[], string_to_array(%s, ',')::integer[], "
                    "string_to_array(%s, ',')::integer[])",
                    (self.kb, _ints(tbl), "\x1f".join(terms), _ints(cids), _ints(heading),
                     _ints(context), _ints(content), _ints(lengths)))
            self._bump_vectors_version(cur)
        ids.document += new_docs
        ids.chunk += len(chunks)
        return doc_id

    def exact_writes(self) -> bool:
        return self._next_ids().exact

    def _stored_vector(self, vector: npt.NDArray[np.float32] | None, exact: bool) -> object:
        if vector is None:
            return None
        return f32_blob(vector) if exact else self._vector_param(vector)

    def update_document_row(self, document_id: int, doc: DocumentRow,
                            quality_scores: Sequence[float] | None = None,
                            lines: Sequence[tuple[int, int]] | None = None) -> None:
        self.con.execute(
            "UPDATE groove_documents SET path=%s, title=%s, topic=%s, category=%s, depth=%s, "
            "tags=%s, date=%s, content_hash=%s, size_bytes=%s, last_indexed=%s "
            "WHERE kb = %s AND id = %s", (*self._doc_values(doc), self.kb, document_id))
        with self.con.cursor() as cur:
            if quality_scores is not None:
                cur.executemany("UPDATE groove_chunks SET quality_score = %s WHERE kb = %s AND "
                                "document_id = %s AND chunk_index = %s",
                                [(s, self.kb, document_id, i) for i, s in enumerate(quality_scores)])
            if lines:
                cur.executemany("UPDATE groove_chunks SET line_start = %s, line_end = %s "
                                "WHERE kb = %s AND document_id = %s AND chunk_index = %s",
                                [(a, b, self.kb, document_id, i) for i, (a, b) in enumerate(lines)])

    def rename_document(self, document_id: int, path: str, category: str | None,
                        topic: str | None) -> None:
        self.con.execute("UPDATE groove_documents SET path = %s, category = %s, topic = %s "
                         "WHERE kb = %s AND id = %s", (path, category, topic, self.kb, document_id))

    def delete_document(self, document_id: int) -> None:
        self._delete_chunks(document_id)
        self.con.execute("DELETE FROM groove_documents WHERE kb = %s AND id = %s",
                         (self.kb, document_id))
        self.bump_vectors_version()

    def reset(self, dim: int) -> None:
        """`index --force`: empty the KB (ids keep counting, as SQLite's AUTOINCREMENT does)."""
        self.con.execute("DELETE FROM groove_documents WHERE kb = %s", (self.kb,))
        self.con.execute("DELETE FROM groove_postings WHERE kb = %s", (self.kb,))
        self.con.execute("DELETE FROM groove_query_cache WHERE kb = %s", (self.kb,))
        zero = ", ".join(f"{t.pg_total} = 0" for t in TABLES)
        self.con.execute(f"UPDATE groove_kb SET chunks = 0, {zero} WHERE id = %s", (self.kb,))
        self.create_vec_table(dim)
        self.bump_vectors_version()

    def backfill_fts(self) -> int:
        """Re-tokenise the columns of each full-text table whose tokeniser version changed
        (`FtsTable.version`: the CJK table's); the full-text columns live in the chunk's own
        row, so none can be missing. Returns the chunks re-tokenised."""
        meta = self.meta()
        stale = [t for t in TABLES if t.version is not None
                 and meta.get(t.version.key) != t.version.version]
        if not stale:
            return 0
        self.set_meta({t.version.key: t.version.version for t in stale if t.version is not None})
        rows = self._rows("SELECT id, heading, context_text, content FROM groove_chunks "
                          "WHERE kb = %s", (self.kb,))
        if not rows:
            return 0
        for table in stale:
            self._retokenise(table, rows)
        return len(rows)

    def _retokenise(self, table: FtsTable, rows: Sequence[tuple[Any, ...]]) -> None:
        """Write `table`'s columns, postings and token total again for the chunks `rows`
        (id, heading, context, content): the KB's every chunk."""
        if table.postings_code is not None:
            self.con.execute("DELETE FROM groove_postings WHERE kb = %s AND tbl = %s",
                             (self.kb, table.postings_code))
        h, c, b = table.pg_columns
        total = 0
        with self.con.cursor() as cur:
            for cid, heading, ctx, content in rows:
                row = tokens.table_row(table, heading, ctx, content)
                total += row.length
                cur.execute(f"UPDATE groove_chunks SET {h} = %s, {c} = %s, {b} = %s, "
                            f"{table.pg_length} = %s WHERE kb = %s AND id = %s",
                            (*row.streams, row.length, self.kb, cid))
                if table.postings_code is not None:
                    cur.executemany("INSERT INTO groove_postings VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                                    [(self.kb, table.postings_code, t, cid, th, tc, tb,
                                      row.length) for t, th, tc, tb in row.postings])
        self.con.execute(f"UPDATE groove_kb SET {table.pg_total} = %s WHERE id = %s",
                         (total, self.kb))

    def cache_put(self, rows: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> bool:
        """Store query embeddings without waiting on a lock; False when that failed."""
        psycopg = schema.psycopg_module()
        if not rows:
            return True
        now = utc_now()
        try:
            with self.con.transaction():
                self.con.execute("SET LOCAL lock_timeout = '200ms'")
                with self.con.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO groove_query_cache(kb, key, embedding, created) "
                        "VALUES (%s, %s, %s, %s) ON CONFLICT (kb, key) DO UPDATE "
                        "SET embedding = excluded.embedding, created = excluded.created",
                        [(self.kb, key, f32_blob(vector), now) for key, vector in rows])
                self.con.execute(
                    "DELETE FROM groove_query_cache WHERE kb = %s AND key NOT IN (SELECT key FROM "
                    "groove_query_cache WHERE kb = %s ORDER BY created DESC, key DESC LIMIT %s)",
                    (self.kb, self.kb, QUERY_CACHE_MAX_ROWS))
        except psycopg.Error:
            return False
        return True

    # ------------------------------------------------------------------ doctor

    def file_problems(self, *, quick: bool = False, limit: int = 20) -> list[str]:
        """Invalid indexes (a CREATE INDEX that failed half-way) and missing extensions."""
        problems = [f"index {name} is not valid (rebuild it: REINDEX INDEX {name})"
                    for (name,) in self._rows(
                        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                        "WHERE NOT i.indisvalid AND c.relname LIKE %s", ("groove%",))]
        have = {str(r[0]) for r in self._rows("SELECT extname FROM pg_extension")}
        problems += [f"the {ext} extension is not installed in this database"
                     for ext in ("vector", "pg_trgm") if ext not in have]
        if self.vec_dim() is not None and not self.exact_vectors() and not self._rows(
                "SELECT 1 FROM pg_class WHERE relname = %s", (_hnsw_name(self.kb),)):
            problems.append(f"the HNSW index {_hnsw_name(self.kb)} of this KB is missing (an "
                            "interrupted first run; searches scan every vector meanwhile): "
                            "`groove index` builds it")
        return problems[:limit]

    def server_facts(self) -> list[str]:
        """The server's version and the extensions groove uses, for `doctor`."""
        version = str(self._scalar("SHOW server_version", ()))
        extensions = ", ".join(f"{n} {v}" for n, v in self._rows(
            "SELECT extname, extversion FROM pg_extension WHERE extname IN ('vector', 'pg_trgm') "
            "ORDER BY extname"))
        return [f"PostgreSQL {version}", f"extensions: {extensions or 'none'}"]

    def integrity(self) -> IntegrityReport:
        """The row checks of `doctor`: foreign keys rule out orphans, so what is left is a chunk
        without its vector or without its postings."""
        from groove_cli.store.sqlite import IntegrityReport

        has_vec = self.vec_dim() is not None
        chunks = self.chunk_count()
        return IntegrityReport(
            vector_table_missing=not has_vec and chunks > 0,
            missing_embedding=[int(r[0]) for r in self._rows(
                "SELECT id FROM groove_chunks WHERE kb = %s AND embedding IS NULL AND "
                "embedding_f32 IS NULL ORDER BY id", (self.kb,))] if has_vec else [],
            orphan_embedding=[],
            missing_fts_row=[int(r[0]) for r in self._rows(
                f"SELECT c.id FROM groove_chunks c WHERE c.kb = %s AND ({_MISSING_POSTINGS}) "
                "ORDER BY c.id", (self.kb,))],
            orphan_fts_row=[int(r[0]) for r in self._rows(
                "SELECT DISTINCT p.chunk_id FROM groove_postings p WHERE p.kb = %s AND NOT EXISTS "
                "(SELECT 1 FROM groove_chunks c WHERE c.kb = p.kb AND c.id = p.chunk_id) "
                "ORDER BY p.chunk_id", (self.kb,))],
            chunk_without_document=[],
            document_without_chunks=[str(r[0]) for r in self._rows(
                "SELECT path FROM groove_documents d WHERE d.kb = %s AND NOT EXISTS (SELECT 1 "
                "FROM groove_chunks c WHERE c.kb = d.kb AND c.document_id = d.id) "
                "ORDER BY path COLLATE \"C\"", (self.kb,))],
        )
