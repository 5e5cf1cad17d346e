"""Where groove keeps what it writes for a KB: one state folder (config.md §1.2, index.md §6.5).

Everything groove writes for a knowledge base — the index file and its companions (`-wal`,
`-shm`, `.lock`, the vector snapshot), the query cache inside it and the eval history — lives in
one folder: `<kb>/.groove/`, which holds its own `.gitignore` (`*`) so a git-tracked KB stays
clean, or the user's data folder (`<XDG_DATA_HOME>/groove/kbs/<name>-<digest of the KB's
resolved path>/`) when the KB folder is read-only or `[store] location = "user"`.

An index in the old layout (`<kb>/.groove.db` and its companions beside the notes) is still read
where it is, and moves into the state folder on the next `index` (`migrate_legacy`): the copy is
made under the old index's lock and renamed into place in one step, so a crash at any point
leaves the old layout or the new one usable, never neither.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import sys
from pathlib import Path

from groove_cli import messages
from groove_cli.dbfile import COMPANION_SUFFIXES, SNAPSHOT_SUFFIXES, refuse_linked_index
from groove_cli.errors import GrooveError

STATE_DIR = ".groove"
"""The state folder inside a KB."""
INDEX_NAME = "index.db"
"""The index file inside a state folder."""
LEGACY_DB = ".groove.db"
"""The old layout's index file, directly in the KB folder."""
HISTORY_NAME = "eval-history.json"
"""The eval history inside a state folder."""
LEGACY_HISTORY = ".groove-eval-history.json"
"""The old place of the eval history, in the KB folder (kept and used while it exists)."""
LOCATIONS = ("kb", "user")
MIGRATING = INDEX_NAME + ".migrating"
CRASH_HOOK = "GROOVE_TEST_CRASH_AT"
"""Tests only: the name of a migration step at which the process kills itself (SIGKILL)."""


def user_data_dir() -> Path:
    """The per-user data folder (XDG_DATA_HOME, else ~/.local/share; the platform's own
    elsewhere)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def user_state_dir(kb: Path) -> Path:
    """The state folder of `kb` under the user's data folder, keyed by its resolved path (the
    folder's name first, so a person can tell the folders apart)."""
    resolved = kb.expanduser().resolve()
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", resolved.name)[:40] or "root"
    return user_data_dir() / "groove" / "kbs" / f"{name}-{digest}"


def kb_state_dir(kb: Path) -> Path:
    return kb / STATE_DIR


def has_index(kb: Path) -> bool:
    """Whether `kb` holds a groove index in any layout (the KB discovery marker, cli.md §1)."""
    return ((kb_state_dir(kb) / INDEX_NAME).is_file() or (kb / LEGACY_DB).is_file()
            or (user_state_dir(kb) / INDEX_NAME).is_file())


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


def state_dir(kb: Path, location: str | None) -> Path:
    """The state folder of `kb`: `location` when the user set it; unset, the KB's own
    `.groove/` unless the KB folder is read-only or the index already lives in the user's
    data folder."""
    if location == "user":
        return user_state_dir(kb)
    local = kb_state_dir(kb)
    if location == "kb" or local.is_dir() or (kb / LEGACY_DB).exists():
        return local
    user = user_state_dir(kb)
    if (user / INDEX_NAME).exists() or not _writable(kb):
        return user
    return local


def index_file(kb: Path, location: str | None) -> Path:
    """The index file commands read: the state folder's, else an old-layout `.groove.db` that
    has not moved yet (it moves on the next `index`)."""
    new = state_dir(kb, location) / INDEX_NAME
    legacy = kb / LEGACY_DB
    if not new.exists() and legacy.exists() and location != "user":
        return legacy
    return new


def history_file(kb: Path, location: str | None) -> Path:
    """The eval history: `<kb>/.groove-eval-history.json` while that file exists (a user who
    committed it keeps it there), else the state folder's."""
    legacy = kb / LEGACY_HISTORY
    if legacy.exists() or legacy.is_symlink():
        return legacy
    return state_dir(kb, location) / HISTORY_NAME


def ensure(folder: Path) -> None:
    """Create a state folder with its `.gitignore` (`*`: nothing in it is ever committed)."""
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        tmp = folder / f".gitignore.tmp{os.getpid()}"
        tmp.write_text("# written by groove: everything here is generated\n*\n", encoding="utf-8")
        os.replace(tmp, ignore)


def prepare_for_index(kb: Path, location: str | None, *, force: bool = False) -> Path:
    """The index file `index` writes: the state folder made (with its `.gitignore`) and an
    old-layout index moved into it first."""
    legacy = kb / LEGACY_DB
    refuse_linked_index(legacy, explicit=False)  # the old layout's files: checked before any
    folder = state_dir(kb, location)             # of them is read, moved or deleted
    if folder.is_symlink():
        raise GrooveError(f"refusing to use {folder}: it is a symbolic link (to "
                          f"{os.readlink(folder)}); groove keeps a KB's state in a real folder",
                          hint=f"remove the link; groove creates {folder.name}/ itself")
    ensure(folder)
    target = folder / INDEX_NAME
    if legacy.exists() or _legacy_leftovers(kb):
        migrate_legacy(legacy, target, force=force)
    return target


def _legacy_leftovers(kb: Path) -> list[Path]:
    return [p for p in (kb / (LEGACY_DB + s) for s in COMPANION_SUFFIXES) if p.exists()]


def _crash_point(step: str) -> None:
    """Tests only: die here, as `kill -9` would, when GROOVE_TEST_CRASH_AT names this step."""
    if os.environ.get(CRASH_HOOK) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def migrate_legacy(legacy: Path, target: Path, *, force: bool = False) -> None:
    """Move the old-layout index `legacy` to `target` (index.md §6.5), crash-safe:

    1. under the old lock, copy the index with SQLite's backup API (committed `-wal` content
       included) to `index.db.migrating`, flushed to disk, and copy the vector snapshot;
    2. rename the copy to `index.db` — from here the new layout is the one every command uses;
    3. delete the old files, the index first.

    Killed before 2, the old layout is intact and the next `index` starts over; killed after 2,
    the new layout is complete and the next `index` only deletes what is left of the old one.
    With `force` (`index --force`) a damaged old index is set aside in place, as `index --force`
    does with any damaged index (index.md §6.4), and nothing is copied.
    """
    from groove_cli.dbfile import quarantine
    from groove_cli.index import indexer_lock
    from groove_cli.integrity import damage_of
    from groove_cli.store import copy_database, schema_version

    folder = target.parent
    with indexer_lock(legacy, force=force):  # checks the file too (a folder, not SQLite)
        reason = damage_of(legacy) if force else None
        if reason is not None:
            aside = quarantine(legacy)
            messages.warning(f"the index at {legacy} is damaged ({reason}); moved it aside to "
                             f"{aside} and rebuilding the index from scratch")
        if legacy.exists() and schema_version(legacy) == 0:
            messages.warning(f"{legacy} is not a groove index; left it where it is")
            return
        if not target.exists() and legacy.exists():
            partial = folder / MIGRATING
            for stale in (partial, partial.with_name(partial.name + "-journal")):
                stale.unlink(missing_ok=True)
            copy_database(legacy, partial)
            _crash_point("copied")
            for suffix in SNAPSHOT_SUFFIXES:
                old = legacy.with_name(legacy.name + suffix)
                if old.exists():
                    shutil.copyfile(old, target.with_name(target.name + suffix))
            _fsync(partial)
            os.replace(partial, target)
            _fsync(folder)
            _crash_point("renamed")
            messages.note(f"moved the index from {legacy} to {target}")
        legacy.unlink(missing_ok=True)
        _crash_point("removed-index")
        for path in _legacy_leftovers(legacy.parent):
            with contextlib.suppress(OSError):
                path.unlink()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
