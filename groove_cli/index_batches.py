"""Phase 1's write transactions (index.md §6.2): several files' rows to a transaction.

Every commit makes SQLite append to the WAL and each FTS5 table flush its pending terms into a
new segment, a fixed cost per transaction that dominated phase 1 with one file per transaction
(bench/results/code-notes.md#phase1-transactions). A file's rows are still written inside one
transaction, never split across two, so an interrupted or killed run leaves each file with its
old rows or its new ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager

FILES_PER_TRANSACTION = 64
"""At most this many files' writes share a transaction: a kill loses no more than these."""


class FileBatches:
    """Open while phase 1 loops over the files: `file()` wraps one file's writes, and the
    transaction opens at the first write and commits after FILES_PER_TRANSACTION files or when
    the loop leaves the `with` block normally (a stop included); an exception rolls it back."""

    def __init__(self, transaction: Callable[[], AbstractContextManager[None]]) -> None:
        self._transaction = transaction
        self._open = ExitStack()
        self._files = 0

    def __enter__(self) -> FileBatches:
        return self

    def __exit__(self, *exc: object) -> None:
        self._open.__exit__(*exc)  # type: ignore[arg-type]
        self._files = 0

    @contextmanager
    def file(self) -> Iterator[None]:
        """One file's writes, in the open transaction (opened here when none is)."""
        if self._files == 0:
            self._open.enter_context(self._transaction())
        yield
        self._files += 1
        if self._files >= FILES_PER_TRANSACTION:
            self._open.close()
            self._files = 0
