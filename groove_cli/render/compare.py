"""Text and Markdown renderings of `groove eval compare` (from `evaluate.compare.compare_runs`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groove_cli.evaluate.baseline import value_text
from groove_cli.evaluate.metrics import metric_label
from groove_cli.render.markdown import cell, table


def _row(m: Mapping[str, Any]) -> list[str]:
    ci = m["ci95"]
    interval = "n/a" if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
    mark = " *" if m["p_holm"] < 0.05 else ""
    label = metric_label(m["metric"]) + (" (gate)" if "significantly_worse" in m else "")
    return [label, f"{m['a']:.3f}", f"{m['b']:.3f}", f"{m['delta']:+.3f}",
            interval, f"{m['p']:.4f}", f"{m['p_holm']:.4f}{mark}"]


HEADER = ["metric", "A", "B", "Δ (B − A)", "95% CI of Δ", "p", "p (Holm)"]
FOOTNOTE = ("Paired over {pairs} queries: bootstrap CI (1000 resamples, seed 0) and two-sided "
            "randomization test (10000 sign flips, seed 0); * = Holm-corrected p < 0.05.")
GATE_NOTE = ("The CI gate (`eval --fail-on-regression`) applies the same test to the gate metric "
             "alone, {metric}: significantly worse when Δ < 0 and p < {alpha} ({verdict} here, "
             "p = {p:.4f}); it fails when, in addition, the drop exceeds --max-drop. It reads "
             "the raw p because it tests one metric named in advance; p (Holm) is for reading "
             "all the rows at once.")


def _gate_note(report: Mapping[str, Any]) -> str:
    """The gate's verdict on its metric; empty when the runs share no metric to judge."""
    row = next((m for m in report["metrics"] if "significantly_worse" in m), None)
    if row is None:
        return ""
    return GATE_NOTE.format(metric=metric_label(row["metric"]), alpha=report["alpha"],
                            verdict="worse" if row["significantly_worse"] else "not worse",
                            p=row["p"])


def _diff_lines(report: Mapping[str, Any]) -> list[str]:
    lines = [f"  {c['setting']}: {value_text(c['before'])} → {value_text(c['after'])}"
             for c in report["settings_diff"]]
    if report["corpus_change"]:
        lines.append(f"  corpus: {report['corpus_change']}")
    return lines


def render_compare_text(report: Mapping[str, Any]) -> str:
    rows = [HEADER] + [_row(m) for m in report["metrics"]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = ["groove eval compare", f"  A: {report['a']['label']}", f"  B: {report['b']['label']}",
             ""]
    for row in rows:
        lines.append("  " + "  ".join(
            cell.ljust(w) if i in (0, 4) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip())
    lines += ["", FOOTNOTE.format(pairs=report["pairs"]), _gate_note(report)]
    diff = _diff_lines(report)
    lines += ["", "Differences in inputs:", *diff] if diff else ["", "Same settings and corpus."]
    return "\n".join(lines) + "\n"


def render_compare_markdown(report: Mapping[str, Any]) -> str:
    lines = ["## groove eval compare", "", f"- **A:** {cell(report['a']['label'])}",
             f"- **B:** {cell(report['b']['label'])}", ""]
    lines += table(HEADER, [_row(m) for m in report["metrics"]],
                   ["l", "r", "r", "r", "l", "r", "r"])
    lines += ["", FOOTNOTE.format(pairs=report["pairs"]), "", _gate_note(report)]
    diff = _diff_lines(report)
    if diff:
        lines += ["", "Differences in inputs:", "", *[f"- {cell(d.strip())}" for d in diff]]
    return "\n".join(lines) + "\n"
