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

With a reranker selected (as `search` would run it), the hits are reranked and what is refitted
is the stacked model of reranked hits instead (relevance.py): its inputs are the base model's
logit and the reranker's score, and `--write` stores `rerank_calibration`; the base model stays.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli import messages
from groove_cli.dburl import IndexLocation
from groove_cli.errors import GrooveError, UsageError
from groove_cli.evaluate.metrics import entry_matches
from groove_cli.retrieve.relevance import (
    Calibration,
    RerankCalibration,
    logit,
    relevance,
    sigmoid,
)

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
    """The base relevance model fitted to features `x` and labels `y` (fit_coefficients)."""
    return Calibration.from_list(fit_coefficients(x, y, l2))


def fit_coefficients(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
                     l2: float = 1e-3) -> list[float]:
    """[intercept, weights…] of a logistic regression by Newton-Raphson (IRLS), to 4 decimals;
    a small ridge keeps it finite when a feature separates the labels."""
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
    return [round(float(b), 4) for b in beta]


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
    """One top-10 hit of a golden query: the model's inputs and whether it was expected."""

    query: str
    features: tuple[float, ...]
    """The base model's features, or (base logit, reranker score) for the stacked model."""
    relevant: bool


def cross_fitted(first: Sequence[LabelledHit], second: Sequence[LabelledHit]
                 ) -> tuple[list[float], list[float]]:
    """Held-out estimates for every hit of two query halves: each half scored by the model
    fitted on the other half; returns (estimates, labels) in `first + second` order."""
    import numpy as np

    def fit(part: Sequence[LabelledHit]) -> list[float]:
        return fit_coefficients(np.array([h.features for h in part]),
                                np.array([1.0 if h.relevant else 0.0 for h in part]))

    def estimate(coefficients: list[float], hit: LabelledHit) -> float:
        return sigmoid(coefficients[0] + sum(w * x for w, x in zip(coefficients[1:],
                                                                   hit.features, strict=True)))

    on_second, on_first = fit(first), fit(second)
    estimates = ([estimate(on_first, h) for h in first]
                 + [estimate(on_second, h) for h in second])
    return estimates, [1.0 if h.relevant else 0.0 for h in (*first, *second)]


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """What `tune --space calibration` prints (and writes with --write)."""

    golden: str
    queries: int
    hits: int
    relevant_rate: float
    fitted: Calibration | RerankCalibration
    current: Calibration | RerankCalibration | None
    """The model in use for these hits (None: reranked hits with no rerank calibration yet,
    whose relevance is the base model's)."""
    ece_current: float
    ece_refit: float
    held_out_hits: int
    written: Path | None = None
    reranker: str | None = None
    """The reranker the hits were reranked with: the stacked model was refitted."""

    @property
    def key(self) -> str:
        """The `[search.relevance]` key the refit is written to."""
        return "rerank_calibration" if self.reranker else "calibration"

    @property
    def better(self) -> bool:
        """Whether the refit is better calibrated on held-out hits than the one in use: only
        then is it recommended (and written without --force)."""
        return self.ece_refit < self.ece_current

    def to_json(self) -> dict[str, object]:
        return {
            "space": "calibration", "golden": self.golden, "queries": self.queries,
            "hits": self.hits, "relevant_rate": self.relevant_rate, "reranker": self.reranker,
            "key": f"search.relevance.{self.key}", "calibration": self.fitted.as_list(),
            "current": self.current.as_list() if self.current is not None else None,
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
        ]
        if self.reranker:
            lines.append(f"  reranked by {self.reranker}: refitting the stacked model of "
                         "reranked hits (base logit, reranker score)")
        lines += [
            f"  ECE over {self.held_out_hits} hits: current {self.ece_current:.4f}, refit "
            f"{self.ece_refit:.4f} (held out: each half scored by the fit on the other half)",
            f"  {self.key} (all queries): [{coefficients}]",
        ]
        if self.written is not None:
            lines.append(f"  written to {self.written} ([search.relevance] {self.key})")
        elif not self.better:
            lines.append("  Recommendation: keep the calibration in use (the refit is no better "
                         "calibrated on held-out hits; more golden queries help)")
        else:
            lines.append(f"  apply with --write, or set [search.relevance] {self.key} = "
                         f"[{coefficients}]")
        return "\n".join(lines) + "\n"


def labelled_hits(settings: Settings, db: IndexLocation, kb: Path, golden_path: Path | None,
                  base: Calibration) -> tuple[str, str | None, list[LabelledHit]]:
    """Every golden query's top-10 hits, labelled, as (golden path, reranker, hits).

    Without a reranker a hit's inputs are its features; with one (the reranker `search` runs)
    they are the base model's logit under `base` and the reranker's score (module doc)."""
    from groove_cli.evaluate.golden_set import load_golden_set
    from groove_cli.retrieve.filters import FilterSpec
    from groove_cli.retrieve.params import build_params, search_reranker
    from groove_cli.retrieve.query import compile_query
    from groove_cli.retrieve.searcher import Searcher

    golden = load_golden_set(settings, kb, golden_path)
    usable = [q for q in golden.queries if q.expected]
    reranker = search_reranker(settings)
    # every hit of the top TOP, whatever its relevance: the cuts that read relevance (search.md
    # §12) would otherwise hide from the fit the very hits it is about
    params = dataclasses.replace(
        build_params(settings, limit=TOP, rerank=reranker is not None, filters=FilterSpec(),
                     spans=False),
        min_relevance=0.0, relevance_floor=0.0, unsupported_below=0.0)
    if params.mode == "fts":
        raise UsageError("relevance needs the vector leg; calibrate with mode hybrid or vector")
    searcher = Searcher.from_settings(settings, db, kb, reranker=reranker)
    try:
        searcher.require_vectors("calibrate")
        results = searcher.search_many([compile_query(q.query) for q in usable], params)
    finally:
        searcher.close()
    hits = []
    for q, result in zip(usable, results, strict=True):
        for hit in result.hits:
            relevant = any(entry_matches((e.path, e.heading), (hit.chunk.path, hit.chunk.heading))
                           for e in q.expected)
            score = hit.explain.rerank_score
            inputs = (hit.features if reranker is None or score is None
                      else (logit(base, hit.features), score))
            hits.append(LabelledHit(q.id, inputs, relevant))
    return str(golden.path), reranker, hits


def calibrate(settings: Settings, db: IndexLocation, kb: Path, golden_path: Path | None,
              current: Calibration, current_rerank: RerankCalibration | None = None
              ) -> CalibrationReport:
    """Cross-fit the two query halves for the held-out ECE, then refit on all (module doc).

    `current` is the base model in use, `current_rerank` the stacked model in use (if any)."""
    import numpy as np

    golden, reranker, hits = labelled_hits(settings, db, kb, golden_path, current)
    labels = np.array([1.0 if h.relevant else 0.0 for h in hits])
    if not hits or labels.min() == labels.max():
        raise GrooveError("the golden hits are all relevant or all not relevant; a calibration "
                          "needs both (add queries or expected entries)")
    halves = [[h for h in hits if split_half(h.query) == half] for half in ("fit", "test")]
    if not all(halves):
        raise GrooveError("too few golden queries to hold half of them out; add queries")
    held_out, truth = cross_fitted(halves[0], halves[1])
    ece_refit, _ = expected_calibration_error(held_out, truth)
    coefficients = fit_coefficients(np.array([h.features for h in hits]), labels)
    fitted: Calibration | RerankCalibration
    in_use: Calibration | RerankCalibration | None
    if reranker is None:
        fitted, in_use = Calibration.from_list(coefficients), current
        now = [relevance(current, h.features) for h in hits]
    else:  # features = (base logit, reranker score); no stacked model yet: the base alone
        fitted, in_use = RerankCalibration.from_list(coefficients), current_rerank
        stacked = current_rerank or RerankCalibration(0.0, 1.0, 0.0)
        now = [stacked.estimate(z, score) for z, score in (h.features for h in hits)]
    ece_current, _ = expected_calibration_error(now, labels.tolist())
    queries = len({h.query for h in hits})
    if queries < 50:
        messages.warning(f"{queries} golden queries: a calibration fitted on so few is rough; "
                         "treat the held-out ECE as indicative")
    return CalibrationReport(golden, queries, len(hits), float(labels.mean()), fitted, in_use,
                             ece_current, ece_refit, len(held_out), reranker=reranker)


def write_calibration(config_path: Path, calibration: Calibration | RerankCalibration,
                      key: str = "calibration") -> Path:
    """Set `[search.relevance] {key}` in `config_path` (created when missing), keeping
    everything else the file holds; validated before it replaces the file."""
    import tomlkit

    from groove_cli.config import validate_text
    from groove_cli.evaluate.tune.write import rewrite_config

    def edit(original: str) -> str:
        doc = tomlkit.parse(original)
        search = doc.setdefault("search", tomlkit.table(is_super_table=True))
        table = search.setdefault("relevance", tomlkit.table())
        table[key] = calibration.as_list()
        return tomlkit.dumps(doc)

    rewrite_config(config_path, edit, validate_text)
    return config_path
