"""Frozen records passed between the store and the stages (no logic beyond small helpers),
and the progress protocol the long-running stages (index, tune) report through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # numpy is imported where vectors are read or written, not at start-up
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class DocumentRow:
    """A documents row as the indexer writes it."""

    path: str
    title: str | None
    topic: str | None
    category: str | None
    depth: str | None
    tags: tuple[str, ...]
    date: str | None
    content_hash: str
    size_bytes: int
    last_indexed: str


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunks row as the indexer writes it (the id is assigned by SQLite)."""

    chunk_index: int
    heading: str | None
    level: int | None
    ancestry: tuple[str, ...]
    content: str
    context_text: str | None
    token_count: int | None
    quality_score: float
    line_start: int | None = None
    """1-based file lines the chunk spans (None in an index written before schema 4)."""
    line_end: int | None = None


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """What the indexer needs to know about an indexed document."""

    id: int
    path: str
    content_hash: str
    last_indexed: str = ""
    """When the row was last written or confirmed against its file (`utc_now()` format)."""


@dataclass(frozen=True, slots=True)
class EmbeddingRow:
    """A stored chunk waiting for its vector: what its embedding input is made of."""

    chunk_id: int
    document_id: int
    heading: str | None
    context_text: str | None
    content: str
    path: str
    has_vector: bool = False
    """The chunk already has its first piece's vector (an index written before pieces, whose
    long chunks wait only for their extra pieces: index.md §4)."""


@dataclass(frozen=True, slots=True)
class ChunkVectors:
    """Everything phase 2 stores for one chunk in one transaction (index.md §4): the first
    piece's vector (None when the chunk already has it), the extra pieces' vectors, the token
    count, and how many vectors the chunk then has in all."""

    chunk_id: int
    first: npt.NDArray[np.float32] | None
    extra: npt.NDArray[np.float32]
    """Shape (pieces − 1, dim); zero rows for a chunk that fits the window."""
    token_count: int

    @property
    def pieces(self) -> int:
        return 1 + int(self.extra.shape[0])


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """A chunk joined with its document: what fused candidates and search hits carry."""

    chunk_id: int
    document_id: int
    chunk_index: int
    heading: str | None
    level: int | None
    ancestry: tuple[str, ...]
    content: str
    context_text: str | None
    token_count: int | None
    quality_score: float
    path: str
    title: str | None
    topic: str | None
    category: str | None
    date: str | None
    tags: tuple[str, ...]
    line_start: int | None = None
    line_end: int | None = None
    size_bytes: int | None = None
    """The note's size when indexed, and when its row was last written or confirmed (the
    stale check of search.md §15 compares them with one `stat`)."""
    last_indexed: str | None = None


@dataclass(frozen=True, slots=True)
class FilterMeta:
    """The columns the search filters read for a candidate chunk (no content)."""

    quality: float
    category: str | None
    topic: str | None
    path: str
    tags: tuple[str, ...]
    date: str | None


class ProgressSink(Protocol):
    """Where a long run reports progress (the CLI draws a bar or plain lines). The indexer
    starts one step per phase: files read (unit `files`), the model load and the token count
    (`total` None), the model's tokens embedded (unit `tokens`; `chunks` then says how many
    chunks each batch completed)."""

    def start(self, total: int | None, label: str | None = None, unit: str | None = None) -> None: ...

    def advance(self, done: int, chunks: int) -> None:
        """`done` units finished so far; `chunks` written (or kept) since the last call."""

    def finish(self) -> None: ...


class NullProgress:
    """Reports nothing (quiet runs, and the default when no display is given)."""

    def __enter__(self) -> NullProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def start(self, total: int | None, label: str | None = None, unit: str | None = None) -> None:
        pass

    def advance(self, done: int, chunks: int) -> None:
        pass

    def finish(self) -> None:
        pass
