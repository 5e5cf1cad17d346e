"""Progress display for long runs: a rich bar on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
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
)
from rich.text import Text

from groove_cli import messages
from groove_cli.text.durations import human_duration
from groove_cli.types import NullProgress


class TransferSpeedColumnFiles(ProgressColumn):
    """Units (files, chunks, queries) per second."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        unit = task.fields.get("unit", "")
        return Text(f"{speed:.1f} {unit}/s" if speed and unit else "", style="progress.data.speed")


class HumanElapsedColumn(ProgressColumn):
    """Time since the step began, as the `Done` line writes durations (`1 min 5 s`)."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        return Text(human_duration(elapsed or 0.0), style="progress.elapsed")


class HumanRemainingColumn(ProgressColumn):
    """`ETA ~14 min 38 s` from rich's recent speed over the step's unit (tokens while
    embedding); empty until the step has progressed."""

    def render(self, task: Task) -> Text:
        left = task.time_remaining
        return Text("" if left is None else f"ETA ~{human_duration(left)}",
                    style="progress.remaining")


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
            HumanElapsedColumn(),
            HumanRemainingColumn(),
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
"""Seconds between two looks at the progress when stderr is not a terminal (cli.md §4)."""

VERBS = {"files": "read", "tokens": "embedded"}
WAITS = {"Loading model": "loading the embedding model", "Counting tokens": "counting tokens"}
"""What a step without a count (`total` None) is doing, by its label."""


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def progress_line(unit: str, label: str, done: int, total: int | None, chunks: int,
                  elapsed: float) -> str:
    """The progress line of a step `elapsed` seconds after it began (cli.md §4):
    `read 120/450 files, 35/s, ~9.4 s left`, `embedded 1,200 chunks, 45,000/410,000 tokens,
    850 tokens/s, ~7 min 10 s left`, `loading the embedding model, 3.2 s so far`. The rate is
    `done` per second since the step began and the ETA is what is left at that rate, both
    left out until the step has progressed (the ETA also once nothing is left); while
    embedding, both count the model's tokens, not chunks (a long chunk costs many times a
    short one)."""
    if total is None:
        return f"{WAITS.get(label, label.lower())}, {human_duration(elapsed)} so far"
    verb = VERBS.get(unit, "done")
    if unit == "tokens":
        text = f"{verb} {chunks:,} chunks, {done:,}/{total:,} tokens"
    else:
        text = f"{verb} {done:,}/{total:,} {unit}"
    rate = done / elapsed if elapsed > 0 else 0.0
    if rate <= 0:
        return text
    per = f" {unit}" if unit == "tokens" else ""
    text = f"{text}, {_count(rate)}{per}/s"
    return f"{text}, ~{human_duration((total - done) / rate)} left" if done < total else text


class LineProgress:
    """Stderr is not a terminal: a timer thread looks at the step every `interval` seconds
    (so a line can come even while one long model batch runs) and writes its line
    (`progress_line`) only when the text differs from the last one written: a stalled step
    does not repeat itself. With `plain_lines` (`--progress`) also `Progress: N/M (P%)` every
    max(1, total/20) files (cli.md §4). `clock` is for tests."""

    def __init__(self, *, plain_lines: bool = False, interval: float = PROGRESS_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.plain_lines = plain_lines
        self.interval = interval
        self.clock = clock
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.total: int | None = None
        self.unit = "files"
        self.label = ""
        self.done = 0
        self.chunks = 0
        self.began = 0.0
        self.active = False
        self.step = 1
        self.last = 0
        self.written: str | None = None
        """The last progress line written: the next is written only when it differs."""

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
            self.total, self.unit, self.label = total, unit or "files", label or ""
            self.done, self.chunks, self.last = 0, 0, 0
            self.step = max(1, (total or 0) // 20)
            self.began = self.clock()
            self.active = True
        if self.thread is None:
            self.thread = threading.Thread(target=self._tick, name="groove-progress", daemon=True)
            self.thread.start()

    def advance(self, done: int, chunks: int) -> None:
        with self.lock:
            self.done = done
            self.chunks += chunks
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
            return progress_line(self.unit, self.label, self.done, self.total, self.chunks,
                                 self.clock() - self.began)

    def fresh_line(self) -> str | None:
        """The line for now when it differs from the last one written (then it counts as
        written), else None."""
        text = self.line()
        with self.lock:
            if text is None or text == self.written:
                return None
            self.written = text
            return text

    def _tick(self) -> None:
        while not self.stopped.wait(self.interval):
            text = self.fresh_line()
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
