"""stderr messages with groove's prefixes and the GROOVE_LOG level filter.

The core reports through these functions and never imports rich; the CLI may swap the sink
(for example to draw a progress bar around the lines). cli.md §2 defines the contract:
`groove: error: …`, `groove: warning: …`, `groove: note: …`, and unprefixed progress lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from groove_cli.dburl import mask
from groove_cli.text import printable

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}

Sink = Callable[[str], None]


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


def _stderr_sink(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


_out: Sink = _stderr_sink


def _sink(line: str) -> None:
    """Every line goes out here: a Postgres URL's password never reaches the terminal."""
    _out(mask(line))
_verbose = False


def set_verbose(on: bool) -> None:
    """`--verbose`: also write the `detail` notes."""
    global _verbose
    _verbose = on


def set_sink(sink: Sink | None) -> None:
    """Route every stderr line through `sink` (None restores plain stderr)."""
    global _out
    _out = sink or _stderr_sink


def threshold() -> int:
    """The minimum level written, from GROOVE_LOG (default info; unknown values mean info)."""
    return LEVELS.get(os.environ.get("GROOVE_LOG", "info").strip().lower(), LEVELS["info"])


def _emit(level: str, text: str) -> None:
    if LEVELS[level] >= threshold():
        _sink(printable(text))  # a note's ESC/BEL/NUL in a path must not reach the terminal


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
    _emit("error", f"groove: error: {message}")


def warning(message: str) -> None:
    """`groove: warning: {message}`."""
    if _kept("warning", message):
        return
    _emit("warning", f"groove: warning: {message}")


def note(message: str) -> None:
    """`groove: note: {message}` at level info."""
    if _kept("note", message):
        return
    _emit("info", f"groove: note: {message}")


def detail(message: str) -> None:
    """`groove: note: {message}` that only a curious user needs (which config file was loaded,
    what a report already shows): written with `--verbose` or GROOVE_LOG=debug."""
    if _kept("detail", message):
        return
    if _verbose or threshold() <= LEVELS["debug"]:
        _sink(f"groove: note: {message}")


def detail_line(line: str) -> None:
    """An unprefixed line written only with `--verbose` or GROOVE_LOG=debug (tune's per-query
    progress, which a terminal shows as one bar instead)."""
    if _verbose or threshold() <= LEVELS["debug"]:
        _sink(line)


def progress(line: str) -> None:
    """An unprefixed progress line at level info (index lines, tune progress, conversion)."""
    _emit("info", line)


def debug(message: str) -> None:
    """`groove: debug: {message}`, only with GROOVE_LOG=debug."""
    _emit("debug", f"groove: debug: {message}")


def always(line: str) -> None:
    """A line written whatever the level (`--explain` output)."""
    _sink(printable(line))
