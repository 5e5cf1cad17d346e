"""Parent retriever: widen a hit's content to its section or whole document (search.md §9).

A chunk is cut at headings, so a hit can be a fragment of what the reader needs. Short hits in
short documents get the whole document; otherwise the hit grows over its neighbours in the same
section (same heading level and ancestry) within a token budget. Only `content` changes: score,
rank, path and heading stay, so retrieval metrics are unaffected. Pure over the document's rows;
the caller reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groove_cli.types import IndexedChunk

SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class Expansion:
    """The hit's new content and its `expanded_from` object (cli.md §5.1 key order)."""

    content: str
    expanded_from: dict[str, object]


def estimate_tokens(chunk: IndexedChunk) -> int:
    """`token_count` when present and > 0, else UTF-8 bytes // 4."""
    if chunk.token_count is not None and chunk.token_count > 0:
        return chunk.token_count
    return len(chunk.content.encode("utf-8", errors="surrogatepass")) // 4


def whole_doc_row_limit(max_expanded_tokens: int) -> int:
    """The row LIMIT for the whole-document read: `max_expanded_tokens × 2 + 64`."""
    return max_expanded_tokens * 2 + 64


def _whole_document(
    position: int,
    doc_chunks: Sequence[IndexedChunk],
    max_expanded_tokens: int,
    rows_capped: bool,
) -> Expansion | None:
    if rows_capped:
        return None
    if sum(estimate_tokens(c) for c in doc_chunks) > max_expanded_tokens:
        return None
    return Expansion(
        content=SEPARATOR.join(c.content for c in doc_chunks),
        expanded_from={
            "kind": "whole_document",
            "chunk_index": doc_chunks[position].chunk_index,
            "total_chunks": len(doc_chunks),
        },
    )


def _adjacent(position: int, doc_chunks: Sequence[IndexedChunk], max_expanded_tokens: int) -> Expansion:
    hit = doc_chunks[position]
    low = high = position
    total = estimate_tokens(hit)

    def fits(candidate: int, expected_index: int) -> bool:
        if not 0 <= candidate < len(doc_chunks):
            return False
        chunk = doc_chunks[candidate]
        return (
            chunk.chunk_index == expected_index
            and chunk.level == hit.level
            and chunk.ancestry == hit.ancestry
            and total + estimate_tokens(chunk) <= max_expanded_tokens
        )

    before_open = after_open = True
    while before_open or after_open:
        if before_open:
            if fits(low - 1, doc_chunks[low].chunk_index - 1):
                low -= 1
                total += estimate_tokens(doc_chunks[low])
            else:
                before_open = False
        if after_open:
            if fits(high + 1, doc_chunks[high].chunk_index + 1):
                high += 1
                total += estimate_tokens(doc_chunks[high])
            else:
                after_open = False
    return Expansion(
        content=SEPARATOR.join(c.content for c in doc_chunks[low : high + 1]),
        expanded_from={
            "kind": "adjacent",
            "chunk_index": hit.chunk_index,
            "from_index": doc_chunks[low].chunk_index,
            "to_index": doc_chunks[high].chunk_index,
        },
    )


def expand_hit(
    hit_index: int,
    doc_chunks: Sequence[IndexedChunk],
    *,
    whole_doc_threshold_tokens: int,
    max_expanded_tokens: int,
    rows_capped: bool,
) -> Expansion:
    """Expand one hit over its document's chunks.

    Args:
        hit_index: the hit's `chunk_index`.
        doc_chunks: the hit's document's chunks ordered by `chunk_index`. For the whole-document
            path this must be the whole document as read with `LIMIT whole_doc_row_limit(…)`;
            otherwise a contiguous window around the hit is enough (a gap in the indices closes
            that side).
        whole_doc_threshold_tokens: hits estimated below this try the whole document.
        max_expanded_tokens: the cap on the estimated tokens of the returned content.
        rows_capped: the whole-document read returned `LIMIT` rows, so the document may be
            longer than what was read; whole-document then falls through to adjacent merge.

    Returns:
        The joined content and `expanded_from`; `from_index == to_index` when the hit was
        considered but not widened (its own content, even when it alone exceeds the cap).

    Raises:
        ValueError: no chunk of `doc_chunks` has `chunk_index == hit_index`.
    """
    position = next((i for i, c in enumerate(doc_chunks) if c.chunk_index == hit_index), None)
    if position is None:
        raise ValueError(f"chunk {hit_index} is not among the document's rows")
    if estimate_tokens(doc_chunks[position]) < whole_doc_threshold_tokens:
        whole = _whole_document(position, doc_chunks, max_expanded_tokens, rows_capped)
        if whole is not None:
            return whole
    return _adjacent(position, doc_chunks, max_expanded_tokens)
