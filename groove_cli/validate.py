"""`groove validate`: every note's frontmatter checked against the `[frontmatter]` schema of
groove.toml (config.md `[frontmatter]`, cli.md `validate`).

The schema names required keys, each key's type (`key:type`, type one of `TYPES`), the
values a key may take (`key:a|b|c`) and the format of `date` values (strftime, default
`%Y-%m-%d`). A finding names the note, the line (the key's line; the frontmatter's first
line, or line 1 without frontmatter, for a missing key), the key and what is wrong. `index`
prints the same findings as warnings for the notes it reads (index.py).

The YAML is composed once with the safe loader's resolver (no objects are built): a scalar's
tag says what YAML reads it as (text, whole number, number, true/false, date, null) and its
mark gives the line. groove itself reads frontmatter as text (chunk.py); these types are what
other tools (static site generators, Obsidian) will read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from groove_cli.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from groove_cli.config import Settings

TYPES = ("string", "int", "number", "bool", "list", "date")
"""The types a `[frontmatter] types` entry names."""
KINDS = ("missing", "type", "enum", "date", "yaml")
"""The kinds of finding: a required key absent or empty, a value of another type, a value
not in the key's enumeration, a date not in `date_format`, frontmatter that is not a YAML
mapping."""
MAX_NOTE_BYTES = 10_000_000
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"


@dataclass(frozen=True, slots=True)
class Rules:
    """The `[frontmatter]` schema, parsed."""

    required: tuple[str, ...] = ()
    types: dict[str, str] = field(default_factory=dict)
    enums: dict[str, tuple[str, ...]] = field(default_factory=dict)
    date_format: str = "%Y-%m-%d"

    @property
    def empty(self) -> bool:
        return not (self.required or self.types or self.enums)

    @classmethod
    def parse(cls, required: Sequence[object], types: Sequence[object],
              enums: Sequence[object], date_format: str | None, where: str = "groove.toml"
              ) -> Rules:
        """Rules from the setting values; ConfigError naming a malformed entry."""
        def split(key: str, entry: object, example: str) -> tuple[str, str]:
            name, sep, rest = str(entry).partition(":")
            if not sep or not name.strip() or not rest.strip():
                raise ConfigError(f"{where}: frontmatter.{key} entry {str(entry)[:60]!r} is not "
                                  f"KEY:{example}", hint=f'e.g. {key} = ["status:{example}"]')
            return name.strip(), rest.strip()

        typed: dict[str, str] = {}
        for entry in types:
            name, kind = split("types", entry, "TYPE")
            if kind not in TYPES:
                raise ConfigError(f"{where}: frontmatter.types: unknown type {kind!r} for {name}",
                                  hint=f"use one of: {', '.join(TYPES)}")
            typed[name] = kind
        allowed: dict[str, tuple[str, ...]] = {}
        for entry in enums:
            name, values = split("enums", entry, "a|b|c")
            allowed[name] = tuple(v.strip() for v in values.split("|") if v.strip())
        fmt = date_format or "%Y-%m-%d"
        if "%" not in fmt:
            raise ConfigError(f"{where}: frontmatter.date_format {fmt!r} has no % directive",
                              hint='use strftime directives, e.g. "%Y-%m-%d"')
        return cls(tuple(str(k) for k in required), typed, allowed, fmt)

    @classmethod
    def of(cls, settings: Settings) -> Rules:
        where = str(settings.config.path) if settings.config else "groove.toml"
        return cls.parse(settings.list_("frontmatter.required"),
                         settings.list_("frontmatter.types"), settings.list_("frontmatter.enums"),
                         settings.str_("frontmatter.date_format"), where)


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    line: int
    key: str | None
    kind: str
    message: str

    def line_text(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "key": self.key, "kind": self.kind,
                "message": self.message}


@dataclass(frozen=True, slots=True)
class ValidationReport:
    notes: int
    findings: tuple[Finding, ...]
    skipped: tuple[str, ...] = ()
    """Notes that could not be read (not UTF-8, too large), as `path: reason`."""

    def to_json(self) -> dict[str, Any]:
        return {"ok": not self.findings, "notes": self.notes,
                "findings": [f.to_json() for f in self.findings],
                "skipped": list(self.skipped)}

    def text(self) -> str:
        lines = [f.line_text() for f in self.findings]
        lines += [f"skipped {s}" for s in self.skipped]
        flagged = len({f.path for f in self.findings})
        lines.append(f"{self.notes} notes checked: {len(self.findings)} findings in {flagged} "
                     "notes" if self.findings else f"{self.notes} notes checked: no findings")
        return "\n".join(lines)


def _yaml_start(text: str) -> int:
    """The file line where the frontmatter's YAML starts (after the opening `---` line)."""
    first = text.removeprefix("\ufeff").split("\n", 1)[0]
    return 2 if first.rstrip("\r") == "---" else 1


def _kind_of(node: yaml.Node) -> str:
    """What YAML reads a value node as: string, int, number, bool, date, null, list, map."""
    if isinstance(node, yaml.SequenceNode):
        return "list"
    if isinstance(node, yaml.MappingNode):
        return "map"
    tag = str(node.tag).removeprefix(_TAG)
    return {"str": "string", "int": "int", "float": "number", "bool": "bool",
            "timestamp": "date", "null": "null"}.get(tag, "string")


def _fits(kind: str, wanted: str) -> bool:
    if wanted == "string":
        return kind in ("string", "date")  # an unquoted date is text to groove and to YAML 1.2
    if wanted == "number":
        return kind in ("int", "number")
    if wanted == "date":
        return kind in ("date", "string")  # a text date is checked against date_format
    return kind == wanted


def _scalars(node: yaml.Node) -> list[str]:
    if isinstance(node, yaml.SequenceNode):
        return [str(item.value) for item in node.value if isinstance(item, yaml.ScalarNode)]
    if isinstance(node, yaml.ScalarNode):
        return [str(node.value)]
    return []


def check_text(text: str, rel: str, rules: Rules) -> list[Finding]:
    """The findings of one note's text against `rules` (see the module doc)."""
    from groove_cli.chunk import split_frontmatter

    if rules.empty:
        return []
    yaml_text, _ = split_frontmatter(text)
    start = _yaml_start(text) if yaml_text is not None else 1
    found: list[Finding] = []
    entries: dict[str, tuple[yaml.Node, int]] = {}
    if yaml_text is not None and yaml_text.strip():
        try:
            root = yaml.compose(yaml_text.replace("\r\n", "\n"), Loader=_LOADER)
        except (yaml.YAMLError, RecursionError) as exc:
            mark = getattr(exc, "problem_mark", None)
            line = start + (mark.line if mark is not None else 0)
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            return [Finding(rel, line, None, "yaml", f"frontmatter is not valid YAML: {problem}")]
        if root is not None and not isinstance(root, yaml.MappingNode):
            return [Finding(rel, start, None, "yaml", "frontmatter is not a YAML mapping of keys")]
        for key_node, value_node in root.value if root is not None else ():
            if isinstance(key_node, yaml.ScalarNode):
                entries.setdefault(str(key_node.value), (value_node, start + key_node.start_mark.line))

    for key in rules.required:
        node_line = entries.get(key)
        if node_line is None:
            found.append(Finding(rel, start, key, "missing", f"required key {key!r} is missing"))
        elif _kind_of(node_line[0]) == "null" or (
                isinstance(node_line[0], yaml.ScalarNode) and not str(node_line[0].value).strip()):
            found.append(Finding(rel, node_line[1], key, "missing",
                                 f"required key {key!r} is empty"))
    for key, (node, line) in entries.items():
        kind = _kind_of(node)
        if kind == "null":
            continue
        wanted = rules.types.get(key)
        if wanted is not None and not _fits(kind, wanted):
            shown = str(node.value)[:40] if isinstance(node, yaml.ScalarNode) else kind
            found.append(Finding(rel, line, key, "type",
                                 f"{key}: expected {wanted}, got {kind} ({shown!r})"
                                 if isinstance(node, yaml.ScalarNode)
                                 else f"{key}: expected {wanted}, got {kind}"))
            continue
        if wanted == "date" and isinstance(node, yaml.ScalarNode):
            try:
                datetime.strptime(str(node.value).strip(), rules.date_format)
            except ValueError:
                found.append(Finding(rel, line, key, "date",
                                     f"{key}: {str(node.value)[:40]!r} does not match the date "
                                     f"format {rules.date_format}"))
        allowed = rules.enums.get(key)
        if allowed is not None:
            for value in _scalars(node):
                if value not in allowed:
                    found.append(Finding(rel, line, key, "enum",
                                         f"{key}: {value[:40]!r} is not one of "
                                         f"{', '.join(allowed)}"))
    found.sort(key=lambda f: (f.line, f.key or ""))
    return found


def validate_kb(settings: Settings, kb: Path) -> ValidationReport:
    """Every note `index` would read in `kb`, checked against the settings' schema."""
    from groove_cli.scan import Selection, walk

    rules = Rules.of(settings)
    if rules.empty:
        where = settings.config.path if settings.config else "groove.toml"
        raise UsageError(f"no frontmatter schema in {where}",
                         hint='add a [frontmatter] table, e.g. required = ["title", "date"]')
    if not kb.is_dir():
        raise UsageError(f"the KB folder {kb} does not exist",
                         hint="pass the folder of notes: groove validate --kb-path FOLDER")
    selection = Selection.of(kb, exclude_dirs=[str(d) for d in settings.list_("exclude_dirs")],
                             extensions=[str(p) for p in settings.list_("parsers.enabled")],
                             hidden_dirs=settings.bool_("index_hidden_dirs"))
    scan = walk(selection)
    findings: list[Finding] = []
    skipped: list[str] = []
    for file in scan.files:
        try:
            if file.path.stat().st_size > MAX_NOTE_BYTES:
                skipped.append(f"{file.rel}: larger than {MAX_NOTE_BYTES} bytes")
                continue
            text = file.path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            skipped.append(f"{file.rel}: not UTF-8")
            continue
        except OSError as exc:
            skipped.append(f"{file.rel}: {exc.strerror or exc}")
            continue
        findings.extend(check_text(text, file.rel, rules))
    return ValidationReport(len(scan.files), tuple(findings), tuple(skipped))
