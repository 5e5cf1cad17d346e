"""The Postgres store's phase-2 writes: pending chunks, what they embed, and their vectors —
the first piece in the chunk's row, a long chunk's extra pieces in `groove_chunk_pieces`
(index.md §4, §6.1; store.md). Mixed into `PgStore`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from groove_cli.store.postgres.reads import PgReads
from groove_cli.types import ChunkVectors, EmbeddingRow

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import psycopg


class PgVectorWrites(PgReads):
    """Pending chunks and their vectors, for one KB (`kb`) on the writer's connection."""

    def exact_writes(self) -> bool:
        """Whether vectors go to the float32 bytes columns (`vector_index = exact`)."""
        raise NotImplementedError  # PgStore's

    def _stored_vector(self, vector: npt.NDArray[np.float32] | None, exact: bool) -> object:
        raise NotImplementedError  # PgStore's

    def _bump_vectors_version(self, cur: psycopg.Cursor[Any]) -> None:
        raise NotImplementedError  # PgStore's

    def pending_vectors(self) -> list[int]:
        """Ids of the chunks whose vectors are not all stored yet (index.md §6.1)."""
        return [int(r[0]) for r in self._rows(
            "SELECT id FROM groove_chunks WHERE kb = %s AND (pieces IS NULL OR "
            "(embedding IS NULL AND embedding_f32 IS NULL)) ORDER BY id", (self.kb,))]

    def vector_count(self) -> int:
        """How many chunks have all their vectors."""
        rows = self._rows("SELECT count(*) FROM groove_chunks WHERE kb = %s AND "
                          "pieces IS NOT NULL AND (embedding IS NOT NULL OR "
                          "embedding_f32 IS NOT NULL)", (self.kb,))
        return int(rows[0][0])

    def piece_count(self) -> int:
        """How many extra-piece vectors the KB holds (status)."""
        return int(self._rows("SELECT count(*) FROM groove_chunk_pieces WHERE kb = %s",
                              (self.kb,))[0][0])

    def embedding_rows(self, ids: Sequence[int]) -> list[EmbeddingRow]:
        """What phase 2 embeds for these chunks, in the order of `ids`."""
        found = {int(r[0]): EmbeddingRow(int(r[0]), int(r[5]), r[1], r[2], str(r[3]), str(r[4]),
                                         bool(r[6]))
                 for r in self._rows(
                     "SELECT c.id, c.heading, c.context_text, c.content, d.path, d.id, "
                     "(c.embedding IS NOT NULL OR c.embedding_f32 IS NOT NULL) "
                     "FROM groove_chunks c JOIN groove_documents d ON d.kb = c.kb "
                     "AND d.id = c.document_id WHERE c.kb = %s AND c.id = ANY(%s)",
                     (self.kb, [int(i) for i in ids]))}
        return [found[i] for i in ids if i in found]

    def write_chunk_vectors(self, items: Sequence[ChunkVectors]) -> None:
        """Store the vectors of chunks written without them, all pieces of a chunk together,
        and mark each complete (call inside a transaction)."""
        exact = self.exact_writes()
        column = "embedding_f32" if exact else "embedding"
        mark = "%s" if exact else "%b"
        # the parameters first: a cursor copies the connection's adapters when it is created,
        # and the first vector registers pgvector's binary dumper
        firsts = [(self._stored_vector(item.first, exact), item.token_count, item.pieces,
                   self.kb, int(item.chunk_id)) for item in items if item.first is not None]
        others = [(item.token_count, item.pieces, self.kb, int(item.chunk_id))
                  for item in items if item.first is None]
        extra = [(self.kb, int(item.chunk_id), piece, self._stored_vector(vector, exact))
                 for item in items for piece, vector in enumerate(item.extra, 1)]
        with self.con.cursor() as cur:
            if firsts:
                cur.executemany(f"UPDATE groove_chunks SET {column} = {mark}, token_count = %s, "
                                "pieces = %s WHERE kb = %s AND id = %s", firsts)
            if others:
                cur.executemany("UPDATE groove_chunks SET token_count = %s, pieces = %s "
                                "WHERE kb = %s AND id = %s", others)
            cur.execute("DELETE FROM groove_chunk_pieces WHERE kb = %s AND chunk_id = ANY(%s)",
                        (self.kb, [int(item.chunk_id) for item in items]))
            if extra:
                cur.executemany("INSERT INTO groove_chunk_pieces(kb, chunk_id, piece, "
                                f"{column}) VALUES (%s, %s, %s, {mark})", extra)
            self._bump_vectors_version(cur)

    def set_pieces_mode(self, on: bool, max_length: int, static: bool) -> None:
        """`vector_pieces` switched (see the SQLite store's `set_pieces_mode`)."""
        with self.con.cursor() as cur:
            if on:
                cur.execute("UPDATE groove_chunks SET pieces = NULL WHERE kb = %s AND pieces = 1 "
                            "AND (%s OR token_count IS NULL OR token_count + 32 > %s)",
                            (self.kb, static, max_length))
            else:
                cur.execute("DELETE FROM groove_chunk_pieces WHERE kb = %s", (self.kb,))
                cur.execute("UPDATE groove_chunks SET pieces = 1 WHERE kb = %s AND (pieces > 1 "
                            "OR (pieces IS NULL AND (embedding IS NOT NULL OR "
                            "embedding_f32 IS NOT NULL)))", (self.kb,))
            self._bump_vectors_version(cur)
