"""The `groove` script's entry point: hands `search`, `get` and `status` to a running
`groove serve` when there is one (serve/relay.py, standard library only), else runs the command
line in this process (cli_app.py: typer, rich and the commands, loaded only then).

The command-line app and its helpers (`app`, `narrowed`, …) are reachable from here as well,
loaded on first use.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    """Console-script entry point: a running server's answer, else the command line."""
    from groove_cli.serve.relay import relay

    args = sys.argv[1:]
    code = relay(args)
    if code is not None:
        raise SystemExit(code)
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
