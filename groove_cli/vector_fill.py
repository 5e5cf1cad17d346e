"""Phase 2 of `groove index` (index.md §6.1): embed stored chunks that have no vector yet.

The pending chunks' tokens are counted first (the counts order the batches and are stored);
then each batch is embedded and its vectors committed in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from groove_cli.types import EmbeddingRow

if TYPE_CHECKING:
    from groove_cli.models import Embedder
    from groove_cli.store import Store
    from groove_cli.store.postgres import PgStore


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one committed batch did."""

    embedded: int
    truncated: int
    """Chunks whose input was longer than `max_length` (cut for embedding, index.md §4)."""
    dropped: tuple[str, ...]
    """Paths of documents dropped for a degenerate embedding (index.md §4)."""


def embedding_text(heading: str | None, context: str | None, content: str, static: bool) -> str:
    """The text embedded for a chunk (index.md §4), before the model's passage prefix."""
    if static and context and context.strip():
        return f"{context}\n\n{content}"
    if not content and heading:
        return heading
    return content


COUNT_PAGE = 2_048
"""Chunks read and tokenised at a time while phase 2 counts tokens: memory stays bounded."""


def count_pending(store: Store | PgStore, embedder: Embedder, ids: list[int],
                  should_stop: Callable[[], bool]) -> dict[int, int] | None:
    """`token_count` of each pending chunk (index.md §4), before any is embedded: the exact
    counts order the batches (similar lengths, little padding) and are stored with the
    vectors, so each chunk is tokenised for counting once. None when a stop was requested."""
    counts: dict[int, int] = {}
    for first in range(0, len(ids), COUNT_PAGE):
        if should_stop():
            return None
        rows = store.embedding_rows(ids[first : first + COUNT_PAGE])
        found = embedder.count_tokens([row.content for row in rows])
        counts.update((row.chunk_id, n) for row, n in zip(rows, found, strict=True))
    return counts


def embed_batch(store: Store | PgStore, embedder: Embedder, batch: list[EmbeddingRow],
                counts: list[int], static: bool) -> BatchResult:
    """Embed one batch and commit its vectors and token counts; a degenerate vector drops
    its document (index.md §4)."""
    inputs = [embedding_text(row.heading, row.context_text, row.content, static)
              for row in batch]
    room = embedder.max_length
    # exact input lengths only where the content's count plus a generous bound for the
    # breadcrumb, prefix and special tokens (two per character) could pass the window
    extra = 2 * len(embedder.settings.passage_prefix) + 8
    maybe_long = [i for i, row in enumerate(batch)
                  if counts[i] + 2 * (len(inputs[i]) - len(row.content)) + extra > room]
    truncated = 0
    if maybe_long:
        lengths = embedder.input_lengths([inputs[i] for i in maybe_long], "passage")
        truncated = sum(1 for n in lengths if n > room)
    vectors = embedder.embed_passages(inputs)
    norms = np.linalg.norm(vectors, axis=1)
    bad = ~np.isfinite(vectors).all(axis=1) | (norms < 1e-6)
    dropped = {batch[i].document_id: batch[i].path for i in np.flatnonzero(bad)}
    good = [i for i, row in enumerate(batch) if row.document_id not in dropped]
    with store.transaction():
        store.write_vectors([batch[i].chunk_id for i in good], vectors[good],
                            [counts[i] for i in good])
        for document_id in dropped:
            store.delete_document(document_id)
    return BatchResult(len(good), truncated, tuple(sorted(dropped.values())))
