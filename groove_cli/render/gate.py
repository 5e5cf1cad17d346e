"""Text rendering of a baseline/history comparison (the gate section of `groove eval`)."""

from __future__ import annotations

from groove_cli.evaluate.baseline import Comparison, value_text
from groove_cli.evaluate.metrics import metric_label
from groove_cli.evaluate.paired import ALPHA


def verdict_text(comparison: Comparison) -> str:
    """Why the gate passes or fails, in one phrase."""
    p = comparison.primary
    drop = p.before - p.after
    if comparison.regressed:
        unenforced = "" if comparison.enforced else " (not enforced without --fail-on-regression)"
        return (f"regression: drop {drop:.3f} > max-drop {comparison.max_drop:.3f} and p "
                f"{p.p:.4f} < {ALPHA}{unenforced}")
    if drop <= comparison.max_drop:
        return f"pass: drop {max(drop, 0.0):.3f} is within max-drop {comparison.max_drop:.3f}"
    return f"pass: the drop is within query-sampling noise (p {p.p:.4f} ≥ {ALPHA})"


def title_text(comparison: Comparison) -> str:
    """`baseline FILE (run of TS, groove V)` or `the run of TS (same golden file and corpus)`."""
    if comparison.against == "baseline":
        version = f", groove {comparison.reference_version}" if comparison.reference_version else ""
        return f"baseline {comparison.source} (run of {comparison.reference_timestamp}{version})"
    return f"the run of {comparison.source} (same golden file and corpus)"


def render_comparison_text(comparison: Comparison) -> str:
    """The section appended to the text report, starting with a blank line."""
    p = comparison.primary
    ci = "[n/a]" if p.ci95 is None else f"[{p.ci95[0]:+.3f}, {p.ci95[1]:+.3f}]"
    lines = [
        "",
        f"Compared with {title_text(comparison)}",
        f"  {metric_label(p.metric):<11}{p.before:.3f} → {p.after:.3f}  Δ {p.delta:+.3f}  {ci}"
        f"  p {p.p:.4f}  ({p.pairs} paired queries)",
        "  test: two-sided paired randomization (10000 sign flips), as `groove eval compare`",
    ]
    if comparison.settings:
        lines.append("  settings that differ:")
        width = max(len(c["setting"]) for c in comparison.settings) + 2
        for change in comparison.settings:
            lines.append(f"    {change['setting']:<{width}}{value_text(change['before'])} → "
                         f"{value_text(change['after'])}")
    else:
        lines.append("  settings: identical")
    if comparison.corpus_change is None:
        lines.append("  corpus: same digest")
    else:
        lines.append(f"  corpus: digest differs ({comparison.corpus_change})")
    lines.append(f"  gate: {verdict_text(comparison)}")
    return "\n".join(lines) + "\n"
