#!/usr/bin/env python3
"""Vector pseudo-relevance feedback (issue 44, search.md §5.1) on the benchmark suite.

    python bench/feedback.py [--collections cisi,med]   # after bench/suite_index.py

Per suite collection (bench/collections.json; indexes from bench/suite_index.py), `groove eval
--mode hybrid --no-history` with built-in defaults, then with `--feedback-beta B
--feedback-docs M` for every grid point: nDCG@10 per query. The setting is chosen by
leave-one-collection-out on the collections not marked fresh (off is a candidate: the best
mean of per-collection means over the other collections) and scored on the held-out one,
paired against off (bootstrap CI, randomization test); the fresh collections are scored at
the choice made on all the others, reported apart. Writes bench/results/feedback.{json,md}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from typing import Any

from _common import ROOT, machine, machine_line, run_groove, with_kept_part, write_results
from suite import load_queries, paired, with_grades, write_golden
from suite_index import SuiteCollection, defaults_digest, suite_collections

NOTES = "<!-- findings written by hand from here on: feedback.py keeps this part -->"
OFF = "off"
GRID = [(beta, docs) for docs in (3, 5) for beta in (0.1, 0.2, 0.35, 0.5)]
"""(feedback_beta, feedback_docs) points tried besides off."""


def label(beta: float, docs: int) -> str:
    return f"beta {beta} docs {docs}"


def ndcg_per_query(coll: SuiteCollection, golden: Any, extra: list[str]) -> dict[str, float]:
    run = run_groove(["eval", "--kb-path", str(coll.kb), "--golden", str(golden), "--format",
                      "json", "--no-history", "--mode", "hybrid", *extra],
                     config=coll.config, db=coll.db)
    return {q["id"]: q["metrics"]["ndcg_at_k"]["10"] for q in run.json()["per_query"]
            if q["expected"]}


def measure(coll: SuiteCollection) -> dict[str, list[float]]:
    """nDCG@10 per query (in query order) for off and every grid point; cached beside the
    index while the index, the search code, the defaults and the grid are unchanged."""
    coll.ensure_suite_index()
    queries = with_grades(load_queries(coll))
    stamp = {**coll.stamp(), "grid": GRID, "defaults": defaults_digest(),
             "search_code": search_digest(), "queries": len(queries)}
    cached = coll.work / "feedback.json"
    if cached.is_file():
        data = json.loads(cached.read_text(encoding="utf-8"))
        if data.get("stamp") == stamp:
            return dict(data["ndcg"])
    out = _measure(coll, queries)
    cached.write_text(json.dumps({"stamp": stamp, "ndcg": out}), encoding="utf-8")
    return out


def search_digest() -> str:
    """sha256 over groove_cli/retrieve/*.py: what decides a search of a given index."""
    h = hashlib.sha256()
    for file in sorted((ROOT / "groove_cli" / "retrieve").glob("*.py")):
        h.update(file.name.encode() + b"\0" + file.read_bytes())
    return h.hexdigest()


def _measure(coll: SuiteCollection, queries: list[dict[str, Any]]) -> dict[str, list[float]]:
    golden = write_golden(coll, queries)
    ids = [str(q["id"]) for q in queries]
    out = {}
    for name, extra in [(OFF, []), *((label(b, d), ["--feedback-beta", str(b),
                                                   "--feedback-docs", str(d)])
                                      for b, d in GRID)]:
        per = ndcg_per_query(coll, golden, extra)
        out[name] = [per[i] for i in ids if i in per]
        print(f"  {coll.name} {name}: {sum(out[name]) / len(out[name]):.4f}", flush=True)
    return out


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def choose(per: dict[str, dict[str, list[float]]], names: list[str]) -> str:
    """The candidate with the best mean of per-collection means over `names` (off first, so
    a tie keeps it)."""
    labels = list(next(iter(per.values())))
    return max(labels, key=lambda lab: (mean([mean(per[n][lab]) for n in names]),
                                        -labels.index(lab)))


def summarise(per: dict[str, dict[str, list[float]]], fresh: set[str]) -> dict[str, Any]:
    dev = [n for n in per if n not in fresh]
    rows = {}
    for name in per:
        others = [n for n in dev if n != name]
        chosen = choose(per, others)
        rows[name] = {"fresh": name in fresh, "chosen": chosen, "off": mean(per[name][OFF]),
                      "held_out": mean(per[name][chosen]),
                      "vs_off": paired(per[name][chosen], per[name][OFF]),
                      "means": {lab: mean(v) for lab, v in per[name].items()}}
    return {"rows": rows, "refit_on_dev": choose(per, dev)}


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Vector pseudo-relevance feedback (Rocchio), leave-one-collection-out",
        "",
        "`groove eval --mode hybrid` nDCG@10 with built-in defaults (off) and with "
        "`--feedback-beta B --feedback-docs M` (search.md §5.1). For each collection the "
        "setting with the best mean of per-collection means on the other non-fresh "
        "collections (off included) is scored on it, paired against off: mean per-query "
        "delta [95 % bootstrap CI], randomization p. Fresh collections (issue 44) take the "
        "choice made on all non-fresh ones and are reported apart.",
        "",
    ]
    for fresh in (False, True):
        lines += [f"## {'Fresh collections' if fresh else 'Development collections'}", "",
                  "| collection | chosen on the others | off | chosen | − off |",
                  "|---|---|---:|---:|---|"]
        for name, row in data["rows"].items():
            if row["fresh"] != fresh:
                continue
            d = row["vs_off"]
            star = " *" if d["p"] < 0.05 else ""
            lines.append(f"| {name} | {row['chosen']} | {row['off']:.4f} | "
                         f"{row['held_out']:.4f} | {d['delta']:+.4f} [{d['ci95'][0]:+.4f}, "
                         f"{d['ci95'][1]:+.4f}] p={d['p']:.3f}{star} |")
        lines.append("")
    labels = list(next(iter(data["rows"].values()))["means"])
    lines += ["## Every grid point (mean nDCG@10)", "",
              "| collection | " + " | ".join(labels) + " |",
              "|---|" + "---:|" * len(labels)]
    for name, row in data["rows"].items():
        lines.append(f"| {name} | " + " | ".join(f"{row['means'][lab]:.4f}" for lab in labels)
                     + " |")
    lines += ["", f"Chosen on all development collections: {data['refit_on_dev']}.", "",
              machine_line(data["machine"]), "", "Command: `python bench/feedback.py`."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", help="comma-separated names (default: all)")
    parser.add_argument("--measure-only", action="store_true",
                        help="measure (and cache) the collections named; write no results")
    args = parser.parse_args()
    colls = suite_collections(args.collections)
    fresh = {c.name for c in colls if (c.entry or {}).get("fresh")}
    per = {}
    for coll in colls:
        print(f"feedback: {coll.name}", flush=True)
        per[coll.name] = measure(coll)
    if args.measure_only:
        return
    data = {"benchmark": "feedback", "machine": machine(), "grid": GRID, **summarise(per, fresh)}
    write_results("feedback", data, with_kept_part("feedback", NOTES, markdown(data)))
    print(json.dumps({n: r["vs_off"]["delta"] for n, r in data["rows"].items()}))


if __name__ == "__main__":
    main()
