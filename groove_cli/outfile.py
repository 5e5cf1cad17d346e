"""The one writer of every file a user names for output (cli.md §2, output files).

`--trec-run`, `--save-baseline` and `$GITHUB_STEP_SUMMARY` all go through `write_output`, so
they share one rule about what is at the path:

- nothing, or a regular file: written to a temporary file in the same folder, flushed, then
  renamed over the path (never half-written; a summary is appended to instead);
- `-`, `/dev/stdout`, `/dev/stderr`: groove's own stream;
- a FIFO or a character device (also through a symbolic link, as `/dev/fd/N` is): written as a
  stream, never replaced; a FIFO with no reader is not waited for when `wait` is False;
- a symbolic link to anything else, a folder, a block device or a socket: refused with one line
  (a usage error), since replacing it would write somewhere other than the path named.

`replace_file` is the atomic replacement itself, shared with `tune --write`'s config edit.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Literal

from groove_cli.errors import GrooveError, UsageError
from groove_cli.text import printable

Kind = Literal["stdout", "stderr", "new", "regular", "stream"]
_STD = {"-": "stdout", "/dev/stdout": "stdout", "/dev/stderr": "stderr"}


def _shown(path: object) -> str:
    """A path in a message: on one line, control characters escaped."""
    return printable(str(path), keep_newlines=False)


def output_kind(path: Path | str, flag: str) -> Kind:
    """What `path` is as an output target.

    Raises:
        UsageError: a folder, a symbolic link to a regular file (or to nothing), a block
            device or a socket, or a missing parent folder; one line naming `flag` and `path`.
    """
    text = str(path)
    if text in _STD:
        return "stdout" if _STD[text] == "stdout" else "stderr"
    try:
        info = os.lstat(text)
    except FileNotFoundError:
        parent = Path(text).parent
        if not parent.is_dir():
            raise UsageError(f"{flag} {_shown(text)}: the folder {_shown(parent)} does not exist",
                             hint="create the folder first, or name a file in an existing one"
                             ) from None
        return "new"
    except OSError as exc:
        raise GrooveError(f"cannot use {flag} {_shown(text)}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.stat(text)
        except OSError:
            target = None
        if target is not None and (stat.S_ISFIFO(target.st_mode) or stat.S_ISCHR(target.st_mode)):
            return "stream"
        raise UsageError(f"{flag} {_shown(text)} is a symbolic link (to {_shown(os.readlink(text))}); "
                         "groove "
                         "does not replace a link", hint="name the file it points to instead")
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{flag} {_shown(text)} is a folder, not a file",
                         hint="name a file inside it, e.g. " + _shown(Path(text) / "run.txt"))
    if stat.S_ISREG(info.st_mode):
        return "regular"
    if stat.S_ISFIFO(info.st_mode) or stat.S_ISCHR(info.st_mode):
        return "stream"
    raise UsageError(f"{flag} {_shown(text)} is a block device or socket; groove writes only regular "
                     "files, FIFOs and character devices")


def write_output(path: Path | str, data: bytes, *, flag: str, what: str,
                 append: bool = False, wait: bool = True) -> None:
    """Write `data` to the output `path` by the rule of the module docstring.

    `append` adds to a regular file instead of replacing it (the step summary); `wait=False`
    makes a FIFO that no process reads an error instead of a hang.

    Raises:
        UsageError: see `output_kind`.
        GrooveError: the write failed (permissions, full disk, no reader), naming the path.
    """
    kind = output_kind(path, flag)
    if kind in ("stdout", "stderr"):
        stream = sys.stdout if kind == "stdout" else sys.stderr
        stream.flush()
        stream.write(data.decode("utf-8"))
        stream.flush()
        return
    if kind == "stream":
        _write_stream(str(path), data, what=what, wait=wait)
    elif append:
        _append(Path(path), data, what=what)
    else:
        target = Path(path)
        info = target.stat() if kind == "regular" else None
        mode = stat.S_IMODE(info.st_mode) if info else 0o666 & ~umask()
        replace_file(target, data, mode, None, what=what)


def _write_stream(path: str, data: bytes, *, what: str, wait: bool) -> None:
    flags = os.O_WRONLY | (0 if wait else os.O_NONBLOCK)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise GrooveError(f"cannot write {what} {_shown(path)}: it is a FIFO that no process is "
                              "reading") from None
        raise GrooveError(f"cannot write {what} {_shown(path)}: {exc.strerror or exc}") from None
    try:
        if not wait:  # the reader is there: write blocking from now on, all of it
            os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
    except OSError as exc:
        raise GrooveError(f"cannot write {what} {_shown(path)}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _append(path: Path, data: bytes, *, what: str) -> None:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
        with os.fdopen(fd, "ab") as handle:
            handle.write(data)
    except OSError as exc:
        raise GrooveError(f"cannot write {what} {_shown(path)}: {exc.strerror or exc}") from None


def umask() -> int:
    """The process's umask (read by setting and restoring it)."""
    current = os.umask(0)
    os.umask(current)
    return current


def replace_file(target: Path, data: bytes, mode: int, owner: tuple[int, int] | None, *,
                 what: str = "") -> None:
    """Write `data` to a temporary file next to `target`, flush it to disk, then rename it over
    `target`; the new file gets `mode` and, when given and possible, the old file's `owner`
    (uid, gid). When the owner cannot be kept (another user's file), the file is rewritten in
    place. A failure leaves `target` as it was and raises a GrooveError naming it."""
    label = f"{what} {_shown(target)}" if what else _shown(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise GrooveError(f"cannot write {label}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if owner is not None and (os.stat(tmp).st_uid, os.stat(tmp).st_gid) != owner:
            try:
                os.chown(tmp, *owner)
            except PermissionError:
                os.unlink(tmp)
                _rewrite_in_place(target, data)
                return
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise GrooveError(f"cannot write {label}: {exc.strerror or exc}") from None


def _rewrite_in_place(target: Path, data: bytes) -> None:
    """Overwrite `target`'s content, keeping its inode (owner, mode, links)."""
    with open(target, "r+b") as handle:
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())
