#!/usr/bin/env python3
"""A small learned ranker over the legs' lists against the default score fusion (issue 44).

    python bench/learned_ranker.py [--collections cisi,med]   # after bench/suite.py

Research, not shipped: does a linear model over what the legs already return beat the default
fusion held out? Per query, every candidate the legs listed (suite_lists.py, the pool a
10-hit search uses) gets features — per leg its normalised score (cosines min-max, bm25 / the
leg's best, as score fusion reads them), its reciprocal rank and whether it listed the
candidate; the query's script and length tier; the legs' overlap@10; the vector leg's best
cosine and its gap — and their products with the normalised scores, so the model can weigh a
leg differently per kind of query. A logistic regression (L2, Newton steps, every collection
weighted equally) is trained on the non-fresh collections but the held-out one
(leave-one-collection-out) and ranks the held-out queries; the fresh collections are ranked by
the model trained on all non-fresh ones. Compared per query with the default fusion on the same
lists (suite_adaptive's `qlen3L` member the defaults are) and with the better leg of `groove
eval` (systems.json), paired: bootstrap CI, randomization test. Writes
bench/results/learned_ranker.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from _common import machine, machine_line, with_kept_part, write_results
from suite import load_queries, paired, with_grades
from suite_adaptive import qlen3l_family, word_counts
from suite_fusion import LIMIT, Query, _normalised, ndcg10, overlap
from suite_index import SuiteCollection, suite_collections
from suite_lists import load_or_fetch

NOTES = "<!-- findings written by hand from here on: learned_ranker.py keeps this part -->"
LEGS = ("vector", "fts_chunks", "fts_words", "fts_cjk")
DEFAULT_LABEL = "qlen3L a0.8/0.7/0.5 t4/8"
L2 = 1.0
RRF_K = 10.0
FEATURES = os.environ.get("LR_FEATURES", "all")
"""`scores`: only the legs' normalised scores and their products with the query features."""


def query_features(q: Query) -> list[float]:
    """What the model knows of the query: script, length tier, the legs' agreement, the vector
    leg's best cosine and its gap (s1 − s10)."""
    words = int(q["word_terms"])
    cjk = 1.0 if q["cjk_terms"] else 0.0
    vec = q["scores"]["vector"][:LIMIT]
    return [cjk, (1 - cjk) * (words <= 4), (1 - cjk) * (4 < words <= 8), (1 - cjk) * (words > 8),
            overlap(q), vec[0] if vec else 0.0, (vec[0] - vec[-1]) if vec else 0.0]


def candidate_rows(q: Query) -> tuple[list[int], np.ndarray]:
    """Every listed candidate of `q` and its feature row."""
    legs = {}
    for leg in LEGS:
        ids = q["ids"][leg]
        if not ids:
            legs[leg] = {}
            continue
        norm, _ = _normalised(q["scores"][leg], "max", leg)
        legs[leg] = {cid: (s, 1.0 / (RRF_K + rank)) for rank, (cid, s)
                     in enumerate(zip(ids, norm, strict=True), start=1)}
    universe = sorted({cid for found in legs.values() for cid in found})
    qf = query_features(q)
    rows = []
    for cid in universe:
        per_leg = []
        for leg in LEGS:
            s, rr = legs[leg].get(cid, (0.0, 0.0))
            per_leg += [s, rr, 1.0 if cid in legs[leg] else 0.0]
        vec_s = per_leg[0]
        text_s = max(per_leg[3], per_leg[6])
        cjk_s = per_leg[9]
        crossed = [x * f for f in qf for x in (vec_s, text_s, cjk_s)]
        if FEATURES == "scores":
            rows.append([1.0, vec_s, text_s, cjk_s, *crossed[:12]])
        else:
            rows.append([1.0, *per_leg, *qf, *crossed])
    return universe, np.array(rows, dtype=np.float64)


def fit(blocks: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Weighted L2 logistic regression by Newton's method (pairwise: on feature differences,
    whose intercept column is 0); each block (one collection) weighs the same in total."""
    x = np.vstack([b[0] for b in blocks])
    y = np.concatenate([b[1] for b in blocks])
    w = np.concatenate([np.full(len(b[1]), 1.0 / len(b[1])) for b in blocks]) * len(y) / len(blocks)
    mean, sd = x[:, 1:].mean(axis=0), x[:, 1:].std(axis=0)
    sd[sd == 0] = 1.0
    z = np.hstack([x[:, :1], (x[:, 1:] - mean) / sd])
    beta = np.zeros(z.shape[1])
    for _ in range(25):
        p = 1.0 / (1.0 + np.exp(-(z @ beta)))
        grad = z.T @ (w * (p - y)) + L2 * beta
        hess = (z * (w * p * (1 - p))[:, None]).T @ z + L2 * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    # back to raw features: z = (x − mean) / sd
    raw = beta.copy()
    raw[1:] = beta[1:] / sd
    raw[0] = beta[0] - float((beta[1:] * mean / sd).sum())
    return raw


def labelled(data: dict[str, Any], queries: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise examples (RankNet-style, linear): per query, each relevant candidate against
    each non-relevant one, as feature differences labelled 1 and their negations labelled 0;
    the intercept column is 0 in a difference."""
    meta = {int(k): v for k, v in data["meta"].items()}
    xs, ys = [], []
    for q, row in zip(data["queries"], queries, strict=True):
        relevant = {f"{d}.md" for d, g in row["grades"].items() if int(g) > 0}
        ids, x = candidate_rows(q)
        good = [i for i, c in enumerate(ids) if meta[c][0] in relevant]
        bad = [i for i, c in enumerate(ids) if meta[c][0] not in relevant]
        if not good or not bad:
            continue
        diff = (x[good][:, None, :] - x[bad][None, :, :]).reshape(-1, x.shape[1])
        weight = 1.0 / len(diff)  # each query weighs the same
        xs += [diff, -diff]
        ys += [np.full(len(diff), 1.0), np.full(len(diff), 0.0)]
        row.setdefault("_pair_weight", weight)
    return np.vstack(xs), np.concatenate(ys)


def ranked_ndcg(data: dict[str, Any], queries: list[dict[str, Any]], beta: np.ndarray
                ) -> list[float]:
    meta = {int(k): (v[0], v[1]) for k, v in data["meta"].items()}
    out = []
    for q, row in zip(data["queries"], queries, strict=True):
        ids, x = candidate_rows(q)
        order = sorted(range(len(ids)), key=lambda i: (-float(x[i] @ beta), ids[i]))
        grades = {f"{d}.md": int(g) for d, g in row["grades"].items()}
        out.append(ndcg10([ids[i] for i in order[:LIMIT]], meta, grades))
    return out


def default_ndcg(data: dict[str, Any], queries: list[dict[str, Any]]) -> list[float]:
    default = next(c for c in qlen3l_family() if c.label == DEFAULT_LABEL)
    meta = {int(k): (v[0], v[1]) for k, v in data["meta"].items()}
    return [ndcg10(default.rank(q), meta, {f"{d}.md": int(g) for d, g in row["grades"].items()})
            for q, row in zip(data["queries"], queries, strict=True)]


def best_leg(coll: SuiteCollection, ids: Sequence[str]) -> tuple[str, list[float]] | None:
    """The better of `groove eval --mode fts|vector` on this collection, per query (from the
    suite's systems.json), or None when the suite has not measured it."""
    path = coll.work / "systems.json"
    if not path.is_file():
        return None
    systems: Mapping[str, Mapping[str, float]] = json.loads(path.read_text())["systems"]
    legs = {name: [systems[name][i] for i in ids] for name in ("groove fts", "groove vector")}
    name = max(legs, key=lambda n: sum(legs[n]))
    return name, legs[name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", help="comma-separated names (default: all)")
    args = parser.parse_args()
    colls = suite_collections(args.collections)
    loaded: dict[str, tuple[SuiteCollection, dict[str, Any], list[dict[str, Any]]]] = {}
    for coll in colls:
        print(f"learned ranker: lists of {coll.name}", flush=True)
        coll.ensure_suite_index()
        queries = with_grades(load_queries(coll))
        data = load_or_fetch(coll, queries)
        word_counts(data["queries"])
        loaded[coll.name] = (coll, data, queries)
    fresh = {c.name for c in colls if (c.entry or {}).get("fresh")}
    dev = [n for n in loaded if n not in fresh]
    blocks = {n: labelled(loaded[n][1], loaded[n][2]) for n in dev}
    rows = {}
    for name, (coll, data, queries) in loaded.items():
        train = [n for n in dev if n != name]
        beta = fit([blocks[n] for n in train])
        learned = ranked_ndcg(data, queries, beta)
        default = default_ndcg(data, queries)
        row: dict[str, Any] = {"fresh": name in fresh, "queries": len(queries),
                               "default": sum(default) / len(default),
                               "learned": sum(learned) / len(learned),
                               "vs_default": paired(learned, default)}
        leg = best_leg(coll, [str(q["id"]) for q in data["queries"]])
        if leg is not None:
            row["best_leg"] = leg[0]
            row["best_leg_ndcg"] = sum(leg[1]) / len(leg[1])
            row["learned_vs_best_leg"] = paired(learned, leg[1])
            row["default_vs_best_leg"] = paired(default, leg[1])
        rows[name] = row
        print(f"  {name}: default {row['default']:.4f} learned {row['learned']:.4f}", flush=True)
    data = {"benchmark": "learned_ranker", "machine": machine(), "l2": L2,
            "features": len(candidate_rows(next(iter(loaded.values()))[1]["queries"][0])[1][0]),
            "rows": rows}
    write_results("learned_ranker", data,
                  with_kept_part("learned_ranker", NOTES, markdown(data)))


def _delta(d: Mapping[str, Any]) -> str:
    star = " *" if d["p"] < 0.05 else ""
    return f"{d['delta']:+.4f} [{d['ci95'][0]:+.4f}, {d['ci95'][1]:+.4f}] p={d['p']:.3f}{star}"


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# A learned ranker over the legs' lists, leave-one-collection-out (issue 44)",
        "",
        "nDCG@10 on the suite's lists (bench/learned_ranker.py): the default score fusion "
        f"(`{DEFAULT_LABEL}`, in memory) against a logistic regression over "
        f"{data['features']} features of each listed candidate (legs' normalised scores, "
        "reciprocal ranks, presence; the query's script, length tier, legs' overlap, vector "
        "best cosine and gap; their products with the normalised scores), trained on the "
        "non-fresh collections but the held-out one (fresh: on all non-fresh ones). Paired "
        "per query: mean delta [95 % bootstrap CI], randomization p; * = p < 0.05. 'Best leg': "
        "the better of `groove eval --mode fts|vector` (suite.md).",
        "",
    ]
    for fresh in (False, True):
        lines += [f"## {'Fresh collections' if fresh else 'Development collections (held out)'}",
                  "", "| collection | queries | default | learned | learned − default | "
                  "best leg | learned − best leg | default − best leg |",
                  "|---|---:|---:|---:|---|---|---|---|"]
        for name, r in data["rows"].items():
            if r["fresh"] != fresh:
                continue
            leg = (f"{r['best_leg']} {r['best_leg_ndcg']:.4f} | {_delta(r['learned_vs_best_leg'])}"
                   f" | {_delta(r['default_vs_best_leg'])}" if "best_leg" in r else "— | — | —")
            lines.append(f"| {name} | {r['queries']} | {r['default']:.4f} | {r['learned']:.4f} | "
                         f"{_delta(r['vs_default'])} | {leg} |")
        lines.append("")
    lines += [machine_line(data["machine"]), "", "Command: `python bench/learned_ranker.py` "
              "(after `make suite`, whose lists and systems it reads)."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
