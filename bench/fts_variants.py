"""Full-text variants for issue #8: compiler v1 (trigram only) vs v2, and a BM25 peer.

Used by `bench/eval_datasets.py`, on the same index and golden file as its mode rows:

- **before** — query compiler version 1, reconstructed from version 2's output: every positive
  phrase (Latin ones included) on the trigram table, no word-level leg. Version 2 still computes
  v1's phrase list (`CompiledQuery.phrases`, deduplicated and capped as before) and v1's
  fallback, so v1's MATCH expression follows exactly; the eval then runs in-process with that
  compiler, through the same pipeline, metrics and bootstrap.
- **after** — the shipped compiler (version 2), through `groove eval` like the mode rows.
- **peer** — bm25s (Lucene BM25) with its English stopwords and a Snowball English stemmer
  (PyStemmer) over the whole document text, scored by groove's own metric and bootstrap code.
  A dev dependency of this benchmark only (`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groove_cli import config
from groove_cli.evaluate import runner
from groove_cli.evaluate.golden import Expected
from groove_cli.evaluate.metrics import HitRecord, score_query
from groove_cli.evaluate.report import aggregate
from groove_cli.retrieve import query as query_module
from groove_cli.retrieve.words import match_expression


def compile_v1(text: str) -> query_module.CompiledQuery:
    """The version-1 compilation of `text`: all phrases on the trigram table, no word leg."""
    v2 = query_module.compile_query(text)
    trigram = match_expression(v2.phrases, v2.negatives) if v2.phrases else v2.match_expr
    return dataclasses.replace(v2, match_expr=trigram, word_terms=(), word_expr=None,
                               word_negative_expr=None)


def eval_v1(kb: Path, db: Path, golden: Path, config_path: Path, mode: str) -> dict[str, Any]:
    """`groove eval --no-history --mode MODE` in-process with compiler version 1."""
    settings = config.load_settings(config_path, {"kb_path": str(kb),
                                                  "search.retrieval.mode": mode})
    k_values = runner.normalise_k([int(str(v)) for v in settings.list_("eval.k_values")])
    request = runner.EvalRequest(settings=settings, db=db, kb=kb, golden=golden,
                                 k_values=k_values, limit=runner.effective_limit(None, k_values),
                                 reranker=None, no_history=True)
    names = vars(runner)  # the runner compiles the golden queries through its module global
    original = names["compile_query"]
    names["compile_query"] = compile_v1
    try:
        return runner.run_eval(request).to_json()
    finally:
        names["compile_query"] = original


def peer_bm25s(docs: Path, queries: Sequence[dict[str, Any]], k_values: Sequence[int] = (1, 5, 10),
               depth: int = 10) -> dict[str, Any]:
    """The bm25s peer's aggregate (eval.md §4 metrics, §5 bootstrap) over `queries`.

    `queries` are golden entries `{"id", "query", "expected": [{"path"}]}`; documents are the
    `<id>.md` files of `docs`, one unit per file.
    """
    import bm25s
    import Stemmer

    files = sorted(docs.glob("*.md"))
    paths = [f.name for f in files]
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    corpus = [f.read_text(encoding="utf-8") for f in files]
    retriever.index(bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    metrics = []
    for entry in queries:
        tokens = bm25s.tokenize([entry["query"]], stopwords="en", stemmer=stemmer,
                                show_progress=False)
        found, scores = retriever.retrieve(tokens, k=min(depth, len(paths)), show_progress=False)
        hits = [HitRecord(rank=i + 1, path=paths[int(d)], heading=None, score=float(s))
                for i, (d, s) in enumerate(zip(found[0], scores[0], strict=True)) if s > 0]
        expected = tuple(Expected(e["path"], e.get("heading")) for e in entry["expected"])
        metrics.append(score_query(expected, hits, k_values))
    return aggregate(metrics, [len(e["expected"]) for e in queries], k_values)
