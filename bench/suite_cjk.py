#!/usr/bin/env python3
"""Where groove's CJK leg and bm25s over the same unigram + bigram tokens part (issue 25 §4).

    python bench/suite_cjk.py [--collections jsquad,livedoor,vuedocs]

On each Japanese collection of the suite (its index must exist: bench/suite.py builds it), one
factor at a time between the two rankers:

- bm25s side (whole documents, Lucene BM25): k1 1.5 (bm25s's default) vs 1.2 (FTS5's fixed
  k1); the query's hiragana-only tokens kept vs dropped (groove's rule); documents vs groove's
  chunks as the unit (a document ranked by its best chunk).
- FTS5 side (the index's `fts_cjk` table, groove's chunks): the built-in column weights
  (heading 2, context 1, content 1) vs all 1, heading 0 or 4, content only; hiragana-only
  tokens dropped (the CJK leg as shipped) vs kept.
- idf: bm25s's Lucene idf, log(1 + (N − n + 0.5) / (n + 0.5)), vs FTS5's, which is near 0
  (floored) for a token in half the chunks or more: common CJK unigrams then score nothing.

The FTS5 side is read with bench-only SQL of the same shape the store ranks by.

nDCG@10 per variant, scored by groove's metric code (suite_fusion.ndcg10 = eval.md §4).
Writes bench/results/suite_cjk.json and suite_cjk.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from _common import machine, machine_line, write_results
from suite import load_queries, with_grades
from suite_fusion import ndcg10
from suite_index import SuiteCollection, suite_collections
from suite_peers import DEPTH

import groove_cli
from groove_cli.engine import Searcher, bootstrap_ci, cjk, compile_query, or_expr, searcher_of

Tokens = Callable[[str], list[str]]


def hiragana_only(token: str) -> bool:
    return all(0x3041 <= ord(ch) <= 0x309F for ch in token)


def groove_terms(text: str) -> list[str]:
    """The CJK leg's query terms (compile_query's `cjk_terms`)."""
    return list(compile_query(text).cjk_terms)


def bm25s_run(units: Sequence[str], unit_doc: Sequence[str], queries: Sequence[dict[str, Any]],
              query_tokens: Tokens, k1: float, method: str = "lucene") -> list[float]:
    """nDCG@10 per query of bm25s over `units` (documents or chunks; a document ranks at its
    best unit); `method` "robertson" has FTS5's idf, log((N − n + 0.5) / (n + 0.5))."""
    import bm25s

    retriever = bm25s.BM25(k1=k1, b=0.75, method=method)
    retriever.index([cjk.tokens(u) for u in units], show_progress=False)
    meta = {i: (unit_doc[i], None) for i in range(len(units))}
    out = []
    for q in queries:
        tokens = query_tokens(q["query"])
        if not tokens:
            out.append(0.0)
            continue
        found, scores = retriever.retrieve([tokens], k=min(DEPTH * 20, len(units)),
                                           show_progress=False)
        ranking: list[int] = []
        seen: set[str] = set()
        for unit, score in zip(found[0], scores[0], strict=True):
            doc = unit_doc[int(unit)]
            if score > 0 and doc not in seen:
                seen.add(doc)
                ranking.append(int(unit))
        out.append(ndcg10(ranking, meta, q["g"]))
    return out


def fts_run(searcher: Searcher, queries: Sequence[dict[str, Any]], terms: Tokens,
            weights: tuple[float, float, float], meta: dict[int, tuple[str, str | None]]
            ) -> list[float]:
    """nDCG@10 per query of the `fts_cjk` table for `terms` at bm25 column `weights`."""
    out = []
    for q in queries:
        expr = or_expr(terms(q["query"]))
        ids = searcher.store.fts_search_ids(expr, weights, 50, "fts_cjk") if expr else []
        out.append(ndcg10(ids, meta, q["g"]))
    return out


def measure(coll: SuiteCollection) -> dict[str, Any]:
    queries = [{**q, "g": {f"{d}.md": int(g) for d, g in q["grades"].items()}}
               for q in with_grades(load_queries(coll))]
    files = sorted(coll.docs.glob("*.md"))
    docs = [f.read_text(encoding="utf-8") for f in files]
    names = [f.name for f in files]
    searcher = searcher_of(groove_cli.open(coll.kb, db=coll.db, config=coll.config))
    try:
        store = searcher.store
        with store.read_transaction():
            chunks = [(path, content) for path, _, _, content, _ in store.corpus_rows()]
            meta: dict[int, tuple[str, str | None]] = {
                c.chunk_id: (path, None) for path, doc in store.documents().items()
                for c in store.document_chunks(doc.id, store.chunk_count())}
            variants: dict[str, list[float]] = {}

            def all_tokens(text: str) -> list[str]:
                return cjk.tokens(text)

            def dropped(text: str) -> list[str]:
                kept = [t for t in cjk.tokens(text) if not hiragana_only(t)]
                return kept or cjk.tokens(text)

            variants["bm25s docs, k1 1.5, all tokens (the suite's peer)"] = bm25s_run(
                docs, names, queries, all_tokens, 1.5)
            variants["bm25s docs, k1 1.2, all tokens"] = bm25s_run(docs, names, queries,
                                                                  all_tokens, 1.2)
            variants["bm25s docs, k1 1.5, hiragana-only dropped"] = bm25s_run(
                docs, names, queries, dropped, 1.5)
            variants["bm25s docs, k1 1.2, hiragana-only dropped"] = bm25s_run(
                docs, names, queries, dropped, 1.2)
            variants["bm25s chunks, k1 1.2, hiragana-only dropped"] = bm25s_run(
                [c for _, c in chunks], [p for p, _ in chunks], queries, dropped, 1.2)
            variants["bm25s chunks, k1 1.2, hiragana-only dropped, FTS5's idf (robertson)"] = (
                bm25s_run([c for _, c in chunks], [p for p, _ in chunks], queries, dropped, 1.2,
                          "robertson"))
            for label, weights in (("heading 2, context 1, content 1 (built-in)",
                                    (2.0, 1.0, 1.0)),
                                   ("all columns 1", (1.0, 1.0, 1.0)),
                                   ("heading 0", (0.0, 1.0, 1.0)),
                                   ("heading 4", (4.0, 1.0, 1.0)),
                                   ("content only", (0.0, 0.0, 1.0))):
                variants[f"FTS5 CJK leg, {label}"] = fts_run(searcher, queries, groove_terms,
                                                             weights, meta)
            variants["FTS5 CJK leg, built-in weights, hiragana-only kept"] = fts_run(
                searcher, queries, all_tokens, (2.0, 1.0, 1.0), meta)
    finally:
        searcher.close()
    return {name: {"ndcg@10": sum(v) / len(v), "ci95": bootstrap_ci({"v": v})["v"]}
            for name, v in variants.items()} | {"queries": len(queries)}


def markdown(data: dict[str, Any]) -> str:
    lines = ["# CJK leg vs bm25s over the same tokens (issue 25)", "",
             "nDCG@10 [95 % bootstrap CI] on the suite's Japanese collections; one factor at a "
             "time (bench/suite_cjk.py).", ""]
    for name, rows in data["collections"].items():
        lines += [f"## {name} ({rows['queries']} queries)", "", "| variant | nDCG@10 [95% CI] |",
                  "|---|---|"]
        for label, r in rows.items():
            if label == "queries":
                continue
            lo, hi = r["ci95"]
            lines.append(f"| {label} | {r['ndcg@10']:.3f} [{lo:.3f}, {hi:.3f}] |")
        lines.append("")
    lines += [machine_line(data["machine"]), "", "Command: `python bench/suite_cjk.py`."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default="jsquad,livedoor,vuedocs")
    args = parser.parse_args()
    data = {"benchmark": "suite_cjk", "machine": machine(),
            "collections": {c.name: measure(c) for c in suite_collections(args.collections)}}
    write_results("suite_cjk", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
