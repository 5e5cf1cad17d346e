#!/usr/bin/env python3
"""Note-level evidence on top of the default fusion, leave-one-collection-out (issue 44).

    python bench/doc_aggregation.py   # after bench/suite.py and bench/learned_ranker.py

Since chunks are cut at every heading level and at the model's window (issue 46), a long note
is many chunks, and a note whose answer is spread over several of them ranks by its best chunk
alone; whole-document BM25 (the peers) sees all of it. Candidate: the default score fusion's
chunk scores (suite_adaptive's `qlen3L` member the defaults are, in memory on the suite's
lists), then each note scored `best chunk + gamma × Σ its other listed chunks`, notes ranked by
that and shown by their best chunk. gamma is chosen by leave-one-collection-out on the
non-fresh collections (gamma 0 = the default is a candidate) and scored on the held-out one,
paired against the default; fresh collections take the choice made on all non-fresh ones.
Writes bench/results/doc_aggregation.{json,md}.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from _common import machine, machine_line, with_kept_part, write_results
from suite import load_queries, paired, with_grades
from suite_adaptive import _weights, qlen3l_alpha, qlen3l_family, word_counts
from suite_fusion import LIMIT, Query, combined, ndcg10
from suite_index import suite_collections
from suite_lists import load_or_fetch

GAMMAS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
NOTES = "<!-- findings written by hand from here on: doc_aggregation.py keeps this part -->"
CHUNKS = "chunks"
"""The default as it is: the fused chunk list, several chunks of a note taking several places."""


def ranking(q: Query, meta: Mapping[int, tuple[str, str | None]], gamma: float) -> list[int]:
    """The default fusion's chunks regrouped by note: note score = best chunk + gamma × the sum
    of its other listed chunks; each note shown by its best chunk."""
    alpha = qlen3l_alpha(q, 0.8, 0.7, 0.5, 4, 8)
    raw = combined(q, _weights(alpha, 2.0), "max")
    by_note: dict[str, list[tuple[float, int]]] = {}
    for cid, score in raw.items():
        by_note.setdefault(meta[cid][0], []).append((score, cid))
    notes = []
    for found in by_note.values():
        found.sort(key=lambda sc: (-sc[0], sc[1]))
        best, cid = found[0]
        notes.append((best + gamma * sum(s for s, _ in found[1:]), cid))
    notes.sort(key=lambda sc: (-sc[0], sc[1]))
    return [cid for _, cid in notes[:LIMIT]]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", help="comma-separated names (default: all)")
    args = parser.parse_args()
    colls = suite_collections(args.collections)
    per: dict[str, dict[str, list[float]]] = {}
    default = next(c for c in qlen3l_family() if c.label == "qlen3L a0.8/0.7/0.5 t4/8")
    fresh = {c.name for c in colls if (c.entry or {}).get("fresh")}
    for coll in colls:
        queries = with_grades(load_queries(coll))
        data = load_or_fetch(coll, queries)
        word_counts(data["queries"])
        meta = {int(k): (v[0], v[1]) for k, v in data["meta"].items()}
        grades = [{f"{d}.md": int(g) for d, g in row["grades"].items()} for row in queries]
        pairs = list(zip(data["queries"], grades, strict=True))
        per[coll.name] = {CHUNKS: [ndcg10(default.rank(q), meta, gr) for q, gr in pairs],
                          **{f"{g:g}": [ndcg10(ranking(q, meta, g), meta, gr) for q, gr in pairs]
                             for g in GAMMAS}}
        print(coll.name, {g: round(mean(v), 4) for g, v in per[coll.name].items()}, flush=True)
    dev = [n for n in per if n not in fresh]
    rows: dict[str, Any] = {}
    for name, values in per.items():
        others = [n for n in dev if n != name]
        labels = list(values)  # the default first: a tie keeps it
        chosen = max(labels, key=lambda lab: (mean([mean(per[n][lab]) for n in others]),
                                              -labels.index(lab)))
        rows[name] = {"fresh": name in fresh, "chosen": chosen, "default": mean(values[CHUNKS]),
                      "one_per_note": paired(values["0"], values[CHUNKS]),
                      "held_out": mean(values[chosen]),
                      **paired(values[chosen], values[CHUNKS]),
                      "means": {lab: mean(v) for lab, v in values.items()}}
    data = {"benchmark": "doc_aggregation", "machine": machine(),
            "labels": list(next(iter(per.values()))),
            "rows": rows}
    write_results("doc_aggregation", data, with_kept_part("doc_aggregation", NOTES,
                                                          markdown(data)))


def markdown(data: dict[str, Any]) -> str:
    def delta(d: Mapping[str, Any]) -> str:
        star = " *" if d["p"] < 0.05 else ""
        return (f"{d['delta']:+.4f} [{d['ci95'][0]:+.4f}, {d['ci95'][1]:+.4f}] "
                f"p={d['p']:.3f}{star}")

    lines = ["# Note-level evidence over the default fusion, leave-one-collection-out (issue 44)",
             "", "nDCG@10 on the suite's lists (bench/doc_aggregation.py). `chunks`: the default "
             "score fusion's chunk list as search returns it (a note's chunks take several "
             "places); gamma: notes ranked by best chunk + gamma × Σ the note's other listed "
             "chunks, one hit per note (gamma 0: the best chunk alone). The setting is chosen on "
             "the other non-fresh collections (`chunks` included) and paired against `chunks`: "
             "mean delta [95 % bootstrap CI], randomization p; * = p < 0.05. 'One per note' "
             "pairs gamma 0 against `chunks`.", ""]
    for fresh in (False, True):
        lines += [f"## {'Fresh collections' if fresh else 'Development collections (held out)'}",
                  "", "| collection | chosen on the others | chunks | chosen | − chunks | "
                  "one per note − chunks |", "|---|---|---:|---:|---|---|"]
        for name, r in data["rows"].items():
            if r["fresh"] == fresh:
                lines.append(f"| {name} | {r['chosen']} | {r['default']:.4f} | "
                             f"{r['held_out']:.4f} | {delta(r)} | {delta(r['one_per_note'])} |")
        lines.append("")
    labels = data["labels"]
    lines += ["## Mean nDCG@10 of every candidate", "",
              "| collection | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for name, r in data["rows"].items():
        lines.append(f"| {name} | " + " | ".join(f"{r['means'][lab]:.4f}" for lab in labels)
                     + " |")
    lines += ["", machine_line(data["machine"]), "", "Command: `python bench/doc_aggregation.py`."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
