"""The Postgres store's reads for retrieval: the `IndexReader` methods (store/reader.py).

Every query names the KB (`kb = %s`); values are always bound parameters. Orderings follow the
SQLite store's: full-text ids by bm25 then id, neighbours by cosine distance then id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from groove_cli.config import MAX_TOP_K
from groove_cli.errors import IndexReadError
from groove_cli.store.fts_tables import FtsTable, named
from groove_cli.store.postgres import fts
from groove_cli.store.rows import CHUNK_COLUMNS, row_to_chunk
from groove_cli.types import FilterMeta, IndexedChunk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import psycopg

    from groove_cli.vectors import PieceStat

CHUNK_JOIN = "groove_chunks c JOIN groove_documents d ON d.kb = c.kb AND d.id = c.document_id"
MAX_EF_SEARCH = 1000
"""pgvector's upper bound of hnsw.ef_search; a larger k is served by its iterative scan."""


def vector_text(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form; each float32 printed so that it parses back bit for bit."""
    import numpy as np

    return "[" + ",".join(repr(x) for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


def binary_vector_type(con: psycopg.Connection[Any]) -> type[bytes]:
    """A bytes type that `con` sends as a pgvector `vector` parameter in binary (`%b`): two
    16-bit integers (the dimension, 0) and big-endian float32s, pgvector's `vector_recv` form.
    Exact like the text form, and no float is printed by the client or parsed by the server
    (a visible share of the writer's CPU: bench/results/code-notes.md#pg-writes)."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    found = con.execute("SELECT 'vector'::regtype::oid").fetchone()
    vector_oid = int(found[0]) if found else 0

    class VectorBytes(bytes):
        pass

    class VectorDumper(Dumper):
        format = Format.BINARY
        oid = vector_oid

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)

    con.adapters.register_dumper(VectorBytes, VectorDumper)
    return VectorBytes


def vector_binary(vector: npt.NDArray[np.float32]) -> bytes:
    """`vector` in pgvector's binary form (see `binary_vector_type`)."""
    import numpy as np

    values = np.asarray(vector, dtype=">f4")
    return len(values).to_bytes(2, "big") + b"\0\0" + values.tobytes()


def knn_sql(dim: int) -> str:
    """The vector leg's query (params: vector, kb, vector, k). kb is typed as the column's
    integer: the KB's partial HNSW index (`WHERE kb = N`) is usable only when the planner can
    prove that predicate from the query's."""
    dist = f"(embedding::vector({int(dim)}) <=> %s::vector({int(dim)}))"
    return f"SELECT id, {dist} FROM groove_chunks WHERE kb = %s::integer ORDER BY {dist} LIMIT %s"


class PgReads:
    """Read-only queries of one KB (`kb`) on a connection (`con`)."""

    con: psycopg.Connection[Any]
    kb: int
    ef_search: int

    def _rows(self, sql: str, params: Sequence[object] = (), *, prepare: bool | None = None
              ) -> list[tuple[Any, ...]]:
        return self.con.execute(sql, params, prepare=prepare).fetchall()

    def _table_stats(self, table: FtsTable) -> tuple[int, float]:
        """(N, avgdl) of a full-text table in this KB."""
        row = self._rows(f"SELECT chunks, {table.pg_total} FROM groove_kb WHERE id = %s",
                         (self.kb,))
        chunks, tokens = (int(row[0][0]), int(row[0][1])) if row else (0, 0)
        return chunks, (tokens / chunks if chunks else 0.0)

    def fts_search_ids(self, expr: str, weights: tuple[float, float, float], n: int,
                       table: str) -> list[int]:
        """A full-text leg's ranked ids: FTS5's bm25 in SQL (store/postgres/fts.py)."""
        declared = named(table)
        rows, avgdl = self._table_stats(declared)
        q = fts.search_query(declared, self.kb, fts.parse(expr), weights, rows, avgdl, n)
        if q is None:
            return []
        return [int(r[0]) for r in self._rows(q.sql, q.params, prepare=False)]

    def fts_scored_ids(self, expr: str, weights: tuple[float, float, float], k: int,
                       table: str) -> list[tuple[int, float]]:
        """`fts_search_ids` with each id's bm25 score (higher is better), same order."""
        declared = named(table)
        rows, avgdl = self._table_stats(declared)
        q = fts.search_query(declared, self.kb, fts.parse(expr), weights, rows, avgdl, k,
                             scored=True)
        if q is None:
            return []
        return [(int(r[0]), float(r[1])) for r in self._rows(q.sql, q.params, prepare=False)]

    def fts_match_ids(self, expr: str, table: str) -> set[int]:
        q = fts.match_query(named(table), self.kb, fts.parse(expr))
        if q is None:
            return set()
        return {int(r[0]) for r in self._rows(q.sql, q.params, prepare=False)}

    def fts_count(self, expr: str, table: str) -> int:
        return len(self.fts_match_ids(expr, table))

    def vec_dim(self) -> int | None:
        row = self._rows("SELECT dim FROM groove_kb WHERE id = %s", (self.kb,))
        return int(row[0][0]) if row and row[0][0] is not None else None

    def exact_vectors(self) -> bool:
        """True when the KB keeps its vectors as float32 bytes (`vector_index = exact`): KNN
        then runs in groove over all of them (vectors.VectorSnapshot), as on SQLite."""
        row = self._rows("SELECT vector_index FROM groove_kb WHERE id = %s", (self.kb,))
        return bool(row) and row[0][0] == "exact"

    def _vector_rows(self, where: str, params: Sequence[object]
                     ) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """(id, vector) of the KB's chunks matching `where`, from whichever column holds them."""
        import numpy as np

        if self.exact_vectors():
            for cid, blob in self._rows("SELECT id, embedding_f32 FROM groove_chunks WHERE "
                                        f"kb = %s AND embedding_f32 IS NOT NULL {where}",
                                        (self.kb, *params)):
                yield int(cid), np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)
            return
        for cid, values in self._rows("SELECT id, embedding::real[] FROM groove_chunks WHERE "
                                      f"kb = %s AND embedding IS NOT NULL {where}",
                                      (self.kb, *params)):
            yield int(cid), np.asarray(values, dtype=np.float32)

    def vec_search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """KNN through the KB's HNSW index: (chunk id, cosine distance), ties by id.

        ef_search is the setting, raised to k (pgvector returns at most ef_search rows per
        scan; beyond its cap of 1,000 the iterative scan continues in exact distance order).
        """
        dim = self.vec_dim()
        k = min(k, MAX_TOP_K)
        if dim is None or k <= 0:
            return []
        if self.exact_vectors():
            from groove_cli.vectors import VectorSnapshot

            return VectorSnapshot.from_store(self, dim, pieces=False).knn(query, k)
        ef = min(max(self.ef_search, k), MAX_EF_SEARCH)
        with self.con.transaction():
            self.con.execute("SELECT set_config('hnsw.ef_search', %s, true), "
                             "set_config('hnsw.iterative_scan', 'strict_order', true)", (str(ef),))
            found = self._rows(knn_sql(dim), (vector_text(query), self.kb, vector_text(query), k),
                               prepare=False)
        pairs = [(int(cid), float(d)) for cid, d in found if d is not None]
        return sorted(pairs, key=lambda item: (item[1], item[0]))

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, IndexedChunk]:
        wanted = list(dict.fromkeys(int(i) for i in ids))
        out: dict[int, IndexedChunk] = {}
        for row in self._rows(f"SELECT {CHUNK_COLUMNS} FROM {CHUNK_JOIN} "
                              "WHERE c.kb = %s AND c.id = ANY(%s)", (self.kb, wanted)):
            chunk = row_to_chunk(row)
            out[chunk.chunk_id] = chunk
        return out

    def document_facets(self) -> list[tuple[str, str | None, str | None]]:
        """Every indexed note's (path, category, topic), by path (`list_topics`)."""
        return [(str(path), category, topic) for path, category, topic in self._rows(
            "SELECT path, category, topic FROM groove_documents WHERE kb = %s ORDER BY path",
            (self.kb,))]

    def filter_meta(self, ids: Sequence[int]) -> dict[int, FilterMeta]:
        out: dict[int, FilterMeta] = {}
        for cid, quality, category, topic, path, tags, date in self._rows(
                "SELECT c.id, c.quality_score, d.category, d.topic, d.path, d.tags, d.date "
                f"FROM {CHUNK_JOIN} WHERE c.kb = %s AND c.id = ANY(%s)",
                (self.kb, [int(i) for i in ids])):
            out[int(cid)] = FilterMeta(float(quality), category, topic, str(path),
                                       tuple(json.loads(str(tags))), date)
        return out

    def vectors_by_id(self, ids: Sequence[int], dim: int) -> dict[int, npt.NDArray[np.float32]]:
        return {cid: vector for cid, vector in self._vector_rows(
            "AND id = ANY(%s)", ([int(i) for i in ids],)) if vector.shape[0] == dim}

    def all_vectors(self) -> Iterator[tuple[int, bytes]]:
        for cid, vector in self._vector_rows("ORDER BY id", ()):
            yield cid, vector.astype("<f4").tobytes()

    def _piece_rows(self, where: str, params: Sequence[object]
                    ) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """(chunk id, vector) of the KB's extra pieces matching `where`, by chunk then piece."""
        import numpy as np

        column = "embedding_f32" if self.exact_vectors() else "embedding::real[]"
        for cid, value in self._rows(f"SELECT chunk_id, {column} FROM groove_chunk_pieces "
                                     f"WHERE kb = %s {where} ORDER BY chunk_id, piece",
                                     (self.kb, *params)):
            if value is None:
                continue
            if isinstance(value, (bytes, memoryview)):
                yield int(cid), np.frombuffer(bytes(value), dtype="<f4").astype(np.float32)
            else:
                yield int(cid), np.asarray(value, dtype=np.float32)

    def all_piece_vectors(self) -> Iterator[tuple[int, bytes]]:
        for cid, vector in self._piece_rows("", ()):
            yield cid, vector.astype("<f4").tobytes()

    def piece_vectors_by_id(self, ids: Sequence[int], dim: int
                            ) -> dict[int, npt.NDArray[np.float32]]:
        """Every stored vector of each chunk in `ids`, first piece first: (pieces, dim)."""
        import numpy as np

        found = {cid: [vector] for cid, vector in self.vectors_by_id(ids, dim).items()}
        for cid, vector in self._piece_rows("AND chunk_id = ANY(%s)", (list(found),)):
            if vector.shape[0] == dim and cid in found:
                found[cid].append(vector)
        return {cid: np.vstack(rows) for cid, rows in found.items()}

    def piece_stats(self, query: npt.NDArray[np.float32]) -> list[PieceStat]:
        """Per long chunk, its extra pieces' least cosine distance to `query`, count, and the
        distances' sum and sum of squares, by chunk id: an exact scan of the KB's extra pieces
        (see the SQLite store's `piece_stats`)."""
        dim = self.vec_dim()
        if dim is None:
            return []
        if self.exact_vectors():
            import numpy as np

            q = np.asarray(query, dtype=np.float64)
            q = q / max(float(np.linalg.norm(q)), 1e-12)
            per: dict[int, list[float]] = {}
            for cid, vector in self._piece_rows("", ()):
                v = np.asarray(vector, dtype=np.float64)
                norm = float(np.linalg.norm(v))
                if norm > 0:
                    per.setdefault(cid, []).append(1.0 - float(v @ q) / norm)
            return [(cid, min(d), len(d), sum(d), sum(x * x for x in d))
                    for cid, d in sorted(per.items())]
        dist = f"(embedding::vector({int(dim)}) <=> %s::vector({int(dim)}))"
        found = self._rows(f"SELECT chunk_id, min(d), count(d), sum(d), sum(d * d) FROM "
                           f"(SELECT chunk_id, {dist} AS d FROM groove_chunk_pieces "
                           "WHERE kb = %s AND embedding IS NOT NULL) AS p "
                           "GROUP BY chunk_id HAVING count(d) > 0 ORDER BY chunk_id",
                           (vector_text(query), self.kb), prepare=False)
        return [(int(cid), float(least), int(n), float(total), float(squares))
                for cid, least, n, total, squares in found]

    def document_chunks(self, document_id: int, limit: int) -> list[IndexedChunk]:
        """A document's chunks in order (the parent retriever's read)."""
        psycopg = __import__("psycopg")
        try:
            return [row_to_chunk(row) for row in self._rows(
                f"SELECT {CHUNK_COLUMNS} FROM {CHUNK_JOIN} WHERE c.kb = %s AND c.document_id = %s "
                "ORDER BY c.chunk_index LIMIT %s", (self.kb, document_id, limit))]
        except psycopg.Error as exc:
            raise IndexReadError(str(exc)) from exc

    def corpus_rows(self) -> Iterator[tuple[str, int, str | None, str, str | None]]:
        for path, idx, heading, content, ctx in self._rows(
                f"SELECT d.path, c.chunk_index, c.heading, c.content, c.context_text FROM {CHUNK_JOIN} "
                "WHERE c.kb = %s ORDER BY d.path COLLATE \"C\", c.chunk_index", (self.kb,)):
            yield str(path), int(idx), heading, str(content), ctx

    def headings_by_path(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for path, heading in self._rows(f"SELECT d.path, c.heading FROM {CHUNK_JOIN} "
                                        "WHERE c.kb = %s", (self.kb,)):
            out.setdefault(str(path), set())
            if heading is not None:
                out[str(path)].add(str(heading))
        for (path,) in self._rows("SELECT path FROM groove_documents WHERE kb = %s", (self.kb,)):
            out.setdefault(str(path), set())
        return out

    def cache_get(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        from groove_cli.store.rows import f32_vector

        return {str(key): f32_vector(blob) for key, blob in self._rows(
            "SELECT key, embedding FROM groove_query_cache WHERE kb = %s AND key = ANY(%s)",
            (self.kb, list(keys)))}
