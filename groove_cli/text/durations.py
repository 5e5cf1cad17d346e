"""Durations as people read them: `850 ms`, `3.2 s`, `42 s`, `14 min 38 s`, `2 h 5 min`.

The one formatting of a duration in what `index` prints (its `Done` and `Full text ready`
lines, the progress lines' ETA); tests/test_durations.py holds hand-computed cases.
"""

from __future__ import annotations

import math


def human_duration(seconds: float) -> str:
    """`seconds` in the largest units that keep it readable, each part a whole number except
    below 10 s: under 1 s in milliseconds (`850 ms`), under 10 s in seconds to one decimal
    (`3.2 s`), under a minute in whole seconds (`42 s`), under an hour in minutes and seconds
    (`14 min 38 s`, `3 min`), else hours and minutes (`2 h 5 min`, `1 h`). Each form is
    rounded to its own precision first, so a value just under a boundary reads as the next
    unit (`999.6 ms` is `1.0 s`, `59.7 s` is `1 min`). Negative values and NaN read as 0."""
    if not seconds > 0:  # also NaN
        seconds = 0.0
    if math.isinf(seconds):
        return "∞"
    ms = round(seconds * 1000)
    if ms < 1000:
        return f"{ms} ms"
    tenths = round(seconds * 10)
    if tenths < 100:
        return f"{tenths // 10}.{tenths % 10} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"
