"""Snippets: the few lines of a hit that show why it matched (cli.md §5.2), as ripgrep shows
matching lines instead of whole files.

A hit's content is cut into lines; a line's worth is how many different query terms it holds
(match_spans, search.md §11), then how many matches. The best lines are shown in their order in
the note, `…` marking skipped lines and the cut ends of a long line. A hit without a match span
(found by the vector leg alone) shows its first lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

MAX_LINES = 4
"""Matching lines shown per hit at most."""
WIDTH = 160
"""A longer line is cut to this many code points around its first match."""
LEAD = 40
"""Code points kept before the first match of a cut line."""
ELLIPSIS = "…"
TITLE_BYTES = 65_536
"""How much of a note is read to find its first `# ` heading."""


@dataclass(frozen=True, slots=True)
class SnippetLine:
    """One shown line: its text (with `…` where cut), the match spans in it (offsets into
    `text`), and whether lines were skipped before it."""

    text: str
    spans: tuple[tuple[int, int], ...]
    gap_before: bool


def _lines(content: str) -> list[tuple[int, str]]:
    """(offset, line) of every line of `content`, trailing whitespace dropped."""
    out: list[tuple[int, str]] = []
    at = 0
    for line in content.split("\n"):
        out.append((at, line.rstrip()))
        at += len(line) + 1
    return out


def _spans_in(spans: Sequence[tuple[int, int]], start: int, end: int
              ) -> list[tuple[int, int]]:
    """The spans overlapping `[start, end)`, clipped and made relative to `start`."""
    return [(max(s, start) - start, min(e, end) - start) for s, e in spans
            if s < end and e > start and min(e, end) > max(s, start)]


def _cut(text: str, spans: list[tuple[int, int]]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`text` cut to WIDTH code points around its first match, `…` at each cut end."""
    if len(text) <= WIDTH:
        return text, tuple(spans)
    start = 0
    if spans and spans[0][1] > WIDTH - LEAD:  # the first match is far in: start before it
        start = max(0, min(spans[0][0] - LEAD, len(text) - WIDTH))
        space = text.find(" ", start, spans[0][0])
        start = space + 1 if space >= 0 else start  # at a word, where words have spaces
    end = start + WIDTH
    if end < len(text):
        space = text.rfind(" ", end - LEAD, end)
        end = space if space > start else end
    head = ELLIPSIS if start > 0 else ""
    tail = ELLIPSIS if end < len(text) else ""
    kept = tuple((s + len(head), e + len(head)) for s, e in _spans_in(spans, start, end))
    return head + text[start:end] + tail, kept


def _worth(content: str, spans: list[tuple[int, int]]) -> tuple[int, int]:
    """(distinct matched terms, matches) of one line."""
    return len({content[s:e].casefold() for s, e in spans}), len(spans)


def snippet(content: str, spans: Sequence[tuple[int, int]] | None, budget: int
            ) -> list[SnippetLine]:
    """The lines to show for a hit, at most `budget` printed lines (each `…` gap line counts)
    and MAX_LINES content lines."""
    lines = [(at, text) for at, text in _lines(content) if text.strip()]
    if not lines or budget <= 0:
        return []
    found = list(spans or ())
    per_line = [_spans_in(found, at, at + len(text)) for at, text in lines]
    ranked = sorted((i for i, s in enumerate(per_line) if s),
                    key=lambda i: (*(-v for v in _worth(lines[i][1], per_line[i])), i))
    if not ranked:  # no match span (a vector-only hit): the first lines
        ranked = list(range(len(lines)))
    chosen: list[int] = []
    for i in ranked:
        trial = sorted([*chosen, i])
        gaps = sum(1 for a, b in pairwise(trial) if b != a + 1)
        gaps += 1 if trial[0] > 0 else 0
        if len(trial) + gaps > budget:
            continue
        chosen = trial
        if len(chosen) == min(MAX_LINES, budget):
            break
    out: list[SnippetLine] = []
    previous = -1
    for i in chosen:
        text, kept = _cut(lines[i][1], per_line[i])
        out.append(SnippetLine(text, kept, gap_before=i != previous + 1))
        previous = i
    return out


def note_title(file: Path | None) -> str | None:
    """The first `# ` heading of the note at `file` (read from the file, so indexes built
    before this existed show it too); None when there is none or the file cannot be read."""
    if file is None or file.suffix.lower() != ".md":
        return None
    try:
        with file.open("rb") as handle:
            head = handle.read(TITLE_BYTES)
    except OSError:
        return None
    from groove_cli.chunk import first_h1

    return first_h1(head.decode("utf-8", errors="replace"))
