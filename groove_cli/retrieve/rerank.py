"""The reranker stage (search.md §7): a cross-encoder reorders the fused pool.

The model itself is `models.CrossEncoder`; this stage needs only its `score`, so tests can pass
any object with that method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from groove_cli.types import IndexedChunk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class Reranker(Protocol):
    """A cross-encoder: one raw score per (query, document) pair."""

    def score(self, query: str, documents: Sequence[str]) -> npt.NDArray[np.float32]: ...


def rerank_document(chunk: IndexedChunk) -> str:
    """The reranker's document: breadcrumb + content in static mode, else content (§7)."""
    if chunk.context_text and chunk.context_text.strip():
        return f"{chunk.context_text}\n\n{chunk.content}"
    return chunk.content


def rerank(reranker: Reranker, query_text: str, chunks: Sequence[IndexedChunk]
           ) -> list[tuple[int, float]]:
    """(position in `chunks`, raw score) pairs, best score first; equal scores keep the fused
    order."""
    scores = reranker.score(query_text, [rerank_document(c) for c in chunks])
    order = sorted(range(len(chunks)), key=lambda i: -float(scores[i]))
    return [(i, float(scores[i])) for i in order]
