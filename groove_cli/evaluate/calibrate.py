"""`groove tune --space calibration`: refit the relevance model on the user's golden set.

Every golden query runs through the same engine as `eval` (hybrid settings from the config, the
top 10 hits); each hit's features (retrieve/relevance.py) are labelled relevant when it matches
an expected entry (eval.md §3). Queries are split in two halves by a hash of their id and the
model is cross-fitted: each half's hits are scored by the model fitted on the other half, and the
expected calibration error (ECE) of those held-out estimates is reported next to the ECE of the
calibration in use. Scoring both halves, not one, matters on a small golden set: the share of
relevant hits differs between two halves of 30 queries by several points by chance alone, which
a single fit→test direction reports as miscalibration. The coefficients fitted on all queries
are what `--write` stores in `[search.relevance] calibration`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli import messages
from groove_cli.dburl import IndexLocation
from groove_cli.errors import GrooveError, UsageError
from groove_cli.evaluate.metrics import entry_matches
from groove_cli.retrieve.relevance import Calibration, relevance

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from groove_cli.config import Settings

TOP = 10
BINS = 10


def split_half(query_id: str) -> str:
    """'fit' or 'test', by a stable hash of the query id."""
    return "fit" if hashlib.sha256(query_id.encode()).digest()[0] % 2 == 0 else "test"


def fit_logistic(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
                 l2: float = 1e-3) -> Calibration:
    """Logistic regression by Newton-Raphson (IRLS); a small ridge keeps it finite when a
    feature separates the labels."""
    import numpy as np

    design = np.hstack([np.ones((len(x), 1)), x])
    beta = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-design @ beta))
        gradient = design.T @ (y - p) - l2 * beta
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + l2 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if float(np.max(np.abs(step))) < 1e-9:
            break
    return Calibration.from_list([round(float(b), 4) for b in beta])


def expected_calibration_error(p: Sequence[float], y: Sequence[float]
                               ) -> tuple[float, list[tuple[float, float, int]]]:
    """ECE over 10 equal-width bins, and (mean predicted, observed rate, count) per bin."""
    bins: list[tuple[float, float, int]] = []
    total = 0.0
    for b in range(BINS):
        lo, hi = b / BINS, (b + 1) / BINS
        members = [(pi, yi) for pi, yi in zip(p, y, strict=True)
                   if lo <= pi and (pi < hi or (b == BINS - 1 and pi <= hi))]
        if members:
            mean_p = sum(m[0] for m in members) / len(members)
            rate = sum(m[1] for m in members) / len(members)
            total += len(members) * abs(mean_p - rate)
            bins.append((mean_p, rate, len(members)))
    return (total / len(p) if len(p) else 0.0), bins


@dataclass(frozen=True, slots=True)
class LabelledHit:
    query: str
    features: tuple[float, ...]
    relevant: bool


def cross_fitted(first: Sequence[LabelledHit], second: Sequence[LabelledHit]
                 ) -> tuple[list[float], list[float]]:
    """Held-out estimates for every hit of two query halves: each half scored by the model
    fitted on the other half; returns (estimates, labels) in `first + second` order."""
    import numpy as np

    def fit(part: Sequence[LabelledHit]) -> Calibration:
        return fit_logistic(np.array([h.features for h in part]),
                            np.array([1.0 if h.relevant else 0.0 for h in part]))

    on_second, on_first = fit(first), fit(second)
    estimates = ([relevance(on_first, h.features) for h in first]
                 + [relevance(on_second, h.features) for h in second])
    return estimates, [1.0 if h.relevant else 0.0 for h in (*first, *second)]


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """What `tune --space calibration` prints (and writes with --write)."""

    golden: str
    queries: int
    hits: int
    relevant_rate: float
    fitted: Calibration
    current: Calibration
    ece_current: float
    ece_refit: float
    held_out_hits: int
    written: Path | None = None

    @property
    def better(self) -> bool:
        """Whether the refit is better calibrated on held-out hits than the one in use: only
        then is it recommended (and written without --force)."""
        return self.ece_refit < self.ece_current

    def to_json(self) -> dict[str, object]:
        return {
            "space": "calibration", "golden": self.golden, "queries": self.queries,
            "hits": self.hits, "relevant_rate": self.relevant_rate,
            "calibration": self.fitted.as_list(), "current": self.current.as_list(),
            "held_out": {"hits": self.held_out_hits, "ece_current": self.ece_current,
                         "ece_refit": self.ece_refit},
            "decision": "refit" if self.better else "keep_current",
            "written": str(self.written) if self.written else None,
        }

    def text(self) -> str:
        coefficients = ", ".join(f"{v:g}" for v in self.fitted.as_list())
        lines = [
            f"groove tune --space calibration — {self.golden}",
            f"  {self.queries} queries, {self.hits} top-{TOP} hits, "
            f"{self.relevant_rate:.1%} relevant",
            f"  ECE over {self.held_out_hits} hits: current {self.ece_current:.4f}, refit "
            f"{self.ece_refit:.4f} (held out: each half scored by the fit on the other half)",
            f"  calibration (all queries): [{coefficients}]",
        ]
        if self.written is not None:
            lines.append(f"  written to {self.written} ([search.relevance] calibration)")
        elif not self.better:
            lines.append("  Recommendation: keep the calibration in use (the refit is no better "
                         "calibrated on held-out hits; more golden queries help)")
        else:
            lines.append("  apply with --write, or set [search.relevance] calibration = "
                         f"[{coefficients}]")
        return "\n".join(lines) + "\n"


def labelled_hits(settings: Settings, db: IndexLocation, kb: Path, golden_path: Path | None
                  ) -> tuple[str, list[LabelledHit]]:
    """Every golden query's top-10 hits with features and labels."""
    from groove_cli.evaluate.runner import load_golden_set
    from groove_cli.retrieve.filters import FilterSpec
    from groove_cli.retrieve.params import build_params
    from groove_cli.retrieve.query import compile_query
    from groove_cli.retrieve.searcher import Searcher

    golden = load_golden_set(settings, kb, golden_path)
    usable = [q for q in golden.queries if q.expected]
    params = build_params(settings, limit=TOP, rerank=False, filters=FilterSpec(), spans=False)
    if params.mode == "fts":
        raise UsageError("relevance needs the vector leg; calibrate with mode hybrid or vector")
    searcher = Searcher.from_settings(settings, db, kb)
    try:
        results = searcher.search_many([compile_query(q.query) for q in usable], params)
    finally:
        searcher.close()
    hits = []
    for q, result in zip(usable, results, strict=True):
        for hit in result.hits:
            relevant = any(entry_matches((e.path, e.heading), (hit.chunk.path, hit.chunk.heading))
                           for e in q.expected)
            hits.append(LabelledHit(q.id, hit.features, relevant))
    return str(golden.path), hits


def calibrate(settings: Settings, db: IndexLocation, kb: Path, golden_path: Path | None,
              current: Calibration) -> CalibrationReport:
    """Cross-fit the two query halves for the held-out ECE, then refit on all (module doc)."""
    import numpy as np

    golden, hits = labelled_hits(settings, db, kb, golden_path)
    labels = np.array([1.0 if h.relevant else 0.0 for h in hits])
    if not hits or labels.min() == labels.max():
        raise GrooveError("the golden hits are all relevant or all not relevant; a calibration "
                          "needs both (add queries or expected entries)")
    halves = [[h for h in hits if split_half(h.query) == half] for half in ("fit", "test")]
    if not all(halves):
        raise GrooveError("too few golden queries to hold half of them out; add queries")
    held_out, truth = cross_fitted(halves[0], halves[1])
    ece_refit, _ = expected_calibration_error(held_out, truth)
    ece_current, _ = expected_calibration_error([relevance(current, h.features) for h in hits],
                                                labels.tolist())
    fitted = fit_logistic(np.array([h.features for h in hits]), labels)
    if len({h.query for h in hits}) < 50:
        messages.warning(f"{len({h.query for h in hits})} golden queries: a calibration fitted on "
                         "so few is rough; treat the held-out ECE as indicative")
    return CalibrationReport(golden, len({h.query for h in hits}), len(hits),
                             float(labels.mean()), fitted, current, ece_current, ece_refit,
                             len(held_out))


def write_calibration(config_path: Path, calibration: Calibration) -> Path:
    """Set `[search.relevance] calibration` in `config_path` (created when missing), keeping
    everything else the file holds; validated before it replaces the file."""
    import tomlkit

    from groove_cli.config import validate_text
    from groove_cli.evaluate.tune.write import rewrite_config

    def edit(original: str) -> str:
        doc = tomlkit.parse(original)
        search = doc.setdefault("search", tomlkit.table(is_super_table=True))
        table = search.setdefault("relevance", tomlkit.table())
        table["calibration"] = calibration.as_list()
        return tomlkit.dumps(doc)

    rewrite_config(config_path, edit, validate_text)
    return config_path
