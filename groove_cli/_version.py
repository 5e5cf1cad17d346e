"""groove's version, from the installed metadata: at the bottom layer, so that the indexer, eval
and the server name it without importing the package's public door (`groove_cli/__init__.py`).
Read on first use from the `groove_cli-*.dist-info` on sys.path, without importing
importlib.metadata, a cost a search or `groove mcp`'s `initialize` should not pay
(bench/results/code-notes.md#version); importlib.metadata only when that is not found.
"""

from __future__ import annotations


def version() -> str:
    """The installed distribution's version ("0.0.0" in a source tree without install)."""
    import os
    import sys

    for entry in sys.path:
        try:
            found = sorted(name for name in os.listdir(entry or ".")
                           if name.startswith("groove_cli-") and name.endswith(".dist-info"))
        except OSError:
            continue
        for info in found:
            try:
                with open(os.path.join(entry or ".", info, "METADATA"),
                          encoding="utf-8") as metadata:
                    for line in metadata:
                        if line.startswith("Version: "):
                            return line[len("Version: "):].strip()
                        if not line.strip():
                            break
            except OSError:
                continue
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("groove-cli")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "0.0.0"
