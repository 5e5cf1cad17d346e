"""Stamped .npy sets: the stamp is the last thing written and the first thing removed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from groove_cli.npyfiles import save_stamped


def test_arrays_and_stamp_round_trip(tmp_path: Path) -> None:
    a, b, stamp = tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "set.json"
    save_stamped(((a, np.arange(3, dtype=np.int64)), (b, np.ones((2, 2), np.float32))), stamp,
                 {"version": "7"})
    assert np.load(a).tolist() == [0, 1, 2]
    assert np.load(b).shape == (2, 2)
    assert json.loads(stamp.read_text()) == {"version": "7"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy", "set.json"]


def test_a_failed_write_leaves_no_stamp_and_no_temporary_file(tmp_path: Path) -> None:
    a, stamp = tmp_path / "a.npy", tmp_path / "set.json"
    save_stamped(((a, np.zeros(2)),), stamp, {"version": "1"})
    missing = tmp_path / "gone" / "b.npy"  # its folder does not exist: the write fails
    with pytest.raises(OSError):
        save_stamped(((a, np.ones(2)), (missing, np.ones(2))), stamp, {"version": "2"})
    # the new `a` may be in place, but without a stamp no reader trusts it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]
