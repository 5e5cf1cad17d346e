"""`groove tune --write` (tune.md §10): put a tuned condition into groove.toml in place.

The file is edited with tomlkit so that everything the user wrote survives: comments, key order,
blank lines and formatting. Only the values of the space's keys change; a missing key joins the
table that already exists (as a plain, dotted or inline-table key, whichever form the table uses),
and a missing table is appended at the end of the file. The result is validated as a config and
then renamed over the original, so a failed write never leaves a half-written config behind.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import InlineTable, Item, Table
from tomlkit.toml_document import TOMLDocument

from groove_cli.errors import ConfigError, GrooveError
from groove_cli.evaluate.tune.grid import TABLES, Condition, Space
from groove_cli.evaluate.tune.report import WrittenKeys
from groove_cli.outfile import replace_file, umask

__all__ = [
    "REFUSE_KEEP_DEFAULTS",
    "WrittenKeys",
    "creating_config_note",
    "edit_config_text",
    "refuse_user_config",
    "write_recommendation",
    "write_refusal",
    "write_target",
    "written_note",
]

REFUSE_KEEP_DEFAULTS = ("--write refused: the verdict is keep-defaults (use --force to write the "
                        "refit values anyway)")
"""Warning when `--write` meets a keep-defaults verdict without `--force` (exit code stays 0)."""


def refuse_user_config(path: Path) -> str:
    """Warning when the loaded config is the per-user file and `--config` did not name it."""
    return (f"--write refused: the loaded config is the per-user file {path}, which applies to "
            f"every knowledge base; pass --config {path} to write there, or create a groove.toml "
            "for this knowledge base")


def write_refusal(decision: str, *, force: bool, loaded: Path | None, user_config: Path,
                  config_flag: Path | None) -> str | None:
    """The refusal warning for `--write`, or None when writing may go ahead.

    Args:
        decision: the verdict, `adopt` or `keep_default`.
        force: `--force` was given.
        loaded: the config file that was loaded, None when none was.
        user_config: the per-user config path (config.md §1 step 4).
        config_flag: the `--config` value, if any.
    """
    if decision != "adopt" and not force:
        return REFUSE_KEEP_DEFAULTS
    if loaded is not None and _same_file(loaded, user_config) and not (
            config_flag is not None and _same_file(config_flag, user_config)):
        return refuse_user_config(loaded)
    return None


def _same_file(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def write_target(loaded: Path | None, folder: Path | None) -> Path:
    """The loaded config file, else `folder/groove.toml` (created by the write; the command
    line's folder is the working one). No folder and no loaded file: a usage error (a library
    caller names the config file it writes: `groove_cli.open(kb, config=PATH)`)."""
    if loaded is not None:
        return loaded
    if folder is None:
        from groove_cli.errors import UsageError

        raise UsageError("writing needs a config file: none was loaded",
                         hint="open the KB with groove_cli.open(KB, config=PATH)")
    return folder / "groove.toml"


def creating_config_note(path: Path) -> str:
    """The stderr note when no config was loaded and `--write` creates one."""
    return f"no config file was loaded; creating {path}"


def written_note(written: WrittenKeys) -> str:
    """`wrote {n} key(s) to {path} ([search.fusion])`."""
    return f"wrote {len(written.keys)} key(s) to {written.path} ([{written.table}])"


# --------------------------------------------------------------------------- editing


def edit_config_text(text: str, space: Space, condition: Condition) -> str:
    """`text` with the condition's keys of `space` set; everything else is kept byte for byte.

    Raises:
        ConfigError: the table exists but is not a table (e.g. `search.fusion = 3`).
    """
    values = condition.values()
    table = TABLES[space]
    if "." not in table:  # a top table of its own ([search], the per-note space)
        return _edit_top_table(text, table, values)
    parent_name, leaf = table.split(".")
    doc = tomlkit.parse(text)
    parent = doc.get(parent_name)
    if parent is None:
        return _append_table(text, table, values)
    if not isinstance(parent, (Table, InlineTable)) and not _is_table_proxy(parent):
        raise ConfigError(f"cannot write [{table}]: {parent_name} is not a table")
    target = parent.get(leaf)
    if target is None:
        if isinstance(parent, InlineTable):
            nested = _inline_text([(k, _toml_float(v)) for k, v in values.items()],
                                  _padded(parent))
            doc[parent_name] = _rebuild_inline(parent, {leaf: nested})
            return _finish(text, doc, table, values)
        return _append_table(text, table, values)
    return _set_keys(text, doc, table, target, values, parent, leaf)


def _edit_top_table(text: str, table: str, values: dict[str, float | str]) -> str:
    """`edit_config_text` for a table directly under the document (`[search]`)."""
    doc = tomlkit.parse(text)
    target = doc.get(table)
    if target is None:
        return _append_table(text, table, values)
    return _set_keys(text, doc, table, target, values, doc, table)


def _set_keys(text: str, doc: Any, table: str, target: Any, values: dict[str, float | str],
              holder: Any, name: str) -> str:
    """Set `values` in the existing `target` table (`holder[name]`): an existing key keeps its
    place, a missing one is added; an inline table stays inline."""
    if isinstance(target, InlineTable):
        for key in [k for k in values if k in target]:
            target[key] = values[key]
        missing = {k: _toml_float(v) for k, v in values.items() if k not in target}
        if missing:
            holder[name] = _rebuild_inline(target, missing)
        return _finish(text, doc, table, values)
    if not isinstance(target, Table) and not _is_table_proxy(target):
        raise ConfigError(f"cannot write [{table}]: {table} is not a table")
    for key, value in values.items():
        target[key] = value
    return _finish(text, doc, table, values)


def _is_table_proxy(value: object) -> bool:
    """tomlkit's view of a table split over several places (dotted keys, out-of-order headers)."""
    return type(value).__name__ == "OutOfOrderTableProxy"


def _toml_float(value: float | str) -> str:
    """A value as TOML writes it: a float with its decimal point, an int (a word count) as an
    integer, a string quoted."""
    return tomlkit.item(value if isinstance(value, (str, int)) else float(value)).as_string()


def _padded(inline: InlineTable) -> bool:
    """Whether the inline table is written `{ a = 1 }` rather than `{a = 1}`."""
    return inline.as_string().startswith("{ ")


def _inline_text(pairs: list[tuple[str, str]], padded: bool) -> str:
    body = ", ".join(f"{key} = {value}" for key, value in pairs)
    if not body:
        return "{}"
    return f"{{ {body} }}" if padded else f"{{{body}}}"


def _rebuild_inline(inline: InlineTable, extra: dict[str, str]) -> Item:
    """The inline table with `extra` keys (key → value text) appended after its own keys.

    tomlkit's own append leaves stray spaces and commas in inline tables, so the line is written
    again from its items (keys keep their quoting, values their text) in the table's spacing style.
    """
    pairs = [(key.as_string().strip(), item.as_string())
             for key, item in inline.value.body if key is not None]
    pairs += [(tomlkit.key(key).as_string(), value) for key, value in extra.items()]
    item: Item = tomlkit.parse(f"x = {_inline_text(pairs, _padded(inline))}\n")["x"]
    return item


def _newline(text: str) -> str:
    """CRLF when every line of `text` ends with CRLF, else LF."""
    return "\r\n" if "\r\n" in text and text.count("\n") == text.count("\r\n") else "\n"


def _append_table(text: str, table: str, values: dict[str, float | str]) -> str:
    nl = _newline(text)
    block = nl.join([f"[{table}]"] + [f"{k} = {_toml_float(v)}" for k, v in values.items()]) + nl
    if not text:
        return block
    if not text.endswith("\n"):
        text += nl
    if not text.endswith(nl + nl) and text.strip():
        text += nl
    return _checked(text + block, table, values)


def _finish(original: str, doc: TOMLDocument, table: str, values: dict[str, float | str]) -> str:
    edited = tomlkit.dumps(doc)
    if _newline(original) == "\r\n":
        edited = re.sub(r"(?<!\r)\n", "\r\n", edited)
    return _checked(edited, table, values)


def _checked(edited: str, table: str, values: dict[str, float | str]) -> str:
    """Re-read the edited text with the strict parser and confirm every value landed."""
    try:
        data: Any = tomllib.loads(edited)
    except tomllib.TOMLDecodeError as exc:
        raise GrooveError(
            f"editing the config for [{table}] produced invalid TOML: {exc}") from None
    for part in table.split("."):
        data = data.get(part, {}) if isinstance(data, dict) else {}
    for key, value in values.items():
        if data.get(key) != value:
            raise GrooveError(f"editing the config did not set {table}.{key} = {value!r}")
    return edited


# --------------------------------------------------------------------------- writing


def write_recommendation(config_path: Path, space: Space, condition: Condition, *,
                         validate: Callable[[str, Path], object]) -> WrittenKeys:
    """Write the condition's keys of `space` into `config_path` in place (tune.md §10).

    The file is created when it does not exist. The edited text is passed to `validate` (the config
    validator, which raises ConfigError) before anything touches the disk; it is then written to a
    temporary file in the same folder and renamed over the original, keeping its permissions. A
    symlinked config is written through to its target.

    Returns:
        The path, the table and the keys written, in spec order.

    Raises:
        ConfigError: the edited config does not validate, or the table cannot be written.
        GrooveError: the file cannot be read or written.
    """
    rewrite_config(config_path, lambda original: edit_config_text(original, space, condition),
                   validate)
    return WrittenKeys(config_path, TABLES[space], tuple(condition.values()))


def rewrite_config(config_path: Path, edit: Callable[[str], str],
                   validate: Callable[[str, Path], object]) -> None:
    """Replace `config_path` by `edit` of its text (created when missing), with the rules of
    every config write: a symlink is written through, a read-only file is refused, the edited
    text is validated before the disk is touched, and the new file keeps mode and owner."""
    target = Path(os.path.realpath(config_path)) if config_path.is_symlink() else config_path
    exists = target.exists()
    try:
        original = target.read_bytes().decode("utf-8") if exists else ""
    except OSError as exc:
        raise GrooveError(f"cannot read {config_path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{config_path}: invalid config: the file is not UTF-8") from None
    check_writable(target)
    edited = edit(original)
    validate(edited, config_path)
    info = target.stat() if exists else None
    mode = stat.S_IMODE(info.st_mode) if info else 0o666 & ~umask()
    replace_file(target, edited.encode("utf-8"), mode, (info.st_uid, info.st_gid) if info else None)


def check_writable(config_path: Path) -> None:
    """A config its owner made read-only (no write bit, or no write access) is not replaced:
    the rename would succeed in a writable folder and silently undo that decision. A file
    that does not exist yet passes (it is created)."""
    target = Path(os.path.realpath(config_path))
    if not target.exists():
        return
    mode = stat.S_IMODE(target.stat().st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        raise GrooveError(
            f"refusing to write {target}: it is read-only (mode {mode:o})",
            hint="make it writable (chmod u+w) and run again, or apply the recommendation by hand",
        )


