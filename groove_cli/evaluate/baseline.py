"""Committed eval baselines and the gate that compares a run with one (or with history).

A baseline is one eval run written to a file meant to be committed next to the golden file:
per-query metrics, aggregate, settings fingerprint, corpus digest and the groove version. A pull
request that changes settings is exactly what CI must judge, so a baseline is compared whatever
the settings, query by query, and the report names every setting that differs.

The gate fails only when the primary metric dropped by more than `max_drop` AND it is
significantly worse (`paired.significantly_worse`: the paired randomization test, the rule
`eval compare` shows): a drop within query-sampling noise is not a regression. A damaged
baseline is a usage error (exit 2): it must never pass or fail a build.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groove_cli import messages
from groove_cli.config import (
    DEFAULT_BM25_WEIGHTS,
    DEFAULT_LEG_WEIGHT,
    DEFAULT_MIN_SCORE,
    DEFAULT_RRF_K,
)
from groove_cli.errors import GrooveError
from groove_cli.evaluate import history
from groove_cli.evaluate.fingerprint import DEFAULT_MODE, implied_search_defaults
from groove_cli.evaluate.golden import RefusedFile, read_regular_file
from groove_cli.evaluate.metrics import metric_label
from groove_cli.evaluate.paired import (
    PairedDelta,
    default_metric,
    paired_delta,
    run_has_metric,
    significantly_worse,
)
from groove_cli.outfile import write_output

BASELINE_FORMAT = "groove-eval-baseline"
BASELINE_VERSION = 1
MAX_BASELINE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_DROP = 0.01

Run = dict[str, Any]

# What an absent optional fingerprint member means (eval.md §6), so a diff can say
# `retrieval.mode: hybrid → fts` rather than `(absent) → fts`.
_IMPLIED: dict[str, object] = {
    "max_length": "model default",
    "mmr": "off",
    "parent_retriever": "off",
    "fusion.rrf_k": DEFAULT_RRF_K,
    "fusion.bm25_heading_weight": DEFAULT_BM25_WEIGHTS[0],
    "fusion.bm25_context_weight": DEFAULT_BM25_WEIGHTS[1],
    "fusion.bm25_content_weight": DEFAULT_BM25_WEIGHTS[2],
    "fusion.method": "rrf",  # RRF's fingerprint has no fusion member (eval.md §6)
    "retrieval.preset": "none",
    "retrieval.mode": DEFAULT_MODE,
    "retrieval.dense_top_k": "default",
    "retrieval.sparse_top_k": "default",
    "retrieval.vector_weight": DEFAULT_LEG_WEIGHT,
    "retrieval.fts_weight": DEFAULT_LEG_WEIGHT,
    "retrieval.min_score": DEFAULT_MIN_SCORE,
    "context.mode": "off",
    "fingerprint_version": 1,
    **implied_search_defaults(),
}


class BaselineError(GrooveError):
    """A baseline file that cannot be used: missing, unreadable or damaged (exit 2)."""

    exit_code = 2


def save_baseline(path: Path, run: Mapping[str, Any], groove_version: str) -> None:
    """Write `run` as a baseline file (pretty JSON; outfile.py: atomically, never half-written,
    or as a stream to a FIFO or `-`)."""
    document = {"format": BASELINE_FORMAT, "version": BASELINE_VERSION,
                "groove_version": groove_version, **{k: run[k] for k in history.RUN_KEYS}}
    data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    write_output(path, data, flag="--save-baseline", what="baseline")


def load_baseline(path: Path, metric: str | None = None) -> Run:
    """Read and check a baseline file (and, given `metric`, that it was scored at its k).

    Returns:
        The stored run (`timestamp, fingerprint, corpus, per_query, aggregate`) plus
        `groove_version`.

    Raises:
        BaselineError: missing, unreadable, not a baseline, or damaged; the message names the
            file and the first problem.
    """
    def damaged(detail: str) -> BaselineError:
        return BaselineError(f"baseline {path} is damaged: {detail}",
                             hint="restore it from version control or write a new one with "
                                  "`groove eval --save-baseline FILE`")

    try:
        raw = read_regular_file(path, MAX_BASELINE_BYTES)
    except FileNotFoundError:
        raise BaselineError(f"no baseline file at {path}",
                            hint="write one with `groove eval --save-baseline FILE`") from None
    except RefusedFile as refused:
        raise BaselineError(f"refusing to read baseline {path}: {refused}") from None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    try:
        document = history.parse_json(raw)
    except ValueError as exc:
        raise damaged(str(exc)) from None
    if not isinstance(document, dict) or document.get("format") != BASELINE_FORMAT:
        raise damaged(f'not a groove baseline (no "format": "{BASELINE_FORMAT}")')
    if document.get("version") != BASELINE_VERSION:
        raise damaged(f"unsupported baseline version {document.get('version')!r} "
                      f"(this groove reads version {BASELINE_VERSION})")
    try:
        check_run(document)
    except ValueError as exc:
        raise damaged(str(exc)) from None
    run: Run = {k: document[k] for k in history.RUN_KEYS}
    run["groove_version"] = str(document.get("groove_version", "unknown"))
    if metric is not None and not run_has_metric(run, metric):
        ks = ",".join(str(k) for k in run["fingerprint"]["k_values"])
        raise BaselineError(f"baseline {path} has no {metric_label(metric)}: it was scored at "
                            f"k = {ks}", hint="pass --k with the baseline's k values, or "
                                              "--gate-metric with one it has")
    return run


def check_run(run: Mapping[str, Any]) -> None:
    """Check that a run has everything a paired comparison reads; ValueError naming the spot."""
    for name, kind in history.RUN_MEMBERS:
        if not isinstance(run.get(name), kind):
            raise ValueError(f"{name} is missing or of the wrong type")
    fingerprint = run["fingerprint"]
    k_values = fingerprint.get("k_values")
    if not isinstance(k_values, list) or not all(
            isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in k_values):
        raise ValueError("fingerprint.k_values is not a list of integers >= 0")
    if not isinstance(fingerprint.get("golden_hash"), str):
        raise ValueError("fingerprint.golden_hash is missing")
    if not isinstance(run["corpus"].get("digest"), str):
        raise ValueError("corpus.digest is missing")
    seen: set[str] = set()
    for i, entry in enumerate(run["per_query"]):
        where = f"per_query[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ValueError(f"{where}.id is missing")
        if entry["id"] in seen:
            raise ValueError(f'{where}: duplicate query id "{entry["id"]}"')
        seen.add(entry["id"])
        if not isinstance(entry.get("expected"), list):
            raise ValueError(f"{where}.expected is not a list")
        history.check_query_metrics(entry, where, required=True, k_values=k_values)
    history.check_aggregate(run["aggregate"], "aggregate")


def _flatten(fingerprint: Mapping[str, Any]) -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in fingerprint.items():
        if isinstance(value, dict) and key not in ("mmr", "parent_retriever"):
            for sub, inner in value.items():
                flat[f"{key}.{sub}"] = inner
        else:
            flat[key] = value
    return flat


def settings_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every fingerprint setting that differs: `[{setting, before, after}]`, absent optional
    members shown as what they imply (`retrieval.mode` → `hybrid`)."""
    old, new = _flatten(before), _flatten(after)
    names = list(old) + [name for name in new if name not in old]
    changes = []
    for name in names:
        a = old.get(name, _IMPLIED.get(name))
        b = new.get(name, _IMPLIED.get(name))
        if json.dumps(a) != json.dumps(b):
            changes.append({"setting": name, "before": a, "after": b})
    return changes


def value_text(value: object) -> str:
    """A setting value for messages: JSON without quotes around strings; hashes shortened."""
    if isinstance(value, str):
        return value[:12] if len(value) == 64 else value
    if isinstance(value, dict):
        return ", ".join(f"{k}={value_text(v)}" for k, v in value.items())
    return json.dumps(value)


def changes_text(changes: Sequence[Mapping[str, Any]]) -> str:
    """`retrieval.mode (hybrid → fts), retrieval.min_score (0.0 → 0.9)`."""
    return ", ".join(f"{c['setting']} ({value_text(c['before'])} → {value_text(c['after'])})"
                     for c in changes)


@dataclass(frozen=True, slots=True)
class Comparison:
    """A run compared with a reference run (a baseline file or a history run) on one metric."""

    against: str
    """`baseline` or `history`."""
    source: str
    """The baseline path, or the history run's timestamp."""
    reference_timestamp: str
    reference_version: str | None
    settings: tuple[dict[str, Any], ...]
    corpus_change: str | None
    """`history.corpus_change_text` of the two corpora; None when the digests are equal."""
    primary: PairedDelta
    max_drop: float
    regressed: bool
    enforced: bool = True
    """Whether --fail-on-regression was given (the verdict is reported either way)."""

    def to_json(self) -> dict[str, Any]:
        return {"against": self.against, "source": self.source,
                "reference_timestamp": self.reference_timestamp,
                "reference_groove_version": self.reference_version,
                "settings_diff": list(self.settings),
                "corpus_changed": self.corpus_change is not None,
                "corpus_change": self.corpus_change, "primary": self.primary.to_json(),
                "max_drop": self.max_drop, "regressed": self.regressed,
                "enforced": self.enforced}

    def error_text(self) -> str:
        """The gate's error message: what fell, by how much, and every difference in inputs."""
        p = self.primary
        where = f"baseline {self.source}" if self.against == "baseline" else \
            f"the run of {self.source} (same golden file and corpus)"
        assert p.ci95 is not None
        text = (f"retrieval-quality regression against {where}: {metric_label(p.metric)} fell "
                f"{p.before:.3f} → {p.after:.3f} (Δ {p.delta:+.3f}, 95% CI [{p.ci95[0]:+.3f}, "
                f"{p.ci95[1]:+.3f}], paired randomization p {p.p:.4f} over {p.pairs} queries), "
                f"more than --max-drop {self.max_drop:.3f}.")
        if self.settings:
            text += f" Settings that differ: {changes_text(self.settings)}."
        if self.corpus_change is not None:
            text += f" The corpus digest also differs ({self.corpus_change})."
        return text + " Exiting with code 1 because --fail-on-regression was set."


def compare(reference: Mapping[str, Any], run: Mapping[str, Any], *, against: str, source: str,
            metric: str, max_drop: float) -> Comparison:
    """Compare `run` with `reference` on `metric`, query by query.

    Raises:
        BaselineError: the reference was not scored at the metric's k, or shares no judged
            query with this run (then nothing can be compared: a usage problem, not a pass).
    """
    for who, r in (("the reference run", reference), ("this run", run)):
        if not run_has_metric(r, metric):
            ks = ",".join(str(k) for k in r["fingerprint"].get("k_values", []))
            raise BaselineError(f"{who} ({source if r is reference else 'now'}) has no "
                                f"{metric_label(metric)}: it was scored at k = {ks}",
                                hint="pass --k with the baseline's k values or --gate-metric")
    primary = paired_delta(reference, run, metric)
    if primary.pairs == 0:
        raise BaselineError(f"{source} shares no judged query id with this golden file; "
                            "nothing to compare", hint="save a new baseline for this golden file")
    regressed = (primary.before - primary.after > max_drop) and significantly_worse(primary)
    version = reference.get("groove_version")
    return Comparison(
        against=against, source=source, reference_timestamp=str(reference.get("timestamp")),
        reference_version=version if isinstance(version, str) else None,
        settings=tuple(settings_diff(reference["fingerprint"], run["fingerprint"])),
        corpus_change=history.corpus_change_text(reference["corpus"], run["corpus"]),
        primary=primary, max_drop=max_drop, regressed=regressed)


def newest_same_inputs(runs: Sequence[Mapping[str, Any]],
                       run: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The newest history run on the same golden file and corpus digest (any settings)."""
    for candidate in runs:
        fp, corpus = candidate.get("fingerprint"), candidate.get("corpus")
        if (isinstance(fp, dict) and isinstance(corpus, dict)
                and fp.get("golden_hash") == run["fingerprint"].get("golden_hash")
                and corpus.get("digest") == run["corpus"].get("digest")):
            try:
                check_run(candidate)
            except ValueError:
                continue
            return candidate
    return None


def gate_comparison(run: Mapping[str, Any], *, baseline: Mapping[str, Any] | None,
                    baseline_path: Path | None, history_runs: Sequence[Mapping[str, Any]] | None,
                    metric: str | None, max_drop: float,
                    enforced: bool = True) -> Comparison | None:
    """What the gate compares the run with.

    With a baseline: the baseline, whatever the settings. Otherwise, when `history_runs` is
    given (the gate is on and no stored run has identical settings): the newest run on the
    same golden file and corpus, announced with a note naming the settings that changed.
    None when there is nothing to compare with.
    """
    name = metric or default_metric([int(k) for k in run["fingerprint"]["k_values"]])
    if baseline is not None:
        return dataclasses.replace(
            compare(baseline, run, against="baseline", source=str(baseline_path), metric=name,
                    max_drop=max_drop), enforced=enforced)
    if history_runs is None:
        return None
    reference = newest_same_inputs(history_runs, run)
    if reference is None or not run_has_metric(reference, name):
        return None
    try:
        comparison = compare(reference, run, against="history", source=str(reference["timestamp"]),
                             metric=name, max_drop=max_drop)
    except BaselineError:
        return None
    changed = f"; settings that differ: {changes_text(comparison.settings)}" \
        if comparison.settings else ""
    messages.note(f"no run with identical settings; comparing with the run of "
                  f"{comparison.source} on the same golden file and corpus{changed}")
    return comparison
