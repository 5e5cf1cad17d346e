"""The pure core of `groove tune`: grids, in-memory fusion, metrics, selection, LOO-CV, verdict."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli import messages
from groove_cli.errors import TuneNotApplicable
from groove_cli.evaluate import tune as T
from groove_cli.evaluate.golden import Expected
from groove_cli.evaluate.metrics import HitRecord, score_hits, score_query
from groove_cli.retrieve.fuse import fuse_lists

Entry = tuple[str, str | None]

# ------------------------------------------------------------- reference (search.md §5, eval.md §4)


def ref_fuse(vec: Sequence[int], fts: Sequence[int], *, rrf_k: float, wv: float, wf: float,
             min_score: float, limit: int) -> list[tuple[int, float]]:
    """search.md §5 written out plainly: weighted RRF, vector leg first, ties by id, floor, cut."""
    raw: dict[int, float] = {}
    best = 0.0
    for weight, ids in ((wv, vec), (wf, fts)):
        if not ids:
            continue
        best += weight / (rrf_k + 1)
        for rank, chunk in enumerate(ids, start=1):
            raw[chunk] = raw.get(chunk, 0.0) + weight / (rrf_k + rank)
    ordered = sorted(raw.items(), key=lambda item: (-item[1], item[0]))
    kept = [(chunk, value / best) for chunk, value in ordered if value / best >= min_score]
    return kept[:limit]


def ref_matches(entry: Entry, hit: Entry) -> bool:
    if entry[0] != hit[0]:
        return False
    if entry[1] is None:
        return True
    return hit[1] is not None and entry[1].strip().lower() == hit[1].strip().lower()


def ref_metrics(expected: Sequence[Entry], hits: Sequence[Entry], ks: Sequence[int]
                ) -> tuple[dict[int, float], float, dict[int, float]]:
    """eval.md §4 written out plainly (recall@k, RR, greedy one-to-one nDCG@k)."""
    recall = {}
    ndcg = {}
    for k in ks:
        top = hits[:k]
        found = sum(1 for e in expected if any(ref_matches(e, h) for h in top))
        recall[k] = found / len(expected) if expected and top else 0.0
        consumed: set[int] = set()
        dcg = 0.0
        for rank, hit in enumerate(top, start=1):
            open_ = [i for i, e in enumerate(expected) if i not in consumed and ref_matches(e, hit)]
            if open_:
                with_heading = [i for i in open_ if expected[i][1] is not None]
                consumed.add((with_heading or open_)[0])
                dcg += 1.0 / math.log2(rank + 1)
        idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(expected), k) + 1))
        ndcg[k] = dcg / idcg if expected else 0.0
    rr = next((1.0 / r for r, h in enumerate(hits, start=1)
               if any(ref_matches(e, h) for e in expected)), 0.0)
    return recall, rr, ndcg


# --------------------------------------------------------------------------- grids


def test_fusion_grid_layout_and_default() -> None:
    grid = T.fusion_grid()
    assert len(grid) == 384
    assert [c.index for c in grid] == list(range(384))
    # weight_index = (h × 4 + ctx) × 4 + content, condition_index = weight_index × 6 + k_index
    c = grid[((3 * 4 + 1) * 4 + 0) * 6 + 1]
    assert (c.bm25_heading_weight, c.bm25_context_weight, c.bm25_content_weight, c.rrf_k) == (
        4.0, 1.0, 0.5, 10.0)
    assert T.label(c) == "h=4.0 ctx=1.0 content=0.5 k=10"
    assert T.DEFAULT_FUSION_INDEX == (2 * 4 + 1) * 4 * 6 + 1 * 6 + 4 == 226
    default = grid[T.DEFAULT_FUSION_INDEX]
    assert T.label(default) == "h=2.0 ctx=1.0 content=1.0 k=60"
    assert default.grid_indices == (2, 1, 1, 4)
    assert (default.vector_weight, default.fts_weight, default.min_score) == (1.0, 1.0, 0.0)


def test_weight_sets_order() -> None:
    sets = T.weight_sets()
    assert len(sets) == 64
    assert sets[0] == (0.5, 0.5, 0.5)
    assert sets[1] == (0.5, 0.5, 1.0)
    assert sets[4] == (0.5, 1.0, 0.5)
    assert sets[16] == (1.0, 0.5, 0.5)
    assert sets[T.DEFAULT_WEIGHT_INDEX] == (2.0, 1.0, 1.0)
    assert sets[T.BM25_PROBE_WEIGHT_INDICES[0]] == (4.0, 0.5, 0.5)
    assert sets[T.BM25_PROBE_WEIGHT_INDICES[1]] == (0.5, 0.5, 4.0)


def test_retrieval_grid_layout_and_default() -> None:
    grid = T.retrieval_grid()
    assert len(grid) == 60 and T.CJK_WEIGHTS == (3.0, 6.0, 12.0)
    c = grid[(3 * 3 + 1) * 4 + 1]  # ratio index 3 (1.5), CJK index 1 (6.0), min_score 1 (0.2)
    assert T.label(c) == "vector_weight=1.5 fts_weight=1.0 cjk_weight=6.0 min_score=0.2"
    assert T.label(grid[(1 * 3 + 2) * 4]) == (
        "vector_weight=0.67 fts_weight=1.0 cjk_weight=12.0 min_score=0.0")
    assert T.grid_indices("retrieval", (1 * 3 + 2) * 4 + 3) == (1, 2, 3)
    default = grid[T.DEFAULT_RETRIEVAL_INDEX]
    assert T.DEFAULT_RETRIEVAL_INDEX == (2 * 3 + 1) * 4 + 0 == 28
    assert T.label(default) == "vector_weight=1.0 fts_weight=1.0 cjk_weight=6.0 min_score=0.0"
    assert (default.rrf_k, default.bm25_heading_weight) == (60.0, 2.0)


def test_toml_snippets_carry_decimal_points() -> None:
    fusion = T.fusion_grid()[((3 * 4 + 1) * 4 + 0) * 6 + 1]
    assert T.toml_snippet(fusion) == (
        "[search.fusion]\nrrf_k = 10.0\nbm25_heading_weight = 4.0\n"
        "bm25_context_weight = 1.0\nbm25_content_weight = 0.5"
    )
    retrieval = T.retrieval_grid()[(3 * 3 + 1) * 4]
    assert T.toml_snippet(retrieval) == (
        "[search.retrieval]\nvector_weight = 1.5\nfts_weight = 1.0\ncjk_weight = 6.0\n"
        "min_score = 0.0"
    )


def test_k_values_and_limits() -> None:
    assert T.normalise_k_values([0, 10, 1, 10, 5000]) == (1, 5, 10, 1000)
    assert T.normalise_k_values([0]) == (5,)
    assert T.tune_limit(None, (1, 5, 10)) == 10
    assert T.tune_limit(3, (1, 5, 10)) == 10
    assert T.tune_limit(40, (1, 5, 10)) == 40
    assert T.tune_limit(5000, (1, 5)) == 1000
    assert T.candidate_pool(10) == 50 and T.candidate_pool(20) == 100
    assert T.vector_k(5000) == 4096 and T.vector_k(50, has_exclusions=True) == 500


# --------------------------------------------------------------------------- metrics


def test_metrics_match_eval_examples() -> None:
    # E = {a.md, b.md}, hits [x.md, a.md, b.md]
    m = score_hits([("a.md", None), ("b.md", None)],
                     [("x.md", None), ("a.md", None), ("b.md", None)], [1, 5])
    assert m.at_k["recall"] == {1: 0.0, 5: 1.0}
    assert m.whole["mrr"] == 0.5
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert m.at_k["ndcg"][5] == pytest.approx(expected) and round(m.at_k["ndcg"][5], 4) == 0.6934
    # E = {a.md, a.md#Setup}, hits [a.md#Setup, a.md#Other]: hit 1 takes the heading entry
    m = score_hits([("a.md", None), ("a.md", "Setup")],
                     [("a.md", "Setup"), ("a.md", "Other")], [5])
    assert m.at_k["ndcg"][5] == 1.0


def test_metrics_heading_rule_and_empty_cases() -> None:
    m = score_hits([("a.md", " setup ")], [("a.md", None), ("a.md", "SETUP")], [1, 5])
    assert m.at_k["recall"] == {1: 0.0, 5: 1.0} and m.whole["mrr"] == 0.5
    m = score_hits([("a.md", None)], [], [5])
    assert (m.at_k["recall"][5], m.whole["mrr"], m.at_k["ndcg"][5]) == (0.0, 0.0, 0.0)
    # one hit satisfies several entries for recall, but only one for nDCG
    m = score_hits([("a.md", None), ("a.md", None)], [("a.md", "x")], [5])
    assert m.at_k["recall"][5] == 1.0
    assert m.at_k["ndcg"][5] == pytest.approx(1 / (1 + 1 / math.log2(3)))


hit_lists = st.lists(st.tuples(st.sampled_from([f"d{i}.md" for i in range(5)]),
                               st.sampled_from([None, "Setup", "usage", " SETUP"])), max_size=12)


@settings(max_examples=200, deadline=None)
@given(expected=st.lists(st.tuples(st.sampled_from([f"d{i}.md" for i in range(5)]),
                                   st.sampled_from([None, "Setup", "usage"])), max_size=4),
       hits=hit_lists, ks=st.lists(st.integers(0, 15), min_size=1, max_size=4, unique=True))
def test_metrics_agree_with_eval_metrics(expected: list[Entry], hits: list[Entry],
                                         ks: list[int]) -> None:
    """tune and eval must score a ranked list identically (bit for bit)."""
    mine = score_hits(expected, hits, ks)
    theirs = score_query([Expected(p, h) for p, h in expected],
                         [HitRecord(i + 1, p, h, 0.0) for i, (p, h) in enumerate(hits)], ks)
    assert mine.at_k["recall"] == theirs.at_k["recall"]
    assert mine.whole["mrr"] == theirs.whole["mrr"]
    assert mine.at_k["ndcg"] == theirs.at_k["ndcg"]


# --------------------------------------------------------------------------- in-memory fusion


def _meta(n: int) -> dict[int, Entry]:
    headings = [None, "Setup", "Usage", "setup "]
    return {i: (f"d{i % 7}.md", headings[i % 4]) for i in range(n)}


def _check_against_reference(queries: Sequence[T.QueryLists], meta: dict[int, Entry],
                             space: T.Space, limit: int, ks: tuple[int, ...]) -> None:
    sweep = T.score_matrix(queries, meta, space, limit, ks)
    assert sweep.k_values == T.normalise_k_values(ks)
    for q, query in enumerate(queries):
        for cond in T.grid(space):
            fts = query.leg_ids["fts"][cond.weight_index]
            fused = ref_fuse(query.vector_ids, fts, rrf_k=cond.rrf_k, wv=cond.vector_weight,
                             wf=cond.fts_weight, min_score=cond.min_score, limit=limit)
            hits = [meta[c] for c, _ in fused]
            recall, rr, ndcg = ref_metrics(query.expected, hits, sweep.k_values)
            for i, k in enumerate(sweep.k_values):
                assert sweep.scores["recall"][i, cond.index, q] == recall[k], (cond, k)
                assert sweep.scores["ndcg"][i, cond.index, q] == ndcg[k], (cond, k)
            assert sweep.scores["mrr"][cond.index, q] == rr, cond


def test_fusion_sweep_agrees_with_reference_on_random_lists() -> None:
    rng = random.Random(7)
    meta = _meta(120)
    queries = []
    for q in range(4):
        pool = rng.sample(range(120), 60)
        vec = tuple(rng.sample(pool, rng.randint(0, 25)))
        lists = []
        for _ in range(64):
            lists.append(tuple(rng.sample(pool, rng.randint(0, 25))))
        expected = tuple((f"d{rng.randrange(7)}.md", rng.choice([None, "Setup", "usage"]))
                         for _ in range(rng.randint(1, 3)))
        queries.append(T.QueryLists(f"q{q}", expected, vec, {"fts": tuple(lists)}))
    _check_against_reference(queries, meta, "fusion", 10, (1, 3, 10))


id_lists = st.lists(st.integers(0, 30), unique=True, max_size=20)
entries = st.lists(st.tuples(st.sampled_from([f"d{i}.md" for i in range(7)]),
                             st.sampled_from([None, "Setup", "usage", " SETUP"])),
                   min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(vec=id_lists, fts=id_lists, expected=entries, limit=st.integers(1, 15),
       ks=st.lists(st.integers(0, 20), min_size=1, max_size=4))
def test_retrieval_sweep_agrees_with_reference(vec: list[int], fts: list[int],
                                               expected: list[Entry], limit: int,
                                               ks: list[int]) -> None:
    query = T.QueryLists("q", tuple(expected), tuple(vec), {"fts": (tuple(fts),)})
    _check_against_reference([query], _meta(31), "retrieval", limit, tuple(ks))


@settings(max_examples=200, deadline=None)
@given(vec=id_lists, fts=id_lists, rrf_k=st.floats(1, 200), wv=st.floats(0.01, 5),
       wf=st.floats(0.01, 5), min_score=st.floats(0, 1), limit=st.integers(1, 50))
def test_fuse_lists_agrees_with_reference(vec: list[int], fts: list[int], rrf_k: float,
                                          wv: float, wf: float, min_score: float,
                                          limit: int) -> None:
    got = fuse_lists(vec, [(wf, fts)], limit=limit, rrf_k=rrf_k, vector_weight=wv,
                     min_score=min_score)
    assert got == ref_fuse(vec, fts, rrf_k=rrf_k, wv=wv, wf=wf, min_score=min_score, limit=limit)


def test_fuse_lists_scores_and_ties() -> None:
    # vector [1, 2, 3], FTS [3, 4]: chunk 3 is vector rank 3 and FTS rank 1 ⇒ 1/63 + 1/61
    fused = fuse_lists([1, 2, 3], [(1.0, [3, 4])], limit=10)
    assert [c for c, _ in fused] == [3, 1, 2, 4]  # 2 and 4 tie at 1/62: lower id first
    assert fused[0][1] == (1 / 63 + 1 / 61) / (1 / 61 + 1 / 61)
    assert fused[2][1] == fused[3][1]
    assert fuse_lists([5], [(1.0, [5])], limit=1) == [(5, 1.0)]
    assert fuse_lists([], [(1.0, [])], limit=5) == []


def test_score_matrix_rejects_bad_inputs() -> None:
    query = T.QueryLists("q", (("d0.md", None),), (1,), {"fts": ((1,),)})
    with pytest.raises(ValueError, match="expected 0 or 64 fts list"):
        T.score_matrix([query], _meta(5), "fusion", 5, [5])
    with pytest.raises(ValueError, match="no full-text leg is named 'trigram'"):
        T.score_matrix([T.QueryLists("q", (("d0.md", None),), (1,), {"trigram": ((1,),)})],
                       _meta(5), "retrieval", 5, [5])
    dup = T.QueryLists("q", (("d0.md", None),), (1, 1), {"fts": ((2,),)})
    with pytest.raises(ValueError, match="repeats"):
        T.score_matrix([dup], _meta(5), "retrieval", 5, [5])
    with pytest.raises(KeyError, match="chunk id 99"):
        T.score_matrix([T.QueryLists("q", (("d0.md", None),), (99,), {"fts": ((),)})], _meta(5),
                       "retrieval", 5, [5])


def test_fusion_sweep_scores_every_condition_of_a_query_in_one_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps 384 conditions x 200 queries to seconds (bench/results/tune.md): each query
    is fused and scored once for all its conditions, as arrays, never condition by condition."""
    from groove_cli.evaluate.tune import sweep as S

    calls = {"fuse": 0, "rank_metrics": 0}

    def counted(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(S, "_fuse", counted("fuse", S._fuse))
    monkeypatch.setattr(S, "rank_metrics", counted("rank_metrics", S.rank_metrics))
    rng = random.Random(3)
    meta = {i: (f"doc{i // 5}.md", None) for i in range(10_000)}
    queries = []
    for q in range(200):
        vec = rng.sample(range(10_000), 50)
        base = rng.sample(range(10_000), 120)
        lists = tuple(tuple(rng.sample(base, 50)) for _ in range(64))
        expected = tuple((f"doc{rng.choice(vec + base) // 5}.md", None) for _ in range(3))
        queries.append(T.QueryLists(f"q{q}", expected, tuple(vec), {"fts": lists}))
    sweep = T.score_matrix(queries, meta, "fusion", 10, [1, 5, 10])
    assert sweep.ndcg5.shape == (384, 200)
    assert calls == {"fuse": 200, "rank_metrics": 200}


# --------------------------------------------------------------------------- selection


def _fusion_scores(means: dict[int, float], base: float = 0.5) -> np.ndarray:
    """A one-query score matrix whose mean per condition is `means` (others `base`)."""
    scores = np.full((384, 1), base)
    for index, value in means.items():
        scores[index, 0] = value
    return scores


def test_select_keeps_default_when_everything_ties() -> None:
    assert T.select(_fusion_scores({}), [0], "fusion") == T.DEFAULT_FUSION_INDEX
    # within 1e-9 of the best joins the plateau, which still holds the default
    assert T.select(_fusion_scores({5 * 6 + 4: 0.5 + 5e-10}), [0], "fusion") == 226


def test_select_default_on_empty_subset() -> None:
    scores = _fusion_scores({0 * 6 + 4: 0.9})
    assert T.select(scores, [], "fusion") == T.DEFAULT_FUSION_INDEX
    assert T.select(np.zeros((60, 3)), [], "retrieval") == T.DEFAULT_RETRIEVAL_INDEX


def test_select_centre_distance_then_lowest_index() -> None:
    w_far = 0  # grid (0, 0, 0): distance at k index 4 = 1.5 × 3 + 1.5 = 6.0
    w_near = (1 * 4 + 2) * 4 + 1  # grid (1, 2, 1): 0.5 × 3 + 1.5 = 3.0
    means = {w_far * 6 + k: 0.8 for k in range(6)} | {w_near * 6 + k: 0.8 for k in range(6)}
    sel = T.select_detail(_fusion_scores(means), [0], "fusion")
    assert sel.phase1_choice == w_near * 6 + 4
    # phase 2: all six k tie; k indices 2 and 3 are both 0.5 from the centre 2.5 ⇒ lowest index
    assert sel.choice == w_near * 6 + 2


def test_select_strict_improvement_resets_plateau() -> None:
    w = (3 * 4 + 1) * 4 + 0
    means = {w * 6 + 4: 0.7, w * 6 + 1: 0.75, w * 6 + 0: 0.75 + 5e-10,
             10 * 6 + 4: 0.7 - 1e-3}
    sel = T.select_detail(_fusion_scores(means), [0], "fusion")
    assert sel.phase1_choice == w * 6 + 4
    # k=10 beats k=60; k=5 joins the plateau (within 1e-9); centre distance |1-2.5| < |0-2.5|
    assert sel.choice == w * 6 + 1


def test_select_uses_mean_over_subset_only() -> None:
    scores = np.full((384, 3), 0.5)
    scores[7 * 6 + 4, 0] = 1.0  # better on query 0 only
    assert T.select(scores, [0, 1], "fusion") == 7 * 6 + 4
    assert T.select(scores, [1, 2], "fusion") == T.DEFAULT_FUSION_INDEX


def test_select_retrieval_prefers_no_floor_and_centre_ratio() -> None:
    scores = np.full((60, 1), 0.5)
    assert T.select(scores, [0], "retrieval") == T.DEFAULT_RETRIEVAL_INDEX
    scores[:] = 0.2
    for ratio_index in (1, 3):  # 0.67 and 1.5 tie, both 1 from the centre ratio index 2
        for cjk_index in range(3):  # the default CJK weight (index 1) is the centre
            start = (ratio_index * 3 + cjk_index) * 4
            scores[start: start + 4, 0] = 0.6
    assert T.select(scores, [0], "retrieval") == (1 * 3 + 1) * 4  # lowest index, no floor


# --------------------------------------------------------------------------- statistics


def test_sign_test_known_case() -> None:
    diffs = [0.1] * 8 + [-0.1] + [0.0, 1e-13]
    st_ = T.sign_test(diffs)
    assert (st_.improved, st_.degraded, st_.tied) == (8, 1, 2)
    assert st_.p_value == 2 * (math.comb(9, 0) + math.comb(9, 1)) / 2**9 == 0.0390625


def test_sign_test_edges() -> None:
    assert T.sign_test([]).p_value == 1.0
    assert T.sign_test([0.0, 0.0]).p_value == 1.0  # n = 0 ⇒ min(1, 2 × 1 / 1)
    assert T.sign_test([0.2] * 10).p_value == 2 * 1 / 2**10
    assert T.sign_test([0.2, -0.2]).p_value == 1.0  # 2 × (1 + 2) / 4 capped at 1


def test_paired_se() -> None:
    assert T.paired_se([]) == math.inf and T.paired_se([0.3]) == math.inf
    # [0.1, 0.3]: mean 0.2, SD = sqrt((0.01 + 0.01) / 1), SE = SD / sqrt(2) = 0.1
    assert T.paired_se([0.1, 0.3]) == pytest.approx(0.1)
    assert T.paired_se([0.05, 0.05, 0.05]) == 0.0


def _retrieval_scores(better: list[float], default: float = 0.5) -> np.ndarray:
    """Default condition 28 scores `default` on every query; condition 40 (ratio 1.5) `better`."""
    scores = np.zeros((60, len(better)))
    scores[T.DEFAULT_RETRIEVAL_INDEX] = default
    scores[40] = better
    return scores


def test_loo_cv_all_folds_agree() -> None:
    loo = T.loo_cv(_retrieval_scores([0.9, 0.8, 0.5, 0.3]), [0, 1, 2, 3], "retrieval")
    # refit: mean(40) = 2.5 / 4 = 0.625 > 0.5. Fold means of 40 without q0..q3:
    # 1.6/3, 1.7/3, 2.0/3, 2.2/3, all > 0.5 ⇒ every fold picks 40.
    assert loo.refit == 40 and loo.selections == (40, 40, 40, 40)
    assert loo.held_out_diffs == pytest.approx((0.4, 0.3, 0.0, -0.2))
    assert loo.mean_delta == pytest.approx(0.5 / 4)
    # deviations 0.275, 0.175, -0.125, -0.325 ⇒ SD = sqrt(0.2275 / 3)
    assert loo.sd == pytest.approx(math.sqrt(0.2275 / 3))
    assert loo.paired_se == pytest.approx(math.sqrt(0.2275 / 3) / 2)
    assert loo.stability == 1.0
    assert (loo.sign_test.improved, loo.sign_test.degraded, loo.sign_test.tied) == (2, 1, 1)
    assert loo.sign_test.p_value == 1.0  # 2 × (C(3,0) + C(3,1)) / 8 = 1


def test_loo_cv_unstable_fold() -> None:
    loo = T.loo_cv(_retrieval_scores([1.0, 0.6, 0.5, 0.2]), [0, 1, 2, 3], "retrieval")
    # refit mean 2.3/4 = 0.575 ⇒ 40. Without q0: 1.3/3 = 0.433 < 0.5 ⇒ default, d0 = 0.
    # without q1: 1.7/3 ⇒ 40, d1 = 0.6 − 0.5; without q2: 1.8/3 ⇒ 40, d2 = 0;
    # without q3: 2.1/3 ⇒ 40, d3 = 0.2 − 0.5.
    assert loo.refit == 40
    assert loo.selections == (T.DEFAULT_RETRIEVAL_INDEX, 40, 40, 40)
    assert loo.held_out_diffs == pytest.approx((0.0, 0.1, 0.0, -0.3))
    assert loo.mean_delta == pytest.approx(-0.05)
    # deviations 0.05, 0.15, 0.05, −0.25 ⇒ Σ² = 0.09, SD = sqrt(0.03), SE = SD / 2
    assert loo.paired_se == pytest.approx(math.sqrt(0.03) / 2)
    assert loo.stability == 3 / 4
    assert (loo.sign_test.improved, loo.sign_test.degraded, loo.sign_test.tied) == (1, 1, 2)


def test_loo_cv_single_query() -> None:
    loo = T.loo_cv(_retrieval_scores([0.9]), [0], "retrieval")
    assert loo.refit == 40
    assert loo.selections == (T.DEFAULT_RETRIEVAL_INDEX,)  # select(∅) is the default
    assert loo.held_out_diffs == (0.0,)
    assert loo.paired_se == math.inf and math.isnan(loo.sd)
    assert loo.stability == 0.0


def test_loo_cv_only_uses_effective_queries() -> None:
    scores = _retrieval_scores([0.9, 0.9, 0.0])
    loo = T.loo_cv(scores, [0, 1], "retrieval")
    assert loo.fold_queries == (0, 1) and loo.refit == 40
    assert loo.held_out_diffs == pytest.approx((0.4, 0.4))


# --------------------------------------------------------------------------- verdict


WINNER = (3 * 4 + 1) * 4 + 0  # h=4.0 ctx=1.0 content=0.5


def _clear_winner_queries(n: int) -> tuple[list[T.QueryLists], dict[int, Entry]]:
    """Weight set WINNER ranks each query's relevant chunk first; every other set ranks it 10th."""
    meta: dict[int, Entry] = {}
    queries = []
    for q in range(n):
        relevant = q  # ids 0..n-1 are the relevant chunks (lower than every other id)
        meta[relevant] = (f"rel{q}.md", "Answer")
        others = [1000 + q * 100 + i for i in range(19)]
        for i in others:
            meta[i] = (f"noise{i}.md", None)
        vec = tuple(others[:10])
        loser = (*others[10:19], relevant)
        winner = (relevant, *others[10:19])
        lists = tuple(winner if w == WINNER else loser for w in range(64))
        queries.append(T.QueryLists(f"q{q}", ((f"rel{q}.md", None),), vec, {"fts": lists}))
    return queries, meta


def test_clear_winner_is_adopted() -> None:
    queries, meta = _clear_winner_queries(12)
    sweep = T.score_matrix(queries, meta, "fusion", 10, [1, 5, 10])
    # the default fuses the relevant chunk at 1/(60+10) behind 10 vector and 9 FTS candidates
    assert np.all(sweep.ndcg5[T.DEFAULT_FUSION_INDEX] == 0.0)
    loo = T.loo_cv(sweep.ndcg5, range(12), "fusion")
    # the relevant chunk ties with vector rank 1 at every k and wins on the lower id, so all six
    # k values tie; k indices 2 and 3 are equally central ⇒ the lower, k = 20
    assert loo.refit == WINNER * 6 + 2
    assert loo.stability == 1.0 and loo.held_out_diffs == (1.0,) * 12
    assert loo.mean_delta == 1.0 and loo.paired_se == 0.0
    v = T.verdict(sweep, loo)
    assert v.decision == "adopt" and v.reasons == ()
    assert T.label(v.refit) == "h=4.0 ctx=1.0 content=0.5 k=20"
    assert v.toml_snippet == (
        "[search.fusion]\nrrf_k = 20.0\nbm25_heading_weight = 4.0\n"
        "bm25_context_weight = 1.0\nbm25_content_weight = 0.5"
    )
    assert v.baseline.metrics.at_k["recall"] == {1: 0.0, 5: 0.0, 10: 0.0}
    assert v.refit_metrics.metrics.at_k["recall"] == {1: 1.0, 5: 1.0, 10: 1.0}
    assert v.refit_metrics.metrics.whole["mrr"] == 1.0 and v.violations == ()
    assert v.impact == T.Impact(12, 0, 1.0, "q0")


def test_nothing_better_keeps_defaults_with_reasons() -> None:
    queries, meta = _clear_winner_queries(6)
    same = [T.QueryLists(q.id, q.expected, q.vector_ids, {"fts": (q.leg_ids["fts"][0],) * 64})
            for q in queries]
    sweep = T.score_matrix(same, meta, "fusion", 10, [1, 5, 10])
    loo = T.loo_cv(sweep.ndcg5, range(6), "fusion")
    assert loo.refit == T.DEFAULT_FUSION_INDEX and loo.stability == 1.0
    v = T.verdict(sweep, loo)
    assert v.decision == "keep_default" and v.toml_snippet is None
    assert v.reasons == (
        "the refit selection is the built-in default",
        "held-out mean delta 0.0000 is not above 0.02",
        "held-out mean delta 0.0000 is not above 3.0 × paired SE (0.0000)",
    )
    assert v.impact == T.Impact(0, 0, 0.0, "q0")


def _sweep(ndcg5: np.ndarray, recall10: np.ndarray, rr: np.ndarray) -> T.SweepScores:
    """A retrieval-space sweep with k = (5, 10); recall@5 is kept equal to nDCG@5."""
    n = ndcg5.shape[1]
    return T.SweepScores(
        "retrieval", (5, 10), tuple(f"q{i}" for i in range(n)),
        {"ndcg": np.stack([ndcg5, ndcg5]), "recall": np.stack([ndcg5, recall10]), "mrr": rr},
    )


def test_recall_and_mrr_drops_block_adoption() -> None:
    ndcg5 = _retrieval_scores([0.9] * 8, default=0.5)
    recall10 = np.ones((60, 8))
    recall10[40, :2] = 0.0  # the refit loses recall@10 on two of 8 queries: 1.0 → 0.75
    rr = np.full((60, 8), 0.5)
    rr[40] = [1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]  # MRR: 0.5 → 2.6 / 8 = 0.325
    sweep = _sweep(ndcg5, recall10, rr)
    loo = T.loo_cv(sweep.ndcg5, range(8), "retrieval")
    assert loo.refit == 40 and loo.mean_delta == pytest.approx(0.4)
    v = T.verdict(sweep, loo)
    assert v.decision == "keep_default"
    assert v.reasons == (
        "recall@10 would drop from 1.000 to 0.750",
        "MRR would drop from 0.500 to 0.325",
    )
    assert v.violations == v.reasons


def test_small_gain_and_noise_reasons() -> None:
    # gains alternate +0.03 / -0.01: mean 0.01 ≤ 0.02; SD ≈ 0.0214 ⇒ 3 × SE > mean
    gains = [0.53, 0.49] * 5
    ndcg5 = _retrieval_scores(gains, default=0.5)
    sweep = _sweep(ndcg5, np.zeros((60, 10)), np.zeros((60, 10)))
    loo = T.loo_cv(sweep.ndcg5, range(10), "retrieval")
    assert loo.refit == 40 and loo.stability == 1.0
    sd = math.sqrt(10 * 0.02**2 / 9)  # every diff is 0.02 from the mean 0.01
    v = T.verdict(sweep, loo)
    assert v.reasons == (
        "held-out mean delta 0.0100 is not above 0.02",
        f"held-out mean delta 0.0100 is not above 3.0 × paired SE ({3 * sd / math.sqrt(10):.4f})",
    )
    assert v.impact.improved == 5 and v.impact.degraded == 5
    assert v.impact.worst_delta == pytest.approx(-0.01) and v.impact.worst_id == "q1"


def test_stability_of_exactly_one_half_is_not_enough() -> None:
    sweep = _sweep(_retrieval_scores([1.0, 1.0, 0.0, 0.45]), np.zeros((60, 4)),
                   np.zeros((60, 4)))
    loo = T.loo_cv(sweep.ndcg5, range(4), "retrieval")
    # refit 2.45/4 > 0.5 ⇒ 40; without q0 or q1: 1.45/3 < 0.5 ⇒ default; without q2: 2.45/3,
    # without q3: 2/3 ⇒ 40. Stability 2/4; diffs 0, 0, 0 − 0.5, 0.45 − 0.5.
    assert loo.selections == (28, 28, 40, 40) and loo.stability == 0.5
    assert loo.mean_delta == pytest.approx(-0.55 / 4)
    sd = T.sample_sd([0.0, 0.0, -0.5, -0.05])
    assert T.verdict(sweep, loo).reasons == (
        "held-out mean delta -0.1375 is not above 0.02",
        f"held-out mean delta -0.1375 is not above 3.0 × paired SE ({3 * sd / 2:.4f})",
        "selection stability 0.50 is not above 0.5",
    )


def test_single_query_fails_criteria_two_to_four() -> None:
    sweep = _sweep(_retrieval_scores([0.9]), np.zeros((60, 1)), np.zeros((60, 1)))
    v = T.verdict(sweep, T.loo_cv(sweep.ndcg5, [0], "retrieval"))
    assert v.reasons == (
        "held-out mean delta 0.0000 is not above 0.02",
        "held-out mean delta 0.0000 is not above 3.0 × paired SE (inf)",
        "selection stability 0.00 is not above 0.5",
    )


# --------------------------------------------------------------------------- diagnostics


def test_diagnostics() -> None:
    d = T.diagnostics("q", [1, 2, 3], [3, 4], probe_heading_heavy=[3, 4],
                      probe_content_heavy=[4, 3], fts_total_matches=10, chunk_total=20, limit=10)
    # fused order 3, 1, 2, 4 with 2 and 4 both at 1/62 ⇒ one adjacent tie
    assert d == T.QueryDiagnostics("q", 2, 10, 1, True, True, 1, True)
    d = T.diagnostics("r", [1], [7], probe_heading_heavy=[7], probe_content_heavy=[7],
                      fts_total_matches=9, chunk_total=20, limit=10)
    assert (d.bm25_sensitive, d.idf_clamped, d.effective, d.rrf_ties) == (False, False, False, 1)
    d = T.diagnostics("s", [], [], probe_heading_heavy=[], probe_content_heavy=[],
                      fts_total_matches=0, chunk_total=0, limit=10)
    assert (d.idf_clamped, d.rrf_ties, d.effective) == (False, 0, False)


def test_no_effective_query_error_text() -> None:
    diags = [T.QueryDiagnostics("alpha", 1, 1, 0, False, False, 0, False),
             T.QueryDiagnostics("beta", 0, 0, 0, False, False, 0, False)]
    err = T.no_effective_query_error(diags)
    assert isinstance(err, TuneNotApplicable) and err.exit_code == 2
    assert err.message == (
        "none of the 2 golden queries is sensitive to the fusion parameters (every query has "
        "fewer than 2 FTS candidates), so the grid was not run.\n"
        "  Fusion weights and the RRF constant can only reorder results when the full-text leg "
        "returns at\n"
        "  least two candidates for a query. Add golden queries that share words, names or "
        "identifiers with\n"
        "  the notes, or check that the index is not empty.\n"
        "  alpha: FTS candidates = 1\n"
        "  beta: FTS candidates = 0"
    )


def test_check_preflight_messages() -> None:
    lines: list[str] = []
    messages.set_sink(lines.append)
    try:
        diags = [T.QueryDiagnostics("a", 5, 9, 1, True, False, 0, True),
                 T.QueryDiagnostics("b", 1, 1, 0, False, False, 0, False)]
        assert T.check_preflight(diags, context_axis_noop=True) == (0,)
        quiet = list(lines)  # without --verbose only the warning
        lines.clear()
        messages.set_verbose(True)
        assert T.check_preflight(diags, context_axis_noop=True) == (0,)
        with pytest.raises(TuneNotApplicable):
            T.check_preflight(diags[1:], context_axis_noop=False)
    finally:
        messages.set_sink(None)
        messages.set_verbose(False)
    assert quiet == ["groove: warning: effective N = 1 is below the IR convention of 50 topics; "
                     "treat the verdict as indicative"]
    assert lines == [
        "groove: note: no chunk has a contextual breadcrumb, so the context weight axis is a no-op",
        "groove: note: 1 of 2 golden queries are effective",
        "groove: note: insensitive: b (FTS candidates = 1)",
        "groove: warning: effective N = 1 is below the IR convention of 50 topics; treat the "
        "verdict as indicative",
    ]


def test_progress_lines() -> None:
    lines: list[str] = []
    queries, meta = _clear_winner_queries(2)
    T.score_matrix(queries, meta, "fusion", 10, [5], progress=lines.append)
    assert lines == ["  [1/2] sweeping 384 conditions for q0",
                     "  [2/2] sweeping 384 conditions for q1"]


# --------------------------------------------------------------------------- JSON


def _report(n: int = 12) -> dict[str, object]:
    queries, meta = _clear_winner_queries(n)
    sweep = T.score_matrix(queries, meta, "fusion", 10, [1, 10])
    diags = [T.diagnostics(q.id, q.vector_ids, q.leg_ids["fts"][T.DEFAULT_WEIGHT_INDEX],
                           probe_heading_heavy=q.leg_ids["fts"][48],
                           probe_content_heavy=q.leg_ids["fts"][3],
                           fts_total_matches=10, chunk_total=300, limit=10) for q in queries]
    loo = T.loo_cv(sweep.ndcg5, [i for i, d in enumerate(diags) if d.effective], "fusion")
    return T.build_tune_json(kb_path="/kb", golden_path="/kb/.groove-eval.yml",
                             model="multilingual-e5-small", limit=10, chunk_total=300,
                             context_axis_noop=False, diagnostics=diags, sweep=sweep, loo=loo,
                             verdict=T.verdict(sweep, loo))


def test_build_tune_json_shape() -> None:
    report = _report()
    assert list(report) == [
        "kb_path", "golden_path", "model", "reranker", "space", "limit", "candidate_pool",
        "vector_k", "primary_k", "k_values", "chunk_total", "context_axis_noop", "query_count",
        "effective_query_count", "diagnostics", "grid", "loo", "secondary_metrics",
        "per_query_impact", "verdict", "written",
    ]
    assert report["k_values"] == [1, 5, 10] and report["candidate_pool"] == 50
    assert report["vector_k"] == 50 and report["reranker"] is None
    assert report["query_count"] == report["effective_query_count"] == 12
    grid = report["grid"]
    assert isinstance(grid, dict)
    assert list(grid) == ["rrf_k", "bm25_weights", "top_weight_conditions", "rrf_k_sweep"]
    assert grid["rrf_k"] == [5, 10, 20, 30, 60, 100]
    assert grid["top_weight_conditions"][0] == {
        "condition": {"rrf_k": 60.0, "bm25_heading_weight": 4.0, "bm25_context_weight": 1.0,
                      "bm25_content_weight": 0.5},
        "ndcg": 1.0,
    }
    assert len(grid["top_weight_conditions"]) == 5 and len(grid["rrf_k_sweep"]) == 6
    loo = report["loo"]
    assert isinstance(loo, dict)
    assert list(loo) == ["refit", "folds", "held_out_diffs", "mean_delta", "paired_se",
                         "selection_stability", "sign_test"]
    assert loo["folds"] == 12 and loo["paired_se"] == 0.0
    assert loo["sign_test"] == {"improved": 12, "degraded": 0, "tied": 0, "p_value": 2 / 2**12}
    secondary = report["secondary_metrics"]
    assert isinstance(secondary, dict)
    assert secondary["baseline"]["recall_at_k"] == {"1": 0.0, "5": 0.0, "10": 0.0}
    assert list(secondary["refit"]) == ["recall_at_k", "mrr", "ndcg_at_k", "query_count"]
    assert report["verdict"] == {
        "decision": "adopt",
        "condition": {"rrf_k": 20.0, "bm25_heading_weight": 4.0, "bm25_context_weight": 1.0,
                      "bm25_content_weight": 0.5},
        "toml_snippet": T.toml_snippet(T.fusion_grid()[WINNER * 6 + 2]),
    }
    assert report["written"] is None
    json.dumps(report, allow_nan=False)


def test_build_tune_json_nulls_infinite_se() -> None:
    report = _report(1)
    loo = report["loo"]
    assert isinstance(loo, dict) and loo["paired_se"] is None
    json.dumps(report, allow_nan=False)


def test_build_tune_json_retrieval_grid() -> None:
    queries, meta = _clear_winner_queries(3)
    retrieval = [T.QueryLists(q.id, q.expected, q.vector_ids, {"fts": (q.leg_ids["fts"][0],)})
                 for q in queries]
    sweep = T.score_matrix(retrieval, meta, "retrieval", 10, [5])
    diags = [T.diagnostics(q.id, q.vector_ids, q.leg_ids["fts"][0], probe_heading_heavy=[],
                           probe_content_heavy=[], fts_total_matches=0, chunk_total=9, limit=10)
             for q in retrieval]
    loo = T.loo_cv(sweep.ndcg5, range(3), "retrieval")
    report = T.build_tune_json(kb_path="/kb", golden_path="g", model="m", limit=10,
                               chunk_total=9, context_axis_noop=True, diagnostics=diags,
                               sweep=sweep, loo=loo, verdict=T.verdict(sweep, loo))
    grid = report["grid"]
    assert isinstance(grid, dict)
    assert list(grid) == ["weight_ratios", "cjk_weights", "min_scores", "ratio_sweep",
                          "min_score_sweep"]
    assert len(grid["ratio_sweep"]) == 5 and len(grid["min_score_sweep"]) == 4
    assert list(grid["min_score_sweep"][0]["condition"]) == ["vector_weight", "fts_weight",
                                                            "cjk_weight", "min_score"]
    with pytest.raises(ValueError, match="same queries"):
        T.build_tune_json(kb_path="/kb", golden_path="g", model="m", limit=10, chunk_total=9,
                          context_axis_noop=True, diagnostics=diags[:2], sweep=sweep, loo=loo,
                          verdict=T.verdict(sweep, loo))
