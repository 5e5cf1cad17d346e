"""`IndexReader`: what the retrieval engine needs from an index, and nothing more.

The legs, the pipeline, eval and tune talk to this protocol, not to SQLite; `Store`
(store/sqlite.py) implements it, and so does `PgStore` (store/postgres/, one KB of a Postgres
database with pgvector), with the same ordering rules: full-text ids by bm25 then id,
neighbours by distance then id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from groove_cli.types import FilterMeta, IndexedChunk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from groove_cli.vectors import PieceStat


class IndexReader(Protocol):
    """The read side of an index, as the retrieval engine uses it."""

    def meta(self) -> dict[str, str]: ...

    def vectors_version(self) -> str: ...

    def min_quality(self) -> float | None: ...

    def chunk_count(self) -> int: ...

    def document_count(self) -> int: ...

    def has_context_text(self) -> bool: ...

    def read_transaction(self) -> AbstractContextManager[None]: ...

    def fts_search_ids(self, expr: str, weights: tuple[float, float, float], n: int,
                       table: str) -> list[int]:
        """Up to n ids matching `expr` in the full-text table `table` (a declared table's name,
        store/fts_tables.py), best bm25 first, ties by id."""
        ...

    def fts_scored_ids(self, expr: str, weights: tuple[float, float, float], k: int,
                       table: str) -> list[tuple[int, float]]:
        """`fts_search_ids` with each id's bm25 score (higher is better), same order."""
        ...

    def fts_match_ids(self, expr: str, table: str) -> set[int]: ...

    def fts_count(self, expr: str, table: str) -> int: ...

    def vec_search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The k nearest chunks by their first piece's distance, ties by id."""
        ...

    def piece_stats(self, query: npt.NDArray[np.float32]) -> list[PieceStat]:
        """Per long chunk, its extra pieces' least distance to `query`, count, and distance sum
        and sum of squares (an exact scan; search.md §4), by chunk id."""
        ...

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, IndexedChunk]: ...

    def filter_meta(self, ids: Sequence[int]) -> dict[int, FilterMeta]: ...

    def vectors_by_id(self, ids: Sequence[int], dim: int) -> dict[int, npt.NDArray[np.float32]]:
        ...

    def piece_vectors_by_id(self, ids: Sequence[int], dim: int
                            ) -> dict[int, npt.NDArray[np.float32]]:
        """All of each chunk's vectors, first piece first: shape (pieces, dim)."""
        ...

    def all_vectors(self) -> Iterator[tuple[int, bytes]]: ...

    def all_piece_vectors(self) -> Iterator[tuple[int, bytes]]: ...

    def document_chunks(self, document_id: int, limit: int) -> list[IndexedChunk]:
        """A document's chunks by chunk index; raises IndexReadError when the read fails."""
        ...

    def document_facets(self) -> list[tuple[str, str | None, str | None]]: ...

    def headings_by_path(self) -> dict[str, set[str]]: ...

    def corpus_rows(self) -> Iterator[tuple[str, int, str | None, str, str | None]]: ...

    def cache_get(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]: ...
