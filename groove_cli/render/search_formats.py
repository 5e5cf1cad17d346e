"""`search --format md` and `--format csv` (cli.md §5.6, §5.7): hits to paste into a note or a
chat, and one row per hit for a spreadsheet.

Both show the same snippet lines as the text format (render/snippet.py), or the whole chunk
with `--full`; neither carries colour or escape sequences.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from pathlib import Path

from groove_cli.render.snippet import ELLIPSIS, snippet
from groove_cli.render.terminal import location, shown_path
from groove_cli.retrieve.pipeline import SearchHit
from groove_cli.text import printable

SNIPPET_LINES = 6
"""Snippet lines per hit in md and csv (no header lines to share the text format's budget)."""
CSV_COLUMNS = ("rank", "path", "line_start", "line_end", "title", "heading", "score",
               "relevance", "text")

Row = tuple[SearchHit, str, str | None]
"""A hit with its display title and heading breadcrumb."""


def _excerpt(hit: SearchHit, full: bool) -> list[str]:
    """The hit's text lines: the whole chunk, or its snippet with `…` for skipped lines."""
    if full:
        return hit.content.split("\n")
    lines: list[str] = []
    for part in snippet(hit.content, hit.match_spans, SNIPPET_LINES):
        if part.gap_before:
            lines.append(ELLIPSIS)
        lines.append(part.text)
    return lines


def print_markdown(rows: Sequence[Row], kb_root: str | Path | None, *, full: bool,
                   low_confidence: str | None) -> None:
    """Each hit as a `##` title, its location in backticks and its lines as a block quote."""
    out = sys.stdout
    if low_confidence:
        out.write(f"> weak match: {low_confidence}\n\n")
    for number, (hit, title, crumb) in enumerate(rows):
        if number:
            out.write("\n")
        where = location(shown_path(kb_root, hit.chunk.path), hit.chunk.line_start)
        facts = [f"`{printable(where, keep_newlines=False)}`"]
        if crumb:
            facts.append(f"§ {printable(crumb, keep_newlines=False)}")
        facts.append(f"score {hit.score:.4f}")
        if hit.relevance is not None:
            facts.append(f"relevance {hit.relevance:.2f}")
        out.write(f"## {printable(title, keep_newlines=False)}\n\n{' · '.join(facts)}\n\n")
        for line in _excerpt(hit, full):
            out.write(f"> {printable(line)}".rstrip() + "\n")
    out.flush()


def print_csv(rows: Sequence[Row], kb_root: str | Path | None, *, full: bool) -> None:
    """A header row, then one row per hit (RFC 4180 quoting; the text's lines joined by a
    newline inside its quoted cell)."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for rank, (hit, title, crumb) in enumerate(rows, 1):
        chunk = hit.chunk
        writer.writerow([
            rank, shown_path(kb_root, chunk.path), chunk.line_start or "", chunk.line_end or "",
            title, crumb or "", f"{hit.score:.4f}",
            "" if hit.relevance is None else f"{hit.relevance:.4f}",
            printable("\n".join(_excerpt(hit, full))),
        ])
    sys.stdout.flush()
