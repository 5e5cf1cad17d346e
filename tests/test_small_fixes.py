"""Smaller items of issue 29 (item 12): `eval compare` reads `2026` as a year, not a run
index; a closed stdout is not told to free disk space."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from groove_cli.errors import GrooveError, UsageError
from groove_cli.evaluate.compare import resolve_run
from groove_cli.failures import GuardedOutput
from tests.test_eval_baseline import make_run


def _runs() -> list[dict[str, object]]:
    newer, older = make_run([1.0]), make_run([0.5])
    newer["timestamp"], older["timestamp"] = "2026-05-02T10:00:00.000000Z", "2025-12-31T09:00:00Z"
    return [newer, older]


def test_a_year_is_a_timestamp_prefix_and_small_numbers_are_indexes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))  # no file named like a reference
    runs = _runs()
    assert resolve_run("2026", lambda: runs) == ("run 2026-05-02T10:00:00.000000Z", runs[0])
    assert resolve_run("2025", lambda: runs)[1] is runs[1]
    assert resolve_run("0", lambda: runs)[1] is runs[0]
    assert resolve_run("001", lambda: runs)[1] is runs[1]
    with pytest.raises(UsageError, match="no history run 999"):
        resolve_run("999", lambda: runs)
    with pytest.raises(UsageError, match="no file or history run matches '2024'"):
        resolve_run("2024", lambda: runs)


class _Failing:
    def __init__(self, code: int) -> None:
        self.code = code

    def write(self, text: str) -> int:
        raise OSError(self.code, "failed")

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "no descriptor")


@pytest.mark.parametrize(("code", "disk"), [(errno.EBADF, False), (errno.EIO, False),
                                            (errno.ENOSPC, True)])
def test_only_a_full_disk_gets_the_disk_space_hint(code: int, disk: bool) -> None:
    with pytest.raises(GrooveError) as caught:
        GuardedOutput(_Failing(code)).write("x")
    assert ("disk space" in (caught.value.hint or "")) is disk
