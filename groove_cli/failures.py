"""Expected failures of the environment (full disk, read-only storage, a file that is not an
index, a closed or full stdout) turned into GrooveErrors, and the one place that prints them.

The core raises GrooveError for bad input it detects itself; this module covers what the
operating system or SQLite reports while groove works, so that no such failure ever reaches
the user as a traceback (cli.md §2: `groove: error: {message}`, the documented exit code).
Programming errors are not translated: they must stay visible.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from groove_cli import messages
from groove_cli.dbfile import damage_error
from groove_cli.errors import GrooveError

SQLITE_HEADER = b"SQLite format 3\x00"

_DISK_FULL_HINT = ("free some disk space and run the command again; the index keeps every change "
                   "committed before the disk filled up")
_READ_ONLY_HINT = "make the file and its folder writable, or pass --db a writable location"


class ReaderGone(GrooveError):
    """stdout's reader closed the pipe (`groove search … | head -1`): the reader took what it
    wanted, so nothing is printed and the exit code is 0 (as for `seq 1000 | head`), and a
    script under `set -o pipefail` goes on. A failing eval gate still exits 1: cli_eval.py
    checks the gate when its report's reader is gone."""

    exit_code = 0

    def __init__(self) -> None:
        super().__init__("the reader of the output closed the pipe")


def report(exc: GrooveError) -> int:
    """Write `exc` as `groove: error: …` (+ hint) on stderr; return its exit code."""
    if isinstance(exc, ReaderGone):
        return exc.exit_code
    messages.error(exc.message)
    if exc.hint:
        messages.always(f"groove: hint: {exc.hint}")
    return exc.exit_code


def _os_error(exc: OSError) -> GrooveError:
    where = f" ({exc.filename})" if exc.filename else ""
    reason = exc.strerror or str(exc)
    # numpy's tofile reports a short write as "N requested and M written", without errno
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) or (exc.errno is None and " requested and "
                                                      in reason and reason.endswith(" written")):
        return GrooveError(f"the disk is full{where}: {reason}", hint=_DISK_FULL_HINT)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return GrooveError(f"cannot use{where}: {reason}",
                           hint="check the permissions of that file and its folder, or whether "
                                "the storage is mounted read-only")
    if exc.errno == errno.EISDIR:
        return GrooveError(f"a folder is in the way{where}: {reason}",
                           hint="remove or rename that folder, or pass --db another path")
    return GrooveError(f"input/output error{where}: {reason}")


def _sqlite_error(exc: Exception) -> GrooveError | None:
    import apsw

    text = str(exc).split(": ", 1)[-1] if ": " in str(exc) else str(exc)
    if isinstance(exc, apsw.FullError):
        return GrooveError(f"the disk is full: {text}", hint=_DISK_FULL_HINT)
    if isinstance(exc, apsw.ReadOnlyError):
        return GrooveError(f"the index cannot be written: {text}", hint=_READ_ONLY_HINT)
    if isinstance(exc, apsw.NotADBError | apsw.CorruptError):
        return GrooveError(f"the index file is not a usable SQLite database: {text}",
                           hint="pass --db a groove index, or move the file away and run "
                                "`groove index` to build a new one")
    if isinstance(exc, apsw.CantOpenError | apsw.IOError | apsw.BusyError | apsw.LockedError):
        return GrooveError(f"cannot use the index: {text}")
    return None


DASH_QUERY_HINT = ('a query that starts with "-" goes after --, e.g. '
                   '`groove search -- "-draft notes"`')


def _is_click_usage_error(exc: BaseException) -> bool:
    """click's UsageError family (typer vendors its own click, so it is recognised by shape);
    the no-arguments case keeps click's help screen."""
    return (getattr(exc, "exit_code", None) == 2 and hasattr(exc, "format_message")
            and type(exc).__name__ != "NoArgsIsHelpError")


def usage_error(exc: Any) -> GrooveError:
    """A click usage error (unknown option, bad value) as a groove usage error (exit 2)."""
    from groove_cli.errors import UsageError

    command = exc.ctx.command_path if getattr(exc, "ctx", None) is not None else "groove"
    hint = f"see `{command} --help`"
    option = str(getattr(exc, "option_name", "") or "")
    if (type(exc).__name__ == "NoSuchOption" and command.endswith(" search")
            and not option.startswith("--")):
        hint = DASH_QUERY_HINT
    return UsageError(exc.format_message(), hint)


def translate(exc: BaseException) -> GrooveError | None:
    """The GrooveError a user should see for `exc`, or None when `exc` is a bug."""
    if isinstance(exc, GrooveError):
        return exc
    if _is_click_usage_error(exc):
        return usage_error(exc)
    damaged = damage_error(exc)
    if damaged is not None:  # a damaged index: its error names the way out (`index --force`)
        return damaged
    if isinstance(exc, BrokenPipeError):  # written past the guard (click's --help): as guarded
        discard(sys.__stdout__)
        return ReaderGone()
    if isinstance(exc, OSError):
        return _os_error(exc)
    if type(exc).__module__ == "apsw" and isinstance(exc, Exception):
        return _sqlite_error(exc)
    if type(exc).__module__.startswith("psycopg") and isinstance(exc, Exception):
        return _postgres_error(exc)
    return None


def _postgres_error(exc: Exception) -> GrooveError:
    """A Postgres store failure as one line (the server's first line, passwords masked)."""
    from groove_cli.dburl import mask

    lines = str(exc).strip().splitlines()
    return GrooveError(f"the Postgres store failed: {mask(lines[0]) if lines else type(exc).__name__}",
                       hint="groove doctor checks the store; the server log has the details")


class ClosedStream:
    """Stands in for a closed stdout (`groove search … >&-`): writing says so."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        """Nothing is buffered."""

    def isatty(self) -> bool:
        return False


def discard(stream: Any) -> None:
    """After stdout failed, point its descriptor at /dev/null so the interpreter's own flush at
    exit neither fails again nor prints an `Exception ignored` trace."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


class GuardedOutput:
    """stdout as the commands see it: a failed write (disk full, closed descriptor, broken
    pipe) becomes one GrooveError instead of an OSError from deep inside a renderer."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _failed(self, exc: OSError) -> GrooveError:
        discard(self._stream)
        if exc.errno == errno.EPIPE:
            return ReaderGone()
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            hint = "free some disk space or send the output elsewhere"
        elif exc.errno == errno.EBADF:
            hint = "standard output is closed (>&-); send it to a file, a pipe or /dev/null"
        else:
            hint = "send the output elsewhere"
        return GrooveError(f"cannot write the output: {exc.strerror or exc}", hint=hint)

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError as exc:
            raise self._failed(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._failed(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def guarded_stdout() -> Iterator[None]:
    """Run a command with stdout guarded, flushing it before leaving (not at exit)."""
    original = sys.stdout
    guarded = GuardedOutput(original if original is not None else ClosedStream())
    sys.stdout = guarded
    try:
        yield
    except BaseException:  # also after typer.Exit (doctor findings, the eval gate): their
        try:               # report is output, and a reader gone early keeps their exit code
            guarded.flush()
        except ReaderGone:
            pass
        finally:
            sys.stdout = original
        raise
    try:
        guarded.flush()
    finally:
        sys.stdout = original


def check_index_file(path: Path, *, kb_hint: str = "<path>", allow_empty: bool = False,
                     damaged_ok: bool = False) -> None:
    """Refuse an index path that cannot be an index: a folder, a file that is not an SQLite
    database (never set aside, even by `index --force`: it may be the user's own file), and
    (unless `allow_empty`, as when `index` is about to create it) an empty file. `damaged_ok`
    lets a damaged SQLite file through for `index --force` to set aside.

    Raises:
        GrooveError: naming the path and what to do.
    """
    if path.is_dir():
        raise GrooveError(f"--db {path} is a folder, not an index file",
                          hint="pass --db the path of a file, e.g. <folder>/index.db")
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise GrooveError(f"cannot read the index at {path}: {exc.strerror or exc}") from None
    if not head:
        if allow_empty:
            return
        raise GrooveError(f"the index at {path} is an empty file (0 bytes), not an index",
                          hint=f"delete it and run `groove index --kb-path {kb_hint}`")
    if head != SQLITE_HEADER:
        raise GrooveError(f"{path} is not an SQLite database, so not a groove index; groove "
                          "leaves it as it is",
                          hint="pass --db a new file name or a groove index (if it was this KB's "
                               "index, delete it and run `groove index`)")
