"""match_spans: where the query's phrases occur in a hit's returned content (search.md §11).

Offsets are code points into the returned `content`, end exclusive. Matching is case-insensitive
through `str.casefold`, which can turn one code point into several (`ß` → `ss`), so the folded
text keeps, per folded code point, the index of the original code point that produced it.
"""

from __future__ import annotations

from groove_cli.retrieve.query import query_phrases
from groove_cli.text.words import ENGLISH_STOPWORDS

MAX_CONTENT_BYTES = 262_144
MAX_TERMS = 100
MAX_SPANS = 100


def _fold(content: str) -> tuple[str, list[int] | None]:
    """Casefold code point by code point; `origin` is None when folding kept every length at 1.

    `str.casefold` is context-free and never folds a code point to nothing, so an unchanged
    total length means each code point folded to exactly one: the identity mapping.
    """
    folded = content.casefold()
    if len(folded) == len(content):
        return folded, None
    parts: list[str] = []
    origin: list[int] = []
    for index, ch in enumerate(content):
        piece = ch.casefold()
        parts.append(piece)
        origin.extend([index] * len(piece))
    return "".join(parts), origin


def _content_terms(terms: set[str]) -> set[str]:
    """The terms without English stopwords (`the` would light up every line), as the word-level
    leg drops them; all of them when nothing else is left (a query of stopwords only)."""
    kept = {t for t in terms if t not in ENGLISH_STOPWORDS}
    return kept or terms


def match_spans(positive_text: str, content: str) -> list[tuple[int, int]] | None:
    """Spans of `content` matching the query's phrases (or its words when it has none).

    Returns:
        None when not computed (blank query text, content over 262,144 UTF-8 bytes); else the
        sorted, disjoint, non-empty `(start, end)` spans, at most 100, `[]` without a match.
        Spans that overlap are merged; touching spans stay separate.
    """
    text = positive_text.strip()
    if not text:
        return None
    terms = query_phrases(text) or text.split()
    if len(content.encode("utf-8", errors="surrogatepass")) > MAX_CONTENT_BYTES:
        return None
    folded_terms = sorted(_content_terms({t.casefold() for t in terms} - {""}))[:MAX_TERMS]
    if not folded_terms:
        return []
    folded, origin = _fold(content)
    budget = max(1, MAX_SPANS // len(folded_terms))

    spans: list[tuple[int, int]] = []
    for term in folded_terms:
        start = 0
        for _ in range(budget):
            found = folded.find(term, start)
            if found == -1:
                break
            end = found + len(term)
            if origin is None:
                spans.append((found, end))
            else:
                spans.append((origin[found], origin[end - 1] + 1))
            start = end
    spans.sort()

    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
