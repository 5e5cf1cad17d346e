"""The store's reads for retrieval: the full-text and vector legs, candidate rows, filter
columns, parent expansion, eval's corpus and the query-embedding cache (search.md, eval.md).

`SearchReads` is mixed into `Store`; the methods are those `IndexReader` (store/reader.py)
declares, so the engine's needs are visible in one place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from groove_cli.config import MAX_TOP_K
from groove_cli.errors import IndexReadError
from groove_cli.store.fts_tables import named
from groove_cli.store.rows import (
    CHUNK_COLUMNS,
    f32_blob,
    f32_vector,
    row_to_chunk,
    scalar_int,
)
from groove_cli.types import FilterMeta, IndexedChunk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from groove_cli.vectors import PieceStat


class SearchReads:
    """Read-only queries of an open index connection (`con`)."""

    con: apsw.Connection

    def fts_search_ids(self, expr: str, weights: tuple[float, float, float], n: int,
                       table: str) -> list[int]:
        """A full-text leg's ranked ids (search.md §3): bm25 ascending, ties by chunk id."""
        name = named(table).name
        sql = (
            f"SELECT rowid FROM {name} WHERE {name} MATCH ? "
            f"ORDER BY bm25({name}, ?, ?, ?), rowid LIMIT ?"
        )
        return [int(r[0]) for r in self.con.execute(sql, (expr, *weights, n))]

    def fts_scored_ids(self, expr: str, weights: tuple[float, float, float], k: int,
                       table: str) -> list[tuple[int, float]]:
        """`fts_search_ids` with each id's bm25 score, sign flipped so higher is better (FTS5's
        `bm25()` is negative): the same ids in the same order."""
        name = named(table).name
        sql = (
            f"SELECT rowid, bm25({name}, ?, ?, ?) AS s FROM {name} WHERE {name} MATCH ? "
            f"ORDER BY s, rowid LIMIT ?"
        )
        return [(int(r[0]), -float(r[1]))
                for r in self.con.execute(sql, (*weights, expr, k))]

    def fts_match_ids(self, expr: str, table: str) -> set[int]:
        """Unranked, unlimited ids matching `expr` (the exclusion scan of search.md §4)."""
        name = named(table).name
        return {int(r[0]) for r in self.con.execute(
            f"SELECT rowid FROM {name} WHERE {name} MATCH ?", (expr,))}

    def fts_count(self, expr: str, table: str) -> int:
        name = named(table).name
        return scalar_int(self.con, f"SELECT count(*) FROM {name} WHERE {name} MATCH ?",
                           (expr,))

    def vec_search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """Plain vec0 KNN (the fallback vector leg): (chunk id, cosine distance), ties by id."""
        rows = self.con.execute(
            "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ?",
            (f32_blob(query), min(k, MAX_TOP_K)),
        ).fetchall()
        found = [(int(cid), float(dist)) for cid, dist in rows  # type: ignore[arg-type]
                 if dist is not None]
        return sorted(found, key=lambda item: (item[1], item[0]))

    def piece_stats(self, query: npt.NDArray[np.float32]) -> list[PieceStat]:
        """The extra pieces' side of the vector leg (index.md §4, search.md §4), one exact scan
        of `chunk_pieces`: per long chunk its least cosine distance to `query`, its number of
        extra pieces, and their distances' sum and sum of squares, by chunk id."""
        rows = self.con.execute(
            "SELECT chunk_id, min(d), count(d), sum(d), sum(d * d) FROM (SELECT chunk_id, "
            "vec_distance_cosine(embedding, ?) AS d FROM chunk_pieces) "
            "GROUP BY chunk_id HAVING count(d) > 0 ORDER BY chunk_id",
            (f32_blob(query),),
        ).fetchall()
        return [(int(cid), float(least), int(n), float(total), float(squares))  # type: ignore[arg-type]
                for cid, least, n, total, squares in rows]

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
                f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.id IN ({marks})", ids):
            chunk = row_to_chunk(row)
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
            vector = f32_vector(blob)
            if vector.shape[0] == dim:
                out[int(cid)] = vector
        return out

    def piece_vectors_by_id(self, ids: Sequence[int], dim: int
                            ) -> dict[int, npt.NDArray[np.float32]]:
        """Every stored vector of each chunk in `ids`, first piece first: shape (pieces, dim)
        (the vector leg scores a chunk from them, search.md §4)."""
        import numpy as np

        found: dict[int, list[npt.NDArray[np.float32]]] = {
            cid: [vector] for cid, vector in self.vectors_by_id(ids, dim).items()}
        for cid, blob in self._rows_in(
                "SELECT chunk_id, embedding FROM chunk_pieces WHERE chunk_id IN ({marks}) "
                "ORDER BY chunk_id, piece", list(found)):
            vector = f32_vector(blob)
            if vector.shape[0] == dim:
                found[int(cid)].append(vector)
        return {cid: np.vstack(rows) for cid, rows in found.items()}

    def all_vectors(self) -> Iterator[tuple[int, bytes]]:
        """Every (chunk id, float32 blob) of a first piece, for the numpy snapshot."""
        for cid, blob in self.con.execute("SELECT chunk_id, embedding FROM vec_chunks"):
            yield int(cid), bytes(blob)

    def all_piece_vectors(self) -> Iterator[tuple[int, bytes]]:
        """Every (chunk id, float32 blob) of an extra piece, by chunk then piece."""
        for cid, blob in self.con.execute(
                "SELECT chunk_id, embedding FROM chunk_pieces ORDER BY chunk_id, piece"):
            yield int(cid), bytes(blob)

    def document_chunks(self, document_id: int, limit: int) -> list[IndexedChunk]:
        """A document's chunks in order (the parent retriever's read).

        Raises:
            IndexReadError: SQLite failed (the parent retriever then keeps the hit as it is).
        """
        try:
            return [row_to_chunk(row) for row in self.con.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.document_id = ? ORDER BY c.chunk_index LIMIT ?", (document_id, limit))]
        except apsw.Error as exc:
            raise IndexReadError(str(exc)) from exc

    def corpus_rows(self) -> Iterator[tuple[str, int, str | None, str, str | None]]:
        """Rows behind the corpus digest (eval.md §6), in (path, chunk_index) order."""
        for path, idx, heading, content, ctx in self.con.execute(
            "SELECT d.path, c.chunk_index, c.heading, c.content, c.context_text FROM chunks c "
            "JOIN documents d ON d.id = c.document_id ORDER BY d.path, c.chunk_index"):
            yield str(path), int(idx), heading, str(content), ctx

    def document_facets(self) -> list[tuple[str, str | None, str | None]]:
        """Every indexed note's (path, category, topic), by path (`list_topics`)."""
        return [(str(path), category, topic) for path, category, topic in self.con.execute(
            "SELECT path, category, topic FROM documents ORDER BY path")]

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
            out[str(key)] = f32_vector(blob)
        return out
