"""groove: hybrid full-text + vector search over a folder of Markdown notes, that measures itself.

The public API (docs/design/code.md "Python API"): `open` a KB's `Index`, then `search`,
`get`, `status`, `index` and `evaluate` through it; a search returns `Results` of `Hit`s. The
names load on first use, so importing the package costs nothing a command does not need.
"""

from __future__ import annotations

import os

# onnxruntime (its Linux wheels too) writes a telemetry database and a device id under
# `~/.cache/Microsoft/DeveloperTools/` as soon as it is imported; `disable_telemetry_events()`
# comes too late for that. Only this variable, set before the first `import onnxruntime`,
# stops it: groove writes nothing outside the KB state, the model cache and the paths the user
# names. Set here because every groove entry point imports this package first.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groove_cli.api import Filters, Index, open
    from groove_cli.errors import GrooveError
    from groove_cli.results import Hit, Results

__all__ = ["Filters", "GrooveError", "Hit", "Index", "Results", "__version__", "open"]

_PUBLIC = {"open": "groove_cli.api", "Index": "groove_cli.api", "Filters": "groove_cli.api",
           "Results": "groove_cli.results", "Hit": "groove_cli.results",
           "GrooveError": "groove_cli.errors"}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use; `__version__` from the installed metadata
    (importing importlib.metadata is a cost a search should not pay at start-up:
    bench/results/code-notes.md#version)."""
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from groove_cli._version import version

    return version()
