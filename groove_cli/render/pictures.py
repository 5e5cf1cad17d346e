"""`--report html|png FILE` of `eval` and `tune` (eval.md §15, tune.md §12): the kind checked
before any work, and the report written through the one output writer (outfile.py). The
plots and their drawing are groove_cli/pictures/ (the web view's history page draws them too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from groove_cli.errors import GrooveError, UsageError

if TYPE_CHECKING:
    from groove_cli.pictures.draw import Plot

ReportKind = Literal["html", "png"]
REPORT_KINDS: tuple[ReportKind, ...] = ("html", "png")
Table = tuple[str, Sequence[str], Sequence[Sequence[str]]]
"""A table under the plots: heading, column names, rows."""


def report_kind(kind: str) -> ReportKind:
    """`--report KIND FILE`'s KIND, checked (a usage error names the choices)."""
    for known in REPORT_KINDS:
        if kind == known:
            return known
    raise UsageError(f"--report {kind[:40]!r}: use --report html FILE or --report png FILE")


def write_report(kind: ReportKind, path: str, title: str, meta: Sequence[str],
                 plots: Sequence[Plot], tables: Sequence[Table] = (), *, what: str) -> None:
    """Render and write the report through the one output writer (outfile.py)."""
    from groove_cli.outfile import write_output
    from groove_cli.pictures.draw import NoMatplotlib, html_page, png

    try:
        data = (html_page(title, meta, plots, tables).encode("utf-8") if kind == "html"
                else png(plots, title))
    except NoMatplotlib as exc:
        raise GrooveError("--report needs matplotlib", hint=exc.hint) from None
    write_output(path, data, flag="--report", what=what)
