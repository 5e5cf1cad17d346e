"""`groove eval compare A B`: two runs compared metric by metric, query by query.

A and B are baseline files or history runs (`0` = the newest run, `1` the one before, or a
timestamp or a unique prefix of one). The rule is unambiguous: a path that exists is a file;
else one to three digits are a history index (a history holds at most 1000 runs); anything
else — `2026`, `2026-05` — is a timestamp prefix. For every metric both runs have: the means, Δ = B − A
with its paired 95 % bootstrap CI, and a two-sided paired randomization-test p-value,
Holm-corrected across the metrics (several metrics tested at once would otherwise find
"significant" noise). Queries are paired by id; only queries judged in both runs count. The
gate metric's row also carries the CI gate's verdict on significance (`paired.significantly_
worse`, raw p: the gate tests that one pre-declared metric), so compare and the gate agree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from groove_cli.errors import UsageError
from groove_cli.evaluate.baseline import load_baseline, settings_diff
from groove_cli.evaluate.history import corpus_change_text
from groove_cli.evaluate.metrics import metric_names
from groove_cli.evaluate.paired import (
    ALPHA,
    default_metric,
    holm,
    paired_delta,
    paired_ids,
    significantly_worse,
)

Run = dict[str, Any]
_INDEX = re.compile(r"[0-9]{1,3}")
"""A history index: `eval.history_size` is at most 1000, so a four-digit reference is a year."""


def resolve_run(ref: str, history_runs: Callable[[], Sequence[Run]]) -> tuple[str, Run]:
    """(label, run) for a baseline file path or a history run reference.

    Raises:
        BaselineError: a damaged baseline file (exit 2).
        UsageError: no such run in the history, or an ambiguous timestamp prefix.
    """
    if os.path.lexists(ref):
        return ref, load_baseline(Path(ref))
    runs = history_runs()
    if _INDEX.fullmatch(ref):
        index = int(ref)
        if index >= len(runs):
            raise UsageError(f"no history run {ref}: the history holds {len(runs)} run(s) "
                             "(0 is the newest)")
        return f"run {runs[index]['timestamp']}", runs[index]
    matches = [r for r in runs if str(r.get("timestamp", "")).startswith(ref)]
    if len(matches) != 1:
        what = "no file or history run" if not matches else f"{len(matches)} history runs"
        raise UsageError(f"{what} matches {ref!r}",
                         hint="pass a baseline file, a history index (0 = newest) or a run "
                              "timestamp as shown by `groove eval --format json`")
    return f"run {matches[0]['timestamp']}", matches[0]


def _common_k(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[int]:
    ka = {int(k) for k in a["fingerprint"].get("k_values", [])}
    return sorted(ka & {int(k) for k in b["fingerprint"].get("k_values", [])})


def compare_runs(a: Mapping[str, Any], b: Mapping[str, Any], *, label_a: str,
                 label_b: str, gate_metric: str | None = None) -> dict[str, Any]:
    """The comparison report (JSON-ready): labels, pairs, settings/corpus diff, metric rows;
    `gate_metric` (default: the gate's default over the shared k) is the row the CI gate
    would judge."""
    common = _common_k(a, b)
    names = metric_names(common)
    gate = gate_metric or default_metric(common)
    if gate not in names:
        raise UsageError(f"--gate-metric {gate} is not scored in both runs (k = "
                         f"{','.join(map(str, common)) or 'none'})")
    deltas = [paired_delta(a, b, name) for name in names]
    raw = [d.p for d in deltas]
    adjusted = holm(raw)
    pairs = len(paired_ids(a, b))
    if pairs == 0:
        raise UsageError(f"{label_a} and {label_b} share no judged query id; nothing to compare")
    return {
        "a": {"label": label_a, "timestamp": a.get("timestamp")},
        "b": {"label": label_b, "timestamp": b.get("timestamp")},
        "pairs": pairs,
        "settings_diff": settings_diff(a["fingerprint"], b["fingerprint"]),
        "corpus_change": corpus_change_text(a["corpus"], b["corpus"]),
        "gate_metric": gate,
        "alpha": ALPHA,
        "metrics": [
            {"metric": d.metric, "a": d.before, "b": d.after, "delta": d.delta,
             "ci95": None if d.ci95 is None else list(d.ci95), "p": p, "p_holm": q,
             **({"significantly_worse": significantly_worse(d)} if d.metric == gate else {})}
            for d, p, q in zip(deltas, raw, adjusted, strict=True)
        ],
    }


def compare_refs(a: str, b: str, history_file: Callable[[], Path],
                 gate_metric: str | None = None) -> dict[str, Any]:
    """`groove eval compare A B` as one core call: resolve both references (the history file
    `history_file()` names is read only when a reference is not a file) and compare."""
    from groove_cli.evaluate import history

    loaded: list[list[Run]] = []

    def runs() -> list[Run]:
        if not loaded:
            loaded.append(history.load_history(history_file()))
        return loaded[0]

    label_a, run_a = resolve_run(a, runs)
    label_b, run_b = resolve_run(b, runs)
    return compare_runs(run_a, run_b, label_a=label_a, label_b=label_b, gate_metric=gate_metric)
