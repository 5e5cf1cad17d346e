"""No tracked file names a folder of one developer's machine (issue 39).

Every file `git ls-files` lists is read as UTF-8 text (binary files, those with a NUL byte or
that do not decode, are skipped; so are tracked files missing from the working tree) and each
line is searched for an absolute path that only exists on some machine:

- a home folder: `/home/NAME`, `/Users/NAME` (macOS), `C:\\Users\\` or `C:/Users/` (Windows,
  any drive letter, JSON-escaped too), and `/root/…`;
- the project folders of the machines groove is developed on: `/work/…` and `/opt/…`, and a
  home-relative `~/work`.

Such a path counts only where it starts a path: at the start of the line or after a space, a
quote, a bracket, `=`, `:` or `,` (or after `file://`), so `bench/work/…` (a folder inside the
checkout) and `https://host/home/…` (part of a URL) are not paths of a machine.

Not flagged, on purpose: the system locations every Unix machine has (`/tmp`, `/dev/null`,
`/etc/passwd`, `/proc`, `/var`, `/usr`), which tests and docs name as such; home-relative
placeholders such as `~/notes` and `~/.config/groove`; and obvious placeholders such as
`/path/to/notes`. Benchmarks take their data folders from environment variables
(bench/README.md) instead of naming them.

`ALLOWED` lists the few exact strings a file may keep, each with its reason. This file is not
scanned: its docstring and its checks of the rule name such paths on purpose.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

SELF = "tests/test_no_machine_paths.py"
_START = r"(?:^|(?<=[\s\"'`(\[{<=:,;|])|(?<=file://))"
"""Where an absolute path can begin: not inside a relative path, a word or a URL."""
_NAME = r"[\w.@-]+"
_PATTERNS = (
    _START + r"/home/" + _NAME,
    _START + r"/Users/" + _NAME,
    _START + r"/root/\S",
    _START + r"/work/\S",
    _START + r"/opt/\S",
    r"\b[A-Za-z]:(?:\\\\|\\|/)Users(?:\\\\|\\|/)",
    r"(?:^|(?<=[\s\"'`(\[{<=:,;|]))~/work\b",
)
_REST = r"[^\s\"'`)\]}>,;]*"
"""The rest of the path, so that a failure shows it whole."""
MACHINE_PATH = re.compile("(?:" + "|".join(f"(?:{p})" for p in _PATTERNS) + ")" + _REST)

ALLOWED: dict[str, tuple[str, ...]] = {}
"""Strings a tracked file may hold although they look like a machine's path, by file (none
today: a test input uses a placeholder such as `/path/to/my notes`)."""


def machine_paths(line: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """The machine paths in one line, after removing the `allowed` strings."""
    for text in allowed:
        line = line.replace(text, " ")
    return [m.group(0) for m in MACHINE_PATH.finditer(line)]


def tracked_files() -> list[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if proc.returncode != 0:
        pytest.skip("not a git checkout")
    return [name for name in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a text file; nothing for a binary or undecodable one."""
    data = path.read_bytes()
    if b"\0" in data:
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    yield from enumerate(text.splitlines(), 1)


def test_no_tracked_file_names_a_folder_of_a_developer_machine() -> None:
    found: list[str] = []
    for name in tracked_files():
        path = REPO / name
        if name == SELF or not path.is_file() or path.is_symlink():
            continue
        allowed = ALLOWED.get(name, ())
        for number, line in text_lines(path):
            found += [f"{name}:{number}: {hit}" for hit in machine_paths(line, allowed)]
    assert not found, ("absolute paths of a developer machine in tracked files (use an "
                       "environment variable, a relative path or a placeholder such as "
                       "~/notes or /path/to/notes):\n" + "\n".join(found))


@pytest.mark.parametrize("line", [
    'DATASETS = Path("/work/shared/datasets")',
    "MIRRORS ?= /work/.mirror",
    '"args": ["mcp", "/home/me/notes"]',
    "cd /Users/alice/src",
    "--vectors-from /work/main/bench/work",
    "groove kb add ~/work/handbook",
    "HOME=/root/x",
    "file:///home/bob/notes",
    r'path = "C:\\Users\\bob"',
    r"C:\Users\bob\notes",
    "see D:/Users/bob",
    "x(/opt/tools/bin)",
])
def test_the_rule_finds_a_planted_path(line: str) -> None:
    assert machine_paths(line)


@pytest.mark.parametrize("line", [
    "open('/etc/passwd')", "> /dev/null 2>&1", "--db /tmp/a:b.db", "bench/work/suite",
    "https://example.com/home/page", "groove kb add ~/notes", "~/.config/groove/collections.toml",
    "\"args\": [\"mcp\", \"/path/to/notes\"]", "$GROOVE_DATASETS/cisi", "a/home/b",
    "~/workspace/notes",
])
def test_the_rule_leaves_system_and_relative_paths(line: str) -> None:
    assert machine_paths(line) == []


def test_allowed_strings_are_removed_before_the_scan() -> None:
    text = "/" + "home/me/my notes"  # built in two pieces: this file is scanned too
    assert machine_paths(f"rebuild_command(\"{text}\")") != []
    assert machine_paths(f"rebuild_command(\"{text}\")", (text,)) == []
