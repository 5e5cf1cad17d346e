"""Which files of the KB are indexed, and reading them safely (index.md §1, §6.1 step 6).

`collect_files` walks the KB without following symbolic links and applies the three exclusion
layers (always-excluded directories, `exclude_dirs`, `<kb>/.grooveignore`). `read_source` reads
one file through a handle opened without following links and re-checks it on the handle, so a
file swapped for a link between the walk and the read is still refused.
"""

from __future__ import annotations

import enum
import errno
import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from groove_cli.errors import GrooveError, UsageError

try:  # pathspec >= 1.0 names the gitwildmatch pattern class GitIgnoreSpecPattern
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern as _GitPattern
except ImportError:  # pragma: no cover - pathspec 0.12
    from pathspec.patterns.gitwildmatch import GitWildMatchPattern as _GitPattern

ALWAYS_EXCLUDED = (".git", ".svn", "node_modules")
"""Directory names skipped whatever `exclude_dirs` says (ASCII case-insensitive)."""

MAX_FILE_BYTES = 52428800
"""50 MiB: larger source files are skipped and keep their rows."""

IGNORE_FILE_NAME = ".grooveignore"
MAX_IGNORE_BYTES = 64 * 1024
MAX_IGNORE_PATTERNS = 1000

REFUSED_SYMLINK = "refused symbolic link"
REFUSED_HARD_LINK = "refused hard link"
NOT_REGULAR = "not a regular file"

_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_O_BINARY: int = getattr(os, "O_BINARY", 0)
_READ_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK | _O_BINARY
_DIR_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_DIRECTORY


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file selected for indexing: its KB-relative key ('/' separators) and `kb / rel`."""

    rel: str
    path: Path


@dataclass(frozen=True, slots=True)
class ScanResult:
    """The outcome of walking the KB."""

    files: tuple[SourceFile, ...]
    """Indexable files, sorted by `rel`."""
    refused: tuple[tuple[str, str], ...]
    """(rel, reason) for refused links and non-regular files; they count as not seen."""
    ignore_patterns: int | None
    """How many `.grooveignore` patterns were applied, or None when none was applied."""
    warnings: tuple[str, ...]
    """Warning texts (without the `groove: warning:` prefix) for the caller to print."""


class SkipKind(enum.Enum):
    """Why a file was not read, which decides what happens to its indexed rows."""

    REFUSED = "refused"
    """A link or non-regular file: counts as not seen, so an indexed document is deleted."""
    KEEP_ROWS = "keep_rows"
    """Too large or unreadable: skipped, and its indexed rows are kept."""


@dataclass(frozen=True, slots=True)
class SourceBytes:
    """A file read successfully: its raw bytes and their SHA-256 (lowercase hex)."""

    rel: str
    raw: bytes
    sha256: str
    mtime_ns: int = 0
    """The file's modification time when read (compared with `documents.last_indexed`)."""

    @property
    def size(self) -> int:
        """The number of bytes read (`documents.size_bytes`)."""
        return len(self.raw)


@dataclass(frozen=True, slots=True)
class SourceSkip:
    """A file not read: print `Skipping {rel}: {reason}`; `kind` says whether rows are kept."""

    rel: str
    reason: str
    kind: SkipKind

    @property
    def keeps_rows(self) -> bool:
        """True when the indexed document must be kept (size or read failure)."""
        return self.kind is SkipKind.KEEP_ROWS


ReadResult = SourceBytes | SourceSkip
"""What `read_source` returns: the bytes, or why the file was skipped."""


class SourceDecodeError(ValueError):
    """The bytes are not strict UTF-8; `str(error)` is the skip reason to print."""


# --- .grooveignore -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _IgnoreRules:
    patterns: tuple[tuple[re.Pattern[str], bool], ...]

    def excludes(self, rel: str) -> bool:
        """Whether the last pattern matching `rel` excludes it (directories end with '/')."""
        result = False
        for regex, include in self.patterns:
            if regex.search(rel) is not None:
                result = include
        return result


def _too_big(size: int) -> str:
    return f"it is {size} bytes, over the {MAX_IGNORE_BYTES}-byte limit"


def _read_ignore_file(kb: Path) -> tuple[_IgnoreRules | None, int | None, list[str]]:
    """(rules, pattern count, warnings) for `<kb>/.grooveignore`; rules are None when not applied.

    A file that is a link, not regular, over 64 KiB or 1000 patterns, or unreadable is ignored
    as a whole with one warning; a single pattern that does not parse is dropped with a warning.
    """
    path = kb / IGNORE_FILE_NAME

    def refuse(why: str) -> tuple[None, None, list[str]]:
        return None, None, [f"ignoring {path}: {why}"]

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None, None, []
    except OSError as exc:
        return refuse(f"cannot read it: {exc.strerror or exc}")
    if stat.S_ISLNK(info.st_mode):
        return refuse(REFUSED_SYMLINK)
    if not stat.S_ISREG(info.st_mode):
        return refuse(NOT_REGULAR)
    if info.st_nlink > 1:
        return refuse(REFUSED_HARD_LINK)
    if info.st_size > MAX_IGNORE_BYTES:
        return refuse(_too_big(info.st_size))
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return refuse(REFUSED_SYMLINK)
        return refuse(f"cannot read it: {exc.strerror or exc}")
    try:
        handle = os.fstat(fd)
        if not stat.S_ISREG(handle.st_mode):
            return refuse(NOT_REGULAR)
        if handle.st_nlink > 1:
            return refuse(REFUSED_HARD_LINK)
        raw = _read_at_most(fd, MAX_IGNORE_BYTES)
    except OSError as exc:
        return refuse(f"cannot read it: {exc.strerror or exc}")
    finally:
        os.close(fd)
    if len(raw) > MAX_IGNORE_BYTES:
        return refuse(_too_big(len(raw)))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return refuse(f"cannot read it: {_describe_decode_error(exc)}")

    lines = text.removeprefix("\ufeff").split("\n")
    patterns = [line.removesuffix("\r") for line in lines]
    patterns = [p for p in patterns if p.strip() and not p.startswith("#")]
    if len(patterns) > MAX_IGNORE_PATTERNS:
        return refuse(f"it has {len(patterns)} patterns, over the {MAX_IGNORE_PATTERNS} limit")
    compiled: list[tuple[re.Pattern[str], bool]] = []
    warnings: list[str] = []
    for line in patterns:
        try:
            pattern = _GitPattern(line)
        except (ValueError, re.error) as exc:
            # Git drops a pattern it cannot parse and keeps the others; so does groove.
            warnings.append(f"ignoring invalid pattern {line!r} in {path}: {exc}")
            continue
        if pattern.include is not None and pattern.regex is not None:
            compiled.append((re.compile(pattern.regex.pattern, re.IGNORECASE), pattern.include))
    return _IgnoreRules(tuple(compiled)), len(patterns) - len(warnings), warnings


# --- the walk ----------------------------------------------------------------------------------


def _ascii_lower(text: str) -> str:
    return text.lower() if text.isascii() else text


def _display(name: str) -> str:
    """A file name that may hold undecodable bytes, printable as text."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _extension(name: str) -> str:
    """The lowercase extension after the last '.', or '' (a leading '.' is not one)."""
    dot = name.rfind(".")
    return name[dot + 1 :].lower() if dot > 0 else ""


@dataclass(frozen=True, slots=True)
class Selection:
    """The rules that pick a KB's notes, shared by the walk and by a server checking one path:
    a folder is entered unless always excluded, hidden (without `hidden_dirs`), named in
    `exclude_dirs` or ignored; a file is taken when its extension is enabled and it is not
    ignored. Links are never followed and only single-link regular files are notes."""

    kb: Path
    extensions: frozenset[str]
    excluded_names: frozenset[str]
    hidden_dirs: bool
    rules: _IgnoreRules | None
    ignore_patterns: int | None
    warnings: tuple[str, ...]

    @classmethod
    def of(cls, kb: Path, *, exclude_dirs: Sequence[str], extensions: Sequence[str],
           hidden_dirs: bool = False) -> Selection:
        """The selection for `kb` (reads `<kb>/.grooveignore` once)."""
        rules, pattern_count, warnings = _read_ignore_file(kb)
        return cls(kb, frozenset(ext.lower().lstrip(".") for ext in extensions),
                   frozenset(name.casefold() for name in exclude_dirs), hidden_dirs, rules,
                   pattern_count if rules is not None else None, tuple(warnings))

    def enters(self, name: str, rel: str) -> bool:
        """Whether the walk enters folder `name` at KB-relative `rel` (no trailing '/')."""
        return not (
            _ascii_lower(name) in ALWAYS_EXCLUDED
            or (name.startswith(".") and not self.hidden_dirs)
            or name.casefold() in self.excluded_names
            or self._ignored(rel + "/")
        )

    def takes(self, name: str, rel: str) -> bool:
        """Whether file `name` at KB-relative `rel` is a note by name (its type and ignore rules)."""
        return _extension(name) in self.extensions and not self._ignored(rel)

    def _ignored(self, rel: str) -> bool:
        return self.rules is not None and self.rules.excludes(rel)

    def note(self, rel: str) -> Path:
        """The note file at KB-relative `rel`, exactly as the walk would select it; GrooveError
        naming why not (outside the KB, excluded, a link, not a note type, missing)."""
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in rel:
            raise UsageError(f"{_shown(rel)}: not a path inside the KB",
                              "use the KB-relative path a search hit shows")
        path = self.kb
        for i, part in enumerate(parts):
            path = path / part
            here = "/".join(parts[: i + 1])
            last = i == len(parts) - 1
            if not (self.takes(part, here) if last else self.enters(part, here)):
                raise GrooveError(f"{_shown(rel)}: not a note of this KB",
                                  "excluded folders, ignored files and other file types are not served")
            try:
                info = os.lstat(path)
            except OSError:
                raise GrooveError(f"no such note: {_shown(rel)}") from None
            if stat.S_ISLNK(info.st_mode):
                raise GrooveError(f"{_shown(rel)}: {REFUSED_SYMLINK}")
            if not last and not stat.S_ISDIR(info.st_mode):
                raise GrooveError(f"no such note: {_shown(rel)}")
        if not stat.S_ISREG(info.st_mode):
            raise GrooveError(f"{_shown(rel)}: {NOT_REGULAR}")
        if info.st_nlink > 1:
            raise GrooveError(f"{_shown(rel)}: {REFUSED_HARD_LINK}")
        return path


SHOWN_CHARS = 120
"""How much of a path an error message repeats."""


def _shown(rel: str) -> str:
    """`rel` for a message: control characters escaped, long paths cut in the middle."""
    text = rel.encode("unicode_escape").decode("ascii") if not rel.isprintable() else rel
    if len(text) <= SHOWN_CHARS:
        return text
    half = SHOWN_CHARS // 2
    return f"{text[:half]}…{text[-half:]}"


def collect_files(
    kb: Path, *, exclude_dirs: Sequence[str], extensions: Sequence[str], hidden_dirs: bool = False
) -> ScanResult:
    """Walk `kb` without following links and select the files to index (index.md §1).

    Args:
        kb: The KB root.
        exclude_dirs: Directory basenames to skip, compared with `str.casefold`.
        extensions: Enabled parser ids (`md`, `txt`), case-insensitive; a leading '.' is allowed.
        hidden_dirs: Also walk folders whose name starts with `.` (`.github`, `.claude`): tool
            and editor state, not notes, unless the user says so (`index_hidden_dirs`).

    Returns:
        The files sorted by KB-relative path, the refused links, the `.grooveignore` pattern
        count and the warnings to print. Symbolic links, hard links and non-regular files with
        an enabled extension are refused; other links are simply not followed. File size is
        not checked here (`read_source` does it).

    Raises:
        GrooveError: when the KB root itself cannot be listed.
    """
    return walk(Selection.of(kb, exclude_dirs=exclude_dirs, extensions=extensions,
                             hidden_dirs=hidden_dirs))


def walk(selection: Selection) -> ScanResult:
    """`collect_files` with the selection already read (a server checks paths and lists notes
    with one)."""
    kb = selection.kb
    warnings = list(selection.warnings)
    files: list[SourceFile] = []
    refused: list[tuple[str, str]] = []
    pending: list[tuple[Path, str]] = [(kb, "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            if not prefix:
                raise GrooveError(
                    f"cannot read the knowledge base {kb}: {exc.strerror or exc}",
                    "check that --kb-path names a readable folder",
                ) from None
            warnings.append(f"cannot read directory {prefix.rstrip('/')}: {exc.strerror or exc}")
            continue
        for entry in entries:
            rel = prefix + entry.name
            if not _is_utf8(entry.name):
                warnings.append(f"Skipping {_display(rel)}: file name is not valid UTF-8")
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if selection.enters(entry.name, rel):
                        pending.append((Path(entry.path), rel + "/"))
                    continue
                if not selection.takes(entry.name, rel):
                    continue
                info = os.lstat(entry.path)
            except OSError as exc:
                warnings.append(f"cannot read {rel}: {exc.strerror or exc}")
                continue
            if stat.S_ISLNK(info.st_mode):
                refused.append((rel, REFUSED_SYMLINK))
            elif not stat.S_ISREG(info.st_mode):
                refused.append((rel, NOT_REGULAR))
            elif info.st_nlink > 1:
                refused.append((rel, REFUSED_HARD_LINK))
            else:
                files.append(SourceFile(rel=rel, path=Path(entry.path)))
    files.sort(key=lambda source: source.rel)
    refused.sort()
    return ScanResult(
        files=tuple(files),
        refused=tuple(refused),
        ignore_patterns=selection.ignore_patterns,
        warnings=tuple(warnings),
    )


# --- reading one file --------------------------------------------------------------------------


def _too_large(size: int) -> str:
    return f"text file too large ({size} bytes > {MAX_FILE_BYTES} limit)"


def _read_at_most(fd: int, limit: int) -> bytes:
    """Read until EOF or until more than `limit` bytes were read (so growth is noticed)."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        block = os.read(fd, min(1 << 20, limit + 1 - total))
        if not block:
            break
        chunks.append(block)
        total += len(block)
    return b"".join(chunks)


def _open_no_follow(file: SourceFile) -> int:
    """Open `file` read-only without following a link in any component below the KB root.

    Where `dir_fd` is supported, each directory of `rel` is opened with O_NOFOLLOW relative to
    its parent; otherwise only the last component is protected.
    """
    parts = file.rel.split("/")
    if (
        os.open not in os.supports_dir_fd
        or not _O_NOFOLLOW
        or not _O_DIRECTORY
        or file.path.parts[-len(parts) :] != tuple(parts)
    ):
        return os.open(file.path, _READ_FLAGS)
    root = file.path
    for _ in parts:
        root = root.parent
    directory = os.open(root, os.O_RDONLY | _O_CLOEXEC | _O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=directory)
            except OSError:
                # Linux answers ENOTDIR, not ELOOP, for a linked directory: tell them apart.
                info = os.stat(part, dir_fd=directory, follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), part) from None
                raise
            os.close(directory)
            directory = child
        return os.open(parts[-1], _READ_FLAGS, dir_fd=directory)
    finally:
        os.close(directory)


def _check(info: os.stat_result) -> tuple[str, SkipKind] | None:
    """The skip reason for a file with this status, or None when it may be read."""
    if stat.S_ISLNK(info.st_mode):
        return REFUSED_SYMLINK, SkipKind.REFUSED
    if not stat.S_ISREG(info.st_mode):
        return NOT_REGULAR, SkipKind.REFUSED
    if info.st_nlink > 1:
        return REFUSED_HARD_LINK, SkipKind.REFUSED
    if info.st_size > MAX_FILE_BYTES:
        return _too_large(info.st_size), SkipKind.KEEP_ROWS
    return None


def read_source(file: SourceFile) -> ReadResult:
    """Read one selected file's raw bytes and SHA-256 (index.md §6.1 step 6).

    The size and link checks run on `lstat` before opening and again on the open handle; a
    link found there is refused (counts as not seen), a size or read failure keeps the rows.
    """
    rel = file.rel

    def skip(reason: str, kind: SkipKind) -> SourceSkip:
        return SourceSkip(rel=rel, reason=reason, kind=kind)

    def failed(exc: OSError) -> SourceSkip:
        return skip(f"failed to read: {exc.strerror or exc}", SkipKind.KEEP_ROWS)

    try:
        problem = _check(os.lstat(file.path))
    except OSError as exc:
        return failed(exc)
    if problem is not None:
        return skip(*problem)
    try:
        fd = _open_no_follow(file)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return skip(REFUSED_SYMLINK, SkipKind.REFUSED)
        return failed(exc)
    try:
        opened = os.fstat(fd)
        problem = _check(opened)
        if problem is not None:
            return skip(*problem)
        raw = _read_at_most(fd, MAX_FILE_BYTES)
        if len(raw) > MAX_FILE_BYTES:
            return skip(_too_large(max(len(raw), os.fstat(fd).st_size)), SkipKind.KEEP_ROWS)
    except OSError as exc:
        return failed(exc)
    finally:
        os.close(fd)
    return SourceBytes(rel=rel, raw=raw, sha256=hashlib.sha256(raw).hexdigest(),
                       mtime_ns=opened.st_mtime_ns)


def _describe_decode_error(exc: UnicodeDecodeError) -> str:
    return f"not valid UTF-8 ({exc.reason} at byte {exc.start})"


def decode_source(raw: bytes) -> str:
    """Decode a source file as strict UTF-8 (a BOM stays as U+FEFF; the parser drops it).

    Raises:
        SourceDecodeError: naming the first bad byte; print it as `Skipping {rel}: {error}`.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceDecodeError(_describe_decode_error(exc)) from None
