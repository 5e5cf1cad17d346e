"""`groove get PATH[:LINE[:COUNT]]`: print a note, or the lines of one hit, from the file itself.

It accepts what `groove search` prints (`path:line`, with or without the `  § heading` tail), so
a search line round-trips: `PATH:LINE` alone reads the chunk that covers LINE, found with the
same chunker the index uses, so no index is needed. A path is tried as given (relative to the
working directory) and then inside the KB folder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from groove_cli.chunk import parse_document
from groove_cli.errors import GrooveError, UsageError

_LOCATION = re.compile(r"(?P<path>.+?):(?P<line>\d+)(?::(?P<count>\d+))?", re.DOTALL)
_HEADING_TAIL = "  § "


@dataclass(frozen=True, slots=True)
class Location:
    path: str
    line: int | None = None
    count: int | None = None


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Lines `line_start..line_end` (1-based, inclusive) of `path`."""

    path: Path
    line_start: int
    line_end: int
    lines: tuple[str, ...]


def parse_location(text: str) -> Location:
    """`PATH`, `PATH:LINE` or `PATH:LINE:COUNT`, optionally followed by what search prints
    after the location (`  § heading`). Raises UsageError for a line or count of 0."""
    text = text.split(_HEADING_TAIL, 1)[0].strip()
    if not text:
        raise UsageError("the location is empty; pass PATH, PATH:LINE or PATH:LINE:COUNT")
    match = _LOCATION.fullmatch(text)
    if match is None:
        return Location(text)
    line = int(match["line"])
    count = int(match["count"]) if match["count"] is not None else None
    if line < 1 or (count is not None and count < 1):
        raise UsageError(f"{text}: LINE and COUNT start at 1")
    return Location(match["path"], line, count)


def find_file(location: str, kb: Path | None) -> Path | None:
    """The file `location` names: as given, else the whole text (a path that contains `:N`)."""
    for candidate in _candidates(location, kb):
        if candidate.is_file():
            return candidate
    return None


def _candidates(path: str, kb: Path | None) -> list[Path]:
    found = [Path(path).expanduser()]
    if kb is not None and not Path(path).is_absolute():
        found.append(kb / path)
    return found


def read_excerpt(argument: str, kb: Path | None, exclude_headings: Sequence[str] = ()) -> Excerpt:
    """The lines `argument` names (see the module doc); a clear error when it names none."""
    whole = find_file(argument.strip(), kb)
    location = Location(argument.strip()) if whole is not None else parse_location(argument)
    path = whole or find_file(location.path, kb)
    if path is None:
        where = "the working directory" + (f" or {kb}" if kb is not None else "")
        raise GrooveError(f"no such file: {location.path} (looked in {where})")
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise GrooveError(f"cannot read {path}: {exc.strerror or exc}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line opens no line of its own
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if location.line is None:
        return Excerpt(path, 1, len(lines), tuple(lines))
    if location.line > len(lines):
        raise GrooveError(f"{path} has {len(lines)} lines; line {location.line} is past its end")
    if location.count is not None:
        end = min(len(lines), location.line + location.count - 1)
    else:
        end = _chunk_end(text, path, location.line, exclude_headings) or len(lines)
    return Excerpt(path, location.line, end, tuple(lines[location.line - 1 : end]))


def _chunk_end(text: str, path: Path, line: int, exclude_headings: Sequence[str]) -> int | None:
    """The last line of the chunk that covers `line` (what a search hit at `line` spans)."""
    if path.suffix.lower() not in (".md", ".txt"):
        return None
    chunks = parse_document(text, path.name, exclude_headings=exclude_headings).chunks
    for chunk in chunks:
        if chunk.line_start <= line <= chunk.line_end:
            return chunk.line_end
    return None
