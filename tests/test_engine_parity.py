"""search, eval and tune rank every golden query identically under any fusion condition.

One retrieval engine serves all three: `Searcher.search` (what `groove search` runs), eval's
batch (`run_eval`: one embedding batch, one batched KNN, pinned readers; `search_many` is the
same batch path on its own) and tune's lists fused in memory (`fuse_lists`, the vectorised RRF
the sweep runs, or `score_fuse_lists`, the vectorised score fusion). Hypothesis draws the
condition: the fusion method, rrf_k, the three leg weights (vector, full-text, CJK), score
fusion's three alphas, short-query length and CJK weight, the three bm25 column weights, the
floor and the mode, over the sample KB whose queries use all four legs (trigram, word-level,
CJK, vector): its golden file plus a few Japanese queries with 1–2 character exclusions, which
only the CJK table can hold.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli import config
from groove_cli.evaluate.golden import GoldenQuery
from groove_cli.evaluate.golden_set import load_golden_set
from groove_cli.evaluate.runner import EvalRequest, run_eval
from groove_cli.evaluate.tune.lists import ListFetcher, scored_vector_lists
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.fuse import ScoredLeg, fuse_lists, score_fuse_lists
from groove_cli.retrieve.legs import CJK, candidate_pool, legs_to_run
from groove_cli.retrieve.params import build_params
from groove_cli.retrieve.query import CompiledQuery, compile_query
from groove_cli.retrieve.searcher import Searcher

LIMIT = 10
JA_EXTRA = """
  - id: parity-ja-one-char-exclusion
    query: "バックアップ 設定 -失"
    expected:
      - path: operations/backups/バックアップ設定.md
    tags: [ja, exclusion]

  - id: parity-ja-two-char-exclusion
    query: "障害の原因 -遅延"
    expected:
      - path: incidents/2025-02-e0382-connection-pool.md
    tags: [ja, exclusion]

  - id: parity-ja-quoted-exclusion
    query: '評価 質問 -"再ラ"'
    expected:
      - path: search/relevance/評価セットの作り方.md
    tags: [ja, exclusion]
"""
"""Japanese queries with exclusions too short for the trigram table (issue #13)."""
Ranking = list[tuple[str, str | None, float]]


@dataclass
class Engine:
    kb: Path
    db: Path
    golden: Path
    models_dir: Path
    searcher: Searcher
    queries: tuple[GoldenQuery, ...]
    compiled: list[CompiledQuery]
    vector_lists: list[list[int]]
    vector_scores: list[list[float]]
    fetchers: list[ListFetcher]


@pytest.fixture(scope="module")
def engine(golden_index: tuple[Path, Path], real_models_dir: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Engine:
    """A private copy of the sample index (query vectors get cached in it), opened once."""
    kb, db = golden_index
    root = tmp_path_factory.mktemp("parity")
    copy = root / db.name
    for source in db.parent.glob(db.name + "*"):
        shutil.copy2(source, root / source.name)
    golden_file = root / "parity-golden.yml"
    golden_file.write_text((kb / ".groove-eval.yml").read_text(encoding="utf-8") + JA_EXTRA,
                           encoding="utf-8")
    settings_ = config.resolve({}, {"models_dir": str(real_models_dir)})
    golden = load_golden_set(settings_, kb, golden_file)
    searcher = Searcher.open(copy, kb, model=None, max_length=None, models_dir=real_models_dir,
                             offline=True)
    compiled = [compile_query(q.query) for q in golden.queries]
    pool = candidate_pool(LIMIT)
    vectors = searcher.query_vectors([q.positive_text for q in compiled])
    scored = scored_vector_lists(searcher, compiled, vectors, pool)
    engine = Engine(kb, copy, golden_file, real_models_dir, searcher, golden.queries, compiled,
                    [[cid for cid, _ in found] for found in scored],
                    [[cosine for _, cosine in found] for found in scored],
                    [ListFetcher(searcher.store, q, pool, scored=True) for q in compiled])
    yield engine  # type: ignore[misc]
    searcher.close()


def test_the_golden_queries_use_all_four_legs(engine: Engine) -> None:
    assert any(q.cjk_expr and not q.word_expr and not q.match_expr
               for q in engine.compiled)  # Japanese only
    assert any(q.cjk_expr and q.match_expr for q in engine.compiled)  # Japanese + an identifier
    assert any(q.word_expr and not q.match_expr for q in engine.compiled)  # English only
    assert any(q.negative_expr or q.word_negative_expr for q in engine.compiled)  # exclusions
    assert any(q.cjk_negative_expr for q in engine.compiled)  # 1–2 character CJK exclusions
    assert all(engine.vector_lists)
    # the CJK leg finds something for every query that has CJK text
    assert all(f.fetch(CJK, config.DEFAULT_BM25_WEIGHTS)
               for f, q in zip(engine.fetchers, engine.compiled, strict=True) if q.cjk_expr)


conditions = st.fixed_dictionaries({
    "search.retrieval.mode": st.sampled_from(config.MODES),
    "search.fusion.method": st.sampled_from(config.FUSION_METHODS),
    # alpha 1 in fts mode weighs the trigram and word-level legs 0: (almost) nothing is found
    "search.fusion.score_alpha": st.sampled_from([0.0, 0.5]) | st.floats(0.0, 0.95),
    "search.fusion.score_alpha_short": st.sampled_from([0.8]) | st.floats(0.0, 0.95),
    "search.fusion.score_alpha_mid": st.sampled_from([0.7]) | st.floats(0.0, 0.95),
    "search.fusion.score_alpha_long": st.sampled_from([0.5]) | st.floats(0.0, 0.95),
    "search.fusion.short_query_words": st.sampled_from([0, 2, 4, 6, 32]),
    "search.fusion.mid_query_words": st.sampled_from([0, 4, 8, 64]),
    "search.fusion.score_cjk_weight": st.sampled_from([0.0, 1.0]) | st.floats(0.0, 4.0),
    "search.fusion.rrf_k": st.sampled_from([1.0, 5.0, 20.0, 60.0, 100.0])
    | st.floats(1.0, 200.0, allow_nan=False),
    "search.retrieval.vector_weight": st.floats(0.1, 4.0, allow_nan=False),
    "search.retrieval.fts_weight": st.floats(0.1, 4.0, allow_nan=False),
    "search.retrieval.cjk_weight": st.sampled_from([0.0, 6.0])
    | st.floats(0.1, 12.0, allow_nan=False),
    "search.retrieval.min_score": st.sampled_from([0.0, 0.0, 0.2, 0.4]),
    "search.fusion.bm25_heading_weight": st.sampled_from([0.5, 1.0, 2.0, 4.0]),
    "search.fusion.bm25_context_weight": st.sampled_from([0.5, 1.0, 2.0, 4.0]),
    "search.fusion.bm25_content_weight": st.sampled_from([0.5, 1.0, 2.0, 4.0]),
})


def tune_ranking(engine: Engine, i: int, flags: dict[str, object]) -> list[tuple[int, float]]:
    """Query i fused in memory from tune's lists, as the sweep fuses a grid condition."""
    s = config.resolve({}, flags)
    # the sweep fixes score fusion's alpha per query from the query's script and length
    params = build_params(s, limit=LIMIT, rerank=False, filters=FilterSpec()).for_query(
        engine.compiled[i])
    legs = legs_to_run(engine.compiled[i], params)
    fetcher = engine.fetchers[i]
    if params.fusion == "score":
        scored = [ScoredLeg(params.score_vector_weight, engine.vector_lists[i],
                            engine.vector_scores[i], spread=True)] if legs.vector else []
        scored += [ScoredLeg(float(getattr(params, leg.score_weight)),
                             fetcher.fetch(leg, params.bm25_weights),
                             fetcher.fetch_scores(leg, params.bm25_weights))
                   for leg in legs.text]
        return score_fuse_lists(scored, limit=LIMIT, min_score=params.min_score)
    fused = fuse_lists(
        engine.vector_lists[i] if legs.vector else [],
        [(float(getattr(params, leg.weight)), fetcher.fetch(leg, params.bm25_weights))
         for leg in legs.text],
        limit=LIMIT, rrf_k=params.rrf_k, vector_weight=params.vector_weight,
        min_score=params.min_score)
    return fused


@settings(max_examples=25, deadline=None)
@given(flags=conditions)
def test_search_eval_and_tune_rank_every_golden_query_identically(
        engine: Engine, flags: dict[str, object]) -> None:
    # tune's sweep fuses the legs' lists without the relevance cuts (tune.md §5): off here
    s = config.resolve({}, {**flags, "models_dir": str(engine.models_dir),
                            "search.relevance.floor": 0.0,
                            "search.relevance.unsupported_below": 0.0})
    params = build_params(s, limit=LIMIT, rerank=False,
                          filters=FilterSpec(quality_threshold=0.0), spans=False)
    searched = [engine.searcher.search(q, params) for q in engine.compiled]
    search_ids = [[(h.chunk.chunk_id, h.score) for h in r.hits] for r in searched]
    search_rankings: list[Ranking] = [[(h.chunk.path, h.chunk.heading, h.score) for h in r.hits]
                                      for r in searched]

    outcome = run_eval(EvalRequest(settings=s, db=engine.db, kb=engine.kb, golden=engine.golden,
                                   k_values=(1, 5, 10), limit=LIMIT, reranker=None,
                                   no_history=True))
    eval_rankings: list[Ranking] = [
        [(h["path"], h["heading"], h["score"]) for h in q["top_k"]]
        for q in outcome.to_json()["per_query"]]

    batched = engine.searcher.search_many(engine.compiled, params)
    batch_ids = [[(h.chunk.chunk_id, h.score) for h in r.hits] for r in batched]

    tune_ids = [tune_ranking(engine, i, flags) for i in range(len(engine.compiled))]

    assert sum(1 for ids in search_ids if ids) >= len(search_ids) // 2
    for i, query in enumerate(engine.queries):
        assert eval_rankings[i] == search_rankings[i], query.id
        assert tune_ids[i] == search_ids[i], query.id
        assert batch_ids[i] == search_ids[i], query.id


def test_run_tune_reports_each_phase_once_in_order_without_changing_the_result(
        engine: Engine) -> None:
    """bench/bench_tune.py times tune through `on_phase`; the hook must not change the run."""
    from groove_cli.evaluate.tune.run import PHASES, TuneRequest, run_tune

    request = TuneRequest(settings=config.resolve({}, {"models_dir": str(engine.models_dir)}),
                          db=engine.db, kb=engine.kb, golden=None, k_values=(1, 5, 10),
                          limit=None, space="fusion")
    calls: list[tuple[str, float]] = []
    timed = run_tune(request, on_phase=lambda phase, seconds: calls.append((phase, seconds)))
    assert [phase for phase, _ in calls] == [*PHASES, "verdict"]  # verdict, then the report
    assert all(seconds >= 0 for _, seconds in calls)
    assert timed.to_json() == run_tune(request).to_json()
