"""More fusion families for the suite (issue 25): score distributions, rank + score mixes and
query-adaptive weights, scored in memory like suite_fusion's.

- `dbsf`: distribution-based score fusion — each leg's scores scaled by its own mean ± 3σ over
  its list, `(s − (μ − 3σ)) / 6σ` clipped to [0, 1], a candidate the leg did not return 0;
  convex combination as `score`.
- `mix`: `(1 − beta) × score fusion (max) + beta × weighted RRF` (both on [0, 1]: each sum
  divided by its best reachable value), RRF at the built-in weights.
- `qlen`: score fusion (max) whose vector share follows the query: a query with CJK text takes
  `alpha_cjk`, any other `alpha_short` up to `words` word-level terms (the query's Latin words
  after stopwords, repeats kept: `CompiledQuery.word_terms`) and `alpha_long` above; the
  vector share stays ≤ 0.9, so full text keeps a say in every query (exact names and codes).
- `qlen1`: `qlen` with `alpha_short` up to 1 (short Latin queries may drop full text).
- `rqlen`: the same length rule on weighted RRF: the vector weight is `v_short` up to `words`
  word-level terms and `v_long` above (1 for a query with CJK text), CJK weight × rrf_k swept.
- `cjksub`: score fusion (max) where, for a query with CJK text, the trigram and word-level legs
  weigh `sub` × their share (the CJK leg carries Japanese queries; the other two re-order its
  near-ties).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

from suite_fusion import (
    Candidate,
    Query,
    _top,
    combined,
    rrf,
    rrf_sums,
    rrf_weights,
    score_weights,
)

from groove_cli.engine import DEFAULT_CJK_WEIGHT, DEFAULT_LEG_WEIGHT, DEFAULT_RRF_K, compile_query


def _weights(alpha: float, cjk: float, sub: float = 1.0, has_cjk: bool = False
             ) -> dict[str, float]:
    return score_weights(alpha, cjk, sub if has_cjk else 1.0)


def _scaled(raw: dict[int, float], total: float) -> dict[int, float]:
    return {cid: v / total for cid, v in raw.items()} if total > 0 else {}


BUILTIN_RRF = {"vector": DEFAULT_LEG_WEIGHT, "fts_chunks": 1.0, "fts_words": 1.0,
               "fts_cjk": DEFAULT_CJK_WEIGHT}
ALPHAS = (0.4, 0.5, 0.6, 0.7, 0.8)


def dbsf_family() -> list[Candidate]:
    def make(a: float, c: float) -> Candidate:
        return Candidate("dbsf", f"dbsf a{a:g} cjk{c:g}", {"alpha": a, "cjk": c},
                         lambda q: _top(combined(q, _weights(a, c), "dbsf")))
    return [make(a, c) for a, c in product(ALPHAS, (1.0, 2.0))]


def mix(q: Query, alpha: float, cjk: float, beta: float) -> list[int]:
    weights = _weights(alpha, cjk)
    score = _scaled(combined(q, weights, "max"),
                    sum(w for leg, w in weights.items() if q["ids"][leg] and w > 0))
    ranks = _scaled(*rrf_sums(q, BUILTIN_RRF, DEFAULT_RRF_K))
    return _top({cid: (1 - beta) * score.get(cid, 0.0) + beta * ranks.get(cid, 0.0)
                 for cid in score.keys() | ranks.keys()})


def mix_family() -> list[Candidate]:
    def make(a: float, c: float, b: float) -> Candidate:
        return Candidate("mix", f"mix a{a:g} cjk{c:g} b{b:g}", {"alpha": a, "cjk": c, "beta": b},
                         lambda q: mix(q, a, c, b))
    return [make(a, c, b) for a, c, b in product(ALPHAS, (1.0, 2.0), (0.25, 0.5, 0.75))]


def length_alpha(q: Query, short: float, long: float, cjk_alpha: float, words: int) -> float:
    """The vector share of `qlen` for one query: `cjk_alpha` for a query with CJK text, else
    `short` up to `words` word-level terms and `long` above."""
    if q["cjk_terms"]:
        return cjk_alpha
    return short if int(q["word_terms"]) <= words else long


SHORT_ALPHAS = (0.6, 0.7, 0.8, 0.9)
LONG_ALPHAS = (0.4, 0.5, 0.6)
CJK_ALPHAS = (0.5, 0.6, 0.7)
SHORT_WORDS = (3, 4, 6, 8)


def qlen_family(shorts: Sequence[float] = SHORT_ALPHAS, family: str = "qlen"
                ) -> list[Candidate]:
    def make(short: float, long: float, ja: float, t: int) -> Candidate:
        def rank(q: Query) -> list[int]:
            return _top(combined(q, _weights(length_alpha(q, short, long, ja, t), 2.0), "max"))
        return Candidate(family, f"{family} a{short:g}/{long:g} t{t} ja{ja:g}",
                         {"alpha_short": short, "alpha_long": long, "alpha_cjk": ja, "words": t},
                         rank)
    return [make(s, lo, ja, t) for s, lo, ja, t in product(shorts, LONG_ALPHAS, CJK_ALPHAS,
                                                          SHORT_WORDS)]


def qlen1_family() -> list[Candidate]:
    return qlen_family((*SHORT_ALPHAS, 1.0), "qlen1")


def cjksub_family() -> list[Candidate]:
    def make(a: float, c: float, sub: float) -> Candidate:
        def rank(q: Query) -> list[int]:
            return _top(combined(q, _weights(a, c, sub, bool(q["cjk_terms"])), "max"))
        return Candidate("cjksub", f"cjksub a{a:g} cjk{c:g} sub{sub:g}",
                         {"alpha": a, "cjk": c, "sub": sub}, rank)
    return [make(a, c, s) for a, c, s in product(ALPHAS, (1.0, 2.0), (0.0, 0.25, 0.5, 1.0))]


def rqlen_family() -> list[Candidate]:
    def make(short: float, long: float, t: int, c: float, k: float) -> Candidate:
        def rank(q: Query) -> list[int]:
            v = 1.0 if q["cjk_terms"] else (short if int(q["word_terms"]) <= t else long)
            return rrf(q, rrf_weights(v, 1.0, c), k)
        return Candidate("rqlen", f"rqlen v{short:g}/{long:g} t{t} cjk{c:g} k{k:g}",
                         {"v_short": short, "v_long": long, "words": t, "cjk": c, "k": k}, rank)
    return [make(s, lo, t, c, k) for s, lo, t, c, k in product(
        (1.0, 1.5, 2.0, 3.0, 4.0), (0.5, 0.75, 1.0), SHORT_WORDS, (4.0, 6.0), (30.0, 60.0))]


def word_counts(queries: Sequence[dict[str, object]]) -> None:
    """Add each query's `word_terms` count (what `qlen` reads) to its lists, in place."""
    for q in queries:
        q["word_terms"] = len(compile_query(str(q["query"])).word_terms)


def adaptive_families() -> dict[str, list[Candidate]]:
    return {"dbsf": dbsf_family(), "mix": mix_family(), "cjksub": cjksub_family(),
            "qlen": qlen_family(), "qlen1": qlen1_family(), "rqlen": rqlen_family()}
