"""Parent retriever (search.md §9): whole document, level-aware adjacent merge, token caps."""

from __future__ import annotations

import pytest

from groove_cli.retrieve.expand import (
    Expansion,
    estimate_tokens,
    expand_hit,
    whole_doc_row_limit,
)
from groove_cli.types import IndexedChunk

SECTION = ("Ops",)


def chunk(
    index: int,
    tokens: int | None = 10,
    *,
    level: int | None = 2,
    ancestry: tuple[str, ...] = SECTION,
    content: str | None = None,
) -> IndexedChunk:
    return IndexedChunk(chunk_id=index + 1, document_id=1, chunk_index=index, heading=None,
                        level=level, ancestry=ancestry, content=content or f"c{index}",
                        context_text=None, token_count=tokens, quality_score=1.0, path="a.md",
                        title=None, topic=None, category=None, date=None, tags=())


def expand(
    hit: int,
    chunks: list[IndexedChunk],
    *,
    threshold: int = 0,
    cap: int = 2000,
    rows_capped: bool = False,
) -> Expansion:
    return expand_hit(
        hit,
        chunks,
        whole_doc_threshold_tokens=threshold,
        max_expanded_tokens=cap,
        rows_capped=rows_capped,
    )


def adjacent(hit: int, a: int, b: int) -> dict[str, object]:
    return {"kind": "adjacent", "chunk_index": hit, "from_index": a, "to_index": b}


def test_estimate_tokens() -> None:
    assert estimate_tokens(chunk(0, 17)) == 17
    # NULL or ≤ 0 token counts fall back to UTF-8 bytes // 4.
    assert estimate_tokens(chunk(0, None, content="x" * 41)) == 41 // 4
    assert estimate_tokens(chunk(0, 0, content="x" * 8)) == 2
    assert estimate_tokens(chunk(0, -5, content="x" * 8)) == 2
    assert estimate_tokens(chunk(0, None, content="あいう")) == 9 // 4  # 3 bytes each


def test_whole_doc_row_limit() -> None:
    assert whole_doc_row_limit(2000) == 2000 * 2 + 64 == 4064


# --- whole document -------------------------------------------------------------------------


def test_whole_document() -> None:
    doc = [chunk(0, 30), chunk(1, 50, level=3), chunk(2, 40, ancestry=())]
    result = expand(1, doc, threshold=100, cap=2000)
    assert result.content == "c0\n\nc1\n\nc2"
    assert result.expanded_from == {"kind": "whole_document", "chunk_index": 1, "total_chunks": 3}
    assert list(result.expanded_from) == ["kind", "chunk_index", "total_chunks"]


def test_whole_document_threshold_is_strict() -> None:
    doc = [chunk(0, 100), chunk(1, 10)]
    # est(hit) = 100 is not < 100: adjacent merge instead.
    assert expand(0, doc, threshold=100).expanded_from == adjacent(0, 0, 1)
    assert expand(0, doc, threshold=101).expanded_from["kind"] == "whole_document"


def test_whole_document_sum_cap() -> None:
    # Σ est = 40 + 30 + 30 = 100.
    doc = [chunk(0, 40), chunk(1, 30), chunk(2, 30)]
    assert expand(1, doc, threshold=50, cap=100).expanded_from["kind"] == "whole_document"
    # Σ est 100 > 99: falls through to adjacent: 30 + 40 (before) = 70, + 30 (after) = 100 > 99.
    assert expand(1, doc, threshold=50, cap=99).expanded_from == adjacent(1, 0, 1)


def test_whole_document_sum_uses_fallback_estimate() -> None:
    # Chunk 1 has no token count: 400 bytes // 4 = 100, so Σ = 10 + 100 = 110 > 100.
    doc = [chunk(0, 10), chunk(1, None, content="x" * 400)]
    result = expand(0, doc, threshold=50, cap=100)
    assert result.expanded_from == adjacent(0, 0, 0)
    assert result.content == "c0"


def test_rows_capped_falls_through() -> None:
    doc = [chunk(0, 10), chunk(1, 10)]
    assert expand(0, doc, threshold=50, rows_capped=True).expanded_from == adjacent(0, 0, 1)


def test_threshold_zero_never_whole_document() -> None:
    doc = [chunk(0, None, content=""), chunk(1, 10)]  # est(hit) = 0, not < 0
    assert expand(0, doc, threshold=0).expanded_from == adjacent(0, 0, 1)


# --- adjacent merge -------------------------------------------------------------------------


def test_alternates_before_first() -> None:
    doc = [chunk(i) for i in range(7)]  # est 10 each
    # cap 35: 3 (10) → before 2 (20) → after 4 (30) → before 1 (40 > 35, closed) → after 5
    # (40 > 35, closed).
    result = expand(3, doc, cap=35)
    assert result.expanded_from == adjacent(3, 2, 4)
    assert result.content == "c2\n\nc3\n\nc4"
    assert list(result.expanded_from) == ["kind", "chunk_index", "from_index", "to_index"]
    # cap 25: before 2 (20) → after 4 (30 > 25, closed) → before 1 (30 > 25, closed).
    assert expand(3, doc, cap=25).expanded_from == adjacent(3, 2, 3)


def test_one_side_closed_the_other_keeps_growing() -> None:
    doc = [chunk(i) for i in range(6)]
    # Before: 0, then the document start closes it; after grows to the end.
    assert expand(1, doc, cap=1000).expanded_from == adjacent(1, 0, 5)


def test_different_level_closes_a_side() -> None:
    doc = [chunk(0), chunk(1, level=3), chunk(2), chunk(3), chunk(4)]
    # Before: chunk 1 is h3 under the hit's h2 level: closed, chunk 0 is never reached.
    assert expand(2, doc).expanded_from == adjacent(2, 2, 4)


def test_different_ancestry_closes_a_side() -> None:
    doc = [chunk(0), chunk(1), chunk(2, ancestry=("Dev",)), chunk(3)]
    assert expand(1, doc).expanded_from == adjacent(1, 0, 1)


def test_none_levels_are_equal() -> None:
    doc = [chunk(0, level=None, ancestry=()), chunk(1, level=None, ancestry=()), chunk(2)]
    assert expand(0, doc).expanded_from == adjacent(0, 0, 1)


def test_hit_alone_over_the_cap_is_not_expanded() -> None:
    doc = [chunk(0, 5), chunk(1, 3000, content="big"), chunk(2, 5)]
    result = expand(1, doc, cap=2000)
    assert result.expanded_from == adjacent(1, 1, 1)
    assert result.content == "big"


def test_cap_is_inclusive() -> None:
    doc = [chunk(0, 10), chunk(1, 10), chunk(2, 10)]
    assert expand(1, doc, cap=30).expanded_from == adjacent(1, 0, 2)
    assert expand(1, doc, cap=29).expanded_from == adjacent(1, 0, 1)


def test_fallback_estimates_in_the_block() -> None:
    # Neighbours without a usable token count weigh bytes // 4: 80 bytes → 20; -1 and 12 bytes → 3.
    doc = [
        chunk(0, None, content="y" * 80),
        chunk(1, 10),
        chunk(2, -1, content="z" * 12),
    ]
    assert expand(1, doc, cap=33).expanded_from == adjacent(1, 0, 2)  # 10 + 20 + 3 = 33
    # cap 32: before 0 (10 + 20 = 30), then after 2 would make 33: closed.
    assert expand(1, doc, cap=32).expanded_from == adjacent(1, 0, 1)
    # cap 29: before 0 would make 30: closed; after 2 makes 13.
    assert expand(1, doc, cap=29).expanded_from == adjacent(1, 1, 2)


def test_window_with_a_gap_closes_that_side() -> None:
    # The caller passed a window around hit 5 that skips 6: the after side closes at the gap.
    doc = [chunk(4), chunk(5), chunk(7)]
    assert expand(5, doc).expanded_from == adjacent(5, 4, 5)


def test_hit_must_be_in_the_rows() -> None:
    with pytest.raises(ValueError):
        expand(9, [chunk(0), chunk(1)])
