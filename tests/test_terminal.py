"""Terminal output: colour, highlighted matches and links on a TTY (driven through a real pty),
plain text when piped or with NO_COLOR; control characters escaped; quiet stderr."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from groove_cli.text import printable
from tests.test_search_cli import _copy_index, groove

ESC = "\x1b"


@pytest.fixture(scope="module")
def config_file(real_models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "groove.toml"
    path.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n", encoding="utf-8")
    return path


def _command(config: Path, db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "groove_cli", "--config", str(config), "--db", str(db),
            "search", *args]


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "GROOVE_LOG")}
    env.update(extra, COLUMNS="200", TERM="xterm-256color")
    return env


def run_on_pty(command: list[str], env: dict[str, str]) -> str:
    """stdout of `command` when stdout is a terminal (a pseudo-terminal we read back)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=120) == 0
    finally:
        os.close(leader)
    return b"".join(chunks).decode("utf-8")


ARGS = ("retry budget", "--mode", "fts", "--limit", "2", "--format", "text")


def test_tty_gets_colour_highlighting_and_links(golden_index: tuple[Path, Path],
                                                config_file: Path, workdir: Path) -> None:
    kb, db = golden_index
    shown = run_on_pty(_command(config_file, db, *ARGS), _environment())
    assert f"{ESC}[" in shown  # SGR colour
    assert f"{ESC}]8;" in shown  # OSC-8 hyperlink
    assert (kb / "reliability" / "retry-budgets.md").resolve().as_uri() in shown
    # the match spans in the content are highlighted (bold red), the rest of it is not
    assert f"A {ESC}[1;31mretry{ESC}[0m is only sent" in shown
    assert f"under the {ESC}[1;31mbudget{ESC}[0m, 10 %" in shown


def test_piped_and_no_color_output_is_plain(golden_index: tuple[Path, Path],
                                            config_file: Path, workdir: Path) -> None:
    db = golden_index[1]
    piped = subprocess.run(_command(config_file, db, *ARGS), capture_output=True, text=True,
                           env=_environment(), check=True)
    assert ESC not in piped.stdout and piped.stdout.startswith("[weak match")
    no_color = run_on_pty(_command(config_file, db, *ARGS), _environment(NO_COLOR="1"))
    assert ESC not in no_color
    assert no_color.replace("\r\n", "\n") == piped.stdout


def test_search_prints_nothing_on_stderr(golden_index: tuple[Path, Path], config_file: Path,
                                         workdir: Path) -> None:
    # no "no config file" / "loaded config" note unless --verbose (hybrid: on a copy, as the
    # query cache is written)
    db = _copy_index(golden_index[1], workdir)
    result = groove(config_file, db, "retry budget")
    assert result.exit_code == 0 and result.stderr == ""
    verbose = groove(config_file, db, "retry budget", "--verbose")
    assert verbose.stderr == f"groove: note: loaded config: {config_file}\n"


def test_printable_is_the_one_escaping_of_text_output() -> None:
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable("x\x1b[2Jy\x07\x7f\x9b") == "x\\x1b[2Jy\\x07\\x7f\\x9b"
