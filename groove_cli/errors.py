"""One error family: the core raises these, the CLI prints them and picks the exit code.

Every message names the bad value; `hint` names what to do next.
"""

from __future__ import annotations


class GrooveError(Exception):
    """A user-facing failure: printed as `groove: error: {message}` (+ hint), exit 1."""

    exit_code: int = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(GrooveError):
    """Bad command-line input (unknown value, out of range, empty query): exit 2."""

    exit_code = 2


class ConfigError(GrooveError):
    """groove.toml is invalid or missing (exit 1)."""


class ModelError(GrooveError):
    """A model cannot be resolved, converted or loaded (exit 1)."""


class IndexMissing(GrooveError):
    """No index file where one is needed (exit 1)."""


class IndexMismatch(GrooveError):
    """The index was built with another model, dimension, max_length or KB path (exit 1)."""


class IndexReadError(GrooveError):
    """A read of the index failed (the store's own error, e.g. SQLite's, as its message)."""


class GoldenError(GrooveError):
    """The golden file is missing or invalid (exit 1)."""


class TuneNotApplicable(GrooveError):
    """No golden query is sensitive to the fusion knobs (exit 2)."""

    exit_code = 2


class Interrupted(GrooveError):
    """Ctrl-C during a long run; the index is left valid (exit 130)."""

    exit_code = 130
