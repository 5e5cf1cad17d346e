"""Progress display for long runs: a rich bar on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from groove_cli import messages
from groove_cli.types import NullProgress


class TransferSpeedColumnFiles(ProgressColumn):
    """Units (files, chunks, queries) per second."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        unit = task.fields.get("unit", "")
        return Text(f"{speed:.1f} {unit}/s" if speed and unit else "", style="progress.data.speed")


class RichProgress:
    """One bar per step (notes read, the model load, chunks embedded) with count, rate and
    ETA; stderr lines are printed above it."""

    def __init__(self, label: str = "Indexing", unit: str = "files") -> None:
        self.console = Console(stderr=True)
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TransferSpeedColumnFiles(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.label = label
        self.unit = unit
        self.task: TaskID | None = None

    def __enter__(self) -> RichProgress:
        messages.set_sink(lambda line: self.console.print(line, markup=False, highlight=False,
                                                          soft_wrap=True))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.finish()
        messages.set_sink(None)

    def start(self, total: int | None, label: str | None = None, unit: str | None = None) -> None:
        self.finish()
        self.bar.start()
        self.task = self.bar.add_task(label or self.label, total=total,
                                      unit=self.unit if unit is None else unit)

    def advance(self, done: int, chunks: int) -> None:
        if self.task is not None:
            self.bar.update(self.task, completed=done)

    def finish(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.bar.remove_task(self.task)
            self.task = None


PROGRESS_INTERVAL = 10.0
"""Seconds between two progress lines when stderr is not a terminal (cli.md §4)."""

VERBS = {"files": "read", "chunks": "embedded"}


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


class LineProgress:
    """Stderr is not a terminal: one line every `interval` seconds while a step runs
    (`embedded 1,200/3,665 chunks, 28/s, ~88 s left`), written by a timer thread so a line
    comes even while one long model batch runs. With `plain_lines` (`--progress`) also
    `Progress: N/M (P%)` every max(1, total/20) files (cli.md §4)."""

    def __init__(self, *, plain_lines: bool = False, interval: float = PROGRESS_INTERVAL) -> None:
        self.plain_lines = plain_lines
        self.interval = interval
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.total: int | None = None
        self.unit = "files"
        self.done = 0
        self.began = 0.0
        self.active = False
        self.step = 1
        self.last = 0

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def start(self, total: int | None, label: str | None = None, unit: str | None = None) -> None:
        with self.lock:
            self.total, self.unit = total, unit or "files"
            self.done, self.last = 0, 0
            self.step = max(1, (total or 0) // 20)
            self.began = time.monotonic()
            self.active = True
        if self.thread is None:
            self.thread = threading.Thread(target=self._tick, name="groove-progress", daemon=True)
            self.thread.start()

    def advance(self, done: int, chunks: int) -> None:
        with self.lock:
            self.done = done
        if not self.plain_lines or self.unit != "files" or done == self.last:
            return
        if done % self.step == 0 or done == self.total:
            self.last = done
            percent = 100 * done // self.total if self.total else 100
            messages.progress(f"Progress: {done}/{self.total} ({percent}%)")

    def finish(self) -> None:
        with self.lock:
            self.active = False

    def line(self) -> str | None:
        """The line for now, or None between steps."""
        with self.lock:
            if not self.active:
                return None
            elapsed = time.monotonic() - self.began
            if self.total is None:
                return f"loading the embedding model, {elapsed:.0f} s so far"
            verb = VERBS.get(self.unit, "done")
            text = f"{verb} {self.done:,}/{self.total:,} {self.unit}"
            rate = self.done / elapsed if elapsed > 0 else 0.0
            if rate <= 0:
                return text
            left = (self.total - self.done) / rate
            return f"{text}, {_count(rate)}/s, ~{left:,.0f} s left"

    def _tick(self) -> None:
        while not self.stopped.wait(self.interval):
            text = self.line()
            if text is not None:
                messages.progress(text)


def tune_progress() -> RichProgress | NullProgress:
    """`groove tune`: one bar over the golden queries on a terminal, nothing otherwise."""
    if sys.stderr.isatty():
        return RichProgress("Tuning", unit="queries")
    return NullProgress()


def progress_for(*, quiet: bool, plain_lines: bool,
                 interval: float = PROGRESS_INTERVAL) -> RichProgress | LineProgress | NullProgress:
    """Pick the display: bars on a terminal, timed lines otherwise; nothing with --quiet."""
    if quiet:
        return NullProgress()
    if sys.stderr.isatty():
        return RichProgress()
    return LineProgress(plain_lines=plain_lines, interval=interval)
