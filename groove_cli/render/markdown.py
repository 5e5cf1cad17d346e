"""Markdown reports (`--format markdown`) for CI step summaries and pull-request comments.

GitHub renders these in `$GITHUB_STEP_SUMMARY`; `append_step_summary` adds any report there when
the variable is set, whatever the chosen stdout format.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from groove_cli import messages
from groove_cli.errors import GrooveError
from groove_cli.evaluate.baseline import Comparison, value_text
from groove_cli.evaluate.history import is_miss
from groove_cli.evaluate.metrics import block_items, metric_label, query_metric_label
from groove_cli.outfile import write_output
from groove_cli.render.gate import title_text, verdict_text
from groove_cli.text import printable


class Markdown(str):
    """Text already rendered as Markdown (a code span): `cell` keeps it as it is."""

    __slots__ = ()


_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|"})


def _one_line(value: object) -> str:
    """Whitespace runs as one space, other control characters (ESC, BEL, NUL) as escapes."""
    return printable(" ".join(str(value).split()), keep_newlines=False)


def cell(value: object) -> str:
    """Inline text from a report value (a table cell, a title, a list item): one line, control
    characters escaped, `&`, `<`, `>` as entities so no raw HTML reaches a step summary, `|`
    escaped so a table keeps its columns. A `Markdown` value is kept as rendered."""
    if isinstance(value, Markdown):
        return value
    return _one_line(value).translate(_HTML)


def code(value: object, *, in_table: bool = False) -> Markdown:
    """`value` as a code span whatever backticks it holds: the fence is one backtick longer
    than its longest run (CommonMark), padded with a space when it starts or ends with one.
    Inside a table `|` is escaped (GitHub reads `\\|` there as a pipe)."""
    text = _one_line(value)
    if in_table:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return Markdown(f"{fence}{pad}{text}{pad}{fence}")


def table(header: Sequence[str], rows: Sequence[Sequence[object]],
          align: Sequence[str] | None = None) -> list[str]:
    """A GitHub-flavoured Markdown table; `align` items are `l` or `r`."""
    marks = ["---:" if a == "r" else "---" for a in (align or ["l"] * len(header))]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def interval(ci: object, *, sign: bool = False) -> str:
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return "n/a"
    f = signed if sign else fmt
    return f"[{f(float(ci[0]))}, {f(float(ci[1]))}]"


def _aggregate_rows(report: Mapping[str, Any]) -> list[list[str]]:
    aggregate, ci = report["aggregate"], report["aggregate"]["ci95"]
    diff = report.get("diff")
    rows = []
    for metric, k, value in block_items(aggregate):
        key = metric.aggregate_key
        delta = metric.of_block(diff, key, k) if isinstance(diff, dict) else None
        rows.append([metric_label(metric.full_name(k)), fmt(value),
                     interval(metric.of_block(ci, key, k)), signed(delta)])
    return rows


def comparison_markdown(comparison: Comparison) -> list[str]:
    """The baseline/history comparison: metric delta with its paired CI, settings, verdict."""
    p = comparison.primary
    lines = ["", f"### Compared with {title_text(comparison)}", ""]
    lines += table(["metric", "before", "now", "Δ", "95% CI of Δ (paired)", "queries"],
                   [[metric_label(p.metric), fmt(p.before), fmt(p.after), signed(p.delta),
                     interval(p.ci95, sign=True), p.pairs]], ["l", "r", "r", "r", "l", "r"])
    lines.append("")
    if comparison.settings:
        lines += table(["setting", "before", "now"],
                       [[code(c["setting"], in_table=True), value_text(c["before"]),
                         value_text(c["after"])]
                        for c in comparison.settings])
    else:
        lines.append("Settings: identical.")
    lines.append("")
    corpus = ("same digest" if comparison.corpus_change is None
              else f"digest differs ({comparison.corpus_change})")
    lines.append(f"Corpus: {corpus}.")
    mark = "❌" if comparison.regressed else "✅"
    lines += ["", f"**Gate:** {mark} {verdict_text(comparison)}"]
    return lines


def eval_markdown(report: Mapping[str, Any], *, comparison: Comparison | None = None,
                  golden: str | None = None) -> str:
    """The eval report as Markdown: settings line, aggregate with CIs and Δ, comparison, misses."""
    fp, corpus, aggregate = report["fingerprint"], report["corpus"], report["aggregate"]
    title = f"## groove eval — {cell(golden)}" if golden else "## groove eval"
    lines = [title, "",
             f"model {code(fp['model'])} · reranker {code(fp.get('reranker') or 'none')} · limit "
             f"{fp['limit']} · {aggregate['query_count']} queries · corpus {corpus['documents']} "
             f"docs / {corpus['chunks']} chunks ({code(str(corpus['digest'])[:12])})", ""]
    previous = report.get("previous")
    if isinstance(previous, dict) and isinstance(report.get("diff"), dict):
        lines += table(["metric", "value", "95% CI", f"Δ vs run of {previous['timestamp']}"],
                       _aggregate_rows(report), ["l", "r", "l", "r"])
    else:
        lines += table(["metric", "value", "95% CI"],
                       [row[:3] for row in _aggregate_rows(report)], ["l", "r", "l"])
    lines.append("")
    lines.append(f"95% bootstrap CI over {aggregate['query_count']} queries.")
    if comparison is not None:
        lines += comparison_markdown(comparison)
    k_max = max([int(k) for k in fp.get("k_values") or [0]])
    misses = [e for e in report["per_query"] if is_miss(e, k_max)]
    regressed = report.get("regressions") or []
    if misses or regressed:
        lines += ["", f"<details><summary>Misses and regressions ({len(misses)} misses, "
                      f"{len(regressed)} regressions of {len(report['per_query'])})</summary>", ""]
        lines += [f"- ✗ {code(e['id'])}: no expected note in the top {k_max}" for e in misses]
        for item in regressed:
            changes = ", ".join(f"{query_metric_label(name)} {a:.2f} → {b:.2f}"
                                for name, (a, b) in item["metrics"].items())
            lines.append(f"- ↓ {code(item['id'])}: {changes}")
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def append_step_summary(markdown: str) -> None:
    """Append to the file `$GITHUB_STEP_SUMMARY` names, when set, through the one output writer
    (outfile.py): a FIFO with no reader is not waited for, a link or folder is refused; any
    failure is a warning only, since the summary is a by-product of the run."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    try:
        write_output(target, (markdown + "\n").encode("utf-8"), flag="$GITHUB_STEP_SUMMARY",
                     what="the step summary", append=True, wait=False)
    except GrooveError as exc:
        messages.warning(f"cannot append to $GITHUB_STEP_SUMMARY: {exc.message}")
