"""The CI formats of `groove eval` (`--format junit|markdown`) and the step summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from groove_cli.render.junit import gate_checks, render_junit
from groove_cli.render.markdown import append_step_summary, eval_markdown

if TYPE_CHECKING:
    from groove_cli.evaluate.report import EvalReport


def render_ci_format(report: EvalReport, fmt: str, *, gated: bool) -> str:
    """The stdout document for `junit` or `markdown`; any other format gives ''.

    The Markdown report is also appended to `$GITHUB_STEP_SUMMARY` when that is set, whatever
    the format, so one eval step gives both a JUnit file and a readable summary.
    """
    golden = report.golden.name if report.golden is not None else None
    document = report.to_json()
    markdown = eval_markdown(document, comparison=report.comparison, golden=golden)
    append_step_summary(markdown)
    if fmt == "markdown":
        return markdown
    if fmt != "junit":
        return ""
    previous = report.compared
    checks = gate_checks(
        enabled=gated, comparison=report.comparison,
        compared_timestamp=str(previous["timestamp"]) if previous is not None else None,
        regression_error=report.regression_error)
    name = f"groove eval: {golden}" if golden else "groove eval"
    return render_junit(report.run, suite_name=name, checks=checks)
