"""`groove eval --report html|png FILE` (eval.md §15): the run's pictures — the history of the
stored runs, the per-query deltas against its reference, or the ablation bars — drawn by
groove_cli/pictures/eval_plots.py from the public API's answers and written by pictures.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from groove_cli.pictures.draw import file_label
from groove_cli.pictures.eval_plots import (
    ablation_plot,
    deltas_plot,
    history_plot,
    reference_for,
    run_meta,
)
from groove_cli.render.pictures import ReportKind, write_report

if TYPE_CHECKING:
    from groove_cli.evaluate.report import EvalReport

Run = Mapping[str, Any]


def write_eval_report(kind: ReportKind, path: str, report: EvalReport,
                      history: Sequence[Run], baseline: Run | None = None) -> None:
    """The report of one eval run: `history` newest first, as the history file keeps it (the
    run itself is added when it is not there: --no-history)."""
    runs = list(reversed(history))
    if not any(r.get("timestamp") == report.run.get("timestamp") for r in runs):
        runs.append(report.run)
    plots = [history_plot(runs)]
    reference = reference_for(report, runs, baseline)
    if reference is not None:
        plots.append(deltas_plot(report.run, *reference))
    meta = [run_meta(report.run)
            + (f" · golden {file_label(report.golden)}" if report.golden else "")]
    if reference is None:
        meta.append("no earlier run to compare queries with")
    write_report(kind, path, "groove eval", meta, plots, what="eval report")


def write_ablation_report(kind: ReportKind, path: str, report: Mapping[str, Any]) -> None:
    meta = [f"{report['query_count']} queries · model {report['model']} · reranker "
            f"{report.get('reranker') or 'none'}"]
    write_report(kind, path, "groove eval --ablate", meta, [ablation_plot(report)],
                 what="ablation report")
