"""Finding the KB a command works on: named collections and the KB the working folder is in.

Named collections live in the per-user config folder, in `collections.toml` beside the per-user
`groove.toml` (config.md §1.3): one `[collections.NAME]` table with the KB's absolute `path`
each. `groove kb add/list/remove` edit it (through tomlkit, so a user's comments stay); `-c NAME`
reads it. `find_kb` is the discovery walk (cli.md §1): from the working folder up to the
filesystem root, the first folder that holds a groove index (any layout, statedir.has_index)
or is a named collection's folder.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_cli import statedir
from groove_cli.config import user_config_dir
from groove_cli.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from tomlkit import TOMLDocument

COLLECTIONS_NAME = "collections.toml"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A collection name: a letter or digit, then up to 63 letters, digits, `.`, `_` or `-`."""


@dataclass(frozen=True, slots=True)
class Collection:
    name: str
    path: Path


def collections_path() -> Path:
    return user_config_dir() / "groove" / COLLECTIONS_NAME


def load_collections() -> list[Collection]:
    """The named collections, in the file's order; [] when there is no file."""
    path = collections_path()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the collections: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid collections file: {exc}",
                          hint="fix it, or remove it and add the collections again") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid collections file: tables are nested too deeply",
                          hint="it holds only [collections.NAME] tables with a path") from None
    table = data.get("collections", {})
    if not isinstance(table, dict) or set(data) - {"collections"}:
        raise ConfigError(f"{path}: invalid collections file: expected only [collections.NAME] "
                          "tables")
    found: list[Collection] = []
    for name, entry in table.items():
        where = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(where, str) or not NAME_RE.fullmatch(name):
            raise ConfigError(f"{path}: invalid collections file: collections.{name} needs a "
                              'valid name and path = "…"')
        found.append(Collection(name, Path(os.path.expanduser(where))))
    return found


def collection(name: str) -> Collection:
    """The collection called `name`; a usage error naming the known ones otherwise."""
    known = load_collections()
    for item in known:
        if item.name == name:
            if not item.path.is_dir():
                raise UsageError(f"collection {name!r}: {item.path} is not an existing directory",
                                 hint=f"groove kb remove {name}, then add it again")
            return item
    names = ", ".join(c.name for c in known[:8]) or "none yet"
    if len(known) > 8:
        names += f" and {len(known) - 8} more"
    raise UsageError(f"no collection named {name[:64]!r} (known: {names})",
                     hint="groove kb add PATH --name NAME adds one; groove kb list shows them")


def distinct_folders(collections: list[Collection]) -> list[Collection]:
    """The first collection of each folder (a hand-edited file may name one folder twice;
    `--all` searches it once)."""
    seen: set[Path] = set()
    kept = []
    for item in collections:
        folder = item.path.expanduser().resolve()
        if folder not in seen:
            seen.add(folder)
            kept.append(item)
    return kept


@contextmanager
def _editing() -> Iterator[None]:
    """Hold `collections.toml.lock` while a change reads, checks and rewrites the file, so
    concurrent `kb add`/`kb remove` never lose each other's entries."""
    import fcntl

    path = collections_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(document: TOMLDocument) -> None:
    """Replace the file atomically (a new file renamed over it, flushed first)."""
    import tomlkit

    path = collections_path()
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(tomlkit.dumps(document))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _document() -> tuple[TOMLDocument, Any]:
    import tomlkit

    load_collections()  # a damaged file is reported before it is rewritten
    path = collections_path()
    document = tomlkit.parse(path.read_text(encoding="utf-8-sig")) if path.exists() else \
        tomlkit.document()
    if "collections" not in document:
        document["collections"] = tomlkit.table(is_super_table=True)
    return document, document["collections"]


def add_collection(folder: Path, name: str | None) -> Collection:
    """Register `folder` (resolved) under `name` (default: the folder's name)."""
    import tomlkit

    kb = folder.expanduser().resolve()
    if not kb.is_dir():
        raise UsageError(f"{folder} is not an existing directory")
    chosen = name if name is not None else kb.name
    if not NAME_RE.fullmatch(chosen):
        raise UsageError(f"--name {chosen!r} is not a valid collection name",
                         hint="use letters, digits, '.', '_' or '-' (at most 64), e.g. --name notes")
    with _editing():
        for item in load_collections():
            if item.name == chosen:
                raise UsageError(f"a collection named {chosen!r} already exists ({item.path})",
                                 hint=f"pick another --name, or groove kb remove {chosen} first")
            if item.path.expanduser().resolve() == kb:
                raise UsageError(f"{kb} is already the collection {item.name!r}")
        document, table = _document()
        entry = tomlkit.table()
        entry["path"] = str(kb)
        table[chosen] = entry
        _write(document)
    return Collection(chosen, kb)


def remove_collection(name: str) -> Collection:
    """Forget the collection `name` (its folder and index are left as they are)."""
    with _editing():
        removed = collection_entry(name)
        document, table = _document()
        del table[name]
        _write(document)
    return removed


def collection_entry(name: str) -> Collection:
    """The collection called `name`, whether or not its folder still exists."""
    for item in load_collections():
        if item.name == name:
            return item
    raise UsageError(f"no collection named {name!r}", hint="groove kb list shows the collections")


def find_kb(start: Path) -> Path | None:
    """The KB the folder `start` is in: the nearest folder (`start` itself included) holding a
    groove index or registered as a collection; None when no ancestor is one."""
    try:
        registered = {c.path.expanduser().resolve() for c in load_collections()}
    except ConfigError:
        registered = set()  # a damaged collections file does not stop discovery
    current = start.resolve()
    while True:
        if current in registered or statedir.has_index(current):
            return current
        if current.parent == current:
            return None
        current = current.parent
