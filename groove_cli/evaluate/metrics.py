"""Retrieval metrics as data: a registry of recall@k, MRR and nDCG@k (eval.md §3, §4).

Each `Metric` carries its name, whether it is scored at each k or once over the whole list,
whether it uses grades, its JSON keys and labels, and two forms of one formula: `scalar` scores
one ranked list (eval) and `vectorised` many lists at once with numpy (tune's sweep); a property
test (tests/test_metrics_registry.py) checks that the two agree for every registered metric.
eval's report, history, baseline, pairing and comparison, tune and the renderers loop over
`METRICS`, so adding a metric is one entry here, its two forms and its test.

The formulas are versioned by `METRIC_VERSION`, which is part of the run fingerprint so that
runs scored differently are never compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from groove_cli.evaluate.golden import Expected

if TYPE_CHECKING:

    from groove_cli.arrays import BoolArray, FloatArray

METRIC_VERSION = 1
"""Bump when any formula in this module changes; old history runs then stop being comparable."""


@dataclass(frozen=True, slots=True)
class HitRecord:
    """One returned hit as eval records it: 1-based rank, path, chunk heading, score."""

    rank: int
    path: str
    heading: str | None
    score: float


@dataclass(frozen=True, slots=True)
class QueryMetrics:
    """Metric values keyed by metric name: `at_k` for the metrics scored at each k (then by k),
    `whole` for those scored once over the whole list. Also tune's means of a condition."""

    at_k: dict[str, dict[int, float]] = field(default_factory=dict)
    whole: dict[str, float] = field(default_factory=dict)

    def value(self, metric: Metric, k: int | None) -> float:
        """The value of `metric` (at `k` when it is scored at each k)."""
        if metric.at_k:
            assert k is not None, metric.name
            return self.at_k[metric.name][k]
        return self.whole[metric.name]


@dataclass(frozen=True, slots=True)
class Ranked:
    """R ranked lists scored against one query's relevant entries, for the vectorised forms.

    `rel[r, p, e]` says whether the hit at 0-based position p of list r matches entry e (False
    on padding); `has_heading[e]` whether entry e names a heading; `grades[e]` its grade, None
    for binary relevance (every entry gain 1, as tune scores: tune.md §2).
    """

    rel: BoolArray
    has_heading: BoolArray
    grades: FloatArray | None = None


Scalar = Callable[[Sequence[Expected], Sequence[HitRecord], int], float]
"""One list's value from the query's relevant entries (grade > 0) and its hits; the k
argument is ignored by a metric scored over the whole list."""
Vectorised = Callable[[Ranked, Sequence[int]], "FloatArray"]
"""R lists' values: shape (len(k_values), R) for a metric scored at each k, else (R,)."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One registered metric.

    Attributes:
        name: the stem of its names: `recall` gives `recall@5`, `mrr` is `mrr`.
        label: its display stem (`recall@5`, `MRR`, `nDCG@10`).
        at_k: scored at each k (recall@k) or once over the whole list (MRR).
        graded: uses the entries' grades as gains (nDCG) or binary relevance.
        aggregate_key: its key in a run's `aggregate`, `ci95` and `diff` blocks.
        query_key: its key in a query's `metrics` block.
        query_label: its label in a per-query line, for a metric scored over the whole list.
        summary: which k eval's text summary shows: every k, or the largest only.
        scalar, vectorised: the two forms of the formula.
    """

    name: str
    label: str
    at_k: bool
    graded: bool
    aggregate_key: str
    query_key: str
    query_label: str
    summary: Literal["every_k", "largest_k"]
    scalar: Scalar
    vectorised: Vectorised

    def names(self, k_values: Iterable[int]) -> list[str]:
        """Its full names for a run's k list."""
        return [f"{self.name}@{k}" for k in k_values] if self.at_k else [self.name]

    def full_name(self, k: int | str | None) -> str:
        return f"{self.name}@{k}" if self.at_k else self.name

    def query_name(self, k: int | str | None) -> str:
        """Its name in per-query data (regressions, JUnit): `recall@5`, `reciprocal_rank`."""
        return f"{self.name}@{k}" if self.at_k else self.query_key

    def of_block(self, block: Mapping[str, Any], key: str, k: int | str | None) -> Any:
        """Its value in a JSON block (`aggregate`, `ci95`, `diff`, a query's `metrics`) under
        `key`; None when absent."""
        value = block.get(key)
        if not self.at_k:
            return value
        return value.get(str(k)) if isinstance(value, dict) else None


def heading_matches(expected: Expected, hit: HitRecord) -> bool:
    """The hit rule: same path and, when the entry names a heading, the same heading."""
    return entry_matches((expected.path, expected.heading), (hit.path, hit.heading))


def entry_matches(entry: tuple[str, str | None], hit: tuple[str, str | None]) -> bool:
    """The hit rule on `(path, heading)` pairs (eval.md §3).

    Headings compare after `strip().lower()`; inner whitespace is kept. A hit without a heading
    never satisfies an entry that names one.
    """
    path, heading = entry
    if path != hit[0]:
        return False
    if heading is None:
        return True
    return hit[1] is not None and heading.strip().lower() == hit[1].strip().lower()


def recall_at_k(expected: Sequence[Expected], hits: Sequence[HitRecord], k: int) -> float:
    """Share of expected entries matched by some hit in the first k (entries judged separately)."""
    top = hits[:k] if k > 0 else ()
    if not expected or not top:
        return 0.0
    found = sum(1 for e in expected if any(heading_matches(e, h) for h in top))
    return found / len(expected)


def reciprocal_rank(expected: Sequence[Expected], hits: Sequence[HitRecord]) -> float:
    """1 / rank of the first hit matching any entry, over the whole list; 0 when none does."""
    for position, hit in enumerate(hits, start=1):
        if any(heading_matches(e, hit) for e in expected):
            return 1.0 / position
    return 0.0


def _discount(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def ndcg_at_k(expected: Sequence[Expected], hits: Sequence[HitRecord], k: int) -> float:
    """nDCG@k with graded gains and one-to-one greedy matching of hits to expected entries.

    nDCG is from Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002; the gain of an entry is its grade (linear gain, as trec_eval's
    `ndcg` and ranx's `ndcg` use; 1 for every entry of a binary golden file). Each hit may
    consume one not-yet-consumed relevant entry it matches, preferring the highest grade, then
    an entry that names a heading, then the lowest index: a hit on `a.md#Setup` should satisfy
    the heading entry and leave the path-only entry for another chunk of `a.md`.

    Args:
        expected: the query's expected entries (E); grade-0 entries never count.
        hits: the returned hits in rank order.
        k: the cut-off; 0 gives 0.

    Returns:
        DCG / IDCG with IDCG = Σ_{i=1..min(|E|, k)} gain_i / log2(i + 1) over the gains sorted
        in descending order; 0 when k = 0 or no entry is relevant.
    """
    relevant = [e for e in expected if e.grade > 0]
    if k <= 0 or not relevant:
        return 0.0
    consumed = [False] * len(relevant)
    dcg = 0.0
    for position, hit in enumerate(hits[:k], start=1):
        choice = _pick_entry(relevant, consumed, hit)
        if choice is not None:
            consumed[choice] = True
            dcg += relevant[choice].grade * _discount(position)
    gains = sorted((e.grade for e in relevant), reverse=True)[:k]
    idcg = sum(g * _discount(i) for i, g in enumerate(gains, start=1))
    return dcg / idcg


def _pick_entry(expected: Sequence[Expected], consumed: list[bool], hit: HitRecord) -> int | None:
    """The entry a hit consumes: the unconsumed match with the highest grade, then one with a
    heading, then the lowest index."""
    best: int | None = None
    for index, entry in enumerate(expected):
        if consumed[index] or not heading_matches(entry, hit):
            continue
        if best is None or (entry.grade, entry.heading is not None) > (
                expected[best].grade, expected[best].heading is not None):
            best = index
    return best


def _reciprocal_rank(expected: Sequence[Expected], hits: Sequence[HitRecord], k: int) -> float:
    return reciprocal_rank(expected, hits)


# --------------------------------------------------------------------------- many ranked lists at once (tune)


def _any_rel(ranked: Ranked) -> BoolArray:
    import numpy as np

    found: BoolArray = np.asarray(ranked.rel.any(axis=2))
    return found


def recall_vectorised(ranked: Ranked, k_values: Sequence[int]) -> FloatArray:
    """recall@k of R lists: (len(k), R)."""
    import numpy as np

    n_rows, depth, n_entries = ranked.rel.shape
    recall = np.zeros((len(k_values), n_rows))
    if n_entries == 0 or depth == 0:
        return recall
    seen = np.logical_or.accumulate(ranked.rel, axis=1)
    for i, k in enumerate(k_values):
        if k > 0:
            recall[i] = seen[:, min(k, depth) - 1].sum(axis=1) / n_entries
    return recall


def rr_vectorised(ranked: Ranked, k_values: Sequence[int]) -> FloatArray:
    """The reciprocal rank of R lists: (R,)."""
    import numpy as np

    n_rows, depth, n_entries = ranked.rel.shape
    if n_entries == 0 or depth == 0:
        return np.zeros(n_rows)
    any_rel = _any_rel(ranked)
    first = np.argmax(any_rel, axis=1)
    found = any_rel[np.arange(n_rows), first]
    rr: FloatArray = np.where(found, 1.0 / (first + 1.0), 0.0)
    return rr


def ndcg_vectorised(ranked: Ranked, k_values: Sequence[int]) -> FloatArray:
    """nDCG@k of R lists: (len(k), R).

    Walks the positions in rank order with the one-to-one greedy matching of eval.md §4 (a hit
    consumes the unconsumed entry it matches with the highest grade, then one with a heading,
    then the lowest index); DCG is summed in rank order exactly like `ndcg_at_k`.
    """
    import numpy as np

    n_rows, depth, n_entries = ranked.rel.shape
    ks = list(k_values)
    ndcg = np.zeros((len(ks), n_rows))
    if n_entries == 0 or depth == 0:
        return ndcg
    rel, has_heading = ranked.rel, ranked.has_heading
    # the greedy preference as one number per entry: grade first, then a heading
    grades = np.ones(n_entries) if ranked.grades is None else ranked.grades
    preference = grades * 2.0 + has_heading
    any_rel = _any_rel(ranked)
    consumed = np.zeros((n_rows, n_entries), dtype=bool)
    dcg = np.zeros(n_rows)
    dcg_at: dict[int, FloatArray] = {}
    max_k = max((k for k in ks if k > 0), default=0)
    for position in range(min(depth, max_k)):
        if any_rel[:, position].any():
            open_match = rel[:, position, :] & ~consumed
            takes = open_match.any(axis=1)
            choice = np.argmax(np.where(open_match, preference[None, :], -1.0), axis=1)
            taking = np.nonzero(takes)[0]
            consumed[taking, choice[taking]] = True
            gain = 1.0 if ranked.grades is None else grades[choice]
            dcg = dcg + np.where(takes, gain * _discount(position + 1), 0.0)
        dcg_at[position + 1] = dcg
    ideal = sorted(grades.tolist(), reverse=True)
    for i, k in enumerate(ks):
        if k <= 0:
            continue
        if ranked.grades is None:
            idcg = sum(_discount(j) for j in range(1, min(n_entries, k) + 1))
        else:
            idcg = sum(g * _discount(j) for j, g in enumerate(ideal[:k], start=1))
        ndcg[i] = dcg_at.get(min(k, depth), dcg) / idcg
    return ndcg


# --------------------------------------------------------------------------- the registry

METRICS: tuple[Metric, ...] = (
    Metric("recall", "recall", at_k=True, graded=False, aggregate_key="recall_at_k",
           query_key="recall_at_k", query_label="recall", summary="every_k",
           scalar=recall_at_k, vectorised=recall_vectorised),
    Metric("mrr", "MRR", at_k=False, graded=False, aggregate_key="mrr",
           query_key="reciprocal_rank", query_label="RR", summary="every_k",
           scalar=_reciprocal_rank, vectorised=rr_vectorised),
    Metric("ndcg", "nDCG", at_k=True, graded=True, aggregate_key="ndcg_at_k",
           query_key="ndcg_at_k", query_label="nDCG", summary="largest_k",
           scalar=ndcg_at_k, vectorised=ndcg_vectorised),
)
"""Every metric, in report order."""
BY_NAME = {m.name: m for m in METRICS}

GATE_METRIC = "ndcg"
"""The baseline gate's primary metric at the largest k (eval.md §9) ..."""
GATE_FALLBACK = "mrr"
"""... or this one when every k is 0."""
MISS_METRIC = "recall"
"""A query is a miss when this metric at the largest k is 0 (eval.md §5)."""


def metric_keys(k_values: Sequence[int]) -> list[tuple[Metric, int | None]]:
    """Every (metric, k) of a run in report order: recall@k…, mrr, ndcg@k…."""
    return [(m, k) for m in METRICS for k in (k_values if m.at_k else (None,))]


def metric_names(k_values: Sequence[int]) -> list[str]:
    """Every metric name of a run in report order: `recall@1`…, `mrr`, `ndcg@1`…."""
    return [m.full_name(k) for m, k in metric_keys(k_values)]


def parse_metric(name: str) -> tuple[Metric, int | None]:
    """(metric, k) of a full name (`recall@5`, `mrr`, `ndcg@10`; lower case); ValueError."""
    stem, at, k = name.partition("@")
    found = BY_NAME.get(stem)
    if found is None or found.at_k != bool(at) or (at and not (k.isascii() and k.isdigit())):
        raise ValueError(name)
    return found, int(k) if at else None


def metric_label(name: str) -> str:
    """The display label of a full name: `recall@5`, `MRR`, `nDCG@10` (an unknown name as is)."""
    try:
        metric, k = parse_metric(name)
    except ValueError:
        return name
    return f"{metric.label}@{k}" if metric.at_k else metric.label


def query_metric_label(name: str) -> str:
    """The label of a per-query name (`query_name`): `recall@5`, `RR`, `nDCG@10`."""
    for metric in METRICS:
        if not metric.at_k and name == metric.query_key:
            return metric.query_label
    return metric_label(name)


def metric_blocks(k_values: Sequence[int], value_of: Callable[[Metric, int | None], object], *,
                  key: Literal["aggregate", "query"] = "aggregate",
                  metrics: Sequence[Metric] = METRICS) -> dict[str, Any]:
    """The JSON blocks of `metrics` (string k keys), each value from `value_of(metric, k)`."""
    out: dict[str, Any] = {}
    for m in metrics:
        name = m.aggregate_key if key == "aggregate" else m.query_key
        out[name] = ({str(k): value_of(m, k) for k in k_values} if m.at_k
                     else value_of(m, None))
    return out


def block_items(block: Mapping[str, Any], *, key: Literal["aggregate", "query"] = "aggregate",
                metrics: Sequence[Metric] = METRICS) -> list[tuple[Metric, str | None, Any]]:
    """(metric, k as written, value) of every metric of a JSON block in report order, a
    k-block's entries in their written order (what the renderers loop over)."""
    out: list[tuple[Metric, str | None, Any]] = []
    for m in metrics:
        value = block.get(m.aggregate_key if key == "aggregate" else m.query_key)
        if not m.at_k:
            out.append((m, None, value))
        elif isinstance(value, dict):
            out.extend((m, k, v) for k, v in value.items())
    return out


def score_query(
    expected: Sequence[Expected], hits: Sequence[HitRecord], k_values: Iterable[int]
) -> QueryMetrics:
    """All registered metrics of one query.

    Args:
        expected: the query's expected entries; entries of grade 0 (judged not relevant)
            count in no metric, and grades are the gains of a graded metric.
        hits: every returned hit in rank order (the eval fetch depth, not cut at any k).
        k_values: the normalised k list.

    Returns:
        each metric at each k, or over the whole list.
    """
    ks = list(k_values)
    relevant = [e for e in expected if e.grade > 0]
    at_k = {m.name: {k: m.scalar(relevant, hits, k) for k in ks} for m in METRICS if m.at_k}
    whole = {m.name: m.scalar(relevant, hits, 0) for m in METRICS if not m.at_k}
    return QueryMetrics(at_k, whole)


def rank_metrics(ranked: Ranked, k_values: Sequence[int]) -> dict[str, FloatArray]:
    """Every registered metric of R ranked lists at once, by metric name (`Vectorised` shapes)."""
    ks = list(k_values)
    return {m.name: m.vectorised(ranked, ks) for m in METRICS}


def score_hits(expected: Sequence[tuple[str, str | None]], hits: Sequence[tuple[str, str | None]],
               k_values: Sequence[int]) -> QueryMetrics:
    """Every metric of one list of `(path, heading)` hits with the vectorised forms and binary
    relevance (`score_query` is the reference it must equal)."""
    import numpy as np

    rel = np.array([[[entry_matches(e, h) for e in expected] for h in hits]], dtype=bool)
    rel = rel.reshape(1, len(hits), len(expected))
    has_heading = np.array([e[1] is not None for e in expected], dtype=bool)
    scores = rank_metrics(Ranked(rel, has_heading), k_values)
    return QueryMetrics(
        {m.name: {k: float(scores[m.name][i, 0]) for i, k in enumerate(k_values)}
         for m in METRICS if m.at_k},
        {m.name: float(scores[m.name][0]) for m in METRICS if not m.at_k},
    )
