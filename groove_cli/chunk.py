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
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import yaml

from groove_cli.text import iso_day, printable

if TYPE_CHECKING:
    from groove_cli.config import Settings

CHUNKER_VERSION = 3
"""Raised whenever the chunking, frontmatter or quality rules change (index.md §6.1 step 4)."""

SHORT_CHUNK_CHARS = 50
"""A chunk whose content has fewer code points than this is merged into the previous one."""

DEFAULT_MAX_TOKENS = 700
"""The default chunk budget in estimated tokens. The estimate over-counts most text, so this
is about the default model's 512-token window for prose; a budget of 460 keeps every text
measured inside the window, but cut sections that fitted and cost CISI nDCG@10
(bench/results/chunk_estimate.md, bench/results/chunking_quality.md)."""

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
    """The note's title: its frontmatter `title`, else its first heading of any level, else the
    title made from its file name (`derive_title`)."""
    topic: str | None
    category: str | None
    date: str | None
    depth: str | None
    tags: tuple[str, ...]
    chunks: tuple[ChunkDraft, ...]
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ChunkRules:
    """The settings that decide a note's chunks (index.md §3), read once from the `chunk.*` keys
    and `exclude_headings` (config_schema.py)."""

    heading_levels: tuple[int, ...] = (2, 3, 4, 5, 6)
    """ATX heading levels that start a section; a heading of another level is body text. A
    note's `#` heading is its title and stays in its first chunk's text, where the embedding
    sees it (bench/results/chunking_quality.md)."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    """The largest chunk, in estimated model tokens (`estimate_tokens`); a longer section is
    split at paragraph and code-block boundaries."""
    html_comments: bool = False
    """Keep the text inside HTML comments (`<!-- … -->`); by default it is not indexed."""
    exclude_headings: tuple[str, ...] = ()
    """Substrings; a section whose heading contains one is dropped with its body lines."""

    @classmethod
    def of(cls, settings: Settings) -> ChunkRules:
        """The rules resolved settings give."""
        return cls(tuple(sorted({int(str(n)) for n in settings.list_("chunk.heading_levels")})),
                   settings.int_("chunk.max_tokens") or DEFAULT_MAX_TOKENS,
                   settings.bool_("chunk.html_comments"),
                   tuple(str(h) for h in settings.list_("exclude_headings")))


def chunker_fingerprint(rules: ChunkRules) -> str:
    """SHA-256 hex of the chunker version and every rule as JSON (index.md §6.1): a change to
    any of them re-reads every file."""
    text = json.dumps([CHUNKER_VERSION, sorted(rules.exclude_headings),
                       sorted(rules.heading_levels), rules.max_tokens, rules.html_comments])
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


_WORD = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_")
_WORD_CHARS = 4
"""Letters of a word that one token is estimated to cover (bench/results/chunk_estimate.md)."""
_LONG_WORD = 8
"""Letters past this many in one word count one token per 2 (hashes, ids, runs of one letter)."""


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def estimate_tokens(text: str) -> int:
    """An upper estimate of the default model's tokens for `text`, without its tokenizer (so
    `get` finds the same chunks as `index` with no model): a wide (CJK) character counts one,
    a run of letters one per 4 of its first 8 letters and one per 2 after them (rounded up),
    a number one per 2 digits, any other symbol one. It over-counts prose and code for the
    multilingual-e5 tokenizer (bench/results/chunk_estimate.md); a chunk the model still
    finds too long keeps its extra piece vectors (index.md §4)."""
    count = 0
    for match in _WORD.finditer(text):
        word = match.group()
        if word[0].isdigit():
            count += -(-len(word) // 2)
        elif word.isalpha() or word[0] == "_":
            wide = sum(1 for char in word if _wide(char))
            narrow = len(word) - wide
            long = max(narrow - _LONG_WORD, 0)  # an unusual run splits into short pieces
            count += wide + -(-(narrow - long) // _WORD_CHARS) + -(-long // 2)
        else:
            count += 1
    return count


@dataclass(slots=True)
class _Section:
    """A chunk being built: its heading, level, ancestry and (file line, text) body lines."""

    heading: str | None
    level: int | None
    ancestry: tuple[str, ...]
    heading_line: int
    """File line of the heading (for a section without one: the line before its body)."""
    body: list[tuple[int, str]]
    excluded: bool = False
    continued: bool = False
    """A later part of a section split to fit the budget: it starts at its own first line."""

    @property
    def content(self) -> str:
        return "\n".join(text for _, text in self.body).strip()

    @property
    def line_start(self) -> int:
        if self.heading is not None and not self.continued:
            return self.heading_line
        filled = [n for n, text in self.body if text.strip()]
        return filled[0] if filled else self.heading_line

    @property
    def line_end(self) -> int:
        filled = [n for n, text in self.body if text.strip()]
        return filled[-1] if filled else self.heading_line


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


_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")


def _heading(line: str, levels: Sequence[int] = (1, 2, 3, 4, 5, 6)) -> tuple[int, str] | None:
    """(level, text) when `line` is an ATX heading (`#`…`######`, a space after the run, an
    optional closing run) of one of `levels`, else None. An empty heading is not one."""
    match = _ATX.fullmatch(line)
    if match is None:
        return None
    level, text = len(match.group(1)), (match.group(2) or "").strip()
    text = re.sub(r"(?:^|[ \t]+)#+$", "", text).strip()
    if level not in levels or not text:
        return None
    return level, text


def first_heading(text: str, levels: Sequence[int] = (1, 2, 3, 4, 5, 6)) -> str | None:
    """The text of a note's first heading of `levels` outside a code fence (frontmatter
    skipped), or None: the title a person sees at the top of a note."""
    _, body = split_frontmatter(text)
    fence: tuple[str, int] | None = None
    for line in body.split("\n"):
        line = line.removesuffix("\r")
        if fence is not None:
            if _fence_closes(line, *fence):
                fence = None
            continue
        fence = _fence_open(line)
        if fence is None:
            found = _heading(line, levels)
            if found is not None:
                return found[1]
    return None


def first_h1(text: str) -> str | None:
    """The first `# ` heading (render/snippet.py reads it for indexes built before titles)."""
    return first_heading(text, (1,))


def _without_comments(line: str, inside: bool) -> tuple[str, bool]:
    """`line` with the HTML comment text removed, and whether a comment is still open after it."""
    kept: list[str] = []
    while line:
        if inside:
            end = line.find("-->")
            if end < 0:
                return "".join(kept), True
            line, inside = line[end + 3 :], False
        else:
            start = line.find("<!--")
            if start < 0:
                kept.append(line)
                break
            kept.append(line[:start])
            line, inside = line[start + 4 :], True
    return "".join(kept), inside


def _sections(body: str, rules: ChunkRules, first_line: int = 1) -> list[_Section]:
    """Split `body` into sections at its headings (before the short-chunk merge); `first_line`
    is the file line of the body's first line."""
    emitted: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current = _Section(None, None, (), first_line - 1, [])
    fence: tuple[str, int] | None = None
    comment = False

    def flush(section: _Section) -> None:
        if not section.excluded and (section.content or section.heading is not None):
            emitted.append(section)

    for number, raw in enumerate(body.split("\n"), first_line):
        line = raw[:-1] if raw.endswith("\r") else raw
        heading = None
        if fence is not None:
            if _fence_closes(line, *fence):
                fence = None
        else:
            if not rules.html_comments and (comment or "<!--" in line):
                line, comment = _without_comments(line, comment)
            if not comment:
                fence = _fence_open(line)
                if fence is None:
                    heading = _heading(line, rules.heading_levels)
        if heading is None:
            if not current.excluded:
                current.body.append((number, line))
            continue
        level, text = heading
        flush(current)
        while stack and stack[-1][0] >= level:
            stack.pop()
        ancestry = tuple(title for _, title in stack)
        stack.append((level, text))
        excluded = any(entry in text for entry in rules.exclude_headings)
        current = _Section(text, level, ancestry, number, [], excluded)
    flush(current)
    return emitted


def _trimmed(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """`body` without its leading and trailing blank lines."""
    filled = [i for i, (_, text) in enumerate(body) if text.strip()]
    return body[filled[0] : filled[-1] + 1] if filled else []


def _merge_short(sections: list[_Section]) -> list[_Section]:
    """Fold each chunk under 50 code points into the previous kept chunk (index.md §3): its
    heading (as `## heading`, with its own level's marks) and its text follow that chunk's
    text, a blank line between each."""
    merged: list[_Section] = []
    for section in sections:
        if len(section.content) >= SHORT_CHUNK_CHARS or not merged:
            merged.append(section)
            continue
        previous = merged[-1]
        previous.body = _trimmed(previous.body)
        line = section.heading_line
        if section.heading is not None:
            if previous.body:
                previous.body.append((line, ""))
            previous.body.append((line, f"{'#' * (section.level or 2)} {section.heading}"))
        text = _trimmed(section.body)
        if text and previous.body:
            previous.body.append((line, ""))
        previous.body.extend(text)
    return merged


def _blocks(body: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Paragraphs (runs of non-blank lines) and fenced code blocks (whole, blank lines and
    all), in order; the blank lines between them are dropped."""
    blocks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    fence: tuple[str, int] | None = None
    for number, text in body:
        if fence is not None:
            current.append((number, text))
            if _fence_closes(text, *fence):
                fence = None
            continue
        opened = _fence_open(text)
        if opened is not None:
            fence = opened
            current.append((number, text))
        elif text.strip():
            current.append((number, text))
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _cut_line(number: int, text: str, budget: int) -> list[tuple[int, str]]:
    """One over-long line as pieces within `budget` estimated tokens, cut at spaces where
    there are any (a line of 30 MB without newlines still makes bounded chunks)."""
    pieces: list[tuple[int, str]] = []
    rest = text
    while rest:
        window = rest[: budget * 8]  # an estimated token covers at most 4 characters but spaces
        fits = estimate_tokens(window) <= budget
        if fits and len(window) == len(rest):
            pieces.append((number, rest))
            break
        low, high = (len(window), len(window)) if fits else (1, len(window))
        while low < high:  # the longest prefix within budget (binary search)
            mid = (low + high + 1) // 2
            if estimate_tokens(window[:mid]) <= budget:
                low = mid
            else:
                high = mid - 1
        cut = rest.rfind(" ", 0, low + 1)
        cut = cut if cut > low // 2 else low
        pieces.append((number, rest[:cut]))
        rest = rest[cut:].lstrip(" ")
    return pieces


def _units(body: list[tuple[int, str]], budget: int) -> list[list[tuple[int, str]]]:
    """The section's blocks, each larger than `budget` broken into line runs (and over-long
    lines into pieces) that fit."""
    units: list[list[tuple[int, str]]] = []
    for block in _blocks(body):
        if estimate_tokens("\n".join(t for _, t in block)) <= budget:
            units.append(block)
            continue
        run: list[tuple[int, str]] = []
        size = 0
        for number, text in block:
            cost = estimate_tokens(text)
            if cost > budget:
                if run:
                    units.append(run)
                    run, size = [], 0
                units.extend([piece] for piece in _cut_line(number, text, budget))
                continue
            if run and size + cost > budget:
                units.append(run)
                run, size = [], 0
            run.append((number, text))
            size += cost
        if run:
            units.append(run)
    return units


def _fit(section: _Section, budget: int) -> list[_Section]:
    """`section` as one or more sections within `budget` estimated tokens each: whole
    paragraphs and code blocks packed in order; every part keeps the heading and breadcrumb,
    the first one the heading line."""
    if estimate_tokens(section.content) <= budget:
        return [section]
    parts: list[list[tuple[int, str]]] = []
    body: list[tuple[int, str]] = []
    size = 0
    for unit in _units(section.body, budget):
        cost = estimate_tokens("\n".join(text for _, text in unit))
        if body and size + cost > budget:
            parts.append(body)
            body, size = [], 0
        if body:
            body.append((unit[0][0], ""))  # the blank line between two blocks
        body.extend(unit)
        size += cost
    if body:
        parts.append(body)
    return [_Section(section.heading, section.level, section.ancestry, section.heading_line,
                     part, continued=i > 0) for i, part in enumerate(parts)]


def chunk_markdown(body: str, title: str | None, rules: ChunkRules = ChunkRules(),
                   first_line: int = 1) -> tuple[ChunkDraft, ...]:
    """Chunk a Markdown body (frontmatter already removed) at its headings, each chunk within
    the token budget (index.md §3).

    Args:
        body: The text after the frontmatter.
        title: The breadcrumb title (frontmatter title, else the derived one).
        rules: Heading levels, token budget, HTML comments, excluded headings.
        first_line: The file line (1-based) of the body's first line, for `line_start`/`line_end`.

    Returns:
        The chunks in order, `chunk_index` 0..n-1, each with its breadcrumb and quality score.
    """
    sections = [part for section in _merge_short(_sections(body, rules, first_line))
                for part in _fit(section, rules.max_tokens)]
    return tuple(
        ChunkDraft(
            chunk_index=index,
            heading=section.heading,
            level=section.level,
            ancestry=section.ancestry,
            content=section.content,
            context_text=build_context([title, *section.ancestry, section.heading]),
            quality_score=quality_score(f"{section.heading}\n{section.content}"
                                        if section.heading and not section.continued
                                        else section.content),
            line_start=section.line_start,
            line_end=section.line_end,
        )
        for index, section in enumerate(sections)
    )


def chunk_text(text: str, title: str | None, max_tokens: int = DEFAULT_MAX_TOKENS
               ) -> tuple[ChunkDraft, ...]:
    """A `.txt` file as one section without a heading, split at paragraphs to fit `max_tokens`
    (BOM stripped, line ends made LF, trimmed); empty ⇒ no chunk."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    whole = _Section(None, None, (), 0, list(enumerate(lines, 1)))
    if not whole.content:
        return ()
    return tuple(
        ChunkDraft(
            chunk_index=index,
            heading=None,
            level=None,
            ancestry=(),
            content=part.content,
            context_text=build_context([title]),
            quality_score=quality_score(part.content),
            line_start=part.line_start,
            line_end=part.line_end,
        )
        for index, part in enumerate(_fit(whole, max_tokens))
    )


def parse_document(text: str, rel_path: str, rules: ChunkRules = ChunkRules()) -> ParsedDocument:
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
            title=derived,
            topic=path_topic,
            category=category,
            date=None,
            depth=None,
            tags=(),
            chunks=chunk_text(text, derived, rules.max_tokens),
            warnings=(),
        )
    if extension != "md":
        raise ValueError(f"no parser for {rel_path!r}: only .md and .txt files are supported")

    yaml_text, body = split_frontmatter(text)
    front = parse_frontmatter(yaml_text, rel_path) if yaml_text is not None else Frontmatter()
    breadcrumb_title = front.title if front.title and front.title.strip() else derived
    shown = front.title if front.title and front.title.strip() else (first_heading(body)
                                                                     or derived)
    return ParsedDocument(
        title=shown,
        topic=front.topic if front.topic is not None else path_topic,
        category=category,
        date=front.date,
        depth=front.depth,
        tags=front.tags,
        chunks=chunk_markdown(body, breadcrumb_title, rules, _body_line(text, body)),
        warnings=front.warnings,
    )
