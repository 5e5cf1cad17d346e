#!/usr/bin/env python3
"""The benchmark suite (issue 25): every collection × {bm25s peers, groove fts, vector, hybrid},
and fusion candidates chosen by leave-one-collection-out.

    python bench/suite_collections.py [--mirrors DIR]   # once: rebuild the collections
    python bench/suite.py [--collections med,adi] [--render-only]

Per collection (bench/collections.json): index with built-in defaults (the real default model;
an index is reused while its collection and groove's index code are unchanged, suite_index.py),
write a golden file of the judged queries (`<doc id>.md`, graded), run `groove eval --format
json --no-history --mode fts|vector|hybrid`, run the bm25s peers of the language
(suite_peers.py), fetch each query's leg lists once (suite_lists.py) and score the fusion
candidates in memory (suite_fusion.py). nDCG@10 with 95 % bootstrap CIs (groove's
`evaluate.stats`), hybrid vs the best BM25 peer paired (bootstrap CI of the mean delta and a
randomization test, `evaluate.paired`). Writes bench/results/suite.json and suite.md.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from _common import RESULTS, machine, package_versions, run_groove, with_kept_part, write_results
from suite_adaptive import adaptive_families, word_counts
from suite_fusion import (
    Candidate,
    agree_family,
    builtin,
    gap_family,
    lang_family,
    loco,
    pseudo_choice,
    rrf_family,
    score_all,
    score_family,
)
from suite_index import SuiteCollection, defaults_digest, suite_collections
from suite_lists import load_or_fetch
from suite_peers import peers_for, run_peer
from suite_report import markdown

from groove_cli.engine import FTS_QUERY_VERSION, bootstrap_ci, randomization_p

MODES = ("fts", "vector", "hybrid")
RESULT_VERSION = 1
SUITE_PACKAGES = ("bm25s", "PyStemmer", "fugashi", "unidic-lite", "numpy", "onnxruntime",
                  "apsw", "sqlite-vec", "tokenizers")


def load_queries(coll: SuiteCollection) -> list[dict[str, Any]]:
    with coll.queries_file.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [r for r in rows if any(int(g) > 0 for g in r.get("grades", {}).values())
            or (r.get("relevant") and not r.get("grades"))]


def with_grades(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Queries whose `grades` are filled in (binary sets list `relevant` only)."""
    return [r if r.get("grades") else {**r, "grades": {d: 1 for d in r["relevant"]}}
            for r in rows]


def write_golden(coll: SuiteCollection, queries: list[dict[str, Any]]) -> Path:
    doc = {"queries": [{"id": str(q["id"]), "query": q["query"],
                        "expected": [{"path": f"{d}.md", "grade": int(g)}
                                     for d, g in q["grades"].items()]}
                       for q in queries]}
    path = coll.work / "golden.yml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=10_000),
                    encoding="utf-8")
    return path


def groove_modes(coll: SuiteCollection, golden: Path) -> dict[str, dict[str, float]]:
    """Per mode, nDCG@10 per query id from `groove eval`."""
    out = {}
    for mode in MODES:
        run = run_groove(["eval", "--kb-path", str(coll.kb), "--golden", str(golden),
                          "--format", "json", "--no-history", "--mode", mode],
                         config=coll.config, db=coll.db)
        report = run.json()
        out[mode] = {q["id"]: q["metrics"]["ndcg_at_k"]["10"] for q in report["per_query"]
                     if q["expected"]}
    return out


def families() -> dict[str, list[Candidate]]:
    return {"builtin": [builtin()], "rrf": rrf_family(), "score": score_family(),
            "agree": agree_family(), "gap": gap_family(), "lang": lang_family(),
            **adaptive_families()}


def measure_systems(coll: SuiteCollection, queries: list[dict[str, Any]]
                    ) -> dict[str, dict[str, float]]:
    """groove's three modes and the peers, nDCG@10 per query id (cached beside the index:
    they change only with the index, i.e. the collection or groove's code)."""
    cached = coll.work / "systems.json"
    stamp = {**coll.stamp(), "version": RESULT_VERSION, "queries": len(queries),
             "fts_query_version": FTS_QUERY_VERSION,  # the compiler is not index code
             "defaults": defaults_digest()}
    if cached.is_file():
        data: dict[str, Any] = json.loads(cached.read_text(encoding="utf-8"))
        if data.get("stamp") == stamp:
            return dict(data["systems"])
    golden = write_golden(coll, queries)
    systems = {f"groove {m}": v for m, v in groove_modes(coll, golden).items()}
    for name, tokeniser in peers_for(coll.language).items():
        systems[name] = run_peer(coll.docs, queries, tokeniser)
    cached.write_text(json.dumps({"stamp": stamp, "systems": systems}), encoding="utf-8")
    return systems


def measure(coll: SuiteCollection) -> dict[str, Any]:
    """One collection's per-query nDCG@10 of every system and fusion candidate."""
    index_run = coll.ensure_suite_index()
    queries = with_grades(load_queries(coll))
    systems = measure_systems(coll, queries)
    lists = load_or_fetch(coll, queries)
    word_counts(lists["queries"])
    meta = {int(k): (v[0], v[1]) for k, v in lists["meta"].items()}
    grades = [{f"{d}.md": int(g) for d, g in q["grades"].items()} for q in queries]
    ids = [q["id"] for q in lists["queries"]]
    candidates: dict[str, dict[str, list[float]]] = {}
    for family, members in families().items():
        candidates[family] = score_all(members, lists["queries"], meta, grades).values
    label, pseudo_ndcg = pseudo_choice(rrf_family(), lists["pseudo"], meta,
                                       default="rrf v1 cjk6 k60")
    pseudo = {"chosen": label, "pseudo_ndcg": pseudo_ndcg, "pseudo_queries": len(lists["pseudo"])}
    candidates["pseudo"] = {"pseudo-query choice": candidates["rrf"][label]}
    status = coll.status()
    return {"name": coll.name, "language": coll.language,
            "kind": (coll.entry or {}).get("kind"), "query_ids": ids,
            "documents": status.get("documents"), "chunks": status.get("chunks"),
            "indexed_now_s": index_run.wall_s if index_run else None,
            "systems": {name: [per[i] for i in ids] for name, per in systems.items()},
            "candidates": candidates, "pseudo": pseudo}


def ci_row(values: list[float]) -> dict[str, Any]:
    ci = bootstrap_ci({"v": values})["v"]
    return {"ndcg@10": sum(values) / len(values), "ci95": ci, "n": len(values)}


def collection_summary(data: dict[str, Any]) -> dict[str, Any]:
    """One collection's systems with CIs, groove's modes paired against the best BM25 peer,
    and the default hybrid paired against its better leg."""
    systems = {s: ci_row(v) for s, v in data["systems"].items()}
    peers = [s for s in systems if s.startswith("bm25s")]
    best_peer = max(peers, key=lambda s: systems[s]["ndcg@10"])
    vs_peer = {s: paired(data["systems"][s], data["systems"][best_peer])
               for s in ("groove fts", "groove vector", "groove hybrid")}
    best_leg = max(("groove fts", "groove vector"), key=lambda s: systems[s]["ndcg@10"])
    return {"language": data["language"], "kind": data["kind"],
            "queries": len(data["query_ids"]), "documents": data["documents"],
            "chunks": data["chunks"], "systems": systems, "best_peer": best_peer,
            "paired_vs_best_peer": vs_peer, "best_leg": best_leg,
            "hybrid_vs_best_leg": paired(data["systems"]["groove hybrid"],
                                          data["systems"][best_leg])}


def measure_fresh(coll: SuiteCollection) -> dict[str, Any]:
    """A fresh collection (issue 44): groove's modes and the peers only. No fusion family is
    scored on it, so no default can be chosen while looking at it."""
    index_run = coll.ensure_suite_index()
    queries = with_grades(load_queries(coll))
    systems = measure_systems(coll, queries)
    ids = [str(q["id"]) for q in queries]
    status = coll.status()
    return {"name": coll.name, "language": coll.language,
            "kind": (coll.entry or {}).get("kind"), "query_ids": ids,
            "documents": status.get("documents"), "chunks": status.get("chunks"),
            "indexed_now_s": index_run.wall_s if index_run else None,
            "systems": {name: [per[i] for i in ids] for name, per in systems.items()}}


def summarise(per: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Aggregates, CIs, paired tests vs the best BM25 peer, and the LOCO tables."""
    out: dict[str, Any] = {"collections": {}, "loco": {}}
    means: dict[str, dict[str, dict[str, float]]] = {}
    for name, data in per.items():
        out["collections"][name] = {**collection_summary(data), "pseudo": data["pseudo"]}
        for family, values in data["candidates"].items():
            means.setdefault(family, {})[name] = {lab: sum(v) / len(v) for lab, v in values.items()}
    out["refit"] = {}
    for family, table in means.items():
        labels = list(next(iter(table.values())))
        out["loco"][family] = loco(table, labels)
        refit = max(labels, key=lambda lab: (sum(t[lab] for t in table.values()),
                                             -labels.index(lab)))
        out["refit"][family] = {"chosen": refit, "per_collection": {
            c: t[refit] for c, t in table.items()}, "vs_builtin": {
            c: paired(per[c]["candidates"][family][refit],
                       per[c]["candidates"]["builtin"]["built-in RRF"]) for c in table}}
        for name, row in out["loco"][family].items():
            values = per[name]["candidates"][family][row["chosen"]]
            row["ci95"] = bootstrap_ci({"v": values})["v"]
            row.update(_checks(out["collections"][name], row["held_out"]))
    return out


def paired(after: Sequence[float], before: Sequence[float]) -> dict[str, Any]:
    """Mean per-query delta with its paired bootstrap CI and randomization p."""
    deltas = [a - b for a, b in zip(after, before, strict=True)]
    return {"delta": sum(deltas) / len(deltas), "ci95": bootstrap_ci({"d": deltas})["d"],
            "p": randomization_p(deltas)}


def _checks(coll: dict[str, Any], value: float) -> dict[str, Any]:
    s = coll["systems"]
    best_leg = max(s["groove fts"]["ndcg@10"], s["groove vector"]["ndcg@10"])
    peer = s[coll["best_peer"]]["ndcg@10"]
    return {"vs_best_leg": value - best_leg, "vs_best_peer": value - peer,
            "ge_best_leg": value >= best_leg - 5e-4, "peer_plus_001": value >= peer + 0.01,
            "not_below_peer_0005": value >= peer - 0.005}


NOTES = "<!-- findings written by hand from here on: suite.py keeps this part -->"


def with_notes(text: str) -> str:
    """`text` followed by the hand-written part of the current suite.md (from NOTES on)."""
    return with_kept_part("suite", NOTES, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", help="comma-separated names (default: all)")
    parser.add_argument("--fresh", action="store_true",
                        help="measure the collections marked fresh (suite_fresh.json) instead")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite suite.md from suite.json without measuring")
    args = parser.parse_args()
    if args.render_only:
        data = json.loads((RESULTS / "suite.json").read_text(encoding="utf-8"))
        (RESULTS / "suite.md").write_text(with_notes(markdown(data, load_fresh())) + "\n",
                                          encoding="utf-8")
        return
    chosen = [c for c in suite_collections(args.collections)
              if args.collections or bool((c.entry or {}).get("fresh")) == args.fresh]
    if args.fresh:
        fresh = {}
        for coll in chosen:
            print(f"suite (fresh): {coll.name}", flush=True)
            fresh[coll.name] = collection_summary(measure_fresh(coll))
        record = {"benchmark": "suite_fresh", "machine": machine(),
                  "suite_packages": package_versions(SUITE_PACKAGES), "collections": fresh}
        (RESULTS / "suite_fresh.json").write_text(json.dumps(record, indent=2) + "\n",
                                                 encoding="utf-8")
        data = json.loads((RESULTS / "suite.json").read_text(encoding="utf-8"))
        (RESULTS / "suite.md").write_text(with_notes(markdown(data, record)) + "\n",
                                          encoding="utf-8")
        return
    per = {}
    for coll in chosen:
        print(f"suite: {coll.name}", flush=True)
        per[coll.name] = measure(coll)
    data = {"benchmark": "suite", "machine": machine(),
            "suite_packages": package_versions(SUITE_PACKAGES), **summarise(per)}
    write_results("suite", data, with_notes(markdown(data, load_fresh())))
    print(markdown(data))


def load_fresh() -> dict[str, Any] | None:
    """The last `--fresh` run's results, rendered apart in suite.md."""
    path = RESULTS / "suite_fresh.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


if __name__ == "__main__":
    main()
