"""The index file: the only module that speaks SQL.

An apsw connection with sqlite-vec loaded, numbered migrations recorded in `PRAGMA user_version`,
and typed methods for the indexer (per-document transactions), the search legs, the query
embedding cache, `status` and `doctor` (index.md §9).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from groove_cli.errors import GrooveError, IndexMissing
from groove_cli.retrieve.cjk import CJK_TOKENISER_VERSION, row_text
from groove_cli.types import ChunkRow, DocumentRow, FilterMeta, IndexedChunk, StoredDocument

if TYPE_CHECKING:  # numpy is imported where vectors are read or written, not at start-up
    import numpy as np
    import numpy.typing as npt

FTS_TABLES = ("fts_chunks", "fts_words", "fts_cjk")
"""The trigram table (substrings of any script), the word-level table (Latin, stemmed) and the
CJK table (groove's unigram + bigram tokens, written through `groove_cjk()`)."""
_FTS_VALUE = {"fts_chunks": "?", "fts_words": "?", "fts_cjk": "groove_cjk(?)"}
"""How a column value is written per table: the CJK table stores the tokenised text."""
MIN_SQLITE = (3, 45, 0)
MIN_SQLITE_VEC = (0, 1, 9)
QUERY_CACHE_MAX_ROWS = 10_000

_CHUNK_COLUMNS = """c.id, c.document_id, c.chunk_index, c.heading, c.level, c.ancestry, c.content,
       c.context_text, c.token_count, c.quality_score, d.path, d.title, d.topic, d.category,
       d.date, d.tags"""


def _no_memory_statistics() -> None:
    """Switch off SQLite's memory statistics before the first connection opens.

    With them on (apsw's default) every allocation takes one process-wide mutex, and FTS5
    allocates a lot: two threads running full-text queries on separate connections then
    barely overlap (1,000 JSQuAD queries: 0.95 s on one thread, 0.84 s on two; with the
    statistics off 0.92 s and 0.46 s). groove never reads them. SQLite accepts the setting
    only while no connection is open; if one already is, nothing changes.
    """
    try:
        apsw.shutdown()
        apsw.config(apsw.SQLITE_CONFIG_MEMSTATUS, 0)
    except apsw.Error:
        pass
    finally:
        apsw.initialize()


_no_memory_statistics()


def utc_now() -> str:
    """UTC RFC 3339 with microseconds, the timestamp format of every stored time."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.lstrip("v").split("-")[0].split(".")[:3])


def vec_extension_path() -> str:
    """The bundled sqlite-vec extension, located without importing the package (its
    `__init__` imports numpy, which a full-text-only search never needs)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise GrooveError("the sqlite-vec package is not installed", hint="pip install sqlite-vec")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def _load_vec(con: apsw.Connection) -> str:
    try:
        con.enable_load_extension(True)
        con.load_extension(vec_extension_path())
        con.enable_load_extension(False)
    except apsw.Error as exc:
        raise GrooveError(
            f"cannot load the sqlite-vec extension: {exc}", hint="upgrade sqlite-vec"
        ) from None
    version = str(con.execute("SELECT vec_version()").fetchall()[0][0])
    if _version_tuple(version) < MIN_SQLITE_VEC:
        raise GrooveError(
            f"sqlite-vec {version} is too old (groove needs >= 0.1.9)", hint="upgrade sqlite-vec"
        )
    return version


def check_runtime() -> None:
    """Start-up check: SQLite ≥ 3.45 through apsw and a loadable sqlite-vec (spec README)."""
    found = apsw.sqlite_lib_version()
    if _version_tuple(found) < MIN_SQLITE:
        raise GrooveError(f"SQLite {found} is too old (groove needs >= 3.45)", hint="upgrade apsw")
    _load_vec(apsw.Connection(":memory:"))


def _migrations() -> list[tuple[int, str]]:
    folder = resources.files("groove_cli") / "migrations"
    found = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(found)


SCHEMA_VERSION = max(number for number, _ in _migrations())


def _check_table(table: str) -> None:
    """Table names cannot be bound parameters; only the two FTS tables are ever interpolated."""
    if table not in FTS_TABLES:
        raise ValueError(f"not an FTS table: {table!r}")


def _groove_cjk(*args: Any) -> str:
    """SQL `groove_cjk(text)`: the CJK table's column value for `text` (NULL gives '')."""
    value = args[0]
    return row_text(value if isinstance(value, str) else None)


def _scalar_int(con: apsw.Connection, sql: str, args: tuple[object, ...] = ()) -> int:
    value = con.execute(sql, args).fetchall()[0][0]
    assert isinstance(value, int)
    return value


def _f32_blob(vector: npt.NDArray[np.float32]) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def _f32_vector(blob: object) -> npt.NDArray[np.float32]:
    import numpy as np

    return np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)  # type: ignore[call-overload]


def _row_to_chunk(row: Sequence[object]) -> IndexedChunk:
    (cid, did, idx, heading, level, ancestry, content, context, tokens, quality, path, title, topic,
     category, date, tags) = row
    return IndexedChunk(
        chunk_id=int(cid),  # type: ignore[call-overload]
        document_id=int(did),  # type: ignore[call-overload]
        chunk_index=int(idx),  # type: ignore[call-overload]
        heading=heading,  # type: ignore[arg-type]
        level=level,  # type: ignore[arg-type]
        ancestry=_json_tuple(ancestry),
        content=str(content),
        context_text=context,  # type: ignore[arg-type]
        token_count=tokens,  # type: ignore[arg-type]
        quality_score=float(quality),  # type: ignore[arg-type]
        path=str(path),
        title=title,  # type: ignore[arg-type]
        topic=topic,  # type: ignore[arg-type]
        category=category,  # type: ignore[arg-type]
        date=date,  # type: ignore[arg-type]
        tags=_json_tuple(tags),
    )


def _json_tuple(text: object) -> tuple[str, ...]:
    """A stored JSON list as a tuple; the common empty list skips the parser (a search reads
    two of these per hit)."""
    return () if text == "[]" else tuple(json.loads(str(text)))


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


def _start_read(con: apsw.Connection) -> None:
    """Make an open `BEGIN` take its snapshot now (a deferred transaction starts reading at
    its first statement that touches the file)."""
    con.execute("SELECT count(*) FROM index_meta").fetchall()


class Store:
    """An open index file."""

    def __init__(self, con: apsw.Connection, path: Path, *, readonly: bool) -> None:
        self.con = con
        self.path = path
        self.readonly = readonly

    # ------------------------------------------------------------------ opening

    @classmethod
    def open_for_index(cls, path: Path) -> Store:
        """Open or create the index for writing: WAL, then pending migrations."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = apsw.Connection(str(path))
        except apsw.Error as exc:
            raise GrooveError(f"cannot open the index at {path}: {exc}") from None
        cls._configure(con)
        version = cls._user_version(con)
        if version > SCHEMA_VERSION:
            raise GrooveError(
                f"the index at {path} was written by a newer groove (schema version {version}; "
                f"this groove supports up to {SCHEMA_VERSION})."
            )
        con.execute("PRAGMA journal_mode=WAL")
        store = cls(con, path, readonly=False)
        store._migrate(version)
        return store

    @classmethod
    def open_readonly(cls, path: Path, kb_hint: str = "<path>") -> Store:
        """Open an existing index for reading; never creates or migrates (cli.md §3)."""
        if not path.is_file():
            raise IndexMissing(
                f"no index found at {path}. Run `groove index --kb-path {kb_hint}` first."
            )
        try:
            con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
            cls._configure(con)
            version = cls._user_version(con)
        except apsw.Error as exc:
            raise GrooveError(f"cannot read the index at {path}: {exc}") from None
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
        _load_vec(con)
        # the CJK table's tokeniser, used by its writes and by migration 0003's backfill
        con.create_scalar_function("groove_cjk", _groove_cjk, 1, deterministic=True)
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("PRAGMA busy_timeout=30000")

    @staticmethod
    def _user_version(con: apsw.Connection) -> int:
        return _scalar_int(con, "PRAGMA user_version")

    def _migrate(self, current: int) -> None:
        for number, sql in _migrations():
            if number <= current:
                continue
            with self.transaction():
                self.con.execute(sql)
                self.con.execute(f"PRAGMA user_version={number}")

    def close(self) -> None:
        self.con.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One `BEGIN IMMEDIATE` transaction; rolled back on any exception, Ctrl-C included."""
        self.con.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
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
        for table in FTS_TABLES:
            self.con.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")

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

    def vec_dim(self) -> int | None:
        """The declared dimension of vec_chunks, or None when the table does not exist."""
        rows = self.con.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'vec_chunks'"
        ).fetchall()
        if not rows:
            return None
        sql = str(rows[0][0])
        start = sql.index("float[") + len("float[")
        return int(sql[start : sql.index("]", start)])

    def create_vec_table(self, dim: int) -> None:
        self.con.execute("DROP TABLE IF EXISTS vec_chunks")
        self.con.execute(
            "CREATE VIRTUAL TABLE vec_chunks USING vec0("
            f"chunk_id INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine)"
        )

    def bump_vectors_version(self) -> None:
        """Mark the vector snapshot stale (see vectors.py); called in every vector write."""
        self.con.execute(
            "INSERT INTO index_meta(key, value) VALUES ('vectors_version', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def vectors_version(self) -> str:
        rows = self.con.execute("SELECT value FROM index_meta WHERE key = 'vectors_version'").fetchall()
        return str(rows[0][0]) if rows else "0"

    # ------------------------------------------------------------------ counts

    def document_count(self) -> int:
        return _scalar_int(self.con, "SELECT count(*) FROM documents")

    def chunk_count(self) -> int:
        return _scalar_int(self.con, "SELECT count(*) FROM chunks")

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
            str(path): StoredDocument(int(did), str(path), str(digest))
            for did, path, digest in self.con.execute(
                "SELECT id, path, content_hash FROM documents"
            )
        }

    def chunk_rows(self, document_id: int) -> list[ChunkRow]:
        return [
            ChunkRow(int(idx), heading, level, tuple(json.loads(str(anc))), str(content), ctx,
                     tokens, float(quality))
            for idx, heading, level, anc, content, ctx, tokens, quality in self.con.execute(
                "SELECT chunk_index, heading, level, ancestry, content, context_text, token_count, "
                "quality_score FROM chunks WHERE document_id = ? ORDER BY chunk_index",
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
            for table in FTS_TABLES:
                self.con.execute(f"DELETE FROM {table} WHERE rowid = ?", (cid,))
            self.con.execute("DELETE FROM vec_chunks WHERE chunk_id = ?", (cid,))
            self.con.execute("DELETE FROM chunks WHERE id = ?", (cid,))

    def write_document(self, doc: DocumentRow, chunks: Sequence[ChunkRow],
                       vectors: npt.NDArray[np.float32], existing_id: int | None) -> int:
        """Replace a document's rows (call inside a transaction). Returns the document id."""
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
        for chunk, vector in zip(chunks, vectors, strict=True):
            self.con.execute(
                "INSERT INTO chunks(document_id, chunk_index, heading, level, ancestry, content, "
                "context_text, token_count, quality_score) VALUES (?,?,?,?,?,?,?,?,?)",
                (doc_id, chunk.chunk_index, chunk.heading, chunk.level,
                 json.dumps(list(chunk.ancestry), ensure_ascii=False), chunk.content,
                 chunk.context_text, chunk.token_count, chunk.quality_score),
            )
            cid = int(self.con.last_insert_rowid())
            self._insert_fts(cid, chunk.heading, chunk.context_text, chunk.content)
            self.con.execute("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (?, ?)",
                             (cid, _f32_blob(vector)))
        self.bump_vectors_version()
        return doc_id

    def _insert_fts(self, cid: int, heading: str | None, context: str | None, content: str,
                    tables: Sequence[str] = FTS_TABLES) -> None:
        for table in tables:
            value = _FTS_VALUE[table]
            self.con.execute(
                f"INSERT INTO {table}(rowid, heading, context, content) "
                f"VALUES (?, {value}, {value}, {value})",
                (cid, heading or "", context or "", content),
            )

    @staticmethod
    def _doc_values(doc: DocumentRow) -> tuple[object, ...]:
        return (doc.path, doc.title, doc.topic, doc.category, doc.depth,
                json.dumps(list(doc.tags), ensure_ascii=False), doc.date, doc.content_hash,
                doc.size_bytes, doc.last_indexed)

    def update_document_row(self, document_id: int, doc: DocumentRow,
                            quality_scores: Sequence[float] | None = None) -> None:
        """Frontmatter-only fast path: the document row (and optionally quality) only."""
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
        for table in FTS_TABLES:
            self.con.execute(f"DELETE FROM {table}")
        self.con.execute("DELETE FROM chunks")
        self.con.execute("DELETE FROM documents")
        self.con.execute("DELETE FROM query_cache")
        self.create_vec_table(dim)
        self.bump_vectors_version()

    def _fts_rowids(self, table: str) -> set[int]:
        return {int(r[0]) for r in self.con.execute(f"SELECT rowid FROM {table}")}

    def _vec_ids(self) -> set[int]:
        if self.vec_dim() is None:
            return set()
        return {int(r[0]) for r in self.con.execute("SELECT chunk_id FROM vec_chunks")}

    def backfill_fts(self) -> int:
        """Insert FTS rows for chunks that lack one in any table (a repair, and the re-tokenising
        of the CJK table when its tokeniser version changed); returns how many chunks were
        repaired."""
        version = str(CJK_TOKENISER_VERSION)
        if self.meta().get("cjk_tokeniser_version") != version:
            self.con.execute("DELETE FROM fts_cjk")
            self.set_meta({"cjk_tokeniser_version": version})
        have = {table: self._fts_rowids(table) for table in FTS_TABLES}
        repaired = 0
        rows: list[tuple[int, str | None, str | None, str]] = self.con.execute(
            "SELECT id, heading, context_text, content FROM chunks").fetchall()  # type: ignore[assignment]
        for cid, heading, ctx, content in rows:
            missing = [t for t in FTS_TABLES if cid not in have[t]]
            if missing:
                self._insert_fts(cid, heading, ctx, content, missing)
                repaired += 1
        return repaired

    # ------------------------------------------------------------------ search reads

    def fts_search(self, expr: str, weights: tuple[float, float, float], n: int,
                   table: str = "fts_chunks") -> list[IndexedChunk]:
        """An FTS leg (search.md §3): bm25 ascending, ties by chunk id."""
        _check_table(table)
        sql = (
            f"SELECT {_CHUNK_COLUMNS}, bm25({table}, ?, ?, ?) AS rank FROM {table} f "
            "JOIN chunks c ON c.id = f.rowid JOIN documents d ON d.id = c.document_id "
            f"WHERE {table} MATCH ? ORDER BY rank, c.id LIMIT ?"
        )
        return [_row_to_chunk(row[:-1]) for row in self.con.execute(sql, (*weights, expr, n))]

    def fts_search_ids(self, expr: str, weights: tuple[float, float, float], n: int,
                       table: str = "fts_chunks") -> list[int]:
        """An FTS leg's ranked ids only (tune re-runs it per weight set)."""
        _check_table(table)
        sql = (
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? "
            f"ORDER BY bm25({table}, ?, ?, ?), rowid LIMIT ?"
        )
        return [int(r[0]) for r in self.con.execute(sql, (expr, *weights, n))]

    def fts_match_ids(self, expr: str, table: str = "fts_chunks") -> set[int]:
        """Unranked, unlimited ids matching `expr` (the exclusion scan of search.md §4)."""
        _check_table(table)
        return {int(r[0]) for r in self.con.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (expr,))}

    def fts_count(self, expr: str, table: str = "fts_chunks") -> int:
        _check_table(table)
        return _scalar_int(self.con, f"SELECT count(*) FROM {table} WHERE {table} MATCH ?",
                           (expr,))

    def vec_search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """Plain vec0 KNN (the fallback vector leg): (chunk id, cosine distance), ties by id."""
        rows = self.con.execute(
            "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ?",
            (_f32_blob(query), min(k, 4096)),
        ).fetchall()
        found = [(int(cid), float(dist)) for cid, dist in rows  # type: ignore[arg-type]
                 if dist is not None]
        return sorted(found, key=lambda item: (item[1], item[0]))

    def _rows_in(self, sql: str, values: Iterable[object]) -> Iterator[tuple[Any, ...]]:
        """Rows of `sql` whose `IN ({marks})` takes `values` (deduplicated), 500 at a time so
        no statement exceeds SQLite's bound-parameter limit."""
        wanted = list(dict.fromkeys(values))
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            yield from self.con.execute(sql.format(marks=",".join("?" * len(batch))), batch)

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, IndexedChunk]:
        out: dict[int, IndexedChunk] = {}
        for row in self._rows_in(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.id IN ({marks})", ids):
            chunk = _row_to_chunk(row)
            out[chunk.chunk_id] = chunk
        return out

    def filter_meta(self, ids: Sequence[int]) -> dict[int, FilterMeta]:
        """What the search filters look at, keyed by chunk id (no content: the legs read only
        this, the fused pool reads the rest)."""
        out: dict[int, FilterMeta] = {}
        for cid, quality, category, topic, path, tags, date in self._rows_in(
                "SELECT c.id, c.quality_score, d.category, d.topic, d.path, d.tags, d.date "
                "FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.id IN ({marks})", ids):
            out[int(cid)] = FilterMeta(float(quality), category, topic,
                                       str(path), tuple(json.loads(str(tags))), date)
        return out

    def vectors_by_id(self, ids: Sequence[int], dim: int) -> dict[int, npt.NDArray[np.float32]]:
        """Stored embeddings for `ids`, in batches of 500 (search.md §8)."""
        out: dict[int, npt.NDArray[np.float32]] = {}
        for cid, blob in self._rows_in(
                "SELECT chunk_id, embedding FROM vec_chunks WHERE chunk_id IN ({marks})", ids):
            vector = _f32_vector(blob)
            if vector.shape[0] == dim:
                out[int(cid)] = vector
        return out

    def all_vectors(self) -> Iterator[tuple[int, bytes]]:
        """Every (chunk id, float32 blob), for the numpy snapshot."""
        for cid, blob in self.con.execute("SELECT chunk_id, embedding FROM vec_chunks"):
            yield int(cid), bytes(blob)

    def document_chunks(self, document_id: int, limit: int) -> list[IndexedChunk]:
        """A document's chunks in order (the parent retriever's read)."""
        return [_row_to_chunk(row) for row in self.con.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.document_id = ? ORDER BY c.chunk_index LIMIT ?", (document_id, limit))]

    def corpus_rows(self) -> Iterator[tuple[str, int, str | None, str, str | None]]:
        """Rows behind the corpus digest (eval.md §6), in (path, chunk_index) order."""
        for path, idx, heading, content, ctx in self.con.execute(
            "SELECT d.path, c.chunk_index, c.heading, c.content, c.context_text FROM chunks c "
            "JOIN documents d ON d.id = c.document_id ORDER BY d.path, c.chunk_index"):
            yield str(path), int(idx), heading, str(content), ctx

    def headings_by_path(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for path, heading in self.con.execute(
            "SELECT d.path, c.heading FROM chunks c JOIN documents d ON d.id = c.document_id"):
            out.setdefault(str(path), set())
            if heading is not None:
                out[str(path)].add(str(heading))
        for (path,) in self.con.execute("SELECT path FROM documents"):
            out.setdefault(str(path), set())
        return out

    # ------------------------------------------------------------------ query cache

    def cache_get(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        out: dict[str, npt.NDArray[np.float32]] = {}
        for key, blob in self._rows_in(
                "SELECT key, embedding FROM query_cache WHERE key IN ({marks})", keys):
            out[str(key)] = _f32_vector(blob)
        return out

    # ------------------------------------------------------------------ doctor

    def integrity(self) -> IntegrityReport:
        chunk_ids = {int(r[0]) for r in self.con.execute("SELECT id FROM chunks")}
        has_vec = self.vec_dim() is not None
        vec_ids = self._vec_ids()
        fts_ids = [self._fts_rowids(table) for table in FTS_TABLES]
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
                    (key, _f32_blob(vector), now),
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
