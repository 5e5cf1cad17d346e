"""Shared fixtures: isolate user state so no test reads or writes the real home folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
import sqlite_vec


def pytest_report_header() -> list[str]:
    con = apsw.Connection(":memory:")
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    vec = con.execute("select vec_version()").fetchall()[0][0]
    return [f"sqlite {apsw.sqlite_lib_version()}, apsw {apsw.apsw_version()}, sqlite-vec {vec}"]


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the per-user config folder at an empty temp dir and drop env that changes behaviour."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    for name in ("GROOVE_LOG", "NO_COLOR", "GROOVE_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory outside any git checkout, made the cwd."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work
