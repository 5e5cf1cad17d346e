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

Signal families (issue 25, after `qlen1`): `qlen1`'s alpha for a query without CJK text, moved
by what the legs already know about the query, against a KB-level reference taken over the
texts of the KB's own queries (no labels: a system sees the queries it is asked):

- `qlen3`: three length tiers (≤ t1 word terms, ≤ t2, more), each with its own alpha.
- `qlen3L`: `qlen3` whose queries with CJK text take the long tier's alpha (no alpha_cjk):
  a CJK query compiles into many CJK terms (character unigrams + bigrams), so by the length
  rule's own measure it is long; tying it to that tier drops a knob that a
  leave-one-collection-out fold could choose on only two of the three Japanese collections.
- `fconf`: full-text confidence — alpha − d when the word-level leg's score gap
  (s1 − s10) / s1 (suite_fusion.gap; the trigram leg's when no word-level list) is at least the
  KB's median gap over its queries without CJK text, alpha + d below it.
- `fconfL`: `fconf` on long queries only (short ones keep alpha_short).
- `fconfA`: `fconf` against a fixed gap `th` instead of the KB's median, so it needs nothing
  but the query itself (what a search can know at query time).
- `cjkconf`: the same idea for Japanese: a query with CJK text takes alpha_cjk − d when the
  CJK leg's gap reaches `th` (fixed, or the KB's median over its CJK queries), + d below.
- `vconf`: vector confidence — alpha + d when the vector leg's cosine gap s1 − s10 is at least
  the KB's median, alpha − d below it.
- `kbov`: long queries take alpha lo when the KB's mean leg overlap@10 (suite_fusion.overlap,
  over its queries without CJK text) is below th (the legs disagree), else hi.
- `qov`: the same with the query's own overlap@10.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from itertools import product
from typing import Any

from suite_fusion import (
    LIMIT,
    Candidate,
    Query,
    _top,
    combined,
    gap,
    overlap,
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


def word_counts(queries: Sequence[dict[str, Any]]) -> None:
    """Add each query's `word_terms` count (what `qlen` reads), its leg signals and the KB's
    references over the queries without CJK text (what the signal families read), and the CJK
    leg's gap with its KB median over the queries with CJK text (`cjkconf`), in place."""
    for q in queries:
        q["word_terms"] = len(compile_query(str(q["query"])).word_terms)
        q["fts_gap"] = gap(q["scores"]["fts_words"] or q["scores"]["fts_chunks"])
        vec = q["scores"]["vector"][:LIMIT]
        q["vector_gap"] = vec[0] - vec[-1] if vec else 0.0
        q["overlap"] = overlap(q)
    latin = [q for q in queries if not q["cjk_terms"]]
    refs = {key: statistics.median(q[key] for q in latin) if latin else None
            for key in ("fts_gap", "vector_gap")}
    kb_overlap = statistics.mean(q["overlap"] for q in latin) if latin else 1.0
    cjk = [q for q in queries if q["cjk_terms"]]
    for q in cjk:
        q["cjk_gap"] = gap(q["scores"]["fts_cjk"])
    kb_cjk_gap = statistics.median(q["cjk_gap"] for q in cjk) if cjk else None
    for q in queries:
        q["kb_fts_gap"], q["kb_vector_gap"] = refs["fts_gap"], refs["vector_gap"]
        q["kb_overlap"] = kb_overlap
        q["kb_cjk_gap"] = kb_cjk_gap


def fused_at(q: Query, alpha: float) -> list[int]:
    """Score fusion (max, CJK × 2) at vector share `alpha`, kept on the query's dict: the signal
    families only pick an alpha per query, so one ranking per (query, alpha) serves them all."""
    alpha = round(min(1.0, max(0.0, alpha)), 6)
    cache: dict[float, list[int]] = q.setdefault("_fused", {})  # type: ignore[attr-defined]
    if alpha not in cache:
        cache[alpha] = _top(combined(q, _weights(alpha, 2.0), "max"))
    return cache[alpha]


def shifted(value: float, ref: float | None, d: float) -> float:
    """+d when `value` is at least the KB reference `ref`, −d below it, 0 without one."""
    if ref is None:
        return 0.0
    return d if value >= ref else -d


AlphaRule = Callable[[Query], float]


def _rule(family: str, label: str, params: dict[str, float | str], alpha: AlphaRule
          ) -> Candidate:
    return Candidate(family, label, params, lambda q: fused_at(q, alpha(q)))


def fconf_alpha(q: Query, short: float, long: float, ja: float, t: int, d: float,
                long_only: bool = False) -> float:
    """`qlen`'s alpha moved by −d when the full-text leg is confident for this KB, +d not."""
    base = length_alpha(q, short, long, ja, t)
    if q["cjk_terms"] or (long_only and int(q["word_terms"]) <= t):
        return base
    return base - shifted(float(q["fts_gap"]), q["kb_fts_gap"], d)


SIGNAL_SHORT = (0.8, 0.9, 1.0)
SIGNAL_D = (0.05, 0.1, 0.2)


def fconfa_alpha(q: Query, short: float, long: float, ja: float, t: int, d: float,
                 th: float) -> float:
    """`qlen`'s alpha moved by −d when the full-text leg's own gap reaches the fixed `th`, +d
    below it: `fconf` with nothing taken from the KB's other queries."""
    base = length_alpha(q, short, long, ja, t)
    if q["cjk_terms"]:
        return base
    return base - shifted(float(q["fts_gap"]), th, d)


FCONFA_TH = (0.2, 0.3, 0.4, 0.5, 0.6)


def fconfa_family() -> list[Candidate]:
    return [_rule("fconfA", f"fconfA a{s:g}/{lo:g} t{t} ja{ja:g} d{d:g} g{th:g}",
                  {"alpha_short": s, "alpha_long": lo, "alpha_cjk": ja, "words": t, "d": d,
                   "th": th},
                  lambda q, s=s, lo=lo, ja=ja, t=t, d=d, th=th: fconfa_alpha(q, s, lo, ja, t,
                                                                           d, th))
            for s, lo, ja, t, d, th in product(SIGNAL_SHORT, LONG_ALPHAS, CJK_ALPHAS, (4, 6),
                                               SIGNAL_D, FCONFA_TH)]


def cjkconf_alpha(q: Query, short: float, long: float, ja: float, t: int, d: float,
                  th: float | None) -> float:
    """`qlen`'s alpha, and for a query with CJK text alpha_cjk − d when the CJK leg's gap
    reaches `th` (None: the KB's median over its CJK queries), + d below it."""
    base = length_alpha(q, short, long, ja, t)
    if not q["cjk_terms"]:
        return base
    ref = q["kb_cjk_gap"] if th is None else th
    return base - shifted(float(q["cjk_gap"]), ref, d)


def cjkconf_family() -> list[Candidate]:
    def label(s: float, t: int, ja: float, d: float, th: float | None) -> str:
        return f"cjkconf a{s:g}/0.5 t{t} ja{ja:g} d{d:g} g{'kb' if th is None else f'{th:g}'}"
    return [_rule("cjkconf", label(s, t, ja, d, th),
                  {"alpha_short": s, "alpha_long": 0.5, "alpha_cjk": ja, "words": t, "d": d,
                   "th": "kb" if th is None else th},
                  lambda q, s=s, t=t, ja=ja, d=d, th=th: cjkconf_alpha(q, s, 0.5, ja, t, d, th))
            for s, t, ja, d, th in product((0.8, 0.9), (4, 6), CJK_ALPHAS, (0.05, 0.1),
                                           (0.3, 0.5, None))]


def fconf_family(long_only: bool = False) -> list[Candidate]:
    name = "fconfL" if long_only else "fconf"
    words = (4, 6, 8) if long_only else (4, 6)
    return [_rule(name, f"{name} a{s:g}/{lo:g} t{t} ja{ja:g} d{d:g}",
                  {"alpha_short": s, "alpha_long": lo, "alpha_cjk": ja, "words": t, "d": d},
                  lambda q, s=s, lo=lo, ja=ja, t=t, d=d: fconf_alpha(q, s, lo, ja, t, d,
                                                                     long_only))
            for s, lo, ja, t, d in product(SIGNAL_SHORT, LONG_ALPHAS, CJK_ALPHAS, words,
                                           SIGNAL_D)]


def vconf_family() -> list[Candidate]:
    def alpha(q: Query, s: float, lo: float, ja: float, t: int, d: float) -> float:
        base = length_alpha(q, s, lo, ja, t)
        if q["cjk_terms"]:
            return base
        return base + shifted(float(q["vector_gap"]), q["kb_vector_gap"], d)
    return [_rule("vconf", f"vconf a{s:g}/{lo:g} t{t} ja{ja:g} d{d:g}",
                  {"alpha_short": s, "alpha_long": lo, "alpha_cjk": ja, "words": t, "d": d},
                  lambda q, s=s, lo=lo, ja=ja, t=t, d=d: alpha(q, s, lo, ja, t, d))
            for s, lo, ja, t, d in product(SIGNAL_SHORT, LONG_ALPHAS, CJK_ALPHAS, (4, 6),
                                           SIGNAL_D)]


def tier_alpha(q: Query, short: float, mid: float, long: float, cjk_alpha: float, t1: int,
               t2: int) -> float:
    """The vector share of `qlen3` for one query: `cjk_alpha` for a query with CJK text, else
    `short` up to `t1` word-level terms, `mid` up to `t2` and `long` above."""
    if q["cjk_terms"]:
        return cjk_alpha
    n = int(q["word_terms"])
    return short if n <= t1 else (mid if n <= t2 else long)


def qlen3l_alpha(q: Query, short: float, mid: float, long: float, t1: int, t2: int) -> float:
    """`qlen3L`'s vector share: `tier_alpha` with a query with CJK text in the long tier."""
    return tier_alpha(q, short, mid, long, long, t1, t2)


QLEN3_MID = (0.5, 0.6, 0.7, 0.8)
QLEN3_LONG = (0.4, 0.5)
QLEN3_T1 = (4, 6)
QLEN3_T2 = (8, 10, 12, 16)


def qlen3_family() -> list[Candidate]:
    return [_rule("qlen3", f"qlen3 a{s:g}/{m:g}/{lo:g} t{t1}/{t2} ja{ja:g}",
                  {"alpha_short": s, "alpha_mid": m, "alpha_long": lo, "alpha_cjk": ja,
                   "words": t1, "words_mid": t2},
                  lambda q, s=s, m=m, lo=lo, ja=ja, t1=t1, t2=t2: tier_alpha(q, s, m, lo, ja,
                                                                             t1, t2))
            for s, m, lo, ja, t1, t2 in product(SIGNAL_SHORT, QLEN3_MID, QLEN3_LONG, CJK_ALPHAS,
                                                QLEN3_T1, QLEN3_T2)]


def qlen3l_family() -> list[Candidate]:
    return [_rule("qlen3L", f"qlen3L a{s:g}/{m:g}/{lo:g} t{t1}/{t2}",
                  {"alpha_short": s, "alpha_mid": m, "alpha_long": lo, "words": t1,
                   "words_mid": t2},
                  lambda q, s=s, m=m, lo=lo, t1=t1, t2=t2: qlen3l_alpha(q, s, m, lo, t1, t2))
            for s, m, lo, t1, t2 in product(SIGNAL_SHORT, QLEN3_MID, QLEN3_LONG, QLEN3_T1,
                                            QLEN3_T2)]


def overlap_family(per_kb: bool) -> list[Candidate]:
    """`kbov` (per_kb: the KB's mean overlap) or `qov` (the query's own overlap): long queries
    take alpha lo when the legs' overlap@10 is below th, else hi."""
    name, key = ("kbov", "kb_overlap") if per_kb else ("qov", "overlap")
    ths = (0.3, 0.35, 0.4, 0.45) if per_kb else (0.2, 0.3, 0.4, 0.5)

    def alpha(q: Query, s: float, lo: float, hi: float, ja: float, t: int, th: float) -> float:
        if q["cjk_terms"] or int(q["word_terms"]) <= t:
            return length_alpha(q, s, lo, ja, t)
        return lo if float(q[key]) < th else hi
    return [_rule(name, f"{name} a{s:g}/{lo:g}|{hi:g} t{t} ja{ja:g} ov<{th:g}",
                  {"alpha_short": s, "alpha_lo": lo, "alpha_hi": hi, "alpha_cjk": ja,
                   "words": t, "th": th},
                  lambda q, s=s, lo=lo, hi=hi, ja=ja, t=t, th=th: alpha(q, s, lo, hi, ja, t, th))
            for s, lo, hi, ja, t, th in product(SIGNAL_SHORT, (0.4, 0.5), (0.5, 0.6, 0.7),
                                                CJK_ALPHAS, (4, 6), ths)]


def signal_families() -> dict[str, list[Candidate]]:
    return {"qlen3": qlen3_family(), "qlen3L": qlen3l_family(), "fconf": fconf_family(),
            "fconfL": fconf_family(True), "fconfA": fconfa_family(), "cjkconf": cjkconf_family(),
            "vconf": vconf_family(), "kbov": overlap_family(True), "qov": overlap_family(False)}


def adaptive_families() -> dict[str, list[Candidate]]:
    return {"dbsf": dbsf_family(), "mix": mix_family(), "cjksub": cjksub_family(),
            "qlen": qlen_family(), "qlen1": qlen1_family(), "rqlen": rqlen_family(),
            **signal_families()}
