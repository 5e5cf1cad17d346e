"""`groove tune --report html|png FILE` (tune.md §12): the sweep's pictures, drawn by
groove_cli/pictures/tune_plots.py from the `TuneReport` and written by pictures.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groove_cli.evaluate.tune.grid import label
from groove_cli.pictures.draw import Plot, file_label
from groove_cli.pictures.tune_plots import Sweep, line_plot, loo_plot, surface_plot
from groove_cli.render.pictures import ReportKind, Table, write_report

if TYPE_CHECKING:
    from groove_cli.evaluate.tune.report import TuneReport


def write_tune_report(kind: ReportKind, path: str, report: TuneReport) -> None:
    sweep = Sweep(report)
    verdict = ("adopt: " + label(sweep.conditions[sweep.chosen]) if sweep.decision == "adopt"
               else "keep the defaults")
    meta = [f"space {sweep.space} · {len(report.diagnostics)} queries · model {report.model}"
            f" · golden {file_label(report.golden_path)}",
            f"chosen: {label(sweep.conditions[sweep.chosen])} · built-in: "
            f"{label(sweep.conditions[sweep.current])} · verdict: {verdict}"]
    plots: list[Plot] = [surface_plot(sweep)]
    if len(sweep.selection.phase2) > 1:  # a one-phase space (feedback) has no second axis
        plots.append(line_plot(sweep))
    if report.loo.held_out_diffs:
        plots.append(loo_plot(report))
    tables: list[Table] = []
    reasons: Any = getattr(report.verdict, "reasons", ())
    if reasons:
        tables.append(("Why", ["reason"], [[str(r)] for r in reasons]))
    write_report(kind, path, f"groove tune --space {sweep.space}", meta, plots, tables,
                 what="tune report")
