"""The indexer's lock: one `groove index` per index at a time (index.md §6.1 step 1)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from groove_cli.dburl import IndexLocation
from groove_cli.errors import GrooveError
from groove_cli.failures import check_index_file


@contextmanager
def indexer_lock(db: IndexLocation, *, force: bool = False) -> Iterator[None]:
    """Exclusive lock on `{db}.lock`: one indexer per index; searches are never blocked.
    A file that cannot be an index is refused first, unless `force` (which sets a damaged
    file aside under the lock). A Postgres KB is locked by the store itself (an advisory
    lock held by the writer's connection)."""
    if not isinstance(db, Path):
        yield
        return
    check_index_file(db, allow_empty=True, damaged_ok=force)
    db.parent.mkdir(parents=True, exist_ok=True)
    lock_path = db.with_name(db.name + ".lock")
    if not os.access(db.parent, os.W_OK) or (db.exists() and not os.access(db, os.W_OK)):
        raise GrooveError(f"cannot write the index at {db}: the file or its folder is read-only",
                          hint="make it writable, or pass --db a writable location "
                               "(search, status and doctor work on a read-only index)")
    if lock_path.is_dir():
        raise GrooveError(f"the lock file {lock_path} is a folder",
                          hint="remove that folder (groove creates the lock file itself)")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise GrooveError(f"another groove index is running on {db}") from None
        yield
    finally:
        os.close(fd)
