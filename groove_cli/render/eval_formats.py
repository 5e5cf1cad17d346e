"""The CI formats of `groove eval` (`--format junit|markdown`) and the step summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from groove_cli.render.junit import gate_checks, render_junit
from groove_cli.render.markdown import append_step_summary, eval_markdown

if TYPE_CHECKING:
    from groove_cli.evaluate.runner import EvalOutcome


def render_ci_format(outcome: EvalOutcome, fmt: str, *, gated: bool) -> str:
    """The stdout document for `junit` or `markdown`; any other format gives ''.

    The Markdown report is also appended to `$GITHUB_STEP_SUMMARY` when that is set, whatever
    the format, so one eval step gives both a JUnit file and a readable summary.
    """
    golden = outcome.golden.name if outcome.golden is not None else None
    markdown = eval_markdown(outcome.report, comparison=outcome.comparison, golden=golden)
    append_step_summary(markdown)
    if fmt == "markdown":
        return markdown
    if fmt != "junit" or outcome.run is None:
        return ""
    previous = outcome.report.get("previous") or outcome.full_report.get("previous")
    checks = gate_checks(
        enabled=gated, comparison=outcome.comparison,
        compared_timestamp=previous["timestamp"] if isinstance(previous, dict) else None,
        regression_error=outcome.regression_error)
    name = f"groove eval: {golden}" if golden else "groove eval"
    return render_junit(outcome.run, suite_name=name, checks=checks)
