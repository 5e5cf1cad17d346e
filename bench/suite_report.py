"""bench/results/suite.md from the suite's JSON (suite.py)."""

from __future__ import annotations

from typing import Any

from _common import machine_line

FAMILY_TITLES = {
    "builtin": "weighted RRF at its built-in weights (the default before score fusion; no choice)",
    "rrf": "weighted RRF: vector weight × CJK weight × rrf_k (fts weight 1)",
    "score": "score fusion: bm25 / best bm25 + min-max cosine (max), min-max or z-score "
             "normalised leg scores, convex combination",
    "agree": "query-adaptive RRF: vector weight × (lam + (1 − lam) × leg overlap@10)",
    "gap": "query-adaptive RRF: leg weights follow each leg's score gap (s1 − s10) / s1",
    "lang": "weighted RRF with one vector weight for queries with CJK text, one for the rest",
    "pseudo": "per-KB choice of the RRF member on the KB's own pseudo-queries (no golden set)",
    "dbsf": "distribution-based score fusion: each leg scaled by its mean ± 3σ, convex combination",
    "mix": "(1 − beta) × score fusion (max) + beta × built-in weighted RRF",
    "cjksub": "score fusion (max), the trigram and word-level legs × sub for queries with CJK text",
    "qlen": "score fusion (max) whose vector share follows the query: CJK text → alpha_cjk; "
            "else ≤ t word terms → alpha_short (≤ 0.9), more → alpha_long",
    "qlen1": "qlen with alpha_short up to 1 (short Latin queries may drop full text)",
    "rqlen": "weighted RRF whose vector weight follows the query's length like qlen's alpha "
             "(v_short up to t word terms, v_long above, 1 with CJK text)",
    "qlen3": "qlen1 with three length tiers: ≤ t1 word terms → alpha_short, ≤ t2 → alpha_mid, "
             "more → alpha_long",
    "qlen3L": "qlen3 whose queries with CJK text take the long tier's alpha (no alpha_cjk)",
    "fconf": "qlen1's alpha − d when the full-text leg's gap (s1 − s10) / s1 is at least the "
             "KB's median over its queries, + d below",
    "fconfL": "fconf on queries longer than t word terms only",
    "fconfA": "fconf against a fixed gap th (the query's own, nothing from the KB's other queries)",
    "cjkconf": "qlen with alpha_cjk − d when the CJK leg's gap reaches th (fixed or the KB's "
               "median), + d below",
    "vconf": "qlen1's alpha + d when the vector leg's cosine gap s1 − s10 is at least the KB's "
             "median over its queries, − d below",
    "kbov": "qlen1 whose long queries take alpha lo when the KB's mean leg overlap@10 over its "
            "queries is below th, else hi",
    "qov": "qlen1 whose long queries take alpha lo when the query's own leg overlap@10 is "
           "below th, else hi",
}


def _ci(row: dict[str, Any]) -> str:
    lo, hi = row["ci95"] if row.get("ci95") else (float("nan"), float("nan"))
    value = row.get("ndcg@10", row.get("held_out"))
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _systems_table(data: dict[str, Any]) -> list[str]:
    names = list(data["collections"])
    peers_en = sorted({s for c in data["collections"].values() if c["language"] == "en"
                       for s in c["systems"] if s.startswith("bm25s")})
    peers_ja = sorted({s for c in data["collections"].values() if c["language"] == "ja"
                       for s in c["systems"] if s.startswith("bm25s")})
    systems = [*peers_en, *peers_ja, "groove fts", "groove vector", "groove hybrid"]
    lines = ["| collection | lang | kind | queries | docs / chunks | "
             + " | ".join(systems) + " |",
             "|---|---|---|---:|---:|" + "---|" * len(systems)]
    for name in names:
        c = data["collections"][name]
        cells = []
        for s in systems:
            row = c["systems"].get(s)
            if row is None:
                cells.append("—")
                continue
            text = _ci(row)
            cells.append(f"**{text}**" if s == c["best_peer"] else text)
        lines.append(f"| {name} | {c['language']} | {c['kind']} | {c['queries']} | "
                     f"{c['documents']} / {c['chunks']} | " + " | ".join(cells) + " |")
    return lines


def _paired_table(data: dict[str, Any]) -> list[str]:
    lines = ["| collection | best BM25 peer | groove fts − peer | groove vector − peer | "
             "groove hybrid − peer |", "|---|---|---|---|---|"]
    for name, c in data["collections"].items():
        cells = []
        for s in ("groove fts", "groove vector", "groove hybrid"):
            p = c["paired_vs_best_peer"][s]
            lo, hi = p["ci95"]
            star = " *" if p["p"] < 0.05 else ""
            cells.append(f"{p['delta']:+.3f} [{lo:+.3f}, {hi:+.3f}] p={p['p']:.3f}{star}")
        lines.append(f"| {name} | {c['best_peer']} | " + " | ".join(cells) + " |")
    return lines


def _leg_table(data: dict[str, Any]) -> list[str]:
    lines = ["| collection | best leg | groove hybrid − best leg |", "|---|---|---|"]
    for name, c in data["collections"].items():
        if "hybrid_vs_best_leg" not in c:  # results written before this table existed
            continue
        p = c["hybrid_vs_best_leg"]
        lo, hi = p["ci95"]
        star = " *" if p["p"] < 0.05 else ""
        lines.append(f"| {name} | {c['best_leg']} | {p['delta']:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                     f"p={p['p']:.3f}{star} |")
    return lines


def _loco_table(data: dict[str, Any], family: str) -> list[str]:
    rows = data["loco"][family]
    lines = [f"#### {family}: {FAMILY_TITLES.get(family, family)}", "",
             "| held-out collection | setting chosen on the others | nDCG@10 held out [95% CI] "
             "| − best leg | − best BM25 peer |", "|---|---|---|---:|---:|"]
    for name, r in rows.items():
        chosen = r["chosen"]
        if family == "pseudo":
            chosen = data["collections"][name]["pseudo"]["chosen"] + " (per KB)"
        lines.append(f"| {name} | {chosen} | {_ci(r)} | {r['vs_best_leg']:+.3f} | "
                     f"{r['vs_best_peer']:+.3f} |")
    n = len(rows)
    legs = sum(1 for r in rows.values() if r["ge_best_leg"])
    plus = sum(1 for r in rows.values() if r["peer_plus_001"])
    floor = sum(1 for r in rows.values() if r["not_below_peer_0005"])
    lines += ["", f"≥ best leg on {legs}/{n}; ≥ best BM25 peer + 0.01 on {plus}/{n}; "
              f"not more than 0.005 below the peer on {floor}/{n}; mean held-out nDCG@10 "
              f"{sum(r['held_out'] for r in rows.values()) / n:.3f}.", ""]
    return lines


def _refit_table(data: dict[str, Any]) -> list[str]:
    """Each family's member chosen on all collections at once: the setting a default would
    take (in-sample figures, for reference; the held-out evidence is the LOCO tables)."""
    refit = data.get("refit", {})
    names = list(data["collections"])
    lines = ["### Refit on every collection (the setting a default would take; in-sample)", "",
             "| family | setting | " + " | ".join(names) + " | mean |",
             "|---|---|" + "---:|" * (len(names) + 1)]
    for family, r in refit.items():
        values = [r["per_collection"][n] for n in names]
        lines.append(f"| {family} | {r['chosen']} | " + " | ".join(f"{v:.3f}" for v in values)
                     + f" | {sum(values) / len(values):.3f} |")
    lines += ["", "Each refit setting against the built-in RRF, paired per query: mean delta "
              "[95 % CI], * = randomization p < 0.05.", "",
              "| family | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for family, r in refit.items():
        if family == "builtin" or "vs_builtin" not in r:
            continue
        cells = []
        for n in names:
            p = r["vs_builtin"][n]
            lo, hi = p["ci95"]
            cells.append(f"{p['delta']:+.3f} [{lo:+.3f}, {hi:+.3f}]{' *' if p['p'] < 0.05 else ''}")
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _fresh_summary(fresh: dict[str, Any]) -> list[str]:
    """How many fresh collections meet issue 44's bars, counted from the paired deltas."""
    colls = fresh["collections"].values()
    n = len(fresh["collections"])

    def count(test: Any) -> int:
        return sum(1 for c in colls if test(c))

    def leg(c: dict[str, Any]) -> float:
        return float(c["hybrid_vs_best_leg"]["delta"])

    def peer(c: dict[str, Any]) -> float:
        return float(c["paired_vs_best_peer"]["groove hybrid"]["delta"])

    return [f"Of {n}: hybrid ≥ its best leg + 0.02 on {count(lambda c: leg(c) >= 0.02)}; "
            f"below its best leg by more than 0.005 on {count(lambda c: leg(c) < -0.005)}; "
            f"≥ the best BM25 peer + 0.02 on {count(lambda c: peer(c) >= 0.02)}."]


def fresh_section(fresh: dict[str, Any]) -> list[str]:
    """The collections added in issue 44, reported apart: no default was chosen on them."""
    return [
        "## Fresh collections (issue 44): reported apart",
        "",
        "Marked `fresh` in `bench/collections.json`: no default or fusion candidate was "
        "chosen while looking at them, and no LOCO family above is scored on them; they "
        "confirm or refute the defaults chosen on the collections above (`bench/suite.py "
        "--fresh`, same metric, CIs and tests).",
        "",
        *_systems_table(fresh),
        "",
        *_paired_table(fresh),
        "",
        *_leg_table(fresh),
        "",
        *_fresh_summary(fresh),
        "",
        machine_line(fresh["machine"]),
        "",
    ]


def markdown(data: dict[str, Any], fresh: dict[str, Any] | None = None) -> str:
    lines = [
        "# Benchmark suite: public collections nobody tuned on (issue 25)",
        "",
        "nDCG@10 [95 % bootstrap CI over queries, 1000 resamples, seed 0] with built-in "
        "defaults (multilingual-e5-small, limit 10). Collections: `bench/collections.json`, "
        "rebuilt by `bench/suite_collections.py`; groove rows are `groove eval --mode …`; "
        "peers are bm25s over whole documents, scored by groove's metric code. Bold: the best "
        "BM25 peer of the collection.",
        "",
        *_systems_table(data),
        "",
        "## Paired against the best BM25 peer",
        "",
        "Mean per-query delta of nDCG@10 [paired 95 % bootstrap CI], two-sided randomization "
        "test (10,000 sign flips); * = p < 0.05.",
        "",
        *_paired_table(data),
        "",
        "## The default hybrid against its best leg",
        "",
        "Per query, `groove hybrid` − the better of `groove fts` and `groove vector` on that "
        "collection: mean delta of nDCG@10 [paired 95 % bootstrap CI], two-sided randomization "
        "test; * = p < 0.05.",
        "",
        *_leg_table(data),
        "",
        "## Fusion chosen by leave-one-collection-out",
        "",
        "For each held-out collection, the member of a family with the best mean nDCG@10 "
        "(mean of per-collection means) on the other collections is scored on the held-out "
        "one, from the legs' lists fused in memory (suite_fusion.py). 'Best leg' is groove fts "
        "or vector alone, whichever is higher on that collection (from `groove eval`).",
        "",
    ]
    for family in data["loco"]:
        lines += _loco_table(data, family)
    lines += _refit_table(data)
    if fresh:
        lines += fresh_section(fresh)
    lines += [machine_line(data["machine"]), "",
              "Packages: " + ", ".join(f"{k} {v}" for k, v in data["suite_packages"].items()),
              "", "Command: `make suite` (`bench/suite_collections.py`, then `bench/suite.py`)."]
    return "\n".join(lines)
