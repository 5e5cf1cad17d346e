"""Paired statistics between two eval runs over the same golden queries.

Two runs of one golden file score the same queries, so the right question is not "do the two
means differ" but "how does each query's score move": the per-query delta. Everything here
works on plain run dicts (history/baseline shape, eval.md §7), so history runs, baseline files
and ablation runs are compared the same way:

- `paired_delta`: the mean of the per-query deltas of one metric with a 95 % paired bootstrap
  CI (the spec's resampling, eval.md §5, applied to the deltas);
- `randomization_p`: a two-sided paired randomization (sign-flip) test, as ranx and
  ir_measures users know it;
- `holm`: Holm's step-down correction of several p-values;
- `significantly_worse`: the one rule the CI gate (baseline.py), `eval compare` and `--ablate`
  share: Δ < 0 with a randomization p below ALPHA. The gate tests one pre-declared metric, so
  it reads the raw p; compare also shows Holm's p for reading several metrics at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from groove_cli.evaluate.history import is_judged
from groove_cli.evaluate.metrics import (
    BY_NAME,
    GATE_FALLBACK,
    GATE_METRIC,
    METRICS,
    parse_metric,
)
from groove_cli.evaluate.stats import bootstrap_ci

PERMUTATIONS = 10_000
"""Sign-flip resamples of the randomization test (seeded: p-values are reproducible)."""
ALPHA = 0.05
"""Significance level of `significantly_worse` (two-sided p)."""

def check_metric(name: str) -> str:
    """Normalise a metric name (`recall@K`, `mrr`, `ndcg@K`, any case); ValueError otherwise."""
    lowered = name.strip().lower()
    try:
        parse_metric(lowered)
    except ValueError:
        forms = [f"{m.name}@K" if m.at_k else m.name for m in METRICS]
        raise ValueError(f"unknown metric {name!r} (expected "
                         f"{', '.join(forms[:-1])} or {forms[-1]})") from None
    return lowered


def default_metric(k_values: Sequence[int]) -> str:
    """The primary metric of the gate: `GATE_METRIC` (nDCG) at the largest k, `GATE_FALLBACK`
    (MRR) when every k is 0."""
    largest = max(k_values) if k_values else 0
    return BY_NAME[GATE_METRIC].full_name(largest) if largest > 0 else GATE_FALLBACK


def query_value(entry: Mapping[str, Any], name: str) -> float | None:
    """One query's value of `name` from its `metrics` block; None when the run lacks it."""
    metrics = entry.get("metrics")
    if not isinstance(metrics, dict):
        return None
    try:
        metric, k = parse_metric(name)
    except ValueError:
        return None
    value = metric.of_block(metrics, metric.query_key, k)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def run_has_metric(run: Mapping[str, Any], name: str) -> bool:
    """Whether the run was scored at the k that `name` needs (a whole-list metric always is)."""
    try:
        metric, k = parse_metric(name)
    except ValueError:
        return False
    if not metric.at_k:
        return True
    k_values = run.get("fingerprint", {}).get("k_values") or []
    return k in [int(k) for k in k_values]


def _counted(run: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Queries that count in aggregates (a relevant expected entry), by id."""
    return {str(e["id"]): e for e in run.get("per_query", []) if is_judged(e)}


@dataclass(frozen=True, slots=True)
class PairedDelta:
    """One metric compared query by query: means over the paired queries, delta, its 95 %
    paired bootstrap CI (effect size) and the two-sided paired randomization p (the test)."""

    metric: str
    before: float
    after: float
    delta: float
    ci95: tuple[float, float] | None
    pairs: int
    deltas: tuple[float, ...]
    p: float = 1.0
    """`randomization_p(deltas)`."""

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "before": self.before, "after": self.after,
                "delta": self.delta, "ci95": None if self.ci95 is None else list(self.ci95),
                "p": self.p, "pairs": self.pairs}


def paired_ids(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Ids of the queries counted in both runs, in the order of `after`."""
    old = _counted(before)
    return [qid for qid in _counted(after) if qid in old]


def paired_delta(before: Mapping[str, Any], after: Mapping[str, Any], metric: str) -> PairedDelta:
    """Mean per-query delta (after − before) of `metric` with its paired bootstrap CI.

    Queries are matched by id; only queries with expected entries in both runs take part.
    A query missing the metric counts as 0.0 (as a missing k does in the history diff).
    """
    old, new = _counted(before), _counted(after)
    ids = paired_ids(before, after)
    b = [query_value(old[i], metric) or 0.0 for i in ids]
    a = [query_value(new[i], metric) or 0.0 for i in ids]
    deltas = [y - x for x, y in zip(b, a, strict=True)]
    n = len(ids)
    ci = bootstrap_ci({"delta": deltas})["delta"]
    return PairedDelta(metric=metric, before=sum(b) / n if n else 0.0,
                       after=sum(a) / n if n else 0.0, delta=sum(deltas) / n if n else 0.0,
                       ci95=ci, pairs=n, deltas=tuple(deltas), p=randomization_p(deltas))


def randomization_p(deltas: Sequence[float], *, permutations: int = PERMUTATIONS,
                    seed: int = 0) -> float:
    """Two-sided paired randomization test of "the mean delta is 0".

    Under the null hypothesis each query's two scores are exchangeable, so each delta's sign
    is a coin flip. p = (1 + #{flips with |mean| ≥ |observed mean|}) / (1 + permutations);
    1.0 when there are no deltas or all are 0.
    """
    values = np.asarray(deltas, dtype=np.float64)
    if values.size == 0 or not np.any(values):
        return 1.0
    observed = abs(float(values.mean()))
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, permutations, 1000):
        count = min(1000, permutations - start)
        signs = rng.integers(0, 2, size=(count, values.size), dtype=np.int8) * 2 - 1
        means = np.abs((signs * values).mean(axis=1))
        extreme += int(np.count_nonzero(means >= observed - 1e-12))
    return (1 + extreme) / (1 + permutations)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (same order as given, monotone, capped at 1)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def significantly_worse(delta: PairedDelta) -> bool:
    """The mean delta is below 0 and the two-sided paired randomization test rejects "no
    difference" at ALPHA: the gate's rule and `eval compare`'s, so the two never disagree on
    the same two runs (the bootstrap CI is reported beside it as the effect's size; a
    percentile CI can exclude 0 on a few dozen skewed deltas while the exact test does not)."""
    return delta.delta < 0 and math.isfinite(delta.p) and delta.p < ALPHA
