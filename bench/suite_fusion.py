"""Fusion candidates over the legs' lists, scored in memory, and leave-one-collection-out.

Every candidate maps one query's leg lists (suite_lists.LegLists as a dict) to a top-10 chunk
ranking; nDCG@10 is eval.md §4's (graded gains, a document's chunks count once: the first hit
on a document consumes its entry, as `evaluate.metrics.ndcg_at_k` does for entries without a
heading). Families:

- `rrf`: weighted RRF as search.md §5 (vector, trigram + word-level at `fts`, CJK at `cjk`,
  constant `k`); the built-in setting is one of its members.
- `score`: convex combination of per-leg normalised scores (`max`: bm25 / the leg's best
  bm25 and min-max cosines; `minmax`; `zscore`; `dbsf` for suite_adaptive's family: mean ± 3σ;
  a candidate a leg did not return gets that leg's floor: 0, or the list's lowest z), `alpha`
  on the vector leg and `1 − alpha` on the full-text legs (the CJK leg × `cjk`).
- `agree`: weighted RRF whose vector weight follows the legs' agreement on the query:
  `w_vector × (lam + (1 − lam) × overlap@10)`, overlap = share of the vector top 10 found in
  the full-text legs' top 10.
- `gap`: weighted RRF whose leg weights follow each leg's score gap on the query (how far its
  best score stands above its 10th; bm25 and cosine each on their own scale).
- `lang`: weighted RRF with its vector weight chosen by the query's script (CJK text or not).
- `pseudo`: per KB, the `rrf` member with the best nDCG@10 on the KB's own pseudo-queries
  (titles and headings → their document; no golden set), ties to the built-in setting.

`loco` picks, for each held-out collection, the member of a family with the best mean of
per-collection means on the others and scores it on the held-out one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from groove_cli.engine import DEFAULT_CJK_WEIGHT, DEFAULT_LEG_WEIGHT, DEFAULT_RRF_K

LIMIT = 10
FTS_LEGS = ("fts_chunks", "fts_words", "fts_cjk")
Query = Mapping[str, Any]
Ranker = Callable[[Query], list[int]]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One fusion setting: its family, a label and its ranker."""

    family: str
    label: str
    params: dict[str, float | str]
    rank: Ranker


def _top(raw: Mapping[int, float]) -> list[int]:
    return [cid for cid, _ in sorted(raw.items(), key=lambda kv: (-kv[1], kv[0]))[:LIMIT]]


def rrf_weights(vector: float, fts: float, cjk: float) -> dict[str, float]:
    return {"vector": vector, "fts_chunks": fts, "fts_words": fts, "fts_cjk": cjk}


def rrf_sums(q: Query, weights: Mapping[str, float], k: float) -> tuple[dict[int, float], float]:
    """Weighted RRF sums (search.md §5) of the legs with weight > 0, and the best reachable sum
    (Σ w / (k + 1) over the legs that returned something: search's normaliser)."""
    raw: dict[int, float] = {}
    best = 0.0
    for leg, weight in weights.items():
        if weight <= 0:
            continue
        if q["ids"][leg]:
            best += weight / (k + 1)
        for position, cid in enumerate(q["ids"][leg]):
            raw[cid] = raw.get(cid, 0.0) + weight / (k + position + 1)
    return raw, best


def rrf(q: Query, weights: Mapping[str, float], k: float) -> list[int]:
    """Weighted RRF (search.md §5) of the legs with weight > 0."""
    return _top(rrf_sums(q, weights, k)[0])


def _normalised(scores: Sequence[float], how: str, leg: str = "vector"
                ) -> tuple[list[float], float]:
    """Each score normalised, and the floor given to candidates the leg did not return.

    `max` divides a full-text leg's bm25 by its best (bm25 has a natural 0: a chunk that
    matches nothing) and min-max scales the vector leg (cosines of one model crowd into a
    narrow band, so only their spread within the list carries information)."""
    if not scores:
        return [], 0.0
    if how == "dbsf":  # mean ± 3 standard deviations of the list, clipped to [0, 1]
        mean = sum(scores) / len(scores)
        sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
        return ([min(1.0, max(0.0, (s - mean + 3 * sd) / (6 * sd))) if sd > 0 else 1.0
                 for s in scores], 0.0)
    if how == "max" and leg != "vector":
        top = max(scores)
        return ([s / top if top > 0 else 0.0 for s in scores], 0.0)
    if how in ("minmax", "max"):
        lo, hi = min(scores), max(scores)
        return ([(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores], 0.0)
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    z = [(s - mean) / sd if sd > 0 else 0.0 for s in scores]
    return z, min(z)


def score_weights(alpha: float, cjk: float, text: float = 1.0) -> dict[str, float]:
    """Score fusion's leg weights: `alpha` on the vector leg, `(1 − alpha) × text` on the
    trigram and word-level legs, `(1 − alpha) × cjk` on the CJK leg."""
    return {"vector": alpha, "fts_chunks": (1 - alpha) * text, "fts_words": (1 - alpha) * text,
            "fts_cjk": (1 - alpha) * cjk}


def score_fusion(q: Query, how: str, alpha: float, cjk: float) -> list[int]:
    """Convex combination of normalised leg scores (CombSUM with weights)."""
    return _top(combined(q, score_weights(alpha, cjk), how))


def combined(q: Query, weights: Mapping[str, float], how: str) -> dict[int, float]:
    """`Σ w_leg · normalised score` per candidate over the legs with weight > 0 that returned
    something; a candidate a leg did not return gets that leg's floor."""
    legs = [leg for leg in weights if q["ids"][leg] and weights[leg] > 0]
    values: dict[str, dict[int, float]] = {}
    floors: dict[str, float] = {}
    for leg in legs:
        norm, floors[leg] = _normalised(q["scores"][leg], how, leg)
        values[leg] = dict(zip(q["ids"][leg], norm, strict=True))
    universe = {cid for leg in legs for cid in values[leg]}
    return {cid: sum(weights[leg] * values[leg].get(cid, floors[leg]) for leg in legs)
            for cid in universe}


def overlap(q: Query) -> float:
    """Share of the vector leg's top 10 that some full-text leg has in its top 10."""
    vec = q["ids"]["vector"][:LIMIT]
    text = {cid for leg in FTS_LEGS for cid in q["ids"][leg][:LIMIT]}
    if not vec or not text:
        return 1.0
    return sum(1 for cid in vec if cid in text) / len(vec)


def agree(q: Query, vector: float, lam: float, cjk: float, k: float) -> list[int]:
    w = vector * (lam + (1 - lam) * overlap(q))
    return rrf(q, rrf_weights(w, 1.0, cjk), k)


BUILTIN = {"vector": DEFAULT_LEG_WEIGHT, "cjk": DEFAULT_CJK_WEIGHT, "k": DEFAULT_RRF_K}
RRF_K = (10.0, 30.0, 60.0, 100.0)
VECTOR_W = (0.25, 0.5, 0.75, 1.0, 1.5)
CJK_W = (1.0, 2.0, 4.0, 6.0)
ALPHAS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
LAMS = (0.0, 0.25, 0.5)


def builtin() -> Candidate:
    return Candidate("builtin", "built-in RRF", dict(BUILTIN),
                     lambda q: rrf(q, rrf_weights(BUILTIN["vector"], 1.0, BUILTIN["cjk"]),
                                   BUILTIN["k"]))


def rrf_family() -> list[Candidate]:
    def make(v: float, c: float, k: float) -> Candidate:
        return Candidate("rrf", f"rrf v{v:g} cjk{c:g} k{k:g}", {"vector": v, "cjk": c, "k": k},
                         lambda q: rrf(q, rrf_weights(v, 1.0, c), k))
    return [make(v, c, k) for v, c, k in product(VECTOR_W, CJK_W, RRF_K)]


def score_family() -> list[Candidate]:
    def make(how: str, a: float, c: float) -> Candidate:
        return Candidate("score", f"{how} a{a:g} cjk{c:g}", {"norm": how, "alpha": a, "cjk": c},
                         lambda q: score_fusion(q, how, a, c))
    return [make(h, a, c) for h, a, c in product(("max", "minmax", "zscore"), ALPHAS,
                                                 (1.0, 2.0))]


def agree_family() -> list[Candidate]:
    def make(v: float, lam: float, c: float, k: float) -> Candidate:
        return Candidate("agree", f"agree v{v:g} lam{lam:g} cjk{c:g} k{k:g}",
                         {"vector": v, "lam": lam, "cjk": c, "k": k},
                         lambda q: agree(q, v, lam, c, k))
    return [make(v, lam, c, k) for v, lam, c, k in product((0.5, 1.0, 1.5), LAMS, CJK_W,
                                                           (30.0, 60.0))]


def gap(scores: Sequence[float]) -> float:
    """How far a leg's best score stands above its 10th: (s1 − s10) / |s1| (0 for < 2 scores)."""
    if len(scores) < 2 or scores[0] == 0:
        return 0.0
    return max(0.0, (scores[0] - scores[min(len(scores), LIMIT) - 1]) / abs(scores[0]))


def gap_rrf(q: Query, vector: float, gamma: float, cjk: float, k: float) -> list[int]:
    """Weighted RRF whose leg weights follow each leg's score gap on this query: the vector
    leg × 2·gv^γ / (gv^γ + gf^γ), the full-text legs × 2·gf^γ / (…), gf the largest gap of
    the full-text legs; equal gaps give the fixed weights."""
    gv = gap(q["scores"]["vector"]) ** gamma
    gf = max((gap(q["scores"][leg]) for leg in FTS_LEGS), default=0.0) ** gamma
    if gv + gf == 0:
        return rrf(q, rrf_weights(vector, 1.0, cjk), k)
    share_v, share_f = 2 * gv / (gv + gf), 2 * gf / (gv + gf)
    w = rrf_weights(vector * share_v, share_f, cjk * share_f)
    return rrf(q, {leg: max(weight, 1e-9) for leg, weight in w.items()}, k)


def gap_family() -> list[Candidate]:
    def make(v: float, gamma: float, c: float, k: float) -> Candidate:
        return Candidate("gap", f"gap v{v:g} g{gamma:g} cjk{c:g} k{k:g}",
                         {"vector": v, "gamma": gamma, "cjk": c, "k": k},
                         lambda q: gap_rrf(q, v, gamma, c, k))
    return [make(v, g, c, k) for v, g, c, k in product((0.5, 1.0, 1.5), (0.5, 1.0, 2.0), CJK_W,
                                                       (30.0, 60.0))]


def lang_family() -> list[Candidate]:
    """Weighted RRF with one vector weight for queries with CJK text and one for the others
    (the query's language is a signal every search has)."""
    def make(v_latin: float, v_cjk: float, c: float, k: float) -> Candidate:
        def rank(q: Query) -> list[int]:
            v = v_cjk if q["cjk_terms"] else v_latin
            return rrf(q, rrf_weights(v, 1.0, c), k)
        return Candidate("lang", f"lang v{v_latin:g}/ja v{v_cjk:g} cjk{c:g} k{k:g}",
                         {"vector": v_latin, "vector_cjk": v_cjk, "cjk": c, "k": k}, rank)
    return [make(a, b, c, k) for a, b, c, k in product(VECTOR_W, VECTOR_W, CJK_W, (30.0, 60.0))]


def ndcg10(ranking: Sequence[int], meta: Mapping[int, tuple[str, str | None]],
           grades: Mapping[str, int]) -> float:
    """nDCG@10 of a chunk ranking against document grades (`<doc>.md` → gain)."""
    relevant = sorted((g for g in grades.values() if g > 0), reverse=True)[:LIMIT]
    if not relevant:
        return 0.0
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(relevant))
    seen: set[str] = set()
    dcg = 0.0
    for position, cid in enumerate(ranking[:LIMIT]):
        path = meta[cid][0]
        if path in seen:
            continue
        gain = grades.get(path, 0)
        if gain > 0:
            seen.add(path)
            dcg += gain / math.log2(position + 2)
    return dcg / idcg


@dataclass
class Scored:
    """Per candidate label: per-query nDCG@10 of one collection (query order of the lists)."""

    values: dict[str, list[float]]

    def mean(self, label: str) -> float:
        v = self.values[label]
        return sum(v) / len(v) if v else 0.0


def score_all(candidates: Sequence[Candidate], queries: Sequence[Query],
              meta: Mapping[int, tuple[str, str | None]],
              grades: Sequence[Mapping[str, int]]) -> Scored:
    return Scored({c.label: [ndcg10(c.rank(q), meta, g) for q, g in zip(queries, grades,
                                                                          strict=True)]
                   for c in candidates})


def loco(means: Mapping[str, Mapping[str, float]], labels: Sequence[str]
         ) -> dict[str, dict[str, Any]]:
    """For each collection: the label with the best mean of the other collections' means (ties:
    first in `labels`), and its mean on the held-out collection."""
    out = {}
    for held in means:
        others = [c for c in means if c != held]
        if not others:
            continue
        best = max(labels, key=lambda lab: (sum(means[c][lab] for c in others) / len(others),
                                            -labels.index(lab)))
        out[held] = {"chosen": best, "held_out": means[held][best],
                     "train_mean": sum(means[c][best] for c in others) / len(others)}
    return out


def pseudo_choice(candidates: Sequence[Candidate], pseudo: Sequence[Query],
                  meta: Mapping[int, tuple[str, str | None]], default: str) -> tuple[str, float]:
    """The candidate with the best mean nDCG@10 on the KB's pseudo-queries (answer = one
    document); `default` when the KB yields fewer than 20 pseudo-queries or none beats it."""
    if len(pseudo) < 20:
        return default, float("nan")
    grades = [{q["answer"]: 1} for q in pseudo]
    scored = score_all(candidates, pseudo, meta, grades)
    best = max((c.label for c in candidates),
               key=lambda lab: (scored.mean(lab), lab == default))
    return best, scored.mean(best)
