"""`groove serve --watch`: notes changed, added, renamed or deleted are re-indexed (debounced)
through `Index.index()`, and the KB's served Index is swapped for a fresh one, warmed at once;
searches answer from the last committed state meanwhile. One thread per watched KB (watchfiles).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from groove_cli.serve.service import Served

log = logging.getLogger("groove.serve")
DEBOUNCE_MS = 150
"""How long a burst of file events may keep growing before the re-index starts."""


def note_filter(served: Served) -> object:
    """A watchfiles filter keeping the KB's note types outside hidden and excluded folders."""
    from watchfiles import DefaultFilter

    settings = served.index.settings
    types = tuple(f".{p}" for p in settings.list_("parsers.enabled"))
    skip = {str(d).casefold() for d in settings.list_("exclude_dirs")}
    root = served.kb.resolve() if served.kb else Path("/")

    class NoteFilter(DefaultFilter):
        def __call__(self, change: object, path: str) -> bool:
            try:
                parts = Path(path).resolve().relative_to(root).parts
            except ValueError:
                return False
            return (path.lower().endswith(types) and not any(
                p.startswith(".") or p.casefold() in skip for p in parts[:-1])
                and super().__call__(change, path))  # type: ignore[arg-type]

    return NoteFilter()


def reindex(served: Served) -> None:
    """Bring the index up to date and serve a fresh Index warmed on it."""
    from groove_cli.api import Index

    current = served.index
    writer = Index(current.settings, current.kb, current.location)
    try:
        report = writer.index(quiet=True)
    finally:
        writer.close()
    fresh = Index(current.settings, current.kb, current.location)
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
        """Set while a re-index runs (tests and benchmarks wait on it)."""

    def start(self) -> None:
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

        assert served.kb is not None
        for _changes in watch(served.kb, watch_filter=note_filter(served),  # type: ignore[arg-type]
                              debounce=DEBOUNCE_MS, step=20, stop_event=self._stop,
                              yield_on_timeout=False, raise_interrupt=False):
            if self._stop.is_set():
                return
            self.busy.set()
            try:
                reindex(served)
            except Exception as exc:  # a failed re-index leaves the served state as it was
                from groove_cli.serve.tools import error_text

                log.warning("re-indexing %s failed: %s", served.name, error_text(exc) or exc)
            finally:
                self.busy.clear()
