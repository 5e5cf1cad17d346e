"""Assemble an eval run (history record) and the JSON report from per-query results (eval.md §4,
§7, §10).

Everything here is plain dicts in the documented key order, so the history file, the JSON
output and the text renderer all read the same structure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_cli.evaluate.golden import Expected, GoldenQuery
from groove_cli.evaluate.history import corpus_changed, diff_aggregates, query_regressions
from groove_cli.evaluate.metrics import HitRecord, QueryMetrics, metric_blocks, metric_keys
from groove_cli.evaluate.stats import bootstrap_ci
from groove_cli.messages import Message

if TYPE_CHECKING:
    from groove_cli.evaluate.baseline import Comparison


def format_timestamp(moment: datetime) -> str:
    """UTC with microseconds and a `Z`: `2026-08-21T10:00:00.123456Z` (naive means UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def utc_timestamp() -> str:
    """The current time in the run timestamp format."""
    return format_timestamp(datetime.now(UTC))


def _mean(values: Sequence[float]) -> float:
    """sum / n (added left to right, as the bootstrap does); 0.0 for no values."""
    return sum(values) / len(values) if values else 0.0


def _ci(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def aggregate(
    per_query: Sequence[QueryMetrics], expected_counts: Sequence[int], k_values: Sequence[int]
) -> dict[str, Any]:
    """The aggregate block: means over queries with a non-empty expected list, with 95 % CIs.

    Args:
        per_query: each query's metrics, in file order.
        expected_counts: each query's number of expected entries (same order); queries with 0
            are left out of every mean.
        k_values: the normalised k list.

    Returns:
        every metric's block (`metrics.METRICS`: `recall_at_k`, `mrr`, `ndcg_at_k`), then
        `query_count` and `ci95` (the same blocks) with string k keys; means are 0.0 and
        intervals null when no query counts.
    """
    if len(per_query) != len(expected_counts):
        raise ValueError("per_query and expected_counts differ in length")
    counted = [m for m, n in zip(per_query, expected_counts, strict=True) if n > 0]
    series: dict[str, list[float]] = {
        m.full_name(k): [q.value(m, k) for q in counted] for m, k in metric_keys(k_values)}
    ci = bootstrap_ci(series)
    return {
        **metric_blocks(k_values, lambda m, k: _mean(series[m.full_name(k)])),
        "query_count": len(counted),
        "ci95": metric_blocks(k_values, lambda m, k: _ci(ci[m.full_name(k)])),
    }


def _metrics_block(metrics: QueryMetrics, k_values: Sequence[int]) -> dict[str, Any]:
    return metric_blocks(k_values, metrics.value, key="query")


def _expected_block(entry: Expected) -> dict[str, Any]:
    """`{path, heading}`, plus `grade` when it is not the binary default 1."""
    block: dict[str, Any] = {"path": entry.path, "heading": entry.heading}
    if entry.grade != 1:
        block["grade"] = entry.grade
    return block


def build_run(
    *,
    timestamp: str,
    fingerprint: Mapping[str, object],
    corpus: Mapping[str, object],
    queries: Sequence[GoldenQuery],
    hits: Sequence[Sequence[HitRecord]],
    metrics: Sequence[QueryMetrics],
    k_values: Sequence[int],
    limit: int,
    findings: Sequence[Mapping[str, object]] = (),
) -> dict[str, Any]:
    """One EvalRun as stored in the history.

    Args:
        timestamp: from `utc_timestamp()`.
        fingerprint: from `build_fingerprint`.
        corpus: `{documents, chunks, digest}`.
        queries: the golden queries in file order.
        hits: each query's hits in rank order (parallel to `queries`).
        metrics: each query's metrics (parallel to `queries`).
        k_values: the normalised k list.
        limit: how many hits per query are recorded as `top_k`.
        findings: §9 findings; the member is omitted when there are none.

    Returns:
        `{timestamp, fingerprint, corpus, per_query, aggregate[, findings]}`.
    """
    if not len(queries) == len(hits) == len(metrics):
        raise ValueError("queries, hits and metrics differ in length")
    per_query = [
        {
            "id": query.id,
            "query": query.query,
            "expected": [_expected_block(e) for e in query.expected],
            "top_k": [
                {"rank": h.rank, "path": h.path, "heading": h.heading, "score": h.score}
                for h in query_hits[:limit]
            ],
            "metrics": _metrics_block(query_metrics, k_values),
        }
        for query, query_hits, query_metrics in zip(queries, hits, metrics, strict=True)
    ]
    run: dict[str, Any] = {
        "timestamp": timestamp,
        "fingerprint": dict(fingerprint),
        "corpus": dict(corpus),
        "per_query": per_query,
        "aggregate": aggregate(metrics, [sum(e.grade > 0 for e in q.expected) for q in queries],
                               k_values),
    }
    if findings:
        run["findings"] = [dict(f) for f in findings]
    return run


def _k_max(run: Mapping[str, Any]) -> int:
    k_values = run["fingerprint"].get("k_values") or [0]
    return max(int(k) for k in k_values)


def build_json_report(
    run: Mapping[str, Any],
    compared: Mapping[str, Any] | None,
    *,
    threshold: float,
    show_diff: bool = True,
) -> dict[str, Any]:
    """The §10 JSON report of a run against the compared run (None: nothing to compare).

    Args:
        run: this run, from `build_run`.
        compared: the run from `history.find_compared`, or None (no history, `--no-history`,
            no compatible run).
        threshold: `[eval].regression_threshold`, for the per-query regressions.
        show_diff: False for `--no-diff`: `previous`, `diff` and `regressions` become null.

    Returns:
        `{timestamp, fingerprint, corpus, corpus_changed, aggregate, per_query, findings,
        previous, diff, regressions}`. The text renderer takes the report built with
        show_diff=True and hides the diff itself.
    """
    changed: bool | None = None
    diff: dict[str, Any] | None = None
    regressions: list[dict[str, Any]] | None = None
    if compared is not None:
        changed = corpus_changed(compared["corpus"], run["corpus"])
        diff = diff_aggregates(compared["aggregate"], run["aggregate"])
        regressions = query_regressions(compared, run, _k_max(run), threshold)
    if not show_diff:
        compared, diff, regressions = None, None, None
    return {
        "timestamp": run["timestamp"],
        "fingerprint": run["fingerprint"],
        "corpus": run["corpus"],
        "corpus_changed": changed,
        "aggregate": run["aggregate"],
        "per_query": run["per_query"],
        "findings": list(run.get("findings", [])),
        "previous": None if compared is None else dict(compared),
        "diff": diff,
        "regressions": regressions,
    }


@dataclass(frozen=True, slots=True)
class EvalReport:
    """One eval run, what it was compared with, and the gate's outcome.

    `to_json()` is the §10 document `--format json` prints (diff members null under
    --no-diff), with a `comparison` member when a baseline or the gate's history fallback was
    compared (eval.md §11); `full_json()` keeps the diff, which the text renderer hides itself.
    """

    run: Mapping[str, Any]
    """The run as stored in the history (`build_run`)."""
    compared: Mapping[str, Any] | None
    """The previous compatible run, or None (no history, --no-history, none compatible)."""
    threshold: float
    no_diff: bool = False
    no_history: bool = False
    incompatibility: str | None = None
    """The header naming why older runs are not comparable, if any."""
    regression_error: str | None = None
    """The --fail-on-regression error text: a metric fell beyond the threshold, or the
    baseline gate found a significant drop above --max-drop."""
    comparison: Comparison | None = None
    """Against `--baseline`, or the gate's history fallback; None when neither applies."""
    golden: Path | None = None
    """The golden file that was read (the JUnit suite and the Markdown title name it)."""
    messages: tuple[Message, ...] = ()
    """The warnings and notes the run gave (the public API returns them; the CLI prints them)."""

    @property
    def show_diff(self) -> bool:
        """Whether the text report shows the diff."""
        return not (self.no_diff or self.no_history)

    def to_json(self) -> dict[str, Any]:
        return self._with_comparison(build_json_report(
            self.run, self.compared, threshold=self.threshold, show_diff=not self.no_diff))

    def full_json(self) -> dict[str, Any]:
        return self._with_comparison(build_json_report(
            self.run, self.compared, threshold=self.threshold, show_diff=True))

    def _with_comparison(self, document: dict[str, Any]) -> dict[str, Any]:
        if self.comparison is not None:
            document["comparison"] = self.comparison.to_json()
        return document


def report_json_text(report: Mapping[str, Any]) -> str:
    """The report as one JSON document: 2-space indent, non-ASCII kept, trailing newline."""
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
