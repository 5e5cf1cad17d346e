"""Text rendering of the eval report (eval.md §10).

Takes the JSON-shaped report from `evaluate.report.build_json_report` (built with
show_diff=True) and lays it out for a terminal. Colour is plain ANSI and only applied when the
caller says the stream takes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groove_cli.evaluate.history import corpus_change_text, is_miss
from groove_cli.evaluate.metrics import (
    BY_NAME,
    MISS_METRIC,
    block_items,
    metric_label,
    query_metric_label,
)
from groove_cli.evaluate.stats import RESAMPLES, SEED
from groove_cli.text import printable

RED = "\x1b[31m"
GREEN = "\x1b[32m"
GREY = "\x1b[90m"
RESET = "\x1b[0m"

SAME_EPSILON = 1e-9
"""A delta smaller than this in absolute value is shown as `—`."""


def _paint(text: str, colour: str, color: bool) -> str:
    return f"{colour}{text}{RESET}" if color else text


def diff_cell(delta: float, *, threshold: float, color: bool) -> str:
    """`  (↑ 0.056)` / `  (↓ 0.056)` / `  (—       )`, red below −threshold, green above it."""
    arrow = "↑" if delta > 0 else "↓"
    body = "(—       )" if abs(delta) < SAME_EPSILON else f"({arrow} {abs(delta):.3f})"
    if delta < -threshold:
        colour = RED
    elif delta > threshold:
        colour = GREEN
    else:
        colour = GREY
    return "  " + _paint(body, colour, color)


def _metric_line(label: str, value: float, interval: object, diff: str) -> str:
    if isinstance(interval, list | tuple) and len(interval) == 2:
        ci = f"[{interval[0]:.3f}, {interval[1]:.3f}]"
    else:
        ci = "[n/a]"
    return f"  {label:<11}{value:.3f}  {ci}{diff}"


def _header(report: Mapping[str, Any]) -> list[str]:
    fingerprint = report["fingerprint"]
    aggregate = report["aggregate"]
    corpus = report["corpus"]
    reranker = fingerprint.get("reranker") or "none"
    lines = [
        f"groove eval — {report['timestamp']}",
        f"  model: {fingerprint['model']}    reranker: {reranker}    "
        f"limit: {fingerprint['limit']}    queries: {aggregate['query_count']}",
        f"  corpus: {corpus['documents']} docs / {corpus['chunks']} chunks",
    ]
    if report.get("corpus_changed"):
        previous = report.get("previous")
        change = None
        if isinstance(previous, dict) and isinstance(previous.get("corpus"), dict):
            change = corpus_change_text(previous["corpus"], corpus)
        if change == "same counts, different contents":
            change = "same document and chunk counts, different contents"
        suffix = f" ({change})" if change else ""
        lines.append(f"    ⚠️ corpus changed since the compared run{suffix}")
        lines.append("       a delta below may reflect that, not retrieval")
    return lines


def _aggregate(
    report: Mapping[str, Any], *, threshold: float, diff: Mapping[str, Any] | None, color: bool
) -> list[str]:
    aggregate = report["aggregate"]
    ci = aggregate["ci95"]

    def cell(value: object) -> str:
        if diff is None or not isinstance(value, int | float):
            return ""
        return diff_cell(float(value), threshold=threshold, color=color)

    lines = []
    for metric, k, value in block_items(aggregate):
        if metric.summary == "largest_k" and k != max(aggregate[metric.aggregate_key], key=int):
            continue
        key = metric.aggregate_key
        delta = metric.of_block(diff, key, k) if diff else None
        lines.append(_metric_line(metric_label(metric.full_name(k)), value,
                                  metric.of_block(ci, key, k), cell(delta)))
    lines.append(
        f"  95% bootstrap CI over {aggregate['query_count']} queries "
        f"({RESAMPLES} resamples, seed {SEED})"
    )
    return lines


def _query_line(entry: Mapping[str, Any]) -> str:
    """A failing query's text, what it expects and the rank of the first expected note in
    the listed hits (a note matches by path; `§ heading` shown when the golden file names one)."""
    text = printable(str(entry.get("query", "")), keep_newlines=False)
    text = text if len(text) <= 80 else text[:79] + "…"
    expected = entry.get("expected") or []
    paths = {str(e.get("path")) for e in expected}
    names = ", ".join(printable(str(e.get("path")), keep_newlines=False)
                      + (f" § {e['heading']}" if e.get("heading") else "") for e in expected[:3])
    if len(expected) > 3:
        names += f" and {len(expected) - 3} more"
    if not expected:
        return f'"{text}" → no note expected'
    hits = entry.get("top_k") or []
    rank = next((h["rank"] for h in hits if str(h.get("path")) in paths), None)
    where = f"its note first at rank {rank}" if rank is not None else \
        f"not in the top {len(hits)}"
    return f'"{text}" → {names}; {where}'


def _per_query(report: Mapping[str, Any], *, show_diff: bool) -> list[str]:
    per_query = report["per_query"]
    k_values = report["fingerprint"].get("k_values") or [0]
    k_max = max(int(k) for k in k_values)
    regressed: dict[str, Mapping[str, Any]] = {}
    if show_diff and report.get("regressions"):
        regressed = {item["id"]: item["metrics"] for item in report["regressions"]}
    lines = []
    for entry in per_query:
        query_id = str(entry["id"])
        shown = printable(query_id, keep_newlines=False)  # an id from the golden file
        if query_id in regressed:
            changes = ", ".join(
                f"{query_metric_label(name)}: {before:.2f} → {after:.2f}"
                for name, (before, after) in regressed[query_id].items()
            )
            lines.append(f"  ↓ {shown:<24} {changes}")
        elif is_miss(entry, k_max):
            miss = BY_NAME[MISS_METRIC]
            value = entry["metrics"][miss.query_key].get(str(k_max), 0.0)
            lines.append(f"  ✗ {shown:<24} {metric_label(miss.full_name(k_max))}: {value:.2f}")
        else:
            continue
        lines.append(f"      {_query_line(entry)}")
    if not lines:
        return []
    title = f"Per-query (regressions and misses, {len(lines) // 2} of {len(per_query)})"
    return ["", title, *lines]


def render_eval_text(
    report: Mapping[str, Any],
    *,
    threshold: float,
    show_diff: bool,
    color: bool,
    incompatibility: str | None = None,
) -> str:
    """The text report for stdout, ending with a newline.

    Args:
        report: from `build_json_report(..., show_diff=True)`.
        threshold: `[eval].regression_threshold`; decides the diff colours.
        show_diff: False for `--no-diff` (and pointless with `--no-history`): no Δ column,
            no `↓` lines, plain `Aggregate` header.
        color: whether ANSI colour may be used (the CLI decides from the stream and flags).
        incompatibility: `history.incompatibility_header(...)` when no stored run is
            compatible; printed above `Aggregate` when the diff is shown.
    """
    previous = report.get("previous")
    diff = report.get("diff") if show_diff and previous is not None else None
    lines = _header(report)
    lines.append("")
    if show_diff and previous is not None:
        lines.append(f"Aggregate (compared with run of {previous['timestamp']})")
    else:
        if show_diff and incompatibility:
            lines.append(incompatibility)
        lines.append("Aggregate")
    lines.extend(_aggregate(report, threshold=threshold, diff=diff, color=color))
    lines.extend(_per_query(report, show_diff=show_diff))
    return "\n".join(lines) + "\n"
