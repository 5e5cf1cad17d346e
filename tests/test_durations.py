"""Durations as the index lines write them (groove_cli/text/durations.py), hand-computed."""

from __future__ import annotations

import pytest

from groove_cli.text.durations import human_duration


@pytest.mark.parametrize(("seconds", "text"), [
    (0.0, "0 ms"),
    (0.0004, "0 ms"),
    (0.85, "850 ms"),
    (0.9994, "999 ms"),
    (0.9996, "1.0 s"),  # 999.6 ms rounds to 1000 ms: read as seconds
    (3.2, "3.2 s"),
    (3.25001, "3.3 s"),
    (9.94, "9.9 s"),
    (9.96, "10 s"),  # 9.96 s rounds to 10.0 s: whole seconds from there
    (42.4, "42 s"),
    (59.4, "59 s"),
    (59.6, "1 min"),
    (60.0, "1 min"),
    (61.0, "1 min 1 s"),
    (878.367, "14 min 38 s"),  # the `Done in 878367ms` of issue 46
    (3599.4, "59 min 59 s"),
    (3599.6, "1 h"),
    (3600.0, "1 h"),
    (3629.0, "1 h"),  # 60.48 min rounds to 60 min
    (3631.0, "1 h 1 min"),
    (7500.0, "2 h 5 min"),
    (90_000.0, "25 h"),
    (-1.0, "0 ms"),
    (float("nan"), "0 ms"),
    (float("inf"), "∞"),
])
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text
