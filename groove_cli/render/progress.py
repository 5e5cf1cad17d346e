"""Progress display for long runs: a rich bar on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
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
    """Files (or another unit) per second."""

    def __init__(self, unit: str = "files") -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f} {self.unit}/s" if speed else "", style="progress.data.speed")


class RichProgress:
    """A files bar with chunk count, rate and ETA; stderr lines are printed above it."""

    def __init__(self, label: str = "Indexing", unit: str = "files") -> None:
        self.console = Console(stderr=True)
        counted = (f"{unit}, {{task.fields[chunks]}} chunks" if unit == "files" else unit)
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn(counted),
            TransferSpeedColumnFiles(unit),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.label = label
        self.task: TaskID | None = None
        self.chunks = 0

    def __enter__(self) -> RichProgress:
        messages.set_sink(lambda line: self.console.print(line, markup=False, highlight=False,
                                                          soft_wrap=True))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.finish()
        messages.set_sink(None)

    def start(self, total: int) -> None:
        self.bar.start()
        self.task = self.bar.add_task(self.label, total=total, chunks=0)

    def advance(self, done: int, chunks: int) -> None:
        if self.task is not None:
            self.chunks += chunks
            self.bar.update(self.task, completed=done, chunks=self.chunks)

    def finish(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.task = None


class PlainProgress:
    """`Progress: N/M (P%)` every max(1, total/20) files, plus the 100 % line (cli.md §4)."""

    def __init__(self) -> None:
        self.total = 0
        self.step = 1
        self.last = 0

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def start(self, total: int) -> None:
        self.total = total
        self.step = max(1, total // 20)

    def advance(self, done: int, chunks: int) -> None:
        if done == self.last:  # chunks embedded, no new file finished
            return
        if done % self.step == 0 or done == self.total:
            self.last = done
            percent = 100 * done // self.total if self.total else 100
            messages.progress(f"Progress: {done}/{self.total} ({percent}%)")

    def finish(self) -> None:
        pass


def tune_progress() -> RichProgress | NullProgress:
    """`groove tune`: one bar over the golden queries on a terminal, nothing otherwise."""
    if sys.stderr.isatty():
        return RichProgress("Tuning", unit="queries")
    return NullProgress()


def progress_for(*, quiet: bool, plain_lines: bool) -> RichProgress | PlainProgress | NullProgress:
    """Pick the display: a bar on a terminal (not --quiet), plain lines with --progress."""
    if quiet:
        return NullProgress()
    if sys.stderr.isatty():
        return RichProgress()
    return PlainProgress() if plain_lines else NullProgress()
