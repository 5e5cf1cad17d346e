"""The `groove` script's entry point: the command line (cli_app.py), with the exit that a parked
model needs (exits.py).

The command-line app and its helpers (`app`, `narrowed`, …) are reachable from here as well,
loaded on first use.
"""

from __future__ import annotations

from typing import Any


def main() -> None:
    """Console-script entry point."""
    from groove_cli import exits
    from groove_cli.cli_app import main as run_here

    exits.arm()
    try:
        run_here()
    except SystemExit as stop:
        exits.leave(stop.code)  # ends here when a loaded model is parked (exits.py)
        raise
    exits.leave(0)


def __getattr__(name: str) -> Any:
    """cli_app's names (`app`, `narrowed`, …), imported on first use."""
    import importlib

    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module("groove_cli.cli_app"), name)


if __name__ == "__main__":  # pragma: no cover
    main()
