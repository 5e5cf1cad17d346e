"""The verdict (tune.md §8): adopt the refit condition only when all five criteria hold."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from groove_cli.arrays import FloatArray
from groove_cli.evaluate.metrics import METRICS, QueryMetrics, metric_keys, metric_label
from groove_cli.evaluate.tune.grid import (
    ADOPT_MIN_MEAN_DELTA,
    ADOPT_SE_MULTIPLIER,
    PRIMARY_METRIC,
    STABILITY_MIN,
    TIE_EPS,
    Condition,
    default_index,
    grid,
    toml_snippet,
)
from groove_cli.evaluate.tune.select import LooResult
from groove_cli.evaluate.tune.sweep import SweepScores

# --------------------------------------------------------------------------- verdict (§8)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Mean metrics over the usable queries for one condition (eval.md's aggregate, no CIs)."""

    metrics: QueryMetrics
    k_values: tuple[int, ...]
    query_count: int


def aggregate(sweep: SweepScores, condition: int) -> Aggregate:
    """Aggregate of one condition over every query of the sweep."""
    n = len(sweep.query_ids)

    def mean(values: FloatArray) -> float:
        return float(values.mean()) if n else 0.0

    at_k = {m.name: {k: mean(sweep.scores[m.name][i, condition])
                     for i, k in enumerate(sweep.k_values)} for m in METRICS if m.at_k}
    whole = {m.name: mean(sweep.scores[m.name][condition]) for m in METRICS if not m.at_k}
    return Aggregate(QueryMetrics(at_k, whole), sweep.k_values, n)


@dataclass(frozen=True, slots=True)
class Impact:
    """Per-query nDCG@5 change of the refit against the default over all usable queries."""

    improved: int
    degraded: int
    worst_delta: float | None
    worst_id: str | None


def per_query_impact(sweep: SweepScores, refit: int) -> Impact:
    """Improved / degraded counts (|Δ| > 1e-12) and the lowest Δ with its query (first on ties)."""
    default = default_index(sweep.space)
    deltas = [float(d) for d in sweep.ndcg5[refit] - sweep.ndcg5[default]]
    if not deltas:
        return Impact(0, 0, None, None)
    worst = min(range(len(deltas)), key=lambda i: (deltas[i], i))
    return Impact(sum(1 for d in deltas if d > TIE_EPS), sum(1 for d in deltas if d < -TIE_EPS),
                  deltas[worst], sweep.query_ids[worst])


def secondary_violations(baseline: Aggregate, refit: Aggregate) -> list[str]:
    """Criterion 5: a reason per secondary metric (every registered metric but the primary,
    at each k: recall@k, MRR) that drops by more than 1e-12."""
    reasons = []
    for metric, k in metric_keys(baseline.k_values):
        if metric.name == PRIMARY_METRIC:
            continue
        before, after = baseline.metrics.value(metric, k), refit.metrics.value(metric, k)
        if before - after > TIE_EPS:
            reasons.append(f"{metric_label(metric.full_name(k))} would drop from {before:.3f} "
                           f"to {after:.3f}")
    return reasons


@dataclass(frozen=True, slots=True)
class Verdict:
    """Adopt the refit or keep the defaults, with the evidence behind the decision."""

    decision: Literal["adopt", "keep_default"]
    refit: Condition
    reasons: tuple[str, ...]
    toml_snippet: str | None
    baseline: Aggregate
    refit_metrics: Aggregate
    violations: tuple[str, ...]
    impact: Impact


def verdict(sweep: SweepScores, loo: LooResult) -> Verdict:
    """Apply the five adoption criteria of §8; every failed one contributes its reason."""
    space = sweep.space
    refit = grid(space)[loo.refit]
    baseline = aggregate(sweep, default_index(space))
    refit_metrics = aggregate(sweep, loo.refit)
    violations = secondary_violations(baseline, refit_metrics)
    mean, se = loo.mean_delta, loo.paired_se
    reasons: list[str] = []
    if loo.refit == default_index(space):
        reasons.append("the refit selection is the built-in default")
    if not mean > ADOPT_MIN_MEAN_DELTA:
        reasons.append(f"held-out mean delta {mean:.4f} is not above {ADOPT_MIN_MEAN_DELTA}")
    bar = ADOPT_SE_MULTIPLIER * se
    if not (math.isfinite(bar) and mean > bar):
        reasons.append(f"held-out mean delta {mean:.4f} is not above {ADOPT_SE_MULTIPLIER} × "
                       f"paired SE ({bar:.4f})")
    if not loo.stability > STABILITY_MIN:
        reasons.append(f"selection stability {loo.stability:.2f} is not above {STABILITY_MIN}")
    reasons += violations
    adopt = not reasons
    return Verdict(
        decision="adopt" if adopt else "keep_default",
        refit=refit,
        reasons=tuple(reasons),
        toml_snippet=toml_snippet(refit) if adopt else None,
        baseline=baseline,
        refit_metrics=refit_metrics,
        violations=tuple(violations),
        impact=per_query_impact(sweep, loo.refit),
    )


