"""`groove graph --format svg`: the graph's DOT (retrieve/graph.py writes it, every name
escaped) laid out by Graphviz through the `graphviz` package, which runs the `dot` program."""

from __future__ import annotations

from groove_cli.errors import GrooveError

INSTALL_HINT = ("install Graphviz: apt install graphviz (Debian, Ubuntu) or brew install "
                "graphviz (macOS); --format dot needs neither")


def svg(dot: str) -> str:
    """The SVG of a DOT text; one-line errors when the package or `dot` is missing."""
    try:
        import graphviz  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise GrooveError("--format svg needs the graphviz package, which is not installed",
                          hint="pip install 'groove-cli[graph]'; --format dot needs "
                               "neither") from None
    try:
        return str(graphviz.Source(dot).pipe(format="svg", encoding="utf-8"))
    except graphviz.ExecutableNotFound:
        raise GrooveError("--format svg needs Graphviz's `dot` program, which is not on PATH",
                          hint=INSTALL_HINT) from None
    except graphviz.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise GrooveError(f"Graphviz's dot failed: {detail[0] if detail else exc.returncode}"
                          ) from None
