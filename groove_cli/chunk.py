"""Markdown and plain-text notes → frontmatter fields and heading-aware chunks (index.md §2–§4).

Everything here is pure: text in, frozen values out, no I/O. The indexer reads the bytes
(scan.py), calls `parse_document`, computes `token_count` with the model tokenizer and stores
the result. `CHUNKER_VERSION` is raised whenever a rule in this module changes, so existing
indexes re-read every file (index.md §6.1 step 4).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from groove_cli.text import iso_day, printable

CHUNKER_VERSION = 2
"""Raised whenever the chunking, frontmatter or quality rules change (index.md §6.1 step 4)."""

SHORT_CHUNK_CHARS = 50
"""A chunk whose content has fewer code points than this is merged into the previous one."""

CONTEXT_MAX_CHARS = 200
"""The breadcrumb is cut to this many code points."""

BOILERPLATE = frozenset(
    {
        "tbd",
        "todo",
        "wip",
        "n/a",
        "未定",
        "準備中",
        "(準備中)",
        "詳細は後述",
        "詳細は後述する",
        "ここに書く",
        "後で書く",
        "coming soon",
        "後述",
    }
)
"""Placeholder texts (ASCII-lowercased) that carry no content on their own (index.md §4)."""

_BOILERPLATE_TRAILING = ".。、, \t"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.DOTALL)
_SCALAR_FIELDS = ("title", "topic", "date", "depth")


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """One chunk as the chunker emits it; the indexer adds `token_count` and stores it."""

    chunk_index: int
    heading: str | None
    level: int | None
    ancestry: tuple[str, ...]
    content: str
    context_text: str | None
    """The breadcrumb `title > ancestors > heading` (`ChunkRow.context_text`); stored only in
    static context mode."""
    quality_score: float
    line_start: int = 1
    """1-based line of the file where the chunk starts: its heading line, else its first text."""
    line_end: int = 1
    """1-based line of the file holding the chunk's last non-blank text (or its heading)."""


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """The frontmatter fields groove reads; every value is the YAML source text."""

    title: str | None = None
    topic: str | None = None
    date: str | None = None
    depth: str | None = None
    tags: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A parsed note: the document row's fields plus its chunks and the warnings to print."""

    title: str | None
    """The frontmatter title only (the breadcrumb falls back to the file name, this does not)."""
    topic: str | None
    category: str | None
    date: str | None
    depth: str | None
    tags: tuple[str, ...]
    chunks: tuple[ChunkDraft, ...]
    warnings: tuple[str, ...]


def chunker_fingerprint(exclude_headings: Sequence[str]) -> str:
    """SHA-256 hex of `[CHUNKER_VERSION, sorted(exclude_headings)]` as JSON (index.md §6.1)."""
    text = json.dumps([CHUNKER_VERSION, sorted(exclude_headings)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- §2 frontmatter and title ------------------------------------------------------------------


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split `text` into (YAML text or None, body) by the rules of index.md §2 steps 1–2.

    A leading BOM is dropped. Without a closing `\\n---` there is no frontmatter and the whole
    text is the body.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        return None, text
    rest = text[3:].lstrip("\r")
    if rest.startswith("\n"):
        rest = rest[1:]
    end = rest.find("\n---")
    if end < 0:
        return None, text
    return rest[:end], rest[end + 4 :].lstrip("\r\n")


def _body_line(text: str, body: str) -> int:
    """The file line (1-based) where `body`, a suffix of `text`, begins."""
    return text.count("\n", 0, len(text) - len(body)) + 1


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a sequence"
    return "a scalar"


# libyaml's parser with the same BaseConstructor: the same values, several times less CPU
# than the pure-Python parser (bench/results/index.md, phase 1); PyYAML without libyaml
# falls back to the latter.
_BASE_LOADER: type[yaml.BaseLoader] | type[yaml.CBaseLoader] = getattr(
    yaml, "CBaseLoader", yaml.BaseLoader)


def parse_frontmatter(yaml_text: str, rel_path: str) -> Frontmatter:
    """Read the fields of index.md §2.3 from frontmatter YAML with `yaml.BaseLoader` semantics.

    Every scalar stays its source text (`depth: 01` is `"01"`, `yes` is `"yes"`). An empty value
    counts as absent. A YAML error or a non-mapping empties every field; a field of the wrong
    type empties only that field. Each problem adds a warning
    `failed to parse YAML frontmatter in {rel_path}: {error}`.
    """

    def warn(error: str) -> str:
        return f"failed to parse YAML frontmatter in {rel_path}: {error}"

    try:
        data: object = yaml.load(yaml_text.replace("\r\n", "\n"), Loader=_BASE_LOADER)
    except (yaml.YAMLError, RecursionError) as exc:
        return Frontmatter(warnings=(warn(str(exc)),))
    if data is None:
        return Frontmatter()
    if not isinstance(data, dict):
        return Frontmatter(
            warnings=(warn(f"expected a mapping at the top level, got {_kind(data)}"),)
        )

    warnings: list[str] = []
    scalars: dict[str, str | None] = {}
    for field in _SCALAR_FIELDS:
        value = data.get(field)
        if isinstance(value, str):
            scalars[field] = value or None
        else:
            scalars[field] = None
            if value is not None:
                warnings.append(warn(f'field "{field}" must be a scalar, got {_kind(value)}'))

    if scalars["date"] is not None and iso_day(scalars["date"]) is None:
        warnings.append(f'{rel_path}: date "{printable(scalars["date"], keep_newlines=False)}" '
                        "is not an ISO-8601 date (YYYY-MM-DD); --date-from/--date-to never "
                        "match this note")

    tags: tuple[str, ...] = ()
    raw_tags = data.get("tags")
    if isinstance(raw_tags, str):
        tags = (raw_tags,) if raw_tags else ()
    elif isinstance(raw_tags, list):
        if all(isinstance(tag, str) for tag in raw_tags):
            tags = tuple(raw_tags)
        else:
            warnings.append(warn('field "tags" must be a list of scalars, got a nested collection'))
    elif raw_tags is not None:
        warnings.append(warn(f'field "tags" must be a list of scalars, got {_kind(raw_tags)}'))

    return Frontmatter(
        title=scalars["title"],
        topic=scalars["topic"],
        date=scalars["date"],
        depth=scalars["depth"],
        tags=tags,
        warnings=tuple(warnings),
    )


def derive_title(rel_path: str) -> str:
    """The title made from the file name: extension dropped, `-`/`_` as spaces (index.md §2.4).

    The extension is cut at the last `.` unless that `.` is the first character; whitespace runs
    collapse to one space and the ends are trimmed; case is kept.
    """
    name = rel_path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot > 0:
        name = name[:dot]
    name = name.replace("-", " ").replace("_", " ")
    return " ".join(name.split())


def category_topic(rel_path: str) -> tuple[str | None, str | None]:
    """(category, topic) from the KB-relative path's segments, file name included (index.md §4).

    1 segment ⇒ (None, None); 2 ⇒ (segment 0, None); 3 or more ⇒ (segment 0, segment 1).
    """
    segments = rel_path.split("/")
    if len(segments) < 2:
        return None, None
    if len(segments) == 2:
        return segments[0], None
    return segments[0], segments[1]


# --- §4 derived values -------------------------------------------------------------------------


def is_boilerplate(content: str) -> bool:
    """Whether `content` is only a placeholder such as `TBD`, `N/A.` or `準備中。` (index.md §4).

    Trailing `.` `。` `、` `,` spaces and tabs are ignored; ASCII letters compare case-insensitively.
    The empty string is never boilerplate.
    """
    core = content.strip().rstrip(_BOILERPLATE_TRAILING)
    return bool(core) and core.translate(_ASCII_LOWER) in BOILERPLATE


def quality_score(content: str) -> float:
    """1.0 minus the penalties of index.md §4, clamped at 0.

    Computed in tenths so the documented values are exact floats (one short line is 0.1, not
    0.09999999999999998), which matters for `quality_score < threshold`.
    """
    stripped = content.strip()
    tenths = 10
    if len(stripped) < 30:
        tenths -= 6
    if is_boilerplate(content):
        tenths -= 5
    if "\n" not in stripped and len(stripped) < 80:
        tenths -= 3
    return max(tenths, 0) / 10


def build_context(parts: Sequence[str | None]) -> str | None:
    """The breadcrumb: stripped non-empty parts without repeated neighbours, joined by ` > `.

    Cut to 200 code points; None when no part is left (index.md §3).
    """
    kept: list[str] = []
    for part in parts:
        text = (part or "").strip()
        if text and (not kept or kept[-1] != text):
            kept.append(text)
    if not kept:
        return None
    return " > ".join(kept)[:CONTEXT_MAX_CHARS]


# --- §3 chunking -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Section:
    """A chunk being built: its heading, level, ancestry and lines (or merged content)."""

    heading: str | None
    level: int | None
    ancestry: tuple[str, ...]
    lines: list[str]
    excluded: bool = False
    content: str = ""
    first_line: int = 1
    """File line of `lines[0]` (the line after the heading, or the body's first line)."""
    line_start: int = 1
    line_end: int = 1


def _fence_open(line: str) -> tuple[str, int] | None:
    """(fence character, run length) when `line` opens a code fence, else None."""
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    run, rest = match.group(1), match.group(2)
    if run[0] == "`" and "`" in rest:
        return None
    return run[0], len(run)


def _fence_closes(line: str, char: str, length: int) -> bool:
    """Whether `line` closes a fence opened with `length` times `char`."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3:
        return False
    run = len(body) - len(body.lstrip(char))
    return run >= length and not body[run:].strip()


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) when `line` is an h2 or h3 heading outside a fence, else None."""
    text = line.strip()
    if text.startswith("### "):
        return 3, text[4:].strip()
    if text.startswith("## "):
        return 2, text[3:].strip()
    return None


def first_h1(text: str) -> str | None:
    """The text of a note's first `# ` heading outside a code fence (frontmatter skipped), or
    None: the title a person sees at the top of a note without a frontmatter `title`."""
    _, body = split_frontmatter(text)
    fence: tuple[str, int] | None = None
    for line in body.split("\n"):
        if fence is not None:
            if _fence_closes(line, *fence):
                fence = None
            continue
        fence = _fence_open(line)
        stripped = line.strip()
        if fence is None and stripped.startswith("# ") and len(line) - len(line.lstrip(" ")) < 4:
            title = re.sub(r"(?:^|\s+)#+$", "", stripped[2:].strip()).strip()
            if title:
                return title
    return None


def _sections(body: str, exclude_headings: Sequence[str], first_line: int = 1) -> list[_Section]:
    """Split `body` into emitted sections (before the short-chunk merge); `first_line` is the
    file line of the body's first line, so each section knows the lines it spans."""
    emitted: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current = _Section(heading=None, level=None, ancestry=(), lines=[], first_line=first_line)
    fence: tuple[str, int] | None = None

    def flush(section: _Section) -> None:
        section.content = "\n".join(section.lines).strip()
        filled = [i for i, text in enumerate(section.lines) if text.strip()]
        heading_line = section.first_line - 1
        if filled:
            start = section.first_line + filled[0]
            section.line_end = section.first_line + filled[-1]
        else:
            start = section.line_end = heading_line
        section.line_start = heading_line if section.heading is not None else start
        if not section.excluded and (section.content or section.heading is not None):
            emitted.append(section)

    for number, raw in enumerate(body.split("\n"), first_line):
        line = raw[:-1] if raw.endswith("\r") else raw
        heading = None
        if fence is not None:
            if _fence_closes(line, *fence):
                fence = None
        else:
            fence = _fence_open(line)
            if fence is None:
                heading = _heading(line)
        if heading is None:
            if not current.excluded:
                current.lines.append(line)
            continue
        level, text = heading
        flush(current)
        while stack and stack[-1][0] >= level:
            stack.pop()
        ancestry = tuple(title for _, title in stack)
        stack.append((level, text))
        excluded = any(entry in text for entry in exclude_headings)
        current = _Section(heading=text, level=level, ancestry=ancestry, lines=[], excluded=excluded,
                           first_line=number + 1)
    flush(current)
    return emitted


def _merge_short(sections: list[_Section]) -> list[_Section]:
    """Fold each chunk under 50 code points into the previous kept chunk (index.md §3)."""
    merged: list[_Section] = []
    for section in sections:
        if len(section.content) >= SHORT_CHUNK_CHARS or not merged:
            merged.append(section)
            continue
        previous = merged[-1]
        text = previous.content
        if text:
            text += "\n\n"
        if section.heading is not None:
            text += f"## {section.heading}"
            if section.content:
                text += "\n\n" + section.content
        else:
            text += section.content
        previous.content = text
        previous.line_end = max(previous.line_end, section.line_end)
    return merged


def chunk_markdown(
    body: str, title: str | None, exclude_headings: Sequence[str], first_line: int = 1
) -> tuple[ChunkDraft, ...]:
    """Chunk a Markdown body (frontmatter already removed) by its h2/h3 headings (index.md §3).

    Args:
        body: The text after the frontmatter.
        title: The breadcrumb title (frontmatter title, else the derived one).
        exclude_headings: Substrings; an h2/h3 containing one is dropped with its body lines.
        first_line: The file line (1-based) of the body's first line, for `line_start`/`line_end`.

    Returns:
        The chunks in order, `chunk_index` 0..n-1, each with its breadcrumb and quality score.
    """
    sections = _merge_short(_sections(body, exclude_headings, first_line))
    return tuple(
        ChunkDraft(
            chunk_index=index,
            heading=section.heading,
            level=section.level,
            ancestry=section.ancestry,
            content=section.content,
            context_text=build_context([title, *section.ancestry, section.heading]),
            quality_score=quality_score(section.content),
            line_start=section.line_start,
            line_end=section.line_end,
        )
        for index, section in enumerate(sections)
    )


def chunk_text(text: str, title: str | None) -> tuple[ChunkDraft, ...]:
    """A `.txt` file as one chunk: BOM stripped, line ends made LF, trimmed; empty ⇒ no chunk."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    content = "\n".join(lines).strip()
    if not content:
        return ()
    filled = [number for number, line in enumerate(lines, 1) if line.strip()]
    return (
        ChunkDraft(
            chunk_index=0,
            heading=None,
            level=None,
            ancestry=(),
            content=content,
            context_text=build_context([title]),
            quality_score=quality_score(content),
            line_start=filled[0],
            line_end=filled[-1],
        ),
    )


def parse_document(
    text: str, rel_path: str, *, exclude_headings: Sequence[str] = ()
) -> ParsedDocument:
    """Parse a decoded note by its extension (`.md` Markdown, `.txt` plain text, any case).

    Raises:
        ValueError: for any other extension (scan.py never yields one).
    """
    name = rel_path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    extension = name[dot + 1 :].lower() if dot > 0 else ""
    category, path_topic = category_topic(rel_path)
    derived = derive_title(rel_path)

    if extension == "txt":
        return ParsedDocument(
            title=None,
            topic=path_topic,
            category=category,
            date=None,
            depth=None,
            tags=(),
            chunks=chunk_text(text, derived),
            warnings=(),
        )
    if extension != "md":
        raise ValueError(f"no parser for {rel_path!r}: only .md and .txt files are supported")

    yaml_text, body = split_frontmatter(text)
    front = parse_frontmatter(yaml_text, rel_path) if yaml_text is not None else Frontmatter()
    breadcrumb_title = front.title if front.title and front.title.strip() else derived
    return ParsedDocument(
        title=front.title,
        topic=front.topic if front.topic is not None else path_topic,
        category=category,
        date=front.date,
        depth=front.depth,
        tags=front.tags,
        chunks=chunk_markdown(body, breadcrumb_title, exclude_headings, _body_line(text, body)),
        warnings=front.warnings,
    )
