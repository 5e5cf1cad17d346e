"""`groove tune --format markdown`: the tune report for a CI step summary.

Rendered from the same dict as `--format json`, like the text report; the verdict comes first
because that is what a reviewer of a scheduled tune job needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groove_cli.evaluate.metrics import block_items, metric_label
from groove_cli.evaluate.tune import (
    ADOPT_MIN_MEAN_DELTA,
    ADOPT_SE_MULTIPLIER,
    STABILITY_MIN,
    default_condition,
    label,
    label_of,
)
from groove_cli.evaluate.tune.grid import SECONDARY_METRICS
from groove_cli.render.markdown import code, fmt, signed, table


def _verdict(r: Mapping[str, Any]) -> list[str]:
    v = r["verdict"]
    if v["decision"] == "adopt":
        return [f"**Verdict: adopt** {code(label_of(v['condition']))} — confirm it with "
                "`groove eval` before relying on it. Add to `groove.toml` (or run "
                "`groove tune --write`):", "", "```toml", *v["toml_snippet"].splitlines(), "```"]
    lines = [f"**Verdict: keep the built-in defaults** "
             f"({code(label(default_condition(r['space'])))})", ""]
    return lines + [f"- {reason}" for reason in v["reasons"]]


def _evidence(r: Mapping[str, Any]) -> list[str]:
    loo = r["loo"]
    se = loo["paired_se"]
    sign = loo["sign_test"]
    rows = [
        ["held-out mean Δ nDCG@5", signed(loo["mean_delta"], 4), f"> {ADOPT_MIN_MEAN_DELTA}"],
        ["paired SE", fmt(se, 4) if se is not None else "inf",
         f"mean Δ > {ADOPT_SE_MULTIPLIER} × SE"],
        ["selection stability", f"{loo['selection_stability']:.2f}", f"> {STABILITY_MIN}"],
        ["sign test (reported only)", f"{sign['improved']} up / {sign['degraded']} down / "
                                      f"{sign['tied']} tied, p = {sign['p_value']:.4f}", ""],
    ]
    return table(["nested leave-one-query-out CV", "value", "adoption needs"], rows)


def _secondary(r: Mapping[str, Any]) -> list[str]:
    base, refit = r["secondary_metrics"]["baseline"], r["secondary_metrics"]["refit"]
    rows = []
    for metric, k, before in block_items(base, metrics=SECONDARY_METRICS):
        after = metric.of_block(refit, metric.aggregate_key, k)
        rows.append([metric_label(metric.full_name(k)), fmt(before), fmt(after),
                     signed(after - before)])
    lines = table(["metric", "default", "refit", "Δ"], rows, ["l", "r", "r", "r"])
    return lines + [f"- DEGRADED: {v}" for v in r["secondary_metrics"]["violations"]]


def render_tune_markdown(report: Mapping[str, Any]) -> str:
    """The tune report as Markdown, ending with a newline."""
    imp = report["per_query_impact"]
    lines = [f"## groove tune — {report['space']} space", "",
             f"golden {code(report['golden_path'])} · model {code(report['model'])} · "
             f"{report['query_count']} queries ({report['effective_query_count']} effective) · "
             f"primary metric nDCG@{report['primary_k']}", "", *_verdict(report), "",
             *_evidence(report), "", *_secondary(report), "",
             f"Per-query impact (refit vs default): {imp['improved']} improved, "
             f"{imp['degraded']} degraded."]
    return "\n".join(lines) + "\n"
