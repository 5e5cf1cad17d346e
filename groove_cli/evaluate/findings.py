"""Finding: documents that quote two or more golden queries verbatim (eval.md §9).

A note that contains the golden queries word for word either leaked from the test set into the
corpus or is the source the queries were written from; either way the scores mean less. One
quote is common by chance, two distinct ones almost never (bench/results/code-notes.md#findings).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from groove_cli.evaluate.golden import GoldenQuery, normalize

CHECK = "golden-queries-quoted"
MIN_NEEDLE_LENGTH = 12
"""Normalised queries shorter than this (in code points) are too generic to count as a quote."""
MIN_QUOTED = 2
PREFIX = 8
"""Characters of a needle used to find candidate needles in a field (≤ MIN_NEEDLE_LENGTH)."""

FindingChunk = tuple[str, str | None, str | None, str]
"""(path, heading, context_text, content) of one chunk."""


def _needles(queries: Sequence[GoldenQuery]) -> dict[str, list[GoldenQuery]]:
    """Normalised query text -> the queries with that text, in file order."""
    needles: dict[str, list[GoldenQuery]] = {}
    for query in queries:
        needle = normalize(query.query)
        if len(needle) >= MIN_NEEDLE_LENGTH:
            needles.setdefault(needle, []).append(query)
    return needles


def golden_quoted_findings(
    queries: Sequence[GoldenQuery],
    chunks: Iterable[FindingChunk],
    top_paths: Mapping[str, Sequence[str]],
) -> list[dict[str, Any]]:
    """Documents that contain at least two distinct golden queries verbatim.

    Args:
        queries: the golden queries.
        chunks: every chunk in (path, chunk_index) order; heading, context_text and content are
            scanned separately (a quote never spans two fields or two chunks).
        top_paths: query id -> the paths of that query's recorded top_k, in rank order.

    Returns:
        `{"check", "path", "quoted": [{"query_id", "rank_in_top_k"}]}` per flagged document, in
        path order. A needle that is a substring of another needle found in the same document is
        not counted, nor one whose queries expect this document.
    """
    return quoted_findings(queries, quoted_needles(queries, chunks), top_paths)


def quoted_needles(queries: Sequence[GoldenQuery], chunks: Iterable[FindingChunk]
                   ) -> dict[str, set[str]]:
    """The scan half of `golden_quoted_findings`: path -> the normalised queries it contains
    (independent of the search results, so eval runs it while the searches run)."""
    needles = _needles(queries)
    found: dict[str, set[str]] = {}
    if len(needles) < MIN_QUOTED:
        return found
    # Candidates by their first PREFIX characters: a needle can only occur in a text holding its
    # prefix, so each field checks the few needles whose prefix it contains (faster than
    # testing every needle against every field: bench/results/code-notes.md#findings).
    by_prefix: dict[str, list[str]] = {}
    for needle in needles:
        by_prefix.setdefault(needle[:PREFIX], []).append(needle)
    for path, heading, context_text, content in chunks:
        matched = found.setdefault(path, set())
        fields = [f for f in (heading, context_text) if f] + [content]
        for field in fields:
            text = normalize(field)
            grams = {text[i : i + PREFIX] for i in range(len(text) - PREFIX + 1)}
            for prefix in grams & by_prefix.keys():
                for needle in by_prefix[prefix]:
                    if needle not in matched and needle in text:
                        matched.add(needle)
    return found


def quoted_findings(queries: Sequence[GoldenQuery], found: Mapping[str, set[str]],
                    top_paths: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """The findings from a `quoted_needles` scan, each quote ranked in its query's top_k."""
    needles = _needles(queries)
    findings: list[dict[str, Any]] = []
    for path, matched in found.items():
        if len(matched) < MIN_QUOTED:
            continue
        kept = [
            needle
            for needle in needles
            if needle in matched
            and not any(needle != other and needle in other for other in matched)
            and not any(e.path == path for q in needles[needle] for e in q.expected)
        ]
        if len(kept) < MIN_QUOTED:
            continue
        quoted = []
        for needle in kept:
            first = needles[needle][0]
            quoted.append(
                {"query_id": first.id, "rank_in_top_k": _rank(top_paths.get(first.id, ()), path)}
            )
        findings.append({"check": CHECK, "path": path, "quoted": quoted})
    return findings


def _rank(paths: Sequence[str], path: str) -> int | None:
    for rank, candidate in enumerate(paths, start=1):
        if candidate == path:
            return rank
    return None


def findings_warning_text(findings: Sequence[Mapping[str, Any]]) -> str:
    """The multi-line stderr warning listing each flagged document and its quoted queries."""
    lines = [
        f"{len(findings)} document(s) quote 2 or more golden queries verbatim ({CHECK})."
    ]
    for finding in findings:
        lines.append(f"  {finding['path']}")
        for item in finding["quoted"]:
            rank = item["rank_in_top_k"]
            where = "not in top_k" if rank is None else f"rank {rank}"
            lines.append(f"    {item['query_id']} ({where})")
    lines.append("  Either these notes leaked into the corpus, or the queries came from them")
    lines.append("  and the documents belong in `expected`. groove eval changes neither.")
    return "\n".join(lines)
