"""stderr messages with groove's prefixes and the GROOVE_LOG level filter.

The core reports through these functions and never imports rich; the CLI may swap the sink
(for example to draw a progress bar around the lines). cli.md §2 defines the contract:
`groove: error: …`, `groove: warning: …`, `groove: note: …`, and unprefixed progress lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from groove_cli.dburl import mask
from groove_cli.text import printable

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}

Sink = Callable[[str], None]


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


def error(message: str) -> None:
    """`groove: error: {message}`."""
    _emit("error", f"groove: error: {message}")


def warning(message: str) -> None:
    """`groove: warning: {message}`."""
    _emit("warning", f"groove: warning: {message}")


def note(message: str) -> None:
    """`groove: note: {message}` at level info."""
    _emit("info", f"groove: note: {message}")


def detail(message: str) -> None:
    """`groove: note: {message}` that only a curious user needs (which config file was loaded,
    what a report already shows): written with `--verbose` or GROOVE_LOG=debug."""
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
