"""groove's messages: warnings, notes and progress lines, through the `groove` logger.

The core reports through these functions and never writes to a stream itself: each line is a
record of the `groove` logger, which has only a NullHandler, so a library call prints nothing
unless its caller installs a handler (logging's usual contract). The command line installs
`StderrLines` (`install_stderr`), which writes each line as cli.md §2 defines it — `groove:
error: …`, `groove: warning: …`, `groove: note: …`, unprefixed progress lines — filtered by
GROOVE_LOG and `--verbose`, and may swap its sink (to draw a progress bar around the lines).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from groove_cli.dburl import mask
from groove_cli.text import printable

DETAIL = 15
"""A note only a curious user needs: written with `--verbose` or GROOVE_LOG=debug."""
ALWAYS = 100
"""A line written whatever the level (`--explain`, an error's hint)."""
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR}
"""GROOVE_LOG's values."""
LOGGER = logging.getLogger("groove")
LOGGER.addHandler(logging.NullHandler())

Sink = Callable[[str], None]


def _stderr_sink(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class StderrLines(logging.Handler):
    """The command line's handler: each message of the `groove` logger as its own line on
    stderr (or the current sink); a record of a child logger (`groove.serve`) as
    `groove: LEVEL: message`, with its traceback when it has one."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.sink: Sink = _stderr_sink

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == LOGGER.name:
            self.sink(record.getMessage())
            return
        text = f"groove: {record.levelname.lower()}: {mask(printable(record.getMessage()))}"
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        self.sink(text)


def threshold(verbose: bool = False) -> int:
    """The lowest level written: GROOVE_LOG's (default info; unknown values mean info), and
    the detail notes as well with `verbose`."""
    level = LEVELS.get(os.environ.get("GROOVE_LOG", "info").strip().lower(), LEVELS["info"])
    return min(level, DETAIL) if verbose else level


def _handler() -> StderrLines | None:
    return next((h for h in LOGGER.handlers if isinstance(h, StderrLines)), None)


def install_stderr(verbose: bool = False) -> StderrLines:
    """Write groove's messages to stderr from now on (the command line calls this first);
    again: re-read GROOVE_LOG and `verbose`, keeping the current sink."""
    handler = _handler()
    if handler is None:
        handler = StderrLines(threshold(verbose))
        LOGGER.addHandler(handler)
    handler.setLevel(threshold(verbose))
    LOGGER.setLevel(min(handler.level, logging.DEBUG))
    LOGGER.propagate = False  # the command line's lines are not also the root logger's
    return handler


def set_verbose(on: bool) -> None:
    """`--verbose`: also write the detail notes."""
    install_stderr(on)


def set_sink(sink: Sink | None) -> None:
    """Route every stderr line through `sink` (None restores plain stderr)."""
    handler = _handler() or install_stderr()
    handler.sink = sink or _stderr_sink


@dataclass(frozen=True, slots=True)
class Message:
    """A warning or note the core gave during one call, kept as data (`capture`)."""

    kind: str
    """`warning`, `note` or `detail` (a note only a curious user needs)."""
    text: str
    """The message without its `groove: kind:` prefix."""

    def __str__(self) -> str:
        return self.text


_captured: ContextVar[list[Message] | None] = ContextVar("groove_captured", default=None)


def _emit(level: int, line: str) -> None:
    """One line to the `groove` logger: printable (a note's ESC/BEL/NUL in a path must not
    reach a terminal) and masked (a Postgres URL's password never leaves)."""
    if LOGGER.isEnabledFor(level):
        LOGGER.log(level, "%s", mask(printable(line)))


def _kept(kind: str, message: str) -> bool:
    """Keep the message in the caller's capture list, if one is active in this context."""
    captured = _captured.get()
    if captured is None:
        return False
    captured.append(Message(kind, message))
    return True


@contextmanager
def capture() -> Iterator[list[Message]]:
    """Collect the warnings and notes given inside the block (in this thread and context)
    instead of writing them: the public API returns them with its result, per call, so a
    server or library caller gets each request's own. Should the block fail, what it
    collected is written after all, so a command's warnings still precede its error."""
    collected: list[Message] = []
    token = _captured.set(collected)
    try:
        yield collected
    except BaseException:
        _captured.reset(token)
        replay(collected)
        raise
    _captured.reset(token)


def replay(collected: list[Message] | tuple[Message, ...]) -> None:
    """Write messages kept by `capture` as they would have been written at the time."""
    writers = {"warning": warning, "note": note, "detail": detail}
    for message in collected:
        writers[message.kind](message.text)


def error(message: str) -> None:
    """`groove: error: {message}`."""
    _emit(logging.ERROR, f"groove: error: {message}")


def warning(message: str) -> None:
    """`groove: warning: {message}`."""
    if _kept("warning", message):
        return
    _emit(logging.WARNING, f"groove: warning: {message}")


def note(message: str) -> None:
    """`groove: note: {message}` at level info."""
    if _kept("note", message):
        return
    _emit(logging.INFO, f"groove: note: {message}")


def detail(message: str) -> None:
    """`groove: note: {message}` that only a curious user needs (which config file was loaded,
    what a report already shows): written with `--verbose` or GROOVE_LOG=debug."""
    if _kept("detail", message):
        return
    _emit(DETAIL, f"groove: note: {message}")


def detail_line(line: str) -> None:
    """An unprefixed line written only with `--verbose` or GROOVE_LOG=debug (tune's per-query
    progress, which a terminal shows as one bar instead)."""
    _emit(DETAIL, line)


def progress(line: str) -> None:
    """An unprefixed progress line at level info (index lines, tune progress, conversion)."""
    _emit(logging.INFO, line)


def debug(message: str) -> None:
    """`groove: debug: {message}`, only with GROOVE_LOG=debug."""
    _emit(logging.DEBUG, f"groove: debug: {message}")


def always(line: str) -> None:
    """A line written whatever the level (`--explain` output)."""
    _emit(ALWAYS, line)
