"""The SQLite index file: the one module that speaks SQL.

An apsw connection with sqlite-vec loaded, numbered migrations recorded in `PRAGMA user_version`,
and typed methods for the indexer (per-document transactions), the search legs, the query
embedding cache, `status` and `doctor` (index.md §9).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from groove_cli.dbfile import damage_error
from groove_cli.errors import GrooveError, IndexMissing
from groove_cli.failures import check_index_file
from groove_cli.store.fts_tables import TABLES, FtsTable
from groove_cli.store.pieces import VectorWrites
from groove_cli.store.reads import SearchReads
from groove_cli.store.rows import f32_blob, scalar_int
from groove_cli.store.runtime import (
    SCHEMA_VERSION,
    load_vec,
    migrations,
    register_functions,
)
from groove_cli.types import ChunkRow, DocumentRow, StoredDocument

if TYPE_CHECKING:  # numpy is imported where vectors are read or written, not at start-up
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class IntegrityReport:
    """Raw id lists behind the doctor checks (cli.md §9)."""

    vector_table_missing: bool
    missing_embedding: list[int]
    orphan_embedding: list[int]
    missing_fts_row: list[int]
    orphan_fts_row: list[int]
    chunk_without_document: list[int]
    document_without_chunks: list[str]

    @property
    def consistent(self) -> bool:
        """No damage: a chunk without a vector is pending (index.md §6.1 phase 2), not damage."""
        return not (self.vector_table_missing or self.orphan_embedding
                    or self.missing_fts_row or self.orphan_fts_row or self.chunk_without_document
                    or self.document_without_chunks)


def _write_lock(path: Path) -> apsw.Connection | None:
    """A connection holding the write lock of `path` (BEGIN IMMEDIATE), taken without
    waiting; None when the lock is busy or the file cannot be written."""
    con: apsw.Connection | None = None
    try:
        con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
        con.execute("PRAGMA busy_timeout=0")
        con.execute("BEGIN IMMEDIATE")
        return con
    except apsw.Error:
        if con is not None:
            con.close()
        return None


def _read_only_connection(path: Path) -> apsw.Connection:
    """A read-only connection. On storage this process cannot write (a read-only mount, a file
    without write permission) the file is opened immutable: SQLite then needs no `-shm` beside
    it, so the open works and leaves no read-only `-shm` behind to break a later `index`."""
    if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        return apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    uri = path.resolve().as_uri() + "?immutable=1"
    return apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)


def _writable_shm(path: Path) -> None:
    """Give a read-only `-shm` left by an older groove (or another tool) the index's own mode,
    so that a writer can open the index again after `chmod u+w`."""
    shm = path.with_name(path.name + "-shm")
    if shm.exists() and not os.access(shm, os.W_OK) and os.access(path, os.W_OK):
        with suppress(OSError):
            shm.chmod(path.stat().st_mode & 0o777)


def _start_read(con: apsw.Connection) -> None:
    """Make an open `BEGIN` take its snapshot now (a deferred transaction starts reading at
    its first statement that touches the file)."""
    con.execute("SELECT count(*) FROM index_meta").fetchall()


def foreign_database(path: Path) -> GrooveError:
    """The error for an SQLite file that holds another application's tables."""
    return GrooveError(f"{path} is an SQLite database but not a groove index; groove will not "
                       "add its tables to it or set it aside", hint="pass another --db, or move "
                       "that file away")


class Store(VectorWrites, SearchReads):
    """An open index file."""

    def __init__(self, con: apsw.Connection, path: Path, *, readonly: bool) -> None:
        self.con = con
        self.path = path
        self.readonly = readonly

    # ------------------------------------------------------------------ opening

    @classmethod
    def _connect(cls, path: Path, connect: Callable[[], apsw.Connection],
                 verb: str) -> tuple[apsw.Connection, int]:
        """A configured connection and its schema version; a damaged file is a DamagedIndex,
        any other SQLite failure one clear GrooveError (`cannot {verb} the index at …`)."""
        try:
            con = connect()
            cls._configure(con)
            return con, cls._user_version(con)
        except apsw.Error as exc:
            damaged = damage_error(exc)
            if damaged is not None:
                raise damaged from None
            raise GrooveError(f"cannot {verb} the index at {path}: {exc}") from None

    @classmethod
    def open_for_index(cls, path: Path) -> Store:
        """Open or create the index for writing: WAL, then pending migrations."""
        check_index_file(path, allow_empty=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        _writable_shm(path)
        con, version = cls._connect(path, lambda: apsw.Connection(str(path)), "open")
        if version > SCHEMA_VERSION:
            raise GrooveError(
                f"the index at {path} was written by a newer groove (schema version {version}; "
                f"this groove supports up to {SCHEMA_VERSION})."
            )
        if version == 0 and scalar_int(con, "SELECT count(*) FROM sqlite_master") > 0:
            con.close()
            raise foreign_database(path)
        con.execute("PRAGMA journal_mode=WAL")
        # In WAL mode, NORMAL syncs at checkpoints rather than at every commit: the indexer
        # commits once per file, and a sync each made the full-text phase wait on the disk
        # (bench/results/index.md). A crash of the process loses nothing committed; a power
        # loss may undo the last commits, never leaving a half-written file (index.md §9).
        con.execute("PRAGMA synchronous=NORMAL")
        store = cls(con, path, readonly=False)
        store._migrate(version)
        store._ensure_index_id()
        return store

    @classmethod
    def open_readonly(cls, path: Path, kb_hint: str = "<path>") -> Store:
        """Open an existing index for reading; never creates or migrates (cli.md §3)."""
        check_index_file(path, kb_hint=kb_hint)
        if not path.is_file():
            raise IndexMissing(
                f"no index found at {path}. Run `groove index --kb-path {kb_hint}` first."
            )
        con, version = cls._connect(path, lambda: _read_only_connection(path), "read")
        if version == 0 and scalar_int(con, "SELECT count(*) FROM sqlite_master") > 0 \
                and not scalar_int(con, "SELECT count(*) FROM sqlite_master "
                                        "WHERE name = 'index_meta'"):
            con.close()
            raise foreign_database(path)
        if version < SCHEMA_VERSION:
            raise GrooveError(
                f"the index at {path} uses schema version {version}; run "
                f"`groove index --kb-path {kb_hint}` to upgrade it."
            )
        if version > SCHEMA_VERSION:
            raise GrooveError(
                f"the index at {path} was written by a newer groove (schema version {version}; "
                f"this groove supports up to {SCHEMA_VERSION})."
            )
        return cls(con, path, readonly=True)

    @staticmethod
    def _configure(con: apsw.Connection) -> None:
        load_vec(con)
        register_functions(con)
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("PRAGMA busy_timeout=30000")

    @staticmethod
    def _user_version(con: apsw.Connection) -> int:
        return scalar_int(con, "PRAGMA user_version")

    def _migrate(self, current: int) -> None:
        for number, sql in migrations():
            if number <= current:
                continue
            with self.transaction():
                self.con.execute(sql)
                self.con.execute(f"PRAGMA user_version={number}")

    def close(self) -> None:
        self.con.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One `BEGIN IMMEDIATE` transaction; rolled back on any exception, Ctrl-C included
        (unless SQLite already rolled it back itself, as it does on a full disk)."""
        self.con.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.con.in_transaction:
                self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        """A read transaction so several queries see one consistent state (eval.md §2)."""
        self.con.execute("BEGIN")
        try:
            yield
        finally:
            self.con.execute("COMMIT")

    @contextmanager
    def pinned_readers(self, extra: int) -> Iterator[list[Store]]:
        """A read transaction on this store plus up to `extra` read-only connections, all on
        one consistent state of the index, so independent reads can run on several cores.

        SQLite (WAL) gives each read transaction the state committed when it starts. Here the
        transactions start while a separate short-lived connection holds the write lock, so no
        commit can land between them and they all see the same state. The lock is taken
        without waiting and dropped once they have started; when it is not free at once (an
        `index` is writing) or the file cannot be written, only this store's transaction is
        yielded — the same single consistent state, on one core.
        """
        others: list[Store] = []
        self.con.execute("BEGIN")  # deferred: the snapshot is taken by the first read below
        try:
            lock = _write_lock(self.path) if extra > 0 else None
            try:
                _start_read(self.con)
                for _ in range(extra if lock is not None else 0):
                    con = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
                    others.append(Store(con, self.path, readonly=True))
                    self._configure(con)
                    con.execute("BEGIN")
                    _start_read(con)
            finally:
                if lock is not None:
                    lock.execute("ROLLBACK")
                    lock.close()
            yield [self, *others]
        finally:
            for other in others:
                other.con.close()
            self.con.execute("COMMIT")

    def optimize_fts(self) -> None:
        """Merge each full-text table's segments into one (FTS5 'optimize'; results are
        unchanged, queries get faster; a no-op on a table already merged)."""
        for table in TABLES:
            self.con.execute(f"INSERT INTO {table.name}({table.name}) VALUES('optimize')")

    # ------------------------------------------------------------------ meta

    def meta(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.con.execute("SELECT key, value FROM index_meta")}

    def set_meta(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self.con.execute(
                "INSERT INTO index_meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def create_vec_table(self, dim: int) -> None:
        self.con.execute("DROP TABLE IF EXISTS vec_chunks")
        self.con.execute(
            "CREATE VIRTUAL TABLE vec_chunks USING vec0("
            f"chunk_id INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine)"
        )

    def _ensure_index_id(self) -> None:
        """Give the index a random identity the first time it is opened for writing.

        The vector snapshot beside the file is stamped with it as well as with
        `vectors_version`: a counter alone restarts when the file is deleted and rebuilt, so a
        leftover snapshot could carry a matching stamp and serve another index's vectors.
        """
        with self.transaction():
            self.con.execute("INSERT OR IGNORE INTO index_meta(key, value) VALUES ('index_id', ?)",
                             (secrets.token_hex(16),))

    def index_id(self) -> str:
        """The identity written at creation; "" for an index no groove has opened to write."""
        rows = self.con.execute("SELECT value FROM index_meta WHERE key = 'index_id'").fetchall()
        return str(rows[0][0]) if rows else ""

    def vectors_version(self) -> str:
        rows = self.con.execute("SELECT value FROM index_meta WHERE key = 'vectors_version'").fetchall()
        return str(rows[0][0]) if rows else "0"

    # ------------------------------------------------------------------ counts

    def document_count(self) -> int:
        return scalar_int(self.con, "SELECT count(*) FROM documents")

    def chunk_count(self) -> int:
        return scalar_int(self.con, "SELECT count(*) FROM chunks")

    def quality_counts(self, threshold: float) -> tuple[int, int]:
        """(passing, below) chunk counts for a quality threshold."""
        row = self.con.execute(
            "SELECT sum(quality_score >= ?), sum(quality_score < ?) FROM chunks",
            (threshold, threshold),
        ).fetchall()[0]
        return int(row[0] or 0), int(row[1] or 0)

    def min_quality(self) -> float | None:
        """The lowest chunk quality score (None for an empty index); uses idx_chunks_quality."""
        value = self.con.execute("SELECT min(quality_score) FROM chunks").fetchall()[0][0]
        return None if value is None else float(value)

    def has_context_text(self) -> bool:
        rows = self.con.execute(
            "SELECT 1 FROM chunks WHERE context_text IS NOT NULL AND context_text != '' LIMIT 1"
        ).fetchall()
        return bool(rows)

    # ------------------------------------------------------------------ indexer reads

    def documents(self) -> dict[str, StoredDocument]:
        return {
            str(path): StoredDocument(int(did), str(path), str(digest), str(when))
            for did, path, digest, when in self.con.execute(
                "SELECT id, path, content_hash, last_indexed FROM documents"
            )
        }

    def confirm_documents(self, ids: Sequence[int], when: str) -> None:
        """Record that these documents' files were read again and found unchanged at `when`
        (a touched file is then no longer reported stale: search.md §15)."""
        self.con.executemany("UPDATE documents SET last_indexed = ? WHERE id = ?",
                             [(when, i) for i in ids])

    def chunk_rows(self, document_id: int) -> list[ChunkRow]:
        return [
            ChunkRow(int(idx), heading, level, tuple(json.loads(str(anc))), str(content), ctx,
                     tokens, float(quality), start, end)
            for idx, heading, level, anc, content, ctx, tokens, quality, start, end
            in self.con.execute(
                "SELECT chunk_index, heading, level, ancestry, content, context_text, token_count, "
                "quality_score, line_start, line_end FROM chunks WHERE document_id = ? "
                "ORDER BY chunk_index",
                (document_id,),
            )
        ]

    def path_hashes(self) -> dict[str, str]:
        return {str(p): str(h) for p, h in self.con.execute("SELECT path, content_hash FROM documents")}

    # ------------------------------------------------------------------ indexer writes

    def _chunk_ids(self, document_id: int) -> list[int]:
        return [int(r[0]) for r in self.con.execute(
            "SELECT id FROM chunks WHERE document_id = ?", (document_id,))]

    def _delete_chunk_rows(self, ids: Sequence[int]) -> None:
        for cid in ids:
            for table in TABLES:
                self.con.execute(f"DELETE FROM {table.name} WHERE rowid = ?", (cid,))
            self.con.execute("DELETE FROM vec_chunks WHERE chunk_id = ?", (cid,))
            self.con.execute("DELETE FROM chunks WHERE id = ?", (cid,))

    def write_document(self, doc: DocumentRow, chunks: Sequence[ChunkRow],
                       vectors: npt.NDArray[np.float32] | None, existing_id: int | None) -> int:
        """Replace a document's rows (call inside a transaction). Returns the document id.
        With `vectors` None the chunks are written without vectors (phase 1, index.md §6.1):
        `write_chunk_vectors` adds them later; given vectors are each chunk's only one."""
        if existing_id is not None:
            self._delete_chunk_rows(self._chunk_ids(existing_id))
            self.con.execute(
                "UPDATE documents SET path=?, title=?, topic=?, category=?, depth=?, tags=?, date=?, "
                "content_hash=?, size_bytes=?, last_indexed=? WHERE id=?",
                (*self._doc_values(doc), existing_id),
            )
            doc_id = existing_id
        else:
            self.con.execute(
                "INSERT INTO documents(path, title, topic, category, depth, tags, date, content_hash, "
                "size_bytes, last_indexed) VALUES (?,?,?,?,?,?,?,?,?,?)",
                self._doc_values(doc),
            )
            doc_id = int(self.con.last_insert_rowid())
        for number, chunk in enumerate(chunks):
            self.con.execute(
                "INSERT INTO chunks(document_id, chunk_index, heading, level, ancestry, content, "
                "context_text, token_count, quality_score, line_start, line_end, pieces) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (doc_id, chunk.chunk_index, chunk.heading, chunk.level,
                 json.dumps(list(chunk.ancestry), ensure_ascii=False), chunk.content,
                 chunk.context_text, chunk.token_count, chunk.quality_score, chunk.line_start,
                 chunk.line_end, None if vectors is None else 1),
            )
            cid = int(self.con.last_insert_rowid())
            self._insert_fts(cid, chunk.heading, chunk.context_text, chunk.content)
            if vectors is not None:
                self.con.execute("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (?, ?)",
                                 (cid, f32_blob(vectors[number])))
        self.bump_vectors_version()
        return doc_id

    def _insert_fts(self, cid: int, heading: str | None, context: str | None, content: str,
                    tables: Sequence[FtsTable] = TABLES) -> None:
        for table in tables:
            value = table.value
            self.con.execute(
                f"INSERT INTO {table.name}(rowid, heading, context, content) "
                f"VALUES (?, {value}, {value}, {value})",
                (cid, heading or "", context or "", content),
            )

    @staticmethod
    def _doc_values(doc: DocumentRow) -> tuple[object, ...]:
        return (doc.path, doc.title, doc.topic, doc.category, doc.depth,
                json.dumps(list(doc.tags), ensure_ascii=False), doc.date, doc.content_hash,
                doc.size_bytes, doc.last_indexed)

    def update_document_row(self, document_id: int, doc: DocumentRow,
                            quality_scores: Sequence[float] | None = None,
                            lines: Sequence[tuple[int, int]] | None = None) -> None:
        """Frontmatter-only fast path: the document row, optionally the chunks' quality and
        their file lines (an edited frontmatter moves every chunk's lines)."""
        self.con.execute(
            "UPDATE documents SET path=?, title=?, topic=?, category=?, depth=?, tags=?, date=?, "
            "content_hash=?, size_bytes=?, last_indexed=? WHERE id=?",
            (*self._doc_values(doc), document_id),
        )
        if quality_scores is not None:
            for index, score in enumerate(quality_scores):
                self.con.execute(
                    "UPDATE chunks SET quality_score = ? WHERE document_id = ? AND chunk_index = ?",
                    (score, document_id, index),
                )
        for index, (start, end) in enumerate(lines or ()):
            self.con.execute(
                "UPDATE chunks SET line_start = ?, line_end = ? "
                "WHERE document_id = ? AND chunk_index = ?", (start, end, document_id, index))

    def rename_document(self, document_id: int, path: str, category: str | None,
                        topic: str | None) -> None:
        self.con.execute("UPDATE documents SET path = ?, category = ?, topic = ? WHERE id = ?",
                         (path, category, topic, document_id))

    def delete_document(self, document_id: int) -> None:
        self._delete_chunk_rows(self._chunk_ids(document_id))
        self.con.execute("DELETE FROM documents WHERE id = ?", (document_id,))
        self.bump_vectors_version()

    def reset(self, dim: int) -> None:
        """`index --force`: empty every table and recreate vec_chunks at `dim` (index.md §6.3)."""
        for table in TABLES:
            self.con.execute(f"DELETE FROM {table.name}")
        self.con.execute("DELETE FROM chunks")
        self.con.execute("DELETE FROM documents")
        self.con.execute("DELETE FROM query_cache")
        self.create_vec_table(dim)
        self.bump_vectors_version()

    def _fts_rowids(self, table: FtsTable) -> set[int]:
        return {int(r[0]) for r in self.con.execute(f"SELECT rowid FROM {table.name}")}

    def backfill_fts(self) -> int:
        """Insert FTS rows for chunks that lack one in any table (a repair, and the re-tokenising
        of a table whose tokeniser version changed, `FtsTable.version`); returns how many chunks
        were repaired."""
        meta = self.meta()
        for table in TABLES:
            if table.version is not None and meta.get(table.version.key) != table.version.version:
                self.con.execute(f"DELETE FROM {table.name}")
                self.set_meta({table.version.key: table.version.version})
        have = {table: self._fts_rowids(table) for table in TABLES}
        repaired = 0
        rows: list[tuple[int, str | None, str | None, str]] = self.con.execute(
            "SELECT id, heading, context_text, content FROM chunks").fetchall()  # type: ignore[assignment]
        for cid, heading, ctx, content in rows:
            missing = [t for t in TABLES if cid not in have[t]]
            if missing:
                self._insert_fts(cid, heading, ctx, content, missing)
                repaired += 1
        return repaired

    # ------------------------------------------------------------------ doctor

    def file_problems(self, *, quick: bool = False, limit: int = 20) -> list[str]:
        """SQLite's check of every page and b-tree of the file; [] when it is sound.

        Since SQLite 3.44 the pragma also runs each virtual table's own check, which for the
        FTS5 tables is FTS5's `integrity-check` (index against content); groove needs 3.45.
        `quick` skips the index-vs-table cross checks of ordinary tables.
        """
        pragma = "quick_check" if quick else "integrity_check"
        found = [str(r[0]) for r in self.con.execute(f"PRAGMA {pragma}({int(limit)})")]
        return self.length_problems() + ([] if found == ["ok"] else found)

    def page_problems(self, limit: int = 3) -> list[str]:
        """The page and b-tree part of `file_problems(quick=True)`, table by table over the
        ordinary tables (the full-text tables' own shadow tables included) but without the
        virtual tables' content checks, which cost most of it: cheap enough for every `index`
        run (bench figures in the commit that added it)."""
        tables = [str(r[0]) for r in self.con.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' "
            "AND coalesce(sql, '') NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")]
        found: list[str] = []
        for table in tables:
            quoted = '"' + table.replace('"', '""') + '"'
            rows = [str(r[0]) for r in self.con.execute(f"PRAGMA quick_check({quoted})")]
            found += [] if rows == ["ok"] else rows
            if len(found) >= limit:
                break
        return self.length_problems() + found[:limit]

    def length_problems(self) -> list[str]:
        """A file cut short: SQLite reads missing bytes as zeros, so its own check can pass.
        The main file holds whole pages, and all of them unless the WAL still holds some."""
        page_size = scalar_int(self.con, "PRAGMA page_size")
        pages = scalar_int(self.con, "PRAGMA page_count")
        real = Path(os.path.realpath(self.path))  # SQLite keeps the WAL beside a link's target
        size = real.stat().st_size
        wal = real.with_name(real.name + "-wal")
        wal_empty = not wal.exists() or wal.stat().st_size == 0
        if size % page_size or (wal_empty and size < pages * page_size):
            return [f"the file is {size} bytes long, not the {pages * page_size} bytes of its "
                    f"{pages} pages of {page_size} bytes: it was cut short"]
        return []

    def integrity(self) -> IntegrityReport:
        chunk_ids = {int(r[0]) for r in self.con.execute("SELECT id FROM chunks")}
        has_vec = self.vec_dim() is not None
        vec_ids = self._first_ids()
        fts_ids = [self._fts_rowids(table) for table in TABLES]
        return IntegrityReport(
            vector_table_missing=not has_vec and bool(chunk_ids),
            missing_embedding=sorted(chunk_ids - vec_ids) if has_vec else [],
            orphan_embedding=sorted(vec_ids - chunk_ids),
            missing_fts_row=sorted(set.union(*(chunk_ids - ids for ids in fts_ids))),
            orphan_fts_row=sorted(set.union(*(ids - chunk_ids for ids in fts_ids))),
            chunk_without_document=[int(r[0]) for r in self.con.execute(
                "SELECT id FROM chunks WHERE document_id NOT IN (SELECT id FROM documents) "
                "ORDER BY id")],
            document_without_chunks=[str(r[0]) for r in self.con.execute(
                "SELECT path FROM documents d WHERE NOT EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.document_id = d.id) ORDER BY path")],
        )
