"""groove's version, from the installed metadata: at the bottom layer, so that the indexer, eval
and the server name it without importing the package's public door (`groove_cli/__init__.py`).
Read on first use: importing importlib.metadata is a cost a search should not pay at start-up
(bench/results/code-notes.md#version).
"""

from __future__ import annotations


def version() -> str:
    """The installed distribution's version ("0.0.0" in a source tree without install)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("groove-cli")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "0.0.0"
