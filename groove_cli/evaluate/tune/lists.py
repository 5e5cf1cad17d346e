"""Tune's inputs (tune.md §5): every usable query's leg lists, each fetched once.

The lists are the search's legs (retrieve/legs.py) run with tune's pool and no filter: the
vector list over one batched KNN, and per bm25 weight set every registered full-text leg's
list; for the fusion-method space with the scores score fusion normalises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from groove_cli.config import DEFAULT_BM25_WEIGHTS
from groove_cli.evaluate.golden import GoldenQuery
from groove_cli.evaluate.tune.preflight import QueryDiagnostics, diagnostics
from groove_cli.evaluate.tune.sweep import QueryLists
from groove_cli.retrieve.legs import (
    NO_FILTER,
    Leg,
    Legs,
    excluded_ids,
    leg_exclusions,
    listed_knn,
    registered,
    run_leg,
    run_leg_scored,
    vector_leg,
    vector_leg_scored,
)
from groove_cli.retrieve.query import CompiledQuery
from groove_cli.retrieve.searcher import Searcher
from groove_cli.store import IndexReader

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BUILTIN_BM25 = DEFAULT_BM25_WEIGHTS
HEADING_HEAVY = (4.0, 0.5, 0.5)
CONTENT_HEAVY = (0.5, 0.5, 4.0)


def scored_vector_lists(searcher: Searcher, compiled: Sequence[CompiledQuery],
                        vectors: Sequence[npt.NDArray[np.float32]], pool: int
                        ) -> list[list[tuple[int, float]]]:
    """Each query's vector list with its cosines: the vector leg over one batched KNN for all
    queries."""
    found = searcher.batch_neighbours(compiled, vectors, pool)
    store, rows = searcher.store, searcher.vector_rows()
    return [vector_leg_scored(listed_knn(neighbours), store, vector, pool, NO_FILTER,
                              excluded_ids(store, query), dim=searcher.dim, vectors=rows)
            for query, vector, neighbours in zip(compiled, vectors, found, strict=True)]


def vector_lists(searcher: Searcher, compiled: Sequence[CompiledQuery],
                 vectors: Sequence[npt.NDArray[np.float32]], pool: int) -> list[list[int]]:
    """Each query's vector list: the vector leg over one batched KNN for all queries."""
    found = searcher.batch_neighbours(compiled, vectors, pool)
    store = searcher.store
    return [vector_leg(listed_knn(neighbours), store, vector, pool, NO_FILTER,
                       excluded_ids(store, query))
            for query, vector, neighbours in zip(compiled, vectors, found, strict=True)]


class ListFetcher:
    """One query's ranked full-text lists per leg and bm25 weight set, each fetched at most once.

    Pre-flight needs only the built-in and the two probe weight sets; the other sets of the
    fusion grid are fetched after pre-flight, so a run that exits 2 has not paid for them.
    """

    def __init__(self, store: IndexReader, query: CompiledQuery, pool: int, *,
                 scored: bool = False) -> None:
        self.store = store
        self.query = query
        self.pool = pool
        self.scored = scored
        """Read each list with its scores (`Leg.scored`), as a score-fusion search does."""
        self.legs = tuple(leg for leg in registered() if leg.expr(query) is not None)
        self.excluded = leg_exclusions(store, query, Legs(False, self.legs))
        self.cache: dict[tuple[str, tuple[float, float, float]], tuple[int, ...]] = {}
        self.scores: dict[tuple[str, tuple[float, float, float]], tuple[float, ...]] = {}

    def fetch(self, leg: Leg, weights: tuple[float, float, float]) -> tuple[int, ...]:
        """The leg's list at `weights`, exactly as a search at those weights runs it."""
        key = (leg.name, weights)
        if key not in self.cache:
            if self.scored:
                found = run_leg_scored(leg, self.store, self.query, weights, self.pool,
                                       NO_FILTER, self.excluded)
                self.cache[key] = tuple(cid for cid, _ in found)
                self.scores[key] = tuple(value for _, value in found)
            else:
                self.cache[key] = tuple(run_leg(leg, self.store, self.query, weights,
                                                self.pool, NO_FILTER, self.excluded))
        return self.cache[key]

    def fetch_scores(self, leg: Leg, weights: tuple[float, float, float]) -> tuple[float, ...]:
        """The scores of `fetch`'s list (a scored fetcher only)."""
        self.fetch(leg, weights)
        return self.scores[(leg.name, weights)]

    def combined(self, weights: tuple[float, float, float]) -> list[int]:
        """Every leg's candidates (fusion order), for the diagnostics."""
        return list(dict.fromkeys(cid for leg in self.legs for cid in self.fetch(leg, weights)))

    def lists(self, leg: Leg, weight_sets: Sequence[tuple[float, float, float]]
              ) -> tuple[tuple[int, ...], ...]:
        """The leg's list per weight set; none when the query gives it no expression."""
        if leg not in self.legs:
            return ()
        return tuple(self.fetch(leg, w) for w in weight_sets)

    def diagnostics(self, query_id: str, vec_ids: Sequence[int], chunk_total: int,
                    limit: int) -> QueryDiagnostics:
        matches = max((leg.count(self.store, expr) for leg in self.legs
                       if (expr := leg.expr(self.query)) is not None), default=0)
        return diagnostics(
            query_id, vec_ids, self.combined(BUILTIN_BM25),
            probe_heading_heavy=self.combined(HEADING_HEAVY),
            probe_content_heavy=self.combined(CONTENT_HEAVY),
            fts_total_matches=matches, chunk_total=chunk_total, limit=limit)


def query_lists(fetchers: Sequence[ListFetcher], usable: Sequence[GoldenQuery],
                vector_lists: Sequence[Sequence[int]],
                weight_sets: Sequence[tuple[float, float, float]],
                vector_scores: Sequence[Sequence[float]] | None = None) -> list[QueryLists]:
    """Every usable query's lists for the sweep: the vector list and, per weight set, each
    full-text leg's list (none for a leg the query gives no expression); with scored fetchers
    and `vector_scores`, the scores too (the fusion-method space)."""
    out: list[QueryLists] = []
    for i, (fetcher, golden_query, vec_ids) in enumerate(zip(fetchers, usable, vector_lists,
                                                             strict=True)):
        leg_ids = {leg.name: fetcher.lists(leg, weight_sets) for leg in registered()}
        leg_scores = ({leg.name: tuple(fetcher.fetch_scores(leg, w) for w in weight_sets)
                       for leg in registered() if leg_ids[leg.name]}
                      if fetcher.scored else {})
        out.append(QueryLists(
            id=golden_query.id,
            expected=tuple((e.path, e.heading) for e in golden_query.expected),
            vector_ids=tuple(vec_ids),
            leg_ids=leg_ids,
            vector_scores=tuple(vector_scores[i]) if vector_scores is not None else (),
            leg_scores=leg_scores,
            cjk_text=bool(fetcher.query.cjk_terms),
            word_terms=len(fetcher.query.word_terms),
        ))
    return out
