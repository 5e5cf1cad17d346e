"""groove: hybrid full-text + vector search over a folder of Markdown notes."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """`__version__`, read from the installed metadata on first use (importing
    importlib.metadata is a cost a search should not pay at start-up:
    bench/results/code-notes.md#version)."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("groove-cli")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "0.0.0"
