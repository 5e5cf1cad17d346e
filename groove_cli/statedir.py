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

import os
import sys
from pathlib import Path

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
    import hashlib
    import re

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
