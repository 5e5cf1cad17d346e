"""Waits that guard against hangs, never deadlines (issue 37).

A test waits for an event (a file written, a search reflecting an edit) and gives up only when
the event has clearly never come: the timeout is generous, far beyond what the awaited work
takes on a busy 2-core machine, and it is no performance bound — timings belong to the
benchmarks (bench/). test_no_deadlines.py keeps wall-clock comparisons out of assertions;
these helpers are how a test waits instead.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

HANG_GUARD_S = 120.0
"""How long a wait lasts before the test calls it a hang: generous on a loaded machine."""


def wait_until(predicate: Callable[[], bool], *, timeout: float = HANG_GUARD_S,
               what: str = "the awaited event", interval: float = 0.05,
               proc: subprocess.Popen[str] | None = None) -> None:
    """Poll `predicate` until it holds; fail only if it never does within `timeout` (a hang),
    or as soon as `proc`, when given, has exited (what it should do can no longer happen)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"{what}: the process ended (exit {proc.returncode}) before it happened")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout:.0f} s (a hang guard)")
        time.sleep(interval)


class Hang(Exception):
    """Raised inside a `hang_guard` block that ran past its guard."""


@contextmanager
def hang_guard(seconds: float = HANG_GUARD_S, what: str = "the block") -> Iterator[None]:
    """Interrupt the block (SIGALRM, main thread) if it is still running after `seconds`.

    For work that, when broken, does not end in any useful time (catastrophic regex
    backtracking, an accidental quadratic loop over a large input): size the input so that the
    broken form runs far past the guard while the working form takes a small fraction of it."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"{what} was still running after {seconds:.0f} s (a hang guard)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
