"""`groove serve --watch`: notes changed, added, renamed or deleted are re-indexed (debounced)
through `Index.index()`, and the KB's served Index is swapped for a fresh one, warmed at once;
searches answer from the last committed state meanwhile. One thread per watched KB (watchfiles).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli.serve.service import Served

if TYPE_CHECKING:
    from groove_cli.api import Index

log = logging.getLogger("groove.serve")
DEBOUNCE_MS = 150
"""How long a burst of file events may keep growing before the re-index starts."""
RETRY_S = 5
"""How long after a failed re-index the watcher tries again."""


def note_filter(served: Served) -> object:
    """A watchfiles filter keeping the KB's note types outside hidden and excluded folders, and
    folders themselves.

    A folder's own event must start a re-index: inotify watches a new folder only once it has
    seen the folder appear, so notes copied in with it (`cp -r`, an unpacked archive) may raise
    no event of their own, and a folder moved out of the KB raises none for the notes it takes.
    A deleted path without a suffix counts as a folder (it can no longer be looked at); a
    needless re-index finds nothing to do.
    """
    from watchfiles import Change, DefaultFilter

    settings = served.index.settings
    types = tuple(f".{p}" for p in settings.list_("parsers.enabled"))
    skip = {str(d).casefold() for d in settings.list_("exclude_dirs")}
    root = served.kb.resolve() if served.kb else Path("/")

    def hidden(parts: tuple[str, ...]) -> bool:
        return any(p.startswith(".") or p.casefold() in skip for p in parts)

    class NoteFilter(DefaultFilter):
        def __call__(self, change: Change, path: str) -> bool:
            where = Path(path)
            try:
                parts = where.resolve().relative_to(root).parts
            except ValueError:
                return False
            if not parts or not super().__call__(change, path):
                return False
            if path.lower().endswith(types):
                return not hidden(parts[:-1])
            folder = where.is_dir() or (change == Change.deleted and not where.suffix)
            return folder and not hidden(parts)

    return NoteFilter()


def identity(folder: Path) -> tuple[int, int] | None:
    """The folder's (device, inode), or None when nothing is there."""
    try:
        info = folder.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def reindex(served: Served, writer: Index) -> None:
    """Bring the index up to date through `writer` (which keeps the embedding model loaded)
    and serve a fresh Index on the new state."""
    from groove_cli.api import Index

    report = writer.index(quiet=True, keep_model=True)
    current = served.index
    fresh = Index(current.settings, current.kb, current.location, defer_cache=True)
    served.swap(fresh)  # full text answers from the new state at once
    fresh.search("warm up", limit=1)  # the models load now, not in the next caller's search
    log.info("re-indexed %s: %s", served.name, report)


class Watcher:
    """Watches each KB folder in a thread until `stop()`."""

    def __init__(self, kbs: list[Served]) -> None:
        self.kbs = [s for s in kbs if s.kb is not None]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.busy = threading.Event()
        """Set while a re-index runs."""
        self.ready = threading.Event()
        """Set once every KB has caught up with the changes made while nothing watched it
        (and the embedding model is loaded for the next re-index)."""
        self._pending = len(self.kbs)
        self._count = threading.Lock()

    def start(self) -> None:
        if not self.kbs:
            self.ready.set()
        for served in self.kbs:
            thread = threading.Thread(target=self._run, args=(served,), daemon=True,
                                      name=f"groove-watch-{served.name}")
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _run(self, served: Served) -> None:
        from watchfiles import watch

        from groove_cli.api import Index

        assert served.kb is not None
        current = served.index
        writer = Index(current.settings, current.kb, current.location)
        folder = identity(served.kb)
        caught_up = False
        retry_at: float | None = None
        for changes in watch(served.kb, watch_filter=note_filter(served),  # type: ignore[arg-type]
                             debounce=DEBOUNCE_MS, step=20, stop_event=self._stop,
                             rust_timeout=200, yield_on_timeout=True, raise_interrupt=False):
            if self._stop.is_set():
                break
            if identity(served.kb) != folder:  # deleted or moved: never rebuild it empty
                served.problem = (f"the KB folder {served.kb} was deleted or moved; watching "
                                  "stopped (searches answer from the last index)")
                log.error("%s: %s", served.name, served.problem)
                self._caught_up(caught_up)
                break
            due = retry_at is not None and time.monotonic() >= retry_at
            if changes or not caught_up or due:  # the first pass: what changed while unwatched
                ok = self._update(served, writer)
                retry_at = None if ok else time.monotonic() + RETRY_S
                self._caught_up(caught_up)
                caught_up = True
        writer.close()

    def _caught_up(self, already: bool) -> None:
        """Count one KB as caught up (once), so `ready` is set when every KB is."""
        if already:
            return
        with self._count:
            self._pending -= 1
            if self._pending == 0:
                self.ready.set()

    def _update(self, served: Served, writer: Index) -> bool:
        """Re-index one KB; False when it failed (the served state stays as it was and the
        watcher tries again RETRY_S later, so the changes are not left out until the next
        event)."""
        self.busy.set()
        try:
            reindex(served, writer)
            return True
        except Exception as exc:
            from groove_cli.serve.tools import error_text

            log.warning("re-indexing %s failed (trying again in %d s): %s", served.name,
                        RETRY_S, error_text(exc) or exc)
            return False
        finally:
            self.busy.clear()
