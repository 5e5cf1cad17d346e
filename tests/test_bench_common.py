"""bench/_common.py: every result file records the package versions the numbers depend on."""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def common(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(BENCH))
    sys.modules.pop("_common", None)
    import _common

    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    return _common


def test_machine_records_package_versions(common) -> None:  # type: ignore[no-untyped-def]
    packages = common.machine()["packages"]
    assert list(packages) == ["apsw", "sqlite-vec", "numpy", "onnxruntime", "tokenizers",
                              "typer", "click", "rich"]
    assert packages["typer"] == version("typer")
    assert packages["apsw"] == version("apsw")


def test_write_results_adds_versions_when_the_data_has_no_machine(common,  # type: ignore[no-untyped-def]
                                                                  tmp_path: Path) -> None:
    json_path, _ = common.write_results("x", {"benchmark": "x"}, "# x\n")
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert data["packages"]["numpy"] == version("numpy")
    assert data["benchmark"] == "x"
