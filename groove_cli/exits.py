"""How the `groove` process ends when it holds a loaded embedding model: without freeing it.

Freeing the model's full tokenizer (a vocabulary of a quarter of a million pieces) holds the
GIL for a noticeable share of a small `groove index` run, only to give memory back to a
process that is about to end (bench/results/code-notes.md#fast-exit). The console entry
(`cli.main`) arms this module; `Index.index` then parks the model it loaded here instead of
dropping it, and once the command has returned, `leave` flushes stdout and stderr and ends
the process with `os._exit`, so the parked objects are never freed one by one. Unarmed (the
Python API, tests that run the app in-process) `park` keeps nothing and a process ends as
usual.
"""

from __future__ import annotations

import contextlib
import os
import sys

_armed = False
_parked: list[object] = []


def arm() -> None:
    """Let `park` keep objects until the process ends (the console entry only)."""
    global _armed
    _armed = True


def park(obj: object) -> None:
    """Keep `obj` alive until the process ends, when armed; otherwise do nothing."""
    if _armed and obj is not None:
        _parked.append(obj)


def leave(code: object) -> None:
    """End the process now with `code` (a `SystemExit` code) when something is parked, after
    flushing the standard streams; return (the caller exits as usual) when nothing is."""
    if not _parked:
        return
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # what Python does with a message as the exit code
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing can reach it
            stream.flush()
    os._exit(status)
