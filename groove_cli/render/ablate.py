"""Text and Markdown renderings of `groove eval --ablate` (from `evaluate.ablate`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groove_cli.evaluate.metrics import metric_label
from groove_cli.render.markdown import table


def _rows(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["configuration", metric_label(report["metric"]), "Δ vs default", "95% CI of Δ",
              "p", "p50 ms", "p95 ms", "verdict"]
    rows = []
    for r in report["configurations"]:
        ci = r["ci95"]
        rows.append([r["name"], f"{r['value']:.3f}", f"{r['delta']:+.3f}",
                     "n/a" if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]", f"{r['p']:.4f}",
                     f"{r['latency_ms']['p50']:.1f}", f"{r['latency_ms']['p95']:.1f}",
                     "worse" if r["significantly_worse"] else "not worse"])
    return header, rows


def _latency_note(report: Mapping[str, Any]) -> str:
    timed = report["configurations"][0]["latency_ms"]["queries"]
    scope = ("every query" if timed == report["query_count"]
             else f"{timed} evenly spaced queries of {report['query_count']}")
    return f"Latency: the search alone (cached query embeddings), one at a time, over {scope}."


def _verdict(report: Mapping[str, Any]) -> str:
    return (f"Cheapest configuration not significantly worse than the default: "
            f"{report['cheapest_not_worse']} (lowest p50 latency among those not significantly "
            f"worse: Δ < 0 with paired randomization p < 0.05, the CI gate's rule).")


def render_ablation_text(report: Mapping[str, Any]) -> str:
    header, rows = _rows(report)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [f"groove eval --ablate — {report['query_count']} queries, model "
             f"{report['model']}, reranker {report['reranker'] or 'none'}", ""]
    for row in [header, *rows]:
        lines.append("  " + "  ".join(
            c.ljust(w) if i in (0, 3, 7) else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip())
    lines += ["", "  Δ and CI are paired over queries (bootstrap, 1000 resamples, seed 0); p: "
              "two-sided paired randomization test (10000 sign flips, seed 0).",
              f"  {_latency_note(report)}", "", _verdict(report)]
    return "\n".join(lines) + "\n"


def render_ablation_markdown(report: Mapping[str, Any]) -> str:
    header, rows = _rows(report)
    lines = [f"## groove eval --ablate ({report['query_count']} queries)", ""]
    lines += table(header, rows, ["l", "r", "r", "l", "r", "r", "r", "l"])
    lines += ["", _latency_note(report), "", f"**{_verdict(report)}**"]
    return "\n".join(lines) + "\n"
