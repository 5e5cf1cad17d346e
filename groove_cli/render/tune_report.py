"""The text report of `groove tune` (tune.md §9), rendered from the same dict as `--format json`.

Rendering from the JSON document keeps the two outputs in step: whatever the text shows, the JSON
carries. Plain text only; no colour is needed to read a verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from groove_cli.config import DEFAULT_SCORE_CJK_WEIGHT
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

_LEGEND = [
    "  fts = FTS candidates (the query is effective when fts >= 2); docfreq = chunks the FTS",
    "  expression matches; overlap = chunks in both legs; bm25? = the FTS order changes between",
    "  heading-heavy and content-heavy bm25 weights; idf = CLMP when the expression matches at",
    "  least half of the chunks (FTS5 clamps its IDF to nearly 0), else ok; ties = adjacent equal",
    "  fused scores at the default condition.",
]


def _fmt(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def _header(r: Mapping[str, Any]) -> list[str]:
    return [
        f"groove tune — {r['kb_path']}",
        f"  golden: {r['golden_path']}   model: {r['model']}   reranker: none (tune always "
        "measures the plain fusion stage)",
        f"  space: {r['space']}   limit: {r['limit']}   candidate pool: {r['candidate_pool']} "
        f"(floor, not a cap)   vector k: {r['vector_k']}   chunks: {r['chunk_total']}",
        f"  queries: {r['query_count']} total / {r['effective_query_count']} effective "
        f"(FTS candidates >= 2)   primary metric: nDCG@{r['primary_k']}",
    ]


def _diagnostics(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    width = max([5, *(len(str(d["id"])) for d in rows)])
    lines = ["## Query diagnostics",
             f"  {'query':<{width}}  {'fts':>5}  {'docfreq':>7}  {'overlap':>7}  bm25?  idf   ties"]
    for d in rows:
        lines.append(
            f"  {d['id']:<{width}}  {d['fts_candidates']:>5}  {d['fts_total_matches']:>7}  "
            f"{d['vec_fts_overlap']:>7}  {'yes' if d['bm25_sensitive'] else 'no':<5}  "
            f"{'CLMP' if d['idf_clamped'] else 'ok':<4}  {d['rrf_ties']:>4}"
        )
    return [*lines, *_LEGEND]


def _grid_line(entry: Mapping[str, Any], chosen: Mapping[str, Any] | None = None) -> str:
    line = f"    {label_of(entry['condition']):<34} nDCG@5 {entry['ndcg']:.4f}"
    return line + "  ← refit" if entry["condition"] == chosen else line


def _grid(r: Mapping[str, Any]) -> list[str]:
    grid = r["grid"]
    lines = [f"## Grid (coordinate descent over {r['effective_query_count']} effective queries)"]
    if r["space"] == "fusion-method":
        phase1, phase2 = grid["alpha_sweep"], grid["cjk_sweep"]
        lines.append("  Phase 1: top 5 of the built-in RRF, score fusion at each score_alpha "
                     "for every query and at the built-in length rule with each tier of word "
                     f"counts (score_cjk_weight {DEFAULT_SCORE_CJK_WEIGHT}) by mean nDCG@5")
        lines += [_grid_line(e) for e in phase1]
        lines.append("  Phase 2: every score_cjk_weight at the phase-1 alpha or rule")
    elif r["space"] == "fusion":
        phase1, phase2 = grid["top_weight_conditions"], grid["rrf_k_sweep"]
        lines.append("  Phase 1: top 5 of the 64 bm25 weight sets at k=60 by mean nDCG@5")
        lines += [_grid_line(e) for e in phase1]
        lines.append("  Phase 2: every rrf_k at the phase-1 weights")
    else:
        phase1, phase2 = grid["ratio_sweep"], grid["min_score_sweep"]
        lines.append("  Phase 1: top 5 of the 15 (weight ratio, CJK weight) pairs at min_score 0.0 "
                     "by mean nDCG@5")
        lines += [_grid_line(e) for e in phase1]
        lines.append("  Phase 2: every min_score at the phase-1 weights (a floor can only cost here)")
    lines += [_grid_line(e, r["loo"]["refit"]) for e in phase2]
    return lines


def _loo(r: Mapping[str, Any]) -> list[str]:
    loo = r["loo"]
    se = loo["paired_se"]
    bar = None if se is None else ADOPT_SE_MULTIPLIER * se
    sign = loo["sign_test"]
    return [
        "## Nested leave-one-query-out CV",
        f"  refit (all {loo['folds']} effective queries): {label_of(loo['refit'])}",
        f"  folds: {loo['folds']} (one held-out query each)",
        f"  held-out mean delta nDCG@5: {_signed(loo['mean_delta'], 4)} "
        f"(adoption needs > {ADOPT_MIN_MEAN_DELTA})",
        f"  paired SE: {_fmt(se, 4) if se is not None else 'inf'}   "
        f"{ADOPT_SE_MULTIPLIER} × SE: {_fmt(bar, 4) if bar is not None else 'inf'}",
        f"  sign test: {sign['improved']} improved / {sign['degraded']} degraded / "
        f"{sign['tied']} tied, p = {sign['p_value']:.4f} (reported only)",
        f"  selection stability: {loo['selection_stability']:.2f} "
        f"(adoption needs > {STABILITY_MIN})",
    ]


def _secondary(r: Mapping[str, Any]) -> list[str]:
    sec = r["secondary_metrics"]
    base, refit = sec["baseline"], sec["refit"]
    lines = [f"## Secondary metrics (all {base['query_count']} golden queries)",
             "  metric      default → refit (Δ)"]
    for metric, k, before in block_items(base, metrics=SECONDARY_METRICS):
        after = metric.of_block(refit, metric.aggregate_key, k)
        label = metric_label(metric.full_name(k))
        lines.append(f"  {label:<11} {before:.3f} → {after:.3f} ({after - before:+.3f})")
    lines += [f"  DEGRADED: {v}" for v in sec["violations"]]
    return lines


def _impact(r: Mapping[str, Any]) -> list[str]:
    imp = r["per_query_impact"]
    worst = ("" if imp["worst_id"] is None
             else f"   worst Δ nDCG@5: {imp['worst_delta']:+.4f} ({imp['worst_id']})")
    return ["## Per-query impact (refit vs default)",
            f"  improved: {imp['improved']}   degraded: {imp['degraded']}{worst}"]


def _verdict(r: Mapping[str, Any]) -> list[str]:
    v = r["verdict"]
    lines = ["## Verdict"]
    if v["decision"] == "adopt":
        lines += [
            f"  Recommendation: {label_of(v['condition'])}",
            "  Confirm it with `groove eval` (with your reranker, if you use one) before relying",
            "  on it. Add to groove.toml:",
            "",
            *v["toml_snippet"].splitlines(),
            "",
            "  or run groove tune --write",
        ]
        return lines
    lines.append(f"  Recommendation: keep the built-in defaults "
                 f"({label(default_condition(r['space']))}).")
    lines += [f"    - {reason}" for reason in v["reasons"]]
    return lines


def render_tune_summary(report: Mapping[str, Any]) -> str:
    """The default text output: what was tuned, the verdict and the evidence behind it, in a
    dozen lines; the full §9 report is one `--verbose` away."""
    loo = report["loo"]
    se = loo["paired_se"]
    lines = [
        f"groove tune — {report['kb_path']}   space: {report['space']}   "
        f"{report['effective_query_count']} of {report['query_count']} queries effective   "
        f"metric: nDCG@{report['primary_k']}",
        f"  best condition: {label_of(loo['refit'])}",
        f"  held-out Δ nDCG@{report['primary_k']}: {_signed(loo['mean_delta'], 4)} "
        f"(paired SE {_fmt(se, 4) if se is not None else 'inf'}; adoption needs > "
        f"{ADOPT_MIN_MEAN_DELTA} and > {ADOPT_SE_MULTIPLIER} × SE)   "
        f"stability {loo['selection_stability']:.2f}",
        "",
        *_verdict(report)[1:],
        "",
        "  Full report (diagnostics, grid, CV, secondary metrics): groove tune --verbose",
    ]
    return "\n".join(lines) + "\n"


def render_tune_text(report: Mapping[str, Any]) -> str:
    """The §9 text report: header, then the sections in spec order, ending with a newline."""
    sections = [_header(report), _diagnostics(report["diagnostics"]), _grid(report),
                _loo(report), _secondary(report), _impact(report), _verdict(report)]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
