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

Issue #13 adds compiler version 2 reconstructed from version 3 (`compile_v2`: CJK text back on
the trigram table, no CJK leg) and two bm25s peers over character n-grams (`peer_bm25s` with a
tokeniser): bigrams (the JSQuAD README's baseline) and unigrams + bigrams (groove's CJK tokens).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import groove_cli
from groove_cli.engine import (
    CompiledQuery,
    Expected,
    HitRecord,
    aggregate,
    cjk,
    compile_query,
    compiling_with,
    match_expression,
    score_query,
)

Compiler = Callable[[str], CompiledQuery]
Tokeniser = Callable[[str], list[str]]


def compile_v1(text: str) -> CompiledQuery:
    """The version-1 compilation of `text`: all phrases on the trigram table, no word leg (and
    no CJK leg)."""
    v2 = compile_v2(text)
    trigram = match_expression(v2.phrases, v2.negatives) if v2.phrases else v2.match_expr
    return dataclasses.replace(v2, match_expr=trigram, word_terms=(), word_expr=None,
                               word_negative_expr=None)


def compile_v2(text: str) -> CompiledQuery:
    """The version-2 compilation of `text`: a query with CJK text keeps every phrase on the
    trigram table (v2's rule for a query with a non-Latin phrase) and has no CJK leg."""
    v3 = compile_query(text)
    if not v3.cjk_terms:
        return v3
    trigram = match_expression(v3.phrases, v3.negatives) if v3.phrases else v3.match_expr
    if not v3.phrases:  # v2's fallback: the plain text as one phrase
        plain = v3.positive_text.strip()
        trigram = match_expression((plain,), v3.negatives) if len(plain) >= 3 else None
    return dataclasses.replace(v3, match_expr=trigram, cjk_terms=(), cjk_expr=None,
                               cjk_negative_expr=None)


def eval_v1(kb: Path, db: Path, golden: Path, config_path: Path, mode: str,
            compiler: Compiler = compile_v1) -> dict[str, Any]:
    """`groove eval --no-history --mode MODE` in-process with compiler version 1 (or the
    `compiler` given)."""
    with groove_cli.open(kb, db=db, config=config_path, mode=mode, reranker="none") as index, \
            compiling_with(compiler):
        return index.evaluate(golden, history=False).to_json()


def char_bigrams(text: str) -> list[str]:
    """groove's CJK tokens without the CJK unigrams: character bigrams, words, numbers."""
    return [t for t in cjk.tokens(text) if not (len(t) == 1 and cjk.is_cjk(t))]


def peer_bm25s(docs: Path, queries: Sequence[dict[str, Any]], k_values: Sequence[int] = (1, 5, 10),
               depth: int = 10, tokeniser: Tokeniser | None = None) -> dict[str, Any]:
    """The bm25s peer's aggregate (eval.md §4 metrics, §5 bootstrap) over `queries`.

    `queries` are golden entries `{"id", "query", "expected": [{"path"}]}`; documents are the
    `<id>.md` files of `docs`, one unit per file. `tokeniser` replaces bm25s's English
    tokenizer (stopwords, stemmer) with token lists of its own.
    """
    import bm25s
    import Stemmer

    files = sorted(docs.glob("*.md"))
    paths = [f.name for f in files]
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    corpus = [f.read_text(encoding="utf-8") for f in files]

    def tokenise(texts: list[str]) -> Any:
        if tokeniser is not None:
            return [tokeniser(text) for text in texts]
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)

    retriever.index(tokenise(corpus), show_progress=False)
    metrics = []
    for entry in queries:
        tokens = tokenise([entry["query"]])
        found, scores = retriever.retrieve(tokens, k=min(depth, len(paths)), show_progress=False)
        hits = [HitRecord(rank=i + 1, path=paths[int(d)], heading=None, score=float(s))
                for i, (d, s) in enumerate(zip(found[0], scores[0], strict=True)) if s > 0]
        expected = tuple(Expected(e["path"], e.get("heading")) for e in entry["expected"])
        metrics.append(score_query(expected, hits, k_values))
    return aggregate(metrics, [len(e["expected"]) for e in queries], k_values)
