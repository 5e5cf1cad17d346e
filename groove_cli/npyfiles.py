"""A set of `.npy` files plus a JSON stamp, written so a reader never mixes old and new.

Used by the vector snapshot beside the index and the piece table beside a tokenizer: readers
trust the arrays only through the stamp, so the stamp goes first and comes back last.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt


def save_stamped(arrays: Sequence[tuple[Path, npt.NDArray[Any]]], stamp: Path,
                 document: dict[str, Any]) -> None:
    """Remove `stamp`, write each array through a temporary name and a rename, then write
    `document` to `stamp` the same way. On OSError the temporary files are removed and the
    error raised; the stamp is then absent, so readers ignore whatever arrays are there."""
    suffix = f".tmp{os.getpid()}"
    pending: list[Path] = []
    try:
        stamp.unlink(missing_ok=True)
        for path, array in arrays:
            tmp = path.with_name(path.name + suffix)
            pending.append(tmp)
            with open(tmp, "wb") as handle:
                np.save(handle, array, allow_pickle=False)
            os.replace(tmp, path)
        tmp = stamp.with_name(stamp.name + suffix)
        pending.append(tmp)
        tmp.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, stamp)
    except OSError:
        for leftover in pending:
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
        raise
