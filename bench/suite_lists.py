"""Each query's leg lists with their scores, fetched once per index and kept on disk.

The lists are tune's (evaluate/tune/lists.py): the vector leg over one batched KNN and the
trigram, word-level and CJK legs at the built-in bm25 weights, with the pool a plain search of
10 hits uses. Beside the ids, the research needs each leg's scores: the cosine similarity of
the vector leg (1 − distance) and the bm25 value of each full-text leg (FTS5's `bm25()`, sign
flipped so higher is better), read by the store with the ranking it lists them by
(`fts_scored_ids`).

Also kept: every chunk's (path, heading), and the KB's pseudo-queries (pseudo_queries) with
their lists, for fusion that estimates a leg's strength per KB without a golden set.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from suite_index import SuiteCollection, defaults_digest

import groove_cli
from groove_cli.engine import (
    DEFAULT_BM25_WEIGHTS,
    FTS_QUERY_VERSION,
    NO_FILTER,
    ListFetcher,
    Searcher,
    candidate_pool,
    compile_query,
    excluded_ids,
    keep,
    registered,
    searcher_of,
)

LEGS = ("vector", "fts_chunks", "fts_words", "fts_cjk")
LIST_VERSION = 2
"""Bump when what a lists file holds changes (a cached file of another version is refetched)."""


@dataclass(frozen=True, slots=True)
class LegLists:
    """One query: per leg the ranked ids and their scores (higher = better), best first."""

    id: str
    query: str
    ids: dict[str, list[int]]
    scores: dict[str, list[float]]
    cjk_terms: int
    """How many CJK terms the query compiled to (0 for a query without CJK text)."""


def _bm25_scores(store: Any, table: str, expr: str, ids: list[int]) -> list[float]:
    """−bm25 of each id (higher is better), in the order of `ids` (0.0 for an id the
    expression does not match)."""
    if not ids:
        return []
    found = dict(store.fts_scored_ids(expr, DEFAULT_BM25_WEIGHTS, store.chunk_count(), table))
    return [found.get(cid, 0.0) for cid in ids]


def fetch_lists(searcher: Searcher, texts: list[tuple[str, str]], pool: int) -> list[LegLists]:
    """Every (id, query text)'s leg lists and scores on an open searcher."""
    compiled = [compile_query(text) for _, text in texts]
    vectors = searcher.query_vectors([q.positive_text for q in compiled])
    neighbours = searcher.batch_neighbours(compiled, vectors, pool)
    store = searcher.store
    out: list[LegLists] = []
    with store.read_transaction():
        for (qid, text), query, found in zip(texts, compiled, neighbours, strict=True):
            excluded = excluded_ids(store, query)
            vec_ids = keep(store, [cid for cid, _ in found], pool, NO_FILTER, excluded)
            distance = dict(found)
            fetcher = ListFetcher(store, query, pool)
            ids: dict[str, list[int]] = {"vector": vec_ids}
            scores: dict[str, list[float]] = {"vector": [1.0 - distance[c] for c in vec_ids]}
            for leg in registered():
                table, expr = leg.table, leg.expr(query)
                ids[table] = list(fetcher.fetch(leg, DEFAULT_BM25_WEIGHTS)) if expr else []
                scores[table] = _bm25_scores(store, table, expr, ids[table]) if expr else []
            out.append(LegLists(qid, text, ids, scores, len(query.cjk_terms)))
    return out


def pseudo_queries(headings: dict[str, set[str]], titles: dict[str, str],
                   count: int = 100, seed: int = 0) -> list[tuple[str, str, str]]:
    """Queries a KB yields by itself: each document's title (its `# ` line) or a chunk's
    heading, with the document as the answer; (id, text, path), a seeded sample of `count`.

    Only texts that name one document are kept (a title shared by two documents has no
    single answer).
    """
    by_text: dict[str, set[str]] = {}
    for path, title in titles.items():
        if title:
            by_text.setdefault(title.strip(), set()).add(path)
    for path, names in headings.items():
        for heading in names:
            if heading.strip() and heading.strip() != titles.get(path, "").strip():
                by_text.setdefault(heading.strip(), set()).add(path)
    usable = sorted((t, next(iter(p))) for t, p in by_text.items() if len(p) == 1 and len(t) >= 3)
    picked = random.Random(seed).sample(usable, min(count, len(usable)))
    return [(f"pseudo{i}", text, path) for i, (text, path) in enumerate(picked)]


def doc_titles(docs: Path) -> dict[str, str]:
    """Each document's `# title` line (its first line when that is an H1), by file name."""
    titles = {}
    for f in sorted(docs.glob("*.md")):
        with f.open(encoding="utf-8") as handle:
            first = handle.readline()
        titles[f.name] = first[2:].strip() if first.startswith("# ") else ""
    return titles


def load_or_fetch(coll: SuiteCollection, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """The collection's lists file (`lists.json` beside its index), fetched when missing or
    made for another index stamp; holds the golden queries' and the pseudo-queries' lists."""
    path = coll.work / "lists.json"
    stamp = {**coll.stamp(), "version": LIST_VERSION, "queries": len(queries),
             "fts_query_version": FTS_QUERY_VERSION, "defaults": defaults_digest()}
    if path.is_file():
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        if data.get("stamp") == stamp:
            return data
    searcher = searcher_of(groove_cli.open(coll.kb, db=coll.db, config=coll.config))
    pool = candidate_pool(10)
    try:
        store = searcher.store
        with store.read_transaction():
            headings = store.headings_by_path()
        golden = fetch_lists(searcher, [(q["id"], q["query"]) for q in queries], pool)
        pseudo = pseudo_queries(headings, doc_titles(coll.docs))
        pseudo_lists = fetch_lists(searcher, [(pid, text) for pid, text, _ in pseudo], pool)
        ids = {c for lists in (*golden, *pseudo_lists) for leg in lists.ids.values() for c in leg}
        with store.read_transaction():
            meta = {c: (x.path, x.heading) for c, x in store.chunks_by_id(ids).items()}
    finally:
        searcher.close()
    data = {"stamp": stamp, "pool": pool,
            "meta": {str(c): meta[c] for c in sorted(meta)},
            "queries": [asdict(q) for q in golden],
            "pseudo": [asdict(q) | {"answer": path}
                       for q, (_, _, path) in zip(pseudo_lists, pseudo, strict=True)]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return data
