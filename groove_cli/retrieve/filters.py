"""Row filters applied to each leg before fusion, and their `filter_applied` echo (search.md §10).

Filters run in Python over the rows a leg fetched (over-fetched ×10 when any is active), so
they are compiled once per search: globs become bounded matchers (no regex backtracking).

Glob dialect: `*` and `**` match any characters including `/`, `?` one character, `[…]` and
`[!…]` classes (a `]` right after the opener is a member, `a-z` ranges), `{a,b}` alternatives
(which may nest and hold any other syntax); case-sensitive, matched against the whole
KB-relative path. As in common glob libraries, a `**` that is a whole path component also
matches zero directories: `**/x.md` matches `x.md` and `notes/**/x.md` matches `notes/x.md`.
There is no escape character.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from groove_cli.errors import UsageError
from groove_cli.text import NOT_UTF8_HINT, iso_day, not_utf8, printable

MAX_GLOBS = 64
MAX_GLOB_BYTES = 1024
MAX_GLOB_ALTERNATIVES = 256
"""Brace choices (and `**/` prefixes) are spelled out; more combinations are refused."""
MAX_TAGS = 64
MAX_TAG_BYTES = 1024

_GLOB_HINT = "globs support * ** ? [abc] [!abc] {a,b}; a leading ! excludes"
_CLASS_SPECIAL = frozenset("\\]^-[&~|")


@dataclass(frozen=True, slots=True)
class FilterSpec:
    """The filters a search was given; the defaults have no effect."""

    quality_threshold: float = 0.0
    category: str | None = None
    topic: str | None = None
    path_globs: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None


class _GlobSyntaxError(Exception):
    pass


class _TooManyAlternatives(Exception):
    pass


def _class_char(ch: str) -> str:
    return "\\" + ch if ch in _CLASS_SPECIAL else ch


# A glob is parsed into items: a one-character regex (literal, `?`, class), STAR (any run of
# characters), or a tuple of alternatives, each a list of items.
_STAR = "*"
_Item = str | tuple[list[Any], ...]


class _GlobParser:
    """Recursive-descent parse of one glob into items (see `_Item`)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.pos = 0

    def parse(self) -> list[_Item]:
        items = self._sequence(in_braces=False)
        if self.pos != len(self.pattern):  # pragma: no cover - _sequence consumes everything
            raise _GlobSyntaxError
        return items

    def _sequence(self, *, in_braces: bool) -> list[_Item]:
        p = self.pattern
        out: list[_Item] = []
        while self.pos < len(p):
            ch = p[self.pos]
            if in_braces and ch in ",}":
                return out
            if ch == "*":
                out.append(self._stars())
            elif ch == "?":
                out.append(".")
                self.pos += 1
            elif ch == "[":
                out.append(self._char_class())
            elif ch == "{":
                out.append(self._alternatives())
            else:
                out.append(re.escape(ch))
                self.pos += 1
        if in_braces:
            raise _GlobSyntaxError  # `{` never closed
        return out

    def _stars(self) -> _Item:
        p = self.pattern
        start = self.pos
        while self.pos < len(p) and p[self.pos] == "*":
            self.pos += 1
        if self.pos - start < 2:
            return _STAR
        component_start = start == 0 or p[start - 1] == "/"
        if component_start and self.pos < len(p) and p[self.pos] == "/":
            self.pos += 1  # `**/`: zero or more leading directories
            return ([], [_STAR, "/"])
        return _STAR

    def _char_class(self) -> str:
        p = self.pattern
        i = self.pos + 1
        negate = i < len(p) and p[i] == "!"
        if negate:
            i += 1
        items: list[str] = []
        first = True
        while True:
            if i >= len(p):
                raise _GlobSyntaxError  # `[` never closed
            ch = p[i]
            if ch == "]" and not first:
                i += 1
                break
            first = False
            if i + 2 < len(p) and p[i + 1] == "-" and p[i + 2] != "]":
                low, high = ch, p[i + 2]
                if low > high:
                    raise _GlobSyntaxError  # reversed range
                items.append(f"{_class_char(low)}-{_class_char(high)}")
                i += 3
            else:
                items.append(_class_char(ch))
                i += 1
        self.pos = i
        return "[" + ("^" if negate else "") + "".join(items) + "]"

    def _alternatives(self) -> _Item:
        self.pos += 1  # `{`
        options: list[list[Any]] = []
        while True:
            options.append(self._sequence(in_braces=True))
            closer = self.pattern[self.pos]  # _sequence stopped at `,` or `}`
            self.pos += 1
            if closer == "}":
                return tuple(options)


def _expand(items: list[_Item]) -> list[list[str]]:
    """Every brace choice spelled out as a flat item list, at most MAX_GLOB_ALTERNATIVES."""
    results: list[list[str]] = [[]]
    for item in items:
        if isinstance(item, str):
            for flat in results:
                flat.append(item)
            continue
        choices = [flat for option in item for flat in _expand(option)]
        if len(results) * len(choices) > MAX_GLOB_ALTERNATIVES:
            raise _TooManyAlternatives
        results = [head + tail for head in results for tail in choices]
    return results


class _SimpleGlob:
    """One brace-free glob matched without backtracking: the pieces between stars have a fixed
    width, so the first is matched at the start, the last at the end and each middle piece at
    its leftmost place after the previous one. Time is O(len(path) x len(pattern))."""

    def __init__(self, items: list[str]) -> None:
        pieces: list[list[str]] = [[]]
        for item in items:
            if item == _STAR:
                pieces.append([])
            else:
                pieces[-1].append(item)
        self.starred = len(pieces) > 1
        self.widths = [len(piece) for piece in pieces]
        self.pieces = [re.compile("".join(piece), re.DOTALL) for piece in pieces]

    def fullmatch(self, path: str) -> bool:
        if not self.starred:
            return self.pieces[0].fullmatch(path) is not None
        head, *middle, tail = self.pieces
        if head.match(path) is None:
            return False
        pos = self.widths[0]
        for piece in middle:
            found = piece.search(path, pos)
            if found is None:
                return False
            pos = found.end()
        end = len(path) - self.widths[-1]
        return end >= pos and tail.fullmatch(path, end) is not None


class GlobMatcher:
    """A compiled `--path-glob`: whole-path match in time linear in the path length for each
    of its (bounded) brace alternatives."""

    def __init__(self, pattern: str, alternatives: list[list[str]]) -> None:
        self.pattern = pattern
        self._globs = [_SimpleGlob(items) for items in alternatives]

    def fullmatch(self, path: str) -> bool:
        """Whether the whole of `path` matches."""
        return any(glob.fullmatch(path) for glob in self._globs)


def glob_to_regex(pattern: str) -> GlobMatcher:
    """Compile one glob (without its `!`) to a whole-path matcher.

    Raises:
        UsageError: the pattern is empty, has an unclosed `[` or `{`, a reversed range, or
            more than MAX_GLOB_ALTERNATIVES brace combinations.
    """
    try:
        if not pattern:
            raise _GlobSyntaxError
        return GlobMatcher(pattern, _expand(_GlobParser(pattern).parse()))
    except (_GlobSyntaxError, re.error, RecursionError):  # RecursionError: `{` nested ~500 deep
        raise UsageError(f'invalid path_glob pattern: "{pattern}"', _GLOB_HINT) from None
    except _TooManyAlternatives:
        raise UsageError(
            f'path_glob pattern has more than {MAX_GLOB_ALTERNATIVES} {{a,b}}/**/ combinations: '
            f'"{pattern[:60]}"', "split it into several --path-glob values") from None


def validate_path_globs(globs: Sequence[str]) -> None:
    """Check the `--path-glob` limits: at most 64 patterns, each at most 1024 UTF-8 bytes."""
    if len(globs) > MAX_GLOBS:
        raise UsageError(
            f"--path-glob: at most {MAX_GLOBS} patterns are allowed (got {len(globs)})"
        )
    for glob in globs:
        if len(glob.encode("utf-8", errors="surrogatepass")) > MAX_GLOB_BYTES:
            raise UsageError(
                f"--path-glob: a pattern is longer than {MAX_GLOB_BYTES} bytes: "
                f'"{glob[:40]}…"'
            )


def split_tags(values: Sequence[str], *, flag: str = "--tag-any/--tag-all") -> tuple[str, ...]:
    """Split repeatable comma-separated tag values; items are stripped and empties dropped.

    Raises:
        UsageError: naming `flag`, for more than 64 items or an item over 1 KiB (UTF-8).
    """
    tags = tuple(
        item for value in values for item in (part.strip() for part in value.split(",")) if item
    )
    if len(tags) > MAX_TAGS:
        raise UsageError(f"{flag}: at most {MAX_TAGS} tags are allowed (got {len(tags)})")
    for tag in tags:
        if len(tag.encode("utf-8", errors="surrogatepass")) > MAX_TAG_BYTES:
            raise UsageError(
                f'{flag}: a tag is longer than {MAX_TAG_BYTES} bytes (1 KiB): "{tag[:40]}…"'
            )
    return tags


@dataclass(frozen=True, slots=True)
class RowFilter:
    """A compiled `FilterSpec`: `passes` checks one row, `active` says whether any filter bites."""

    quality_threshold: float
    category: str | None
    topic: str | None
    include: tuple[GlobMatcher, ...]
    exclude: tuple[GlobMatcher, ...]
    tags_any: tuple[str, ...]
    tags_all: tuple[str, ...]
    date_from: str | None
    date_to: str | None

    @property
    def active(self) -> bool:
        """True when any filter can drop a row (the legs then over-fetch ×10)."""
        return (
            self.quality_threshold > 0
            or self.category is not None
            or self.topic is not None
            or bool(self.include or self.exclude or self.tags_any or self.tags_all)
            or self.date_from is not None
            or self.date_to is not None
        )

    def passes(
        self,
        *,
        quality: float,
        category: str | None,
        topic: str | None,
        path: str,
        tags: Sequence[str],
        date: str | None,
    ) -> bool:
        """Whether one row passes every filter (AND), checked in the §10 order."""
        if self.quality_threshold > 0 and quality < self.quality_threshold:
            return False
        if self.category is not None and category != self.category:
            return False
        if self.topic is not None and topic != self.topic:
            return False
        if self.include and not any(p.fullmatch(path) for p in self.include):
            return False
        if any(p.fullmatch(path) for p in self.exclude):
            return False
        if self.tags_any and not any(tag in tags for tag in self.tags_any):
            return False
        if self.tags_all and not all(tag in tags for tag in self.tags_all):
            return False
        if self.date_from is not None or self.date_to is not None:
            day = _note_day(date) if date is not None else None
            if day is None:  # no date, or one that is not ISO-8601: never inside a bound
                return False
            if self.date_from is not None and day < self.date_from:
                return False
            if self.date_to is not None and day > self.date_to:
                return False
        return True


@functools.lru_cache(maxsize=4096)
def _note_day(text: str) -> str | None:
    return iso_day(text)


def _date_bound(flag: str, value: str | None) -> str | None:
    """A `--date-from/--date-to` value as `YYYY-MM-DD`; a usage error when it is not a date."""
    if value is None:
        return None
    day = iso_day(value, last=flag == "--date-to")
    if day is None:
        raise UsageError(f'{flag} "{printable(value, keep_newlines=False)}" is not an ISO-8601 date',
                         "write the date as YYYY-MM-DD (or YYYY-MM, YYYY), e.g. 2026-05-06")
    return day


def _check_text(spec: FilterSpec) -> None:
    """Filter values must be Unicode text (a byte that is not UTF-8 cannot be echoed)."""
    values = [("--category", spec.category), ("--topic", spec.topic),
              ("--date-from", spec.date_from), ("--date-to", spec.date_to)]
    values += [("--path-glob", glob) for glob in spec.path_globs]
    values += [("--tag-any", tag) for tag in spec.tags_any]
    values += [("--tag-all", tag) for tag in spec.tags_all]
    for flag, value in values:
        invalid = not_utf8(flag, value) if value is not None else None
        if invalid:
            raise UsageError(invalid, NOT_UTF8_HINT)


def compile_filters(spec: FilterSpec) -> RowFilter:
    """Validate and compile `spec`; `!`-prefixed globs form the exclude set.

    Raises:
        UsageError: too many or too long globs, a malformed glob, a date bound that is not an
            ISO-8601 date, or a value that is not UTF-8 text.
    """
    _check_text(spec)
    date_from = _date_bound("--date-from", spec.date_from)
    date_to = _date_bound("--date-to", spec.date_to)
    validate_path_globs(spec.path_globs)
    include: list[GlobMatcher] = []
    exclude: list[GlobMatcher] = []
    for glob in spec.path_globs:
        try:
            if glob.startswith("!"):
                exclude.append(glob_to_regex(glob[1:]))
            else:
                include.append(glob_to_regex(glob))
        except UsageError as exc:
            raise UsageError(f'invalid path_glob pattern: "{glob}"', exc.hint) from None
    return RowFilter(
        quality_threshold=spec.quality_threshold,
        category=spec.category,
        topic=spec.topic,
        include=tuple(include),
        exclude=tuple(exclude),
        tags_any=spec.tags_any,
        tags_all=spec.tags_all,
        date_from=date_from,
        date_to=date_to,
    )


def filter_applied(
    spec: FilterSpec, *, explicit_min_confidence_ratio: float | None
) -> dict[str, object]:
    """The `filter_applied` object: only filters given with effect, in the §10 key order.

    Quality and retrieval settings are never echoed; `min_confidence_ratio` only when it was
    given on the command line.
    """
    applied: dict[str, object] = {}
    if spec.category is not None:
        applied["category"] = spec.category
    if spec.topic is not None:
        applied["topic"] = spec.topic
    if spec.path_globs:
        applied["path_globs"] = list(spec.path_globs)
    if spec.tags_any:
        applied["tags_any"] = list(spec.tags_any)
    if spec.tags_all:
        applied["tags_all"] = list(spec.tags_all)
    if spec.date_from is not None:
        applied["date_from"] = spec.date_from
    if spec.date_to is not None:
        applied["date_to"] = spec.date_to
    if explicit_min_confidence_ratio is not None:
        applied["min_confidence_ratio"] = explicit_min_confidence_ratio
    return applied
