"""Legs as data: a leg declared in a test flows through search, --explain, eval, tune and
--ablate without any of those modules knowing it (docs/design/code.md "Adding a leg").

The test leg ranks one note's chunks first for every query, whatever it says: a constant
ranking whose effect on each stage is easy to predict.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import groove_cli
from groove_cli.api import Index
from groove_cli.evaluate.golden import GoldenQuery
from groove_cli.evaluate.tune.lists import ListFetcher, query_lists
from groove_cli.evaluate.tune.sweep import QueryLists, score_matrix
from groove_cli.render.search import explain_line, explain_stderr
from groove_cli.results import hit_json
from groove_cli.retrieve.fuse import fuse_lists
from groove_cli.retrieve.legs import Leg, extra_leg, legs_to_run, registered
from groove_cli.retrieve.query import compile_query
from groove_cli.store import IndexReader, Store

NOTE = "reliability/retry-budgets.md"


@dataclass(frozen=True, eq=False)
class ConstantLeg(Leg):
    """Every query: the chunks of one note, in chunk order (`chunks` set by the fixture)."""

    chunks: tuple[int, ...] = ()

    def ids(self, store: IndexReader, expr: str, weights: tuple[float, float, float],
            k: int) -> list[int]:
        return list(self.chunks[:k])

    def scored(self, store: IndexReader, expr: str, weights: tuple[float, float, float],
               k: int) -> list[tuple[int, float]]:
        """Score fusion's read: the same chunks, scores falling with the rank."""
        return [(cid, float(len(self.chunks) - i)) for i, cid in enumerate(self.chunks[:k])]

    def matches(self, store: IndexReader, expr: str) -> set[int]:
        return set(self.chunks)

    def count(self, store: IndexReader, expr: str) -> int:
        return len(self.chunks)


@pytest.fixture
def kb(golden_copy: tuple[Path, Path], real_models_dir: Path) -> Iterator[Index]:
    path, db = golden_copy
    with groove_cli.open(path, db=db, models_dir=str(real_models_dir)) as index:
        yield index


@pytest.fixture
def declared(golden_copy: tuple[Path, Path]) -> ConstantLeg:
    """The test leg, not yet registered."""
    store = Store.open_readonly(golden_copy[1])
    documents = store.documents()
    chunks = tuple(row.chunk_id for row in store.document_chunks(documents[NOTE].id, 100))
    store.close()
    assert len(chunks) >= 2
    return ConstantLeg("const", "constant", None, lambda q: q.positive_text,
                       explain_key="const_rank", skip_reason="never", chunks=chunks)


@pytest.fixture
def leg(declared: ConstantLeg) -> Iterator[ConstantLeg]:
    with extra_leg(declared):
        yield declared


def test_a_registered_leg_is_searched_explained_and_fused(kb: Index, leg: ConstantLeg,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    assert registered()[-1] is leg
    # no note mentions these words: only the constant leg finds anything
    results = kb.search("zqxjv wkvvq", mode="fts", limit=5)
    engine_hits = results.result.hits  # the engine's records carry the chunk ids and ranks
    assert [h.chunk.chunk_id for h in engine_hits] == list(leg.chunks[:5])
    assert [h.explain.rank("const") for h in engine_hits] == list(range(1, len(results) + 1))
    assert results.trace.expr("const") == "zqxjv wkvvq"
    assert hit_json(engine_hits[0], explain=True)["explain"]["const_rank"] == 1
    assert results.hits[0].to_json(explain=True)["explain"]["const_rank"] == 1
    assert " const=#1 " in explain_line(engine_hits[0])
    explain_stderr(results.result, results.params)
    assert "explain: const MATCH zqxjv wkvvq" in capsys.readouterr().err
    # in hybrid mode its list is fused with the vector leg's like any full-text leg's (here
    # weighted RRF, whose sums are checked; score fusion reads the leg's `scored`)
    hybrid = kb.search("how do retry budgets stop retry storms?", limit=10, fusion="rrf")
    for hit in hybrid.result.hits:
        e, k = hit.explain, hybrid.params.rrf_k  # weights: vector 1, fts 1 (const's), cjk 6
        weights = {"fts": 1.0, "words": 1.0, "cjk": 6.0, "const": 1.0}
        terms = [w / (k + r) for leg, w in weights.items() if (r := e.rank(leg)) is not None]
        if e.vec_rank is not None:
            terms.insert(0, 1.0 / (k + e.vec_rank))
        assert e.fused_raw == pytest.approx(sum(terms), rel=1e-12)
    assert any(hit.explain.rank("const") == 1 for hit in hybrid.result.hits)


def test_ablate_switches_the_leg_and_eval_scores_it(kb: Index, declared: ConstantLeg) -> None:
    """One note pushed into every query's results hurts the golden set's nDCG; --ablate's
    `no constant leg` variant scores what eval scores without the leg."""
    without = kb.evaluate(k=[10], history=False).to_json()["aggregate"]["ndcg_at_k"]["10"]
    with extra_leg(declared):
        with_leg = kb.evaluate(k=[10], history=False).to_json()["aggregate"]["ndcg_at_k"]["10"]
        report = kb.ablate(k=[10])
    names = [row["name"] for row in report["configurations"]]
    assert names[:5] == ["default", "no trigram leg", "no word leg", "no CJK leg",
                         "no constant leg"]
    rows = {row["name"]: row for row in report["configurations"]}
    assert with_leg < without
    assert rows["default"]["value"] == pytest.approx(with_leg)
    assert rows["no constant leg"]["value"] == pytest.approx(without)


def test_tune_fetches_and_fuses_the_leg_as_search_ranks(kb: Index, leg: ConstantLeg) -> None:
    store = Store.open_readonly(Path(str(kb.location)))
    try:
        compiled = compile_query("retry budget incident")
        fetcher = ListFetcher(store, compiled, 50)
        assert fetcher.fetch(leg, (2.0, 1.0, 1.0)) == leg.chunks
        lists = query_lists([fetcher], [_golden(kb)], [[]], [(2.0, 1.0, 1.0)])
        assert lists[0].leg_ids["const"] == (leg.chunks,)
        # a query no note matches: only the leg finds the answer, in every sweep condition
        nonsense = ListFetcher(store, compile_query("zqxjv wkvvq"), 50)
        lists = [dataclasses.replace(query_lists([nonsense], [_golden(kb)], [[]],
                                                 [(2.0, 1.0, 1.0)])[0],
                                     expected=((NOTE, None),))]
        assert [name for name, found in lists[0].leg_ids.items() if any(found)] == ["const"]
        sweep = score_matrix(lists, _meta(store, lists), "retrieval", 10, [5])
        assert sweep.ndcg5.shape[1] == 1 and bool((sweep.ndcg5 > 0).all())
        # the fused list of tune's lists at the search's settings is the search's ranking
        results = kb.search("retry budget incident", mode="fts", limit=10, fusion="rrf")
        legs = legs_to_run(compiled, results.params)
        fused = fuse_lists([], [(1.0, fetcher.fetch(x, results.params.bm25_weights))
                                for x in legs.text], limit=10)
        assert [cid for cid, _ in fused] == [h.chunk.chunk_id for h in results.result.hits]
    finally:
        store.close()


def _golden(kb: Index) -> GoldenQuery:
    return GoldenQuery(0, "q1", "retry budget incident", ())


def _meta(store: Store, lists: list[QueryLists]) -> dict[int, tuple[str, str | None]]:
    ids = {cid for ql in lists for legs in ql.leg_ids.values() for ranked in legs for cid in ranked}
    return {cid: (c.path, c.heading) for cid, c in store.chunks_by_id(ids).items()}


def test_a_leg_name_is_registered_once(leg: ConstantLeg) -> None:
    with pytest.raises(ValueError, match="'const' is registered already"), extra_leg(leg):
        pass
    assert json.dumps([x.name for x in registered()]) == '["fts", "words", "cjk", "const"]'
