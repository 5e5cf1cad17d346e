"""Vector pseudo-relevance feedback (retrieve/feedback.py, search.md §5.1): the Rocchio vector
computed by hand, the second pass re-ranking the vector leg, relevance still read against the
query's own vector, and eval's batched path giving what one search gives."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from groove_cli.retrieve.feedback import feedback_vector
from groove_cli.retrieve.legs import listed_knn
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.query import compile_query
from groove_cli.retrieve.searcher import Searcher
from groove_cli.store import Store
from tests.test_pipeline import Chunk, Note, build, ids, rrf_params, run

# query vector (1, 0, 0); cosines 0.8, 0.6 and 1/√5 ≈ 0.447: the vector leg ranks 1, 2, 3
NOTES = [
    Note("a.md", [Chunk("alpha", (0.8, 0.6, 0.0))]),
    Note("b.md", [Chunk("bravo", (0.6, 0.0, 0.8))]),
    Note("c.md", [Chunk("charlie", (1.0, 2.0, 0.0))]),
]
QUERY = (1.0, 0.0, 0.0)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("feedback") / "index.db", NOTES)


def vector_mode(**settings: object) -> SearchParams:
    return rrf_params(mode="vector", **settings)


def test_the_rocchio_vector_by_hand(store: Store) -> None:
    # q/|q| + 1 × (0.8, 0.6, 0) = (1.8, 0.6, 0), then unit length: / √3.6
    moved = feedback_vector(store, np.array(QUERY, dtype=np.float32), [1], 1.0, 3)
    assert moved is not None
    assert moved.tolist() == pytest.approx([1.8 / math.sqrt(3.6), 0.6 / math.sqrt(3.6), 0.0])
    # two hits: their unit vectors are averaged, (0.8, 0.6, 0) and (0.6, 0, 0.8) → (0.7, 0.3, 0.4)
    both = feedback_vector(store, np.array((2.0, 0.0, 0.0), dtype=np.float32), [1, 2], 0.5, 3)
    expected = np.array((1.35, 0.15, 0.2))
    assert both is not None
    assert both.tolist() == pytest.approx((expected / np.linalg.norm(expected)).tolist())
    assert feedback_vector(store, np.array(QUERY, dtype=np.float32), [1], 0.0, 3) is None
    assert feedback_vector(store, np.array(QUERY, dtype=np.float32), [], 1.0, 3) is None


def test_the_second_pass_reranks_the_vector_leg(store: Store) -> None:
    before = run(store, "anything", vector_mode(), vector=QUERY)
    assert ids(before) == [1, 2, 3]
    # against (1.8, 0.6, 0)/√3.6: chunk 2 has 1.08/√3.6 ≈ 0.569, chunk 3 3/(√3.6·√5) ≈ 0.707
    after = run(store, "anything", vector_mode(feedback_beta=1.0, feedback_docs=1), vector=QUERY)
    assert ids(after) == [1, 3, 2]
    assert after.trace.timings_ms["feedback"] is not None
    assert before.trace.timings_ms["feedback"] is None
    # relevance reads cosines to the query's own vector, whatever the second pass ranked
    features = {h.chunk.chunk_id: h.features for h in before.hits}
    assert {h.chunk.chunk_id: h.features for h in after.hits} == features


def test_feedback_off_changes_nothing(store: Store) -> None:
    plain = run(store, "alpha", rrf_params(), vector=QUERY)
    zero = run(store, "alpha", rrf_params(feedback_beta=0.0, feedback_docs=5), vector=QUERY)
    assert [(h.chunk.chunk_id, h.score) for h in zero.hits] == [
        (h.chunk.chunk_id, h.score) for h in plain.hits]


def test_a_listed_knn_sends_other_vectors_to_the_real_one() -> None:
    own = np.array(QUERY, dtype=np.float32)
    asked: list[int] = []

    def others(vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        asked.append(k)
        return [(9, 0.0)][:k]

    knn = listed_knn([(1, 0.1), (2, 0.2)], own=own, others=others)
    assert knn(own, 1) == [(1, 0.1)]
    assert knn(own.copy(), 5) == [(9, 0.0)]
    assert asked == [5]
    assert listed_knn([(1, 0.1)])(own.copy(), 5) == [(1, 0.1)]  # no fallback: the list


def test_eval_batches_give_what_one_search_gives(golden_copy: tuple[Path, Path],
                                                 real_models_dir: Path) -> None:
    kb, db = golden_copy  # searches cache query vectors: never in the shared index
    searcher = Searcher.open(db, kb, model=None, max_length=None, models_dir=real_models_dir,
                             offline=True)
    try:
        params = SearchParams(limit=10, feedback_beta=0.5, feedback_docs=3)
        queries = [compile_query(q) for q in ("retry budget", "database backups",
                                              "障害が起きたときの連絡手順")]
        batched = searcher.search_many(queries, params)
        single = [searcher.search(q, params) for q in queries]
        plain = [searcher.search(q, SearchParams(limit=10)) for q in queries]
    finally:
        searcher.close()
    assert [[h.chunk.chunk_id for h in r.hits] for r in batched] == [
        [h.chunk.chunk_id for h in r.hits] for r in single]
    # the batch's second pass ran against the real KNN: feedback moved some list
    assert [[h.chunk.chunk_id for h in r.hits] for r in single] != [
        [h.chunk.chunk_id for h in r.hits] for r in plain]


def test_tune_sweeps_beta_and_scores_off_as_eval_does(golden_copy: tuple[Path, Path],
                                                      real_models_dir: Path) -> None:
    """The feedback space re-runs searches (tune.md §4, §5): at beta 0 every query's recall@5
    is eval's with the relevance cuts off, which no space applies."""
    import groove_cli

    kb, db = golden_copy
    with groove_cli.open(kb, db=db, models_dir=real_models_dir, floor=0.0,
                         unsupported_below=0.0) as index:
        report = index.tune(space="feedback")
        evaluated = index.evaluate(k=[5], history=False)
    assert report.to_json()["grid"]["vector_betas"] == [0.0, 0.1, 0.2, 0.35, 0.5]
    assert [e["condition"] for e in report.to_json()["grid"]["beta_sweep"]] == [
        {"vector_beta": b} for b in (0.0, 0.1, 0.2, 0.35, 0.5)]
    sweep = report.sweep
    recall = sweep.scores["recall"][sweep.k_values.index(5)]
    by_eval = {q["id"]: q["metrics"]["recall_at_k"]["5"] for q in evaluated.run["per_query"]
               if q["expected"]}
    assert len(sweep.query_ids) == len(by_eval) > 50
    assert {qid: float(recall[0, i]) for i, qid in enumerate(sweep.query_ids)} == pytest.approx(
        {qid: by_eval[qid] for qid in sweep.query_ids})
