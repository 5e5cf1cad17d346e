#!/usr/bin/env python3
"""Long chunks: several vectors per chunk (corrected best piece) versus truncated (index.md §4).

    .venv/bin/python bench/long_chunks.py [--collections cisi,jsquad,livedoor]

Per collection: index it once with `vector_pieces = true` (a chunk longer than the model's
window gets extra window-sized pieces, the vector leg ranks a chunk of n pieces by its best
piece's cosine less σ · e(n), search.md §4). The
first piece of every chunk is exactly the truncated vector an index without pieces holds,
so `vector_pieces = false` at search time *is* the truncated index: `eval` (vector and
hybrid modes, all judged queries, no history) runs on the one index both ways, through
`groove_cli.open(...)` and `Index.evaluate`. nDCG@10, recall@10 and MRR with the per-query
delta (pieces − truncated), its paired bootstrap CI and a two-sided randomization test.
livedoor (long news articles) is read from the suite's built copy, never rebuilt here.

Writes bench/results/long_chunks.json and long_chunks.md; the indexes live in
bench/work/long_chunks/<name>/.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import yaml
from _common import (
    RESULTS,
    WORK,
    built_collections,
    datasets_root,
    empty_config,
    machine,
    machine_line,
    write_results,
)
from eval_datasets import golden_document

import groove_cli
from groove_cli.engine import bootstrap_ci, randomization_p

MODES = ("vector", "hybrid")
METRICS = (("ndcg@10", "ndcg_at_k", "10"), ("recall@10", "recall_at_k", "10"),
           ("MRR", "reciprocal_rank", None))
SOURCES = {"cisi": "queries.jsonl", "jsquad": "queries-1000.jsonl", "livedoor": "queries.jsonl"}
"""The queries file of each collection."""


def source(name: str) -> tuple[Path, Path]:
    """Docs folder and queries of a collection: cisi and jsquad under $GROOVE_DATASETS;
    livedoor the suite's build of bench/collections.json by bench/suite_collections.py, read
    only (a worktree reads the main checkout's)."""
    folder = (built_collections() if name == "livedoor" else datasets_root()) / name
    return folder / "docs", folder / SOURCES[name]


def prepare(name: str) -> tuple[Path, Path, Path, Path]:
    """The work folder's KB link, index path, empty config and golden file."""
    docs, queries = source(name)
    work = WORK / "long_chunks" / name
    work.mkdir(parents=True, exist_ok=True)
    kb = work / "kb"
    if not kb.is_symlink():
        kb.symlink_to(docs, target_is_directory=True)
    golden = work / "golden.yml"
    golden.write_text(yaml.safe_dump(golden_document(queries), allow_unicode=True,
                                     sort_keys=False, width=10_000), encoding="utf-8")
    return kb, work / "index.db", empty_config(work), golden


def build(kb: Path, db: Path, config: Path, work: Path) -> dict[str, Any]:
    """Index with pieces (the default) unless a complete index is there; the index run's counts
    are kept beside it, so a re-run reports them without re-embedding."""
    saved = work / "index-run.json"
    index = groove_cli.open(kb, db=db, config=config, vector_pieces=True)
    try:
        if (saved.is_file() and db.is_file() and index.status().pending_vectors == 0):
            counts: dict[str, Any] = json.loads(saved.read_text(encoding="utf-8"))
            return counts
        start = time.perf_counter()
        report = index.index()
        counts = {"chunks": report.chunks, "embedded_chunks": report.embedded,
                  "extra_pieces": report.pieces, "wall_s": round(time.perf_counter() - start, 1)}
    finally:
        index.close()
    saved.write_text(json.dumps(counts), encoding="utf-8")
    return counts


def per_query(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q in report["per_query"]:
        if not q["expected"]:
            continue
        m = q["metrics"]
        out[q["id"]] = {label: float(m[key][k] if k else m[key]) for label, key, k in METRICS}
    return out


def evaluate(kb: Path, db: Path, config: Path, golden: Path, pieces: bool
             ) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        index = groove_cli.open(kb, db=db, config=config, vector_pieces=pieces, mode=mode)
        try:
            out[mode] = per_query(index.evaluate(golden, history=False).to_json())
        finally:
            index.close()
    return out


def compare(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]
            ) -> dict[str, Any]:
    ids = sorted(before)
    out: dict[str, Any] = {}
    for label, _, _ in METRICS:
        b = [before[i][label] for i in ids]
        a = [after[i][label] for i in ids]
        deltas = [y - x for x, y in zip(b, a, strict=True)]
        out[label] = {"truncated": sum(b) / len(b), "pieces": sum(a) / len(a),
                      "delta": sum(deltas) / len(deltas),
                      "ci95": bootstrap_ci({"d": deltas})["d"], "p": randomization_p(deltas),
                      "changed_queries": sum(1 for d in deltas if abs(d) > 1e-12)}
    return out


def measure(name: str) -> dict[str, Any]:
    kb, db, config, golden = prepare(name)
    counts = build(kb, db, config, db.parent)
    truncated = evaluate(kb, db, config, golden, pieces=False)
    pieces = evaluate(kb, db, config, golden, pieces=True)
    return {"collection": name, "queries": len(truncated["vector"]), "index": counts,
            "modes": {mode: compare(truncated[mode], pieces[mode]) for mode in MODES}}


def dropped(entry: dict[str, Any]) -> bool:
    """A significant drop: a metric's mean delta below 0 with p < 0.05."""
    return any(row["delta"] < 0 and row["p"] < 0.05
               for mode in entry["modes"].values() for row in mode.values())


def markdown(data: dict[str, Any]) -> str:
    lines = ["# Long chunks: several vectors per chunk (corrected best piece) vs truncated "
             "(multilingual-e5-small)", "", machine_line(data["machine"]), "",
             "pieces = a chunk of n vectors scores its best piece's cosine less σ · e(n) (σ: the "
             "query's cosines' standard deviation over every extra piece; e(n): the expected "
             "maximum of n standard normals; search.md §4). The plain best piece, before this "
             "correction: `git show ae7a1f9:bench/results/long_chunks.md`.", "",
             "One index per collection with `vector_pieces = true`; truncated = the "
             "same index searched with `vector_pieces = false` (each chunk's first piece, which "
             "is exactly the truncated vector). Delta = pieces − truncated per query: mean, "
             "paired 95 % bootstrap CI, two-sided randomization p; `changed` = queries whose "
             "value moved.", ""]
    for entry in data["runs"]:
        idx = entry["index"]
        lines += [f"## {entry['collection']} — {entry['queries']} queries, {idx['chunks']} "
                  f"chunks, {idx['extra_pieces']} extra piece vectors", "",
                  "| mode | metric | truncated | pieces | Δ [95 % CI] | p | changed |",
                  "|---|---|---:|---:|---|---:|---:|"]
        for mode, rows in entry["modes"].items():
            for label, row in rows.items():
                low, high = row["ci95"] or (0.0, 0.0)
                lines.append(f"| {mode} | {label} | {row['truncated']:.4f} | {row['pieces']:.4f} "
                             f"| {row['delta']:+.4f} [{low:+.4f}, {high:+.4f}] | {row['p']:.3f} "
                             f"| {row['changed_queries']} |")
        verdict = ("a metric dropped significantly (p < 0.05)" if dropped(entry)
                   else "no significant drop")
        lines += ["", f"Verdict: {verdict}.", ""]
    worse = [e["collection"] for e in data["runs"] if dropped(e)]
    decision = ("`vector_pieces` stays off by default: quality dropped significantly on "
                + ", ".join(worse) if worse
                else "several vectors per chunk can be the default: no collection dropped "
                     "significantly")
    lines += [f"**Decision:** {decision}.", "",
              "Command: `.venv/bin/python bench/long_chunks.py`."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default="cisi,jsquad,livedoor")
    parser.add_argument("--markdown-only", action="store_true",
                        help="rewrite long_chunks.md from long_chunks.json, measuring nothing")
    args = parser.parse_args()
    if args.markdown_only:
        saved = json.loads((RESULTS / "long_chunks.json").read_text(encoding="utf-8"))
        (RESULTS / "long_chunks.md").write_text(markdown(saved) + "\n", encoding="utf-8")
        return
    data: dict[str, Any] = {"benchmark": "long_chunks", "machine": machine(),
                            "runs": [measure(n.strip()) for n in args.collections.split(",")
                                     if n.strip()]}
    write_results("long_chunks", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
