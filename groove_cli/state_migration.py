"""Moving a KB's index from the old layout (`<kb>/.groove.db` and its files) into its state
folder (statedir.py), crash-safe: copied under the indexer's lock, renamed into place in one
step, then the old files removed; a kill at any step leaves one usable index (index.md §6.5)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from pathlib import Path

from groove_cli import messages
from groove_cli.dbfile import COMPANION_SUFFIXES, SNAPSHOT_SUFFIXES, refuse_linked_index
from groove_cli.errors import GrooveError
from groove_cli.statedir import (
    CRASH_HOOK,
    INDEX_NAME,
    LEGACY_DB,
    MIGRATING,
    ensure,
    state_dir,
)


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
    from groove_cli.index_lock import indexer_lock
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
