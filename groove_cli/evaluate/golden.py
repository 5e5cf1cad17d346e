"""Golden file: locate, read safely, validate strictly and check against the index (eval.md §1);
the k list and depth every measuring command (eval, ablate, tune, calibration) shares.

The golden file is user input that decides what "good retrieval" means, so every field is checked
and every error names its location; a typo such as `relevance:` must not silently drop a judgement.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from groove_cli import messages
from groove_cli.config import MAX_LIMIT
from groove_cli.errors import GoldenError, UsageError
from groove_cli.jsondoc import loads_bounded
from groove_cli.text import not_utf8

if TYPE_CHECKING:
    from groove_cli.config import Settings
    from groove_cli.store.reader import IndexReader

MAX_GOLDEN_BYTES = 1024 * 1024
"""Golden files above 1 MiB are refused (eval.md §1)."""

DEFAULT_NAMES = (".groove-eval.yml", ".groove-eval.yaml", ".groove-eval.json")
"""Files looked for in the KB when neither --golden nor [eval].golden is given, in order."""

ID_LENGTH = 32
"""A query without an id gets the first 32 code points of its text."""

_TOP_FIELDS = ("defaults", "queries")
_DEFAULT_FIELDS = ("limit", "rerank")
_QUERY_FIELDS = ("id", "query", "expected", "tags")
_EXPECTED_FIELDS = ("path", "heading", "grade")
MAX_GRADE = 3
"""Graded relevance in YAML: 0 (judged not relevant) to 3; 1 when absent (binary relevance)."""


@dataclass(frozen=True, slots=True)
class Expected:
    """One expected entry: a KB-relative path, optionally the heading of the chunk, and its
    graded relevance (nDCG gain; 0 = judged not relevant, which no metric counts)."""

    path: str
    heading: str | None
    grade: int = 1


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    """One golden query; `index` is its 0-based position in the file (`queries[{index}]`)."""

    index: int
    id: str
    query: str
    expected: tuple[Expected, ...]


@dataclass(frozen=True, slots=True)
class GoldenSet:
    """A validated golden file; `golden_hash` is the SHA-256 hex of its raw bytes."""

    path: Path
    queries: tuple[GoldenQuery, ...]
    golden_hash: str
    has_defaults: bool


class RefusedFile(ValueError):
    """A file that is not read because of what it is (link, not regular, too large)."""


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """Read a plain file: no symlink, no hard link, regular, at most `max_bytes` bytes.

    Links are refused because groove would otherwise read (or, for the history, replace) a file
    somewhere else than the path the user sees. The checks are repeated on the open descriptor so
    a file swapped between the check and the read is still caught.

    Raises:
        FileNotFoundError: when nothing exists at `path`.
        RefusedFile: with the reason, for a symlink, hard link, non-regular or oversized file.
        OSError: any other read failure (permissions, I/O).
    """
    info = os.lstat(path)
    _check_stat(info, max_bytes)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise RefusedFile("it was replaced while being opened")
        _check_stat(opened, max_bytes)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise RefusedFile(f"it is larger than {size_text(max_bytes)}")
    return data


def _check_stat(info: os.stat_result, max_bytes: int) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise RefusedFile("it is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise RefusedFile("it is not a regular file")
    if info.st_nlink > 1:
        raise RefusedFile(f"it is a hard link ({info.st_nlink} names for the same file)")
    if info.st_size > max_bytes:
        raise RefusedFile(f"it is larger than {size_text(max_bytes)}")


def size_text(n: int) -> str:
    """A byte count for messages: `64 MiB` for whole MiB, else `{n} bytes`."""
    if n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    return f"{n} bytes"


def _missing(path: Path) -> GoldenError:
    return GoldenError(
        f"no golden file at {path}", hint="pass --golden or create <kb>/.groove-eval.yml"
    )


def find_golden(explicit: Path | None, configured: Path | None, kb: Path) -> Path:
    """The golden file to use: `--golden` > `[eval].golden` > the first existing default name.

    `explicit` is taken as given (relative to the working directory); `configured` must already
    be resolved against the config file's folder. A named file that does not exist is an error,
    it never falls back to the KB defaults.
    """
    for named in (explicit, configured):
        if named is not None:
            if not os.path.lexists(named):
                raise _missing(named)
            return named
    for name in DEFAULT_NAMES:
        candidate = kb / name
        if os.path.lexists(candidate):
            return candidate
    raise _missing(kb / DEFAULT_NAMES[0])


def load_golden(path: Path, *, check_query: Callable[[str], None]) -> GoldenSet:
    """Read and validate a golden file (YAML, or JSON for `.json`) into a GoldenSet.

    Args:
        path: the file from `find_golden`.
        check_query: the search query compiler; it raises UsageError for a query that is empty
            or made only of exclusions, which becomes a GoldenError naming the query.

    Returns:
        The queries in file order, the SHA-256 of the raw bytes and whether `defaults` was given
        (the caller writes the note "golden defaults are ignored").
    """
    try:
        raw = read_regular_file(path, MAX_GOLDEN_BYTES)
    except FileNotFoundError:
        raise _missing(path) from None
    except RefusedFile as refused:
        raise GoldenError(f"refusing to read golden file {path}: {refused}") from None
    except OSError as exc:
        raise GoldenError(f"cannot read golden file {path}: {exc.strerror or exc}") from None
    golden_hash = hashlib.sha256(raw).hexdigest()
    document = _parse(path, raw)
    validator = _Validator(path)
    queries, has_defaults = validator.document(document)
    checked = check_queries(path, queries, check_query)
    return GoldenSet(path=path, queries=checked, golden_hash=golden_hash, has_defaults=has_defaults)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object that refuses a repeated key (the later one would silently win)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f'duplicate key "{key}"')
        found[key] = value
    return found


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe YAML loader (libyaml's when available) refusing a repeated mapping key."""


def _construct_unique(loader: Any, node: yaml.MappingNode) -> Any:
    seen: set[object] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # an unhashable key: the base constructor reports it
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f'duplicate key "{key}"', key_node.start_mark)
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique)


def _parse(path: Path, raw: bytes) -> object:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GoldenError(f"failed to parse golden file {path}: not valid UTF-8 ({exc})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        if path.suffix.lower() == ".json":
            return loads_bounded(text, object_pairs_hook=_unique_pairs)
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except (ValueError, yaml.YAMLError) as exc:
        detail = " ".join(str(exc).split())
        raise GoldenError(f"failed to parse golden file {path}: {detail}") from None


def _allowed(names: tuple[str, ...]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


class _Validator:
    """Strict structural checks; every failure names the location in the file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, detail: str) -> GoldenError:
        return GoldenError(f"failed to parse golden file {self.path}: {detail}")

    def type_error(self, location: str, wanted: str) -> GoldenError:
        return self.fail(f"{location}: expected {wanted}")

    def mapping(
        self, value: object, location: str, allowed: tuple[str, ...], required: tuple[str, ...]
    ) -> Mapping[str, Any]:
        where = location or "the top level"
        if not isinstance(value, dict):
            raise self.type_error(where, "a mapping")
        for key in value:
            if not isinstance(key, str) or key not in allowed:
                raise self.fail(
                    f'unknown field "{key}" at {where} (expected {_allowed(allowed)})'
                )
        for name in required:
            if name not in value:
                raise self.fail(f'missing field "{name}" at {where}')
        return value

    def string(self, value: object, location: str) -> str:
        if not isinstance(value, str):
            raise self.type_error(location, "a string")
        invalid = not_utf8(location, value)
        if invalid:
            raise self.fail(invalid)
        return value

    def document(self, document: object) -> tuple[list[tuple[str | None, str, list[Expected]]], bool]:
        top = self.mapping(document, "", _TOP_FIELDS, ("queries",))
        has_defaults = "defaults" in top
        defaults = top.get("defaults")
        if defaults is not None:
            self.defaults(defaults)
        items = top["queries"]
        if not isinstance(items, list):
            raise self.type_error("queries", "a list")
        if not items:
            raise self.fail("queries: the list is empty; add at least one query to measure")
        return [self.query(item, i) for i, item in enumerate(items)], has_defaults

    def defaults(self, value: object) -> None:
        fields = self.mapping(value, "defaults", _DEFAULT_FIELDS, ())
        limit = fields.get("limit")
        if "limit" in fields and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise self.type_error("defaults.limit", "an integer")
        rerank = fields.get("rerank")
        if "rerank" in fields and not isinstance(rerank, bool):
            raise self.type_error("defaults.rerank", "a boolean")

    def query(self, value: object, i: int) -> tuple[str | None, str, list[Expected]]:
        where = f"queries[{i}]"
        fields = self.mapping(value, where, _QUERY_FIELDS, ("query", "expected"))
        query_id: str | None = None
        if fields.get("id") is not None:
            query_id = self.string(fields["id"], f"{where}.id")
            if not query_id.strip():
                raise self.fail(f"{where}.id: expected a non-empty string")
        text = self.string(fields["query"], f"{where}.query")
        tags = fields.get("tags")
        if tags is not None:
            if not isinstance(tags, list):
                raise self.type_error(f"{where}.tags", "a list")
            for t, tag in enumerate(tags):
                self.string(tag, f"{where}.tags[{t}]")
        entries = fields["expected"]
        if not isinstance(entries, list):
            raise self.type_error(f"{where}.expected", "a list")
        expected = [self.expected(entry, f"{where}.expected[{j}]") for j, entry in enumerate(entries)]
        return query_id, text, expected

    def expected(self, value: object, where: str) -> Expected:
        fields = self.mapping(value, where, _EXPECTED_FIELDS, ("path",))
        path = self.string(fields["path"], f"{where}.path")
        if not path:
            raise self.fail(f"{where}.path: expected a non-empty string")
        heading = fields.get("heading")
        if heading is not None:
            heading = self.string(heading, f"{where}.heading")
        grade = fields.get("grade", 1)
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
            raise self.type_error(f"{where}.grade", f"an integer from 0 to {MAX_GRADE}")
        return Expected(path=path, heading=heading, grade=grade)


def check_queries(
    path: Path,
    parsed: list[tuple[str | None, str, list[Expected]]],
    check_query: Callable[[str], None],
) -> tuple[GoldenQuery, ...]:
    """Default the ids, refuse duplicates and queries the search would refuse."""
    prefix = f"invalid golden file {path}: "
    seen: set[str] = set()
    queries: list[GoldenQuery] = []
    for i, (explicit_id, text, expected) in enumerate(parsed):
        query_id = explicit_id if explicit_id is not None else text[:ID_LENGTH]
        if not text.strip():
            raise GoldenError(f"{prefix}queries[{i}]: the query is empty")
        try:
            check_query(text)
        except UsageError as refused:
            raise GoldenError(f'{prefix}queries[{i}] (id "{query_id}"): {refused.message}') from None
        if query_id in seen:
            raise GoldenError(
                f'{prefix}duplicate query id "{query_id}" at queries[{i}]; ids default to the '
                "first 32 characters of the query, so give one of them an explicit id"
            )
        seen.add(query_id)
        queries.append(GoldenQuery(index=i, id=query_id, query=text, expected=tuple(expected)))
    return tuple(queries)


def expected_warnings(
    golden: GoldenSet,
    *,
    has_path: Callable[[str], bool],
    headings_of: Callable[[str], set[str]],
) -> list[str]:
    """Warnings for expected entries the index cannot satisfy (they never change the exit code).

    Args:
        golden: the loaded golden set.
        has_path: whether a document with this KB-relative path is indexed.
        headings_of: the non-NULL chunk headings of an indexed path.

    Returns:
        One warning text per unsatisfiable entry, in file order.
    """
    warnings: list[str] = []
    for query in golden.queries:
        for j, entry in enumerate(query.expected):
            where = f"golden: queries[{query.index}].expected[{j}]"
            if not has_path(entry.path):
                warnings.append(f"{where}: path {entry.path} is not in the index")
                continue
            if entry.heading is None:
                continue
            wanted = entry.heading.strip().lower()
            if not any(h.strip().lower() == wanted for h in headings_of(entry.path)):
                warnings.append(f'{where}: no chunk of {entry.path} has the heading "{entry.heading}"')
    return warnings


def normalize(text: str) -> str:
    """Collapse whitespace runs to one space, strip and lower-case."""
    return " ".join(text.split()).lower()


def repeated_queries_warning(golden: GoldenSet, normalize: Callable[[str], str]) -> str | None:
    """A warning when queries repeat an earlier one (after `normalize`), else None.

    A copied query counts twice in every mean: confidence intervals narrow and `tune` can
    adopt a change that only looks consistent; nothing is refused, since a repeat may be
    deliberate, but it must not pass unnoticed.
    """
    first: dict[str, GoldenQuery] = {}
    repeats: list[tuple[GoldenQuery, GoldenQuery]] = []
    for query in golden.queries:
        key = normalize(query.query)
        if key in first:
            repeats.append((query, first[key]))
        else:
            first[key] = query
    if not repeats:
        return None
    again, original = repeats[0]
    return (f"golden: {len(repeats)} of {len(golden.queries)} queries repeat an earlier query "
            f'(first: "{again.id}" at queries[{again.index}] repeats "{original.id}" at '
            f"queries[{original.index}]); each copy counts again in every mean, which narrows "
            "the confidence intervals and lets tune adopt noise; remove the copies")


def parse_k_values(text: str) -> tuple[int, ...]:
    """`--k 1,5,10`: integers ≥ 0, each capped at 1000, sorted, deduplicated."""
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise UsageError(f"--k expects comma-separated integers, got {part!r}") from None
        if value < 0:
            raise UsageError(f"--k values must be >= 0, got {value}")
        values.append(value)
    if not values:
        raise UsageError("--k needs at least one value")
    return normalise_k(values)


def k_values_from(settings: Settings, flag: str | None) -> tuple[int, ...]:
    """eval's k list: `--k` when given, else `[eval].k_values`, normalised."""
    if flag is not None:
        return parse_k_values(flag)
    return normalise_k([int(str(v)) for v in settings.list_("eval.k_values")])


def normalise_k(values: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted({min(int(v), MAX_LIMIT) for v in values}))


def effective_limit(limit: int | None, k_values: Sequence[int]) -> int:
    """`--limit` or the largest k (1 when it is 0), capped at 1000 with the spec's note."""
    value = limit if limit is not None else max(max(k_values), 1)
    if value > MAX_LIMIT:
        messages.note(f"limit {value} exceeds the retrieval cap; using {MAX_LIMIT}")
        value = MAX_LIMIT
    return value


def judged_queries(golden: GoldenSet) -> int:
    """How many golden queries count in the metrics: those with an entry of grade >= 1.
    None is a golden error for eval and --ablate: every mean would be 0.000 and every
    comparison "not worse", measuring nothing."""
    judged = sum(1 for q in golden.queries if any(e.grade > 0 for e in q.expected))
    if judged == 0:
        raise GoldenError(
            f"golden file {golden.path} has no judged query: every expected list is empty or "
            "holds only grade 0, so there is nothing to measure",
            hint="give at least one query an expected entry of grade 1 or more (grade 1 when "
                 "absent)")
    return judged


def golden_index_warnings(store: IndexReader, golden: GoldenSet) -> None:
    """A warning per expected entry whose path or heading the index lacks (eval.md §1)."""
    headings = store.headings_by_path()
    for text in expected_warnings(golden, has_path=lambda p: p in headings,
                                  headings_of=lambda p: headings.get(p, set())):
        messages.warning(text)
