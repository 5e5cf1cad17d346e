"""`relevance`: an estimate in [0, 1] of the probability that a hit is relevant (search.md §12).

The fused `score` is relative to the query's own candidates (each leg's scores scaled by the best
of its list, or ranks under RRF), so it cannot say "nothing here is relevant". `relevance` is a
logistic model over evidence the legs already have: the cosine similarity of the query and the
chunk vectors, whether and how high the trigram or word-level leg ranked the chunk, the same for
the CJK leg, and how far its cosine falls short of the best cosine of the query (the vector leg's
first hit). That gap, not the vector rank, carries the vector evidence: the second of two equally
close notes is about as likely relevant as the first, while 1 / rank halves its weight — which left
relevant hits below the top one, above all in Japanese, near 0 (bench/results/relevance.md, ranks
2–10). The CJK leg is its own evidence because it is cheap to satisfy: its unigrams and bigrams
match some chunk for almost any Japanese text, nonsense included, so a CJK match says much less
than a phrase or word match (the fitted CJK-found weight is negative, the trigram/word-found one
positive). Its coefficients are a calibration, fitted per embedding model on labelled queries
(bench/relevance.py; the default for multilingual-e5-small is below) and overridable in
groove.toml (`[search.relevance]`).

When a cross-encoder reranked the hits, its raw score is strong evidence the legs do not have.
A second, stacked model takes it in: `P = σ(a + b·z + c·s)`, z the logit of the model above and
s the reranker's score. Rerankers differ in scale and none ships with a fitted default, so it
applies only once `groove tune --space calibration` has fitted it with the reranker on
(`[search.relevance] rerank_calibration`); until then a reranked hit's relevance is the model
above alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

FEATURES = ("cosine", "text_found", "text_strength", "cjk_found", "cjk_strength", "cosine_gap")
"""The fixed feature set, in the order of the coefficients after the intercept."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """Logistic coefficients: `P = 1 / (1 + exp(-(intercept + Σ weight·feature)))`."""

    intercept: float
    weights: tuple[float, ...]

    @classmethod
    def from_list(cls, values: Sequence[float]) -> Calibration:
        """`[intercept, w_cosine, w_text_found, w_text_strength, w_cjk_found, w_cjk_strength,
        w_cosine_gap]`."""
        if len(values) != len(FEATURES) + 1 or not all(math.isfinite(v) for v in values):
            raise ValueError(f"a calibration is {len(FEATURES) + 1} finite numbers: intercept, "
                             + ", ".join(FEATURES) + " (refit one with `groove tune --space "
                             "calibration --write`)")
        return cls(float(values[0]), tuple(float(v) for v in values[1:]))

    def as_list(self) -> list[float]:
        return [self.intercept, *self.weights]


# Fitted by bench/relevance.py on half of the CISI and JSQuAD queries (top-10 hits of weighted RRF,
# the default fusion then; the same fit on score fusion's hits calibrates golden/ worse, so this
# one stays); its check on the other half and on golden/: bench/results/relevance.md.
DEFAULT_CALIBRATIONS: dict[str, Calibration] = {
    "multilingual-e5-small": Calibration(-17.7176, (19.0132, 1.5057, 0.671, -4.5151, 7.701,
                                                    55.8615)),
}
FALLBACK = DEFAULT_CALIBRATIONS["multilingual-e5-small"]


def default_calibration(model: str | None) -> Calibration:
    """The shipped calibration of an embedding model (the default model's for any other)."""
    return DEFAULT_CALIBRATIONS.get(model or "", FALLBACK)


def features(cosine: float | None, fts_rank: int | None, word_rank: int | None,
             cjk_rank: int | None = None, *, best_cosine: float | None = None
             ) -> tuple[float, ...]:
    """A hit's evidence as the model's features (FEATURES order); absent evidence is 0. The
    text evidence is the better rank of the trigram and word-level legs; the CJK leg's rank is
    kept apart; `cosine_gap` = cosine − `best_cosine` (≤ 0; 0 without a query vector) (module
    doc)."""
    gap = ((cosine or 0.0) - best_cosine) if best_cosine is not None else 0.0
    text_ranks = [r for r in (fts_rank, word_rank) if r is not None]
    best_text = min(text_ranks) if text_ranks else None
    return (
        cosine if cosine is not None else 0.0,
        1.0 if best_text is not None else 0.0,
        1.0 / best_text if best_text is not None else 0.0,
        1.0 if cjk_rank is not None else 0.0,
        1.0 / cjk_rank if cjk_rank is not None else 0.0,
        min(0.0, gap),
    )


def low_confidence(relevances: Sequence[float], below: float) -> bool:
    """The best hit's relevance is under `below` (false without hits or with `below` 0)."""
    return bool(relevances) and below > 0 and max(relevances) < below


@dataclass(frozen=True, slots=True)
class RerankCalibration:
    """The stacked model of a reranked hit (module doc): `P = σ(a + b·z + c·s)`."""

    intercept: float
    base: float
    """b: the weight of the base model's logit z."""
    rerank: float
    """c: the weight of the reranker's raw score s."""

    @classmethod
    def from_list(cls, values: Sequence[float]) -> RerankCalibration:
        """`[a, b, c]`."""
        if len(values) != 3 or not all(math.isfinite(v) for v in values):
            raise ValueError("a rerank calibration is 3 finite numbers: intercept, the base "
                             "model's logit weight, the reranker score's weight (fit one with "
                             "`groove tune --space calibration --write` and a reranker)")
        return cls(float(values[0]), float(values[1]), float(values[2]))

    def as_list(self) -> list[float]:
        return [self.intercept, self.base, self.rerank]

    def estimate(self, base_logit: float, rerank_score: float) -> float:
        """σ(a + b·z + c·s) for a hit whose base logit is z and reranker score s."""
        return sigmoid(self.intercept + self.base * base_logit + self.rerank * rerank_score)


def logit(calibration: Calibration, values: Sequence[float]) -> float:
    """The base model's log-odds for one hit's features."""
    return calibration.intercept + sum(w * x for w, x in zip(calibration.weights, values,
                                                             strict=True))


def sigmoid(z: float) -> float:
    """1 / (1 + e^-z), without overflow for large |z|."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def relevance(calibration: Calibration, values: Sequence[float],
              rerank_score: float | None = None,
              reranked: RerankCalibration | None = None) -> float:
    """The estimate for one hit's features; with a reranker score and a rerank calibration,
    the stacked model's (module doc)."""
    z = logit(calibration, values)
    if rerank_score is not None and reranked is not None:
        return reranked.estimate(z, rerank_score)
    return sigmoid(z)
