"""groove: hybrid full-text + vector search over a folder of Markdown notes."""

from __future__ import annotations

import os

# onnxruntime (its Linux wheels too) writes a telemetry database and a device id under
# `~/.cache/Microsoft/DeveloperTools/` as soon as it is imported; `disable_telemetry_events()`
# comes too late for that. Only this variable, set before the first `import onnxruntime`,
# stops it: groove writes nothing outside the KB state, the model cache and the paths the user
# names. Set here because every groove entry point imports this package first.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"


def __getattr__(name: str) -> str:
    """`__version__`, read from the installed metadata on first use (importlib.metadata costs
    ~40 ms, which a search should not pay at start-up)."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("groove-cli")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "0.0.0"
