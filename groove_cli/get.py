"""`groove get PATH[:LINE[:COUNT]]`: print a note, or the lines of one hit, from the file itself.

It accepts what `groove search` prints (`path:line`, with or without the `  § heading` tail), so
a search line round-trips: `PATH:LINE` alone reads the chunk that covers LINE, found with the
same chunker the index uses, so no index is needed. A path is tried as given (relative to the
working directory) and then inside the KB folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from groove_cli.chunk import ChunkRules, parse_document
from groove_cli.errors import GrooveError, UsageError

_LOCATION = re.compile(r"(?P<path>.+?):(?P<line>\d+)(?::(?P<count>\d+))?", re.DOTALL)
_HEADING_TAIL = "  § "
_BLOCK = 1 << 16


@dataclass(frozen=True, slots=True)
class Location:
    path: str
    line: int | None = None
    count: int | None = None


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Lines `line_start..line_end` (1-based, inclusive) of `path`; `lines()` reads them."""

    path: Path
    line_start: int
    line_end: int

    def lines(self, max_bytes: int | None = None) -> Iterator[str]:
        """The lines, read from the file one at a time; with `max_bytes`, reading stops with a
        GrooveError once the lines (with their newlines) would pass it, however long a line is."""
        left = max_bytes
        try:
            with open(self.path, "rb") as handle:
                if not _skip_lines(handle, self.line_start - 1):
                    return
                for _ in range(self.line_end - self.line_start + 1):
                    raw = handle.readline(-1 if left is None else left + 2)
                    if not raw:
                        return
                    if left is not None:
                        left -= len(raw.rstrip(b"\r\n")) + 1
                        if left < -1:
                            raise GrooveError(
                                f"{self.path.name}:{self.line_start} gives more than "
                                f"{max_bytes} bytes", "ask for fewer lines: PATH:LINE:COUNT")
                    yield _decoded(raw)
        except OSError as exc:
            raise GrooveError(f"cannot read {self.path}: {exc.strerror or exc}") from None


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


def read_excerpt(argument: str, kb: Path | None, rules: ChunkRules = ChunkRules()) -> Excerpt:
    """The lines `argument` names (see the module doc); a clear error when it names none.

    Only the chunk bounds of `PATH:LINE` read the whole file (the chunker needs it), and only
    for a file the index could hold (`scan.MAX_FILE_BYTES`: no hit points into a larger one);
    everything else streams, so `big.md:1:1` costs one line, not the file."""
    whole = find_file(argument.strip(), kb)
    location = Location(argument.strip()) if whole is not None else parse_location(argument)
    path = whole or find_file(location.path, kb)
    if path is None:
        where = "the working directory" + (f" or {kb}" if kb is not None else "")
        raise GrooveError(f"no such file: {location.path} (looked in {where})")
    return excerpt_at(path, location, rules)


def excerpt_at(path: Path, location: Location, rules: ChunkRules = ChunkRules()) -> Excerpt:
    """The lines of exactly `path` that `location`'s line and count name (its path is not
    looked at again: a caller that checked `path` reads what it checked)."""
    try:
        if location.line is None:
            return Excerpt(path, 1, _count_lines(path))
        if location.count is not None:
            end = location.line + location.count - 1
            total = _count_lines(path, stop=end)
            if location.line <= total:
                return Excerpt(path, location.line, min(end, total))
        else:
            text = _chunk_text(path)
            total = _count_lines(path) if text is None else _text_lines(text)
            if location.line <= total:
                chunk_end = None if text is None else _chunk_end(text, path, location.line,
                                                                 rules)
                return Excerpt(path, location.line, chunk_end or total)
    except OSError as exc:
        raise GrooveError(f"cannot read {path}: {exc.strerror or exc}") from None
    raise GrooveError(f"{path} has {total} lines; line {location.line} is past its end")


def _decoded(raw: bytes) -> str:
    """One line as text: invalid UTF-8 replaced, its `\n` and one `\r` before it dropped."""
    line = raw.decode("utf-8", errors="replace")
    line = line[:-1] if line.endswith("\n") else line
    return line[:-1] if line.endswith("\r") else line


def _skip_lines(handle: BinaryIO, count: int) -> bool:
    """Move `handle` past `count` lines, a block at a time (a skipped line is never held whole);
    False when the file ends first."""
    while count > 0:
        at = handle.tell()
        block = handle.read(_BLOCK)
        if not block:
            return False
        found = block.count(b"\n")
        if found < count:
            count -= found
            continue
        end = -1
        for _ in range(count):
            end = block.index(b"\n", end + 1)
        handle.seek(at + end + 1)
        return True
    return True


def _count_lines(path: Path, stop: int | None = None) -> int:
    """How many lines the file has (a last line without `\n` counts), reading blocks; with
    `stop`, counting may end once that many are seen."""
    lines = 0
    last = b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            lines += block.count(b"\n")
            last = block[-1:]
            if stop is not None and lines >= stop:
                return lines
    return lines + (last != b"\n")


def _text_lines(text: str) -> int:
    return text.count("\n") + (bool(text) and not text.endswith("\n"))


def _chunk_text(path: Path) -> str | None:
    """The text the chunker reads for `PATH:LINE`; None for a file it does not chunk."""
    from groove_cli.scan import MAX_FILE_BYTES

    if path.suffix.lower() not in (".md", ".txt") or path.stat().st_size > MAX_FILE_BYTES:
        return None
    return path.read_bytes().decode("utf-8", errors="replace")


def _chunk_end(text: str, path: Path, line: int, rules: ChunkRules) -> int | None:
    """The last line of the chunk that covers `line` (what a search hit at `line` spans)."""
    chunks = parse_document(text, path.name, rules).chunks
    for chunk in chunks:
        if chunk.line_start <= line <= chunk.line_end:
            return chunk.line_end
    return None
