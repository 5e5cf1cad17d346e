"""The SQLite store's phase-2 writes: which chunks are pending, what they embed, and their
vectors — the first piece in `vec_chunks`, a long chunk's extra pieces in `chunk_pieces`
(index.md §4, §6.1, §9). Mixed into `Store`."""

from __future__ import annotations

import json
from collections.abc import Sequence

import apsw

from groove_cli.store.rows import f32_blob, scalar_int
from groove_cli.types import ChunkVectors, EmbeddingRow

PIECES_KEY = "vector_pieces"
"""index_meta: '1' when long chunks have their extra pieces' vectors, '0' when not."""


def pieces_switch_note(meta: dict[str, str], on: bool) -> str | None:
    """A note when the settings turn `vector_pieces` on but the index was last built with it
    off: its long chunks' tails have no vectors until the next `groove index` (index.md §4);
    None otherwise (switched off, the leg simply ignores the stored pieces)."""
    if not on or meta.get(PIECES_KEY, "1") == "1":
        return None
    return ("the text of long chunks past the model's window has no vectors yet (this index "
            "was built with vector_pieces off); `groove index` embeds it")


class VectorWrites:
    """Pending chunks and their vectors, on an open index connection (`con`)."""

    con: apsw.Connection

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

    def bump_vectors_version(self) -> None:
        """Mark the vector snapshot stale (see vectors.py); called in every vector write."""
        self.con.execute(
            "INSERT INTO index_meta(key, value) VALUES ('vectors_version', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def pending_vectors(self) -> list[int]:
        """Ids of the chunks whose vectors are not all stored yet (index.md §6.1 phase 2):
        `pieces` NULL (no vector yet, or a long chunk waiting for its extra pieces), or no
        first vector (one lost otherwise)."""
        have = self._first_ids()
        return [int(cid) for cid, pieces in self.con.execute(
            "SELECT id, pieces FROM chunks ORDER BY id") if pieces is None or cid not in have]

    def _first_ids(self) -> set[int]:
        if self.vec_dim() is None:
            return set()
        return {int(r[0]) for r in self.con.execute("SELECT chunk_id FROM vec_chunks")}

    def vector_count(self) -> int:
        """How many chunks have all their vectors (status, search and eval compare it with
        chunk_count): two counts, no scan of the ids."""
        if self.vec_dim() is None:
            return 0
        return min(scalar_int(self.con, "SELECT count(*) FROM chunks WHERE pieces IS NOT NULL"),
                   scalar_int(self.con, "SELECT count(*) FROM vec_chunks"))

    def piece_count(self) -> int:
        """How many extra-piece vectors the index holds (status)."""
        return scalar_int(self.con, "SELECT count(*) FROM chunk_pieces")

    def embedding_rows(self, ids: Sequence[int]) -> list[EmbeddingRow]:
        """What phase 2 embeds for these chunks, in the order of `ids` (missing ids left out)."""
        have = "EXISTS (SELECT 1 FROM vec_chunks v WHERE v.chunk_id = c.id)"
        if self.vec_dim() is None:
            have = "0"
        found = {int(r[0]): EmbeddingRow(int(r[0]), int(r[5]), r[1], r[2], str(r[3]), str(r[4]),
                                         bool(r[6]))
                 for r in self.con.execute(
                     f"SELECT c.id, c.heading, c.context_text, c.content, d.path, d.id, {have} "
                     "FROM chunks c JOIN documents d ON d.id = c.document_id "
                     "WHERE c.id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),))}
        return [found[i] for i in ids if i in found]

    def write_chunk_vectors(self, items: Sequence[ChunkVectors]) -> None:
        """Store the vectors of chunks written without them, all pieces of a chunk together,
        and mark each complete (call inside a transaction)."""
        for item in items:
            cid = int(item.chunk_id)
            if item.first is not None:
                self.con.execute("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (?, ?)",
                                 (cid, f32_blob(item.first)))
            self.con.execute("DELETE FROM chunk_pieces WHERE chunk_id = ?", (cid,))
            for piece, vector in enumerate(item.extra, 1):
                self.con.execute("INSERT INTO chunk_pieces(chunk_id, piece, embedding) "
                                 "VALUES (?, ?, ?)", (cid, piece, f32_blob(vector)))
            self.con.execute("UPDATE chunks SET token_count = ?, pieces = ? WHERE id = ?",
                             (item.token_count, item.pieces, cid))
        self.bump_vectors_version()

    def set_pieces_mode(self, on: bool, max_length: int, static: bool) -> None:
        """`vector_pieces` switched (index.md §4): on, every complete chunk that may be longer
        than `max_length` (content tokens + 32, any chunk in static context mode) becomes
        pending for its extra pieces; off, the extra pieces are deleted and a chunk that
        waited only for them (it has its first vector) is complete (call inside a
        transaction)."""
        if on:
            self.con.execute("UPDATE chunks SET pieces = NULL WHERE pieces = 1 AND "
                             "(? OR token_count IS NULL OR token_count + 32 > ?)",
                             (int(static), max_length))
        else:
            self.con.execute("DELETE FROM chunk_pieces")
            self.con.execute("UPDATE chunks SET pieces = 1 WHERE pieces > 1")
            if self.vec_dim() is not None:
                self.con.execute("UPDATE chunks SET pieces = 1 WHERE pieces IS NULL AND "
                                 "id IN (SELECT chunk_id FROM vec_chunks)")
        self.bump_vectors_version()
