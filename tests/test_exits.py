"""The `groove` process ends without freeing the model it loaded (exits.py): armed by the
console entry only, the parked objects outlive the command, the output is flushed first and
the exit code kept; unarmed (the API, in-process tests) nothing changes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from groove_cli import exits
from groove_cli.models import Embedder
from tests.test_index import Groove, groove, tiny_model, write

__all__ = ["groove", "tiny_model"]  # the fixtures of test_index.py, shared

LOUD = """
import sys
from groove_cli import exits

class Loud:
    def __del__(self) -> None:
        sys.stdout.write("freed\\n")
"""


def run_script(body: str) -> subprocess.CompletedProcess[str]:
    script = LOUD + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, timeout=60)


def test_armed_a_parked_object_is_never_freed_and_the_output_is_flushed() -> None:
    done = run_script("""
        exits.arm()
        exits.park(Loud())
        sys.stdout.write("kept in the buffer")
        sys.stderr.write("and on stderr")
        exits.leave(3)
        sys.stdout.write("never reached")
    """)
    assert (done.returncode, done.stdout, done.stderr) == (3, "kept in the buffer",
                                                           "and on stderr")


def test_unarmed_park_keeps_nothing_and_leave_returns() -> None:
    done = run_script("""
        exits.park(Loud())
        exits.leave(3)
        sys.stdout.write("went on")
    """)
    assert (done.returncode, done.stdout) == (0, "freed\nwent on")


def test_armed_with_nothing_parked_the_process_ends_as_usual() -> None:
    done = run_script("""
        import atexit
        atexit.register(lambda: sys.stdout.write("atexit ran"))
        exits.arm()
        exits.leave(0)
    """)
    assert (done.returncode, done.stdout) == (0, "atexit ran")


@pytest.mark.parametrize(("code", "status", "stderr"), [
    ("None", 0, ""), ("130", 130, ""), ("'groove: error: gone'", 1, "groove: error: gone\n"),
])
def test_the_exit_code_is_kept_as_python_would_give_it(code: str, status: int,
                                                       stderr: str) -> None:
    done = run_script(f"""
        exits.arm()
        exits.park(Loud())
        exits.leave({code})
    """)
    assert (done.returncode, done.stdout, done.stderr) == (status, "", stderr)


@pytest.fixture
def armed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """exits armed as the console entry arms it, with a parking list of this test's own."""
    parked: list[object] = []
    monkeypatch.setattr(exits, "_armed", True)
    monkeypatch.setattr(exits, "_parked", parked)
    return parked


def test_the_index_command_parks_the_model_it_loaded_and_only_that(
        groove: Groove, armed: list[object]) -> None:
    groove.index_ok()
    assert [type(obj) for obj in armed] == [Embedder]
    groove.index_ok()  # unchanged: no model loaded, nothing parked
    assert len(armed) == 1
    write(groove.kb, "new.md", "# New\n\nA note that needs a vector.\n")
    groove.index_ok()
    assert [type(obj) for obj in armed] == [Embedder, Embedder]


def test_an_index_by_the_console_entry_prints_its_done_line_and_exits_0(groove: Groove) -> None:
    done = subprocess.run([sys.executable, "-m", "groove_cli", "--db", str(groove.db),
                           "index", "--kb-path", str(groove.kb)],
                          cwd=groove.work, capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("Done in ")
    status = subprocess.run([sys.executable, "-m", "groove_cli", "--db", str(groove.db),
                             "status", "--format", "json"],
                            cwd=groove.work, capture_output=True, text=True, check=False,
                            timeout=120)
    assert '"pending_vectors": 0' in status.stdout
