"""The index file on disk: which files belong to it, which may be written, and setting a
damaged one aside.

The index is one SQLite file plus companions groove or SQLite write beside it: the `-wal` and
`-shm` files, the indexer's `.lock` and the vector snapshot. None of them may be a symbolic
link unless the user named the index with `--db`: a link planted in a knowledge base must not
make `groove index` write into another application's database, or create files outside the KB.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path

from groove_cli.errors import GrooveError

COMPANION_SUFFIXES = ("-wal", "-shm", "-journal", ".lock", ".vectors.npy", ".vectors-ids.npy",
                      ".vectors.json")
"""Files named `{index}{suffix}`: SQLite's journals, the indexer lock, the vector snapshot."""
SNAPSHOT_SUFFIXES = (".vectors.npy", ".vectors-ids.npy", ".vectors.json")


def companions(db: Path) -> list[Path]:
    return [db.with_name(db.name + suffix) for suffix in COMPANION_SUFFIXES]


class DamagedIndex(GrooveError):
    """The index file cannot be read as a groove index: SQLite reports it damaged (`reason`:
    SQLite's words, for a message that says "damaged" once)."""

    reason: str = ""


def refuse_linked_index(db: Path, *, explicit: bool) -> None:
    """Refuse an index file or companion that is a symbolic link (dangling ones included),
    unless `explicit` (the user named the index with `--db`, so following it is intended)."""
    if explicit:
        return
    for path in (db, *companions(db)):
        if path.is_symlink():
            target = os.readlink(path)
            raise GrooveError(
                f"refusing to use {path}: it is a symbolic link (to {target}); groove writes "
                "only to an index inside the knowledge base",
                hint=f"remove the link, or pass --db {db} to use its target on purpose",
            )


def damaged(reason: str) -> DamagedIndex:
    error = DamagedIndex(
        f"the index file is damaged ({reason})",
        hint="`groove doctor` shows the damage; `groove index --force` moves the damaged file "
             "aside and rebuilds the index",
    )
    error.reason = reason
    return error


def damage_error(exc: BaseException) -> DamagedIndex | None:
    """The user-facing error for an SQLite failure that means a damaged file, else None."""
    import apsw

    malformed = isinstance(exc, apsw.SQLError) and "malformed" in str(exc)
    if not (isinstance(exc, apsw.CorruptError | apsw.NotADBError) or malformed):
        return None
    return damaged(str(exc).split(": ", 1)[-1])


def corrupt_copy_path(path: Path) -> Path:
    """A new name for a damaged file kept aside: `{name}.corrupt-{UTC time, µs}`, never one
    that exists, so every damaged copy is kept."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists() or aside.is_symlink():
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    return aside


def quarantine(db: Path) -> Path:
    """Move a damaged index aside as `{name}.corrupt-{UTC time}` (its `-wal` and `-shm` with
    it, as `{that}-wal`, so SQLite can still open the copy) and drop its vector snapshot.
    Returns the new path. Nothing is deleted that could hold indexed data."""
    aside = corrupt_copy_path(db)
    try:
        os.replace(db, aside)
        for suffix in ("-wal", "-shm"):
            journal = db.with_name(db.name + suffix)
            if journal.exists():
                os.replace(journal, aside.with_name(aside.name + suffix))
    except OSError as exc:
        raise GrooveError(f"cannot move the damaged index {db} aside: {exc.strerror or exc}",
                          hint=f"move or delete {db} by hand, then run groove index") from None
    for suffix in SNAPSHOT_SUFFIXES:
        with contextlib.suppress(OSError):
            db.with_name(db.name + suffix).unlink(missing_ok=True)
    return aside


def snapshot_leftovers(db: Path, *, running_too: bool = False) -> list[Path]:
    """Temporary files of a snapshot write that never finished (`{name}.vectors*.tmp{pid}`:
    a killed `index`). Only an indexer writes them, under the lock, so with the lock held every
    one is a leftover (`running_too`); without it, those of a live process are skipped."""
    prefix = db.name + ".vectors"
    try:
        found = sorted(p for p in db.parent.iterdir()
                       if p.name.startswith(prefix) and ".tmp" in p.name[len(prefix):])
    except OSError:
        return []
    return [p for p in found if running_too or not _alive(p.name.rsplit(".tmp", 1)[-1])]


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def remove_snapshot_leftovers(db: Path) -> int:
    """Delete the leftovers (call with the indexer lock held); returns how many went."""
    removed = 0
    for path in snapshot_leftovers(db, running_too=True):
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed
