"""bench/suite_*.py: the suite's source parsers, fusion candidates, nDCG and LOCO selection,
on hand-computed cases."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from groove_cli.evaluate.golden import Expected
from groove_cli.evaluate.metrics import HitRecord, ndcg_at_k

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def fusion(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    sys.modules.pop("suite_fusion", None)
    import suite_fusion

    return suite_fusion


@pytest.fixture
def collections(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    sys.modules.pop("suite_collections", None)
    import suite_collections

    return suite_collections


def _query(vector: list[int], vector_scores: list[float], fts: list[int],
           fts_scores: list[float]) -> dict[str, object]:
    return {"ids": {"vector": vector, "fts_chunks": fts, "fts_words": [], "fts_cjk": []},
            "scores": {"vector": vector_scores, "fts_chunks": fts_scores, "fts_words": [],
                       "fts_cjk": []},
            "cjk_terms": 0}


def test_weighted_rrf_follows_the_vector_weight(fusion: ModuleType) -> None:
    q = _query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0])
    # v 1: 1 → 1/61 + 1/62 = .03252, 3 → 1/63 + 1/61 = .03227, 2 → 1/62
    assert fusion.rrf(q, fusion.rrf_weights(1.0, 1.0, 6.0), 60.0) == [1, 3, 2]
    # v .25: 1 → .25/61 + 1/62 = .02023, 3 → .25/63 + 1/61 = .02036
    assert fusion.rrf(q, fusion.rrf_weights(0.25, 1.0, 6.0), 60.0) == [3, 1, 2]


def test_minmax_score_fusion_is_a_convex_combination(fusion: ModuleType) -> None:
    q = _query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0])
    # vector → 1, .75, 0; fts → 3: 1, 1: 0; 2 is absent from fts (floor 0)
    # alpha .5: 1 → .5, 3 → .5 (tie: lower id first), 2 → .375
    assert fusion.score_fusion(q, "minmax", 0.5, 1.0) == [1, 3, 2]
    # alpha .4: 1 → .4, 3 → .6, 2 → .3
    assert fusion.score_fusion(q, "minmax", 0.4, 1.0) == [3, 1, 2]


def test_overlap_is_the_share_of_the_vector_top_found_by_full_text(fusion: ModuleType) -> None:
    assert fusion.overlap(_query([1, 2, 3, 4], [1.0] * 4, [4, 9], [1.0, 1.0])) == 0.25


def test_ndcg10_matches_eval_with_a_document_counted_once(fusion: ModuleType) -> None:
    meta = {1: ("a.md", None), 2: ("a.md", "Setup"), 3: ("b.md", None)}
    grades = {"a.md": 1, "b.md": 2}
    # dcg = 1/log2(2) + 2/log2(4) = 2; idcg = 2 + 1/log2(3)
    value = fusion.ndcg10([1, 2, 3], meta, grades)
    assert value == pytest.approx(2 / (2 + 1 / 1.5849625007211562))
    hits = [HitRecord(i + 1, meta[c][0], meta[c][1], 0.0) for i, c in enumerate([1, 2, 3])]
    expected = [Expected("a.md", None, 1), Expected("b.md", None, 2)]
    assert value == pytest.approx(ndcg_at_k(expected, hits, 10))


def test_loco_scores_the_setting_chosen_on_the_other_collections(fusion: ModuleType) -> None:
    means = {"A": {"x": 0.5, "y": 0.6}, "B": {"x": 0.7, "y": 0.4}, "C": {"x": 0.3, "y": 0.5}}
    out = fusion.loco(means, ["x", "y"])
    assert {k: (v["chosen"], v["held_out"]) for k, v in out.items()} == {
        "A": ("x", 0.5), "B": ("y", 0.4), "C": ("x", 0.3)}


def test_smart_records_parse_fields(collections: ModuleType) -> None:
    text = ".I 1\n.T\nTitle here\n.W\nsome\n text\n.I 2\n.W\nmore\n"
    assert collections.smart_records(text) == {"1": {"T": "Title here", "W": "some text"},
                                              "2": {"W": "more"}}


def test_page_sections_skip_headings_in_code(collections: ModuleType) -> None:
    page = "# Page {#p}\n\nintro\n## A {#a}\nbody a\n```\n## not one\n```\n## B\nbody b\n"
    title, sections = collections.page_sections(page)
    assert title == "Page"
    assert sections == [("A", "body a\n```\n## not one\n```"), ("B", "body b")]


def test_max_normalisation_divides_bm25_by_the_best(fusion: ModuleType) -> None:
    q = _query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0])
    # vector min-max → 1, .75, 0; bm25 / 10 → 3: 1, 1: .4
    # alpha .6: 1 → .6 + .4 × .4 = .76, 2 → .45, 3 → .4
    assert fusion.score_fusion(q, "max", 0.6, 1.0) == [1, 2, 3]
    # alpha .3: 1 → .3 + .28 = .58, 2 → .225, 3 → .7
    assert fusion.score_fusion(q, "max", 0.3, 1.0) == [3, 1, 2]


@pytest.fixture
def adaptive(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    for name in ("suite_fusion", "suite_adaptive"):
        sys.modules.pop(name, None)
    import suite_adaptive

    return suite_adaptive


def test_dbsf_scales_by_mean_and_three_standard_deviations(fusion: ModuleType) -> None:
    # mean 2, sd 1: (s − 2 + 3) / 6
    assert fusion._normalised([1.0, 3.0], "dbsf") == (pytest.approx([1 / 3, 2 / 3]), 0.0)
    assert fusion._normalised([5.0, 5.0], "dbsf") == ([1.0, 1.0], 0.0)  # no spread


def test_qlen_alpha_follows_the_query_s_script_and_length(adaptive: ModuleType) -> None:
    q = {**_query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0]), "word_terms": 2}
    assert adaptive.length_alpha(q, 0.9, 0.5, 0.6, 6) == 0.9
    assert adaptive.length_alpha({**q, "word_terms": 7}, 0.9, 0.5, 0.6, 6) == 0.5
    assert adaptive.length_alpha({**q, "word_terms": 7, "cjk_terms": 4}, 0.9, 0.5, 0.6, 6) == 0.6
    member = next(c for c in adaptive.qlen_family() if c.label == "qlen a0.9/0.5 t6 ja0.6")
    # max normalisation: vector → 1, .75, 0; bm25 / 10 → 3: 1, 1: .4
    # 2 terms, alpha .9: 1 → .9 + .1 × .4 = .94, 2 → .675, 3 → .1
    assert member.rank(q) == [1, 2, 3]
    # 7 terms, alpha .5: 1 → .5 + .5 × .4 = .7, 3 → .5, 2 → .375
    assert member.rank({**q, "word_terms": 7}) == [1, 3, 2]


def test_mix_adds_a_share_of_the_built_in_rrf(adaptive: ModuleType) -> None:
    q = _query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0])
    # score (alpha .3, ÷ 1.0): 1 → .58, 2 → .225, 3 → .7; RRF (÷ 2/61): 1 → (1/61 + 1/62)·61/2
    # = .99194, 3 → (1/63 + 1/61)·61/2 = .98413, 2 → (1/62)·61/2 = .49194
    # beta .75: 1 → .145 + .74395 = .88895, 3 → .175 + .7381 = .9131, 2 → .05625 + .36895
    assert adaptive.mix(q, 0.3, 1.0, 0.75) == [3, 1, 2]
    # beta 1: the built-in RRF alone
    assert adaptive.mix(q, 0.3, 1.0, 1.0) == [1, 3, 2]


def test_fconf_moves_alpha_by_the_full_text_leg_s_gap_against_the_kb_median(
        adaptive: ModuleType) -> None:
    # word-level gaps (s1 − s10) / s1: q1 (10 − 4) / 10 = .6, q2 (10 − 8) / 10 = .2; median .4
    q1 = {**_query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0]), "query": "a b"}
    q2 = {**_query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 8.0]), "query": "c d"}
    ja = {**_query([1], [0.9], [1], [1.0]), "query": "東京", "cjk_terms": 2}
    adaptive.word_counts([q1, q2, ja])  # the CJK query stays out of the KB's median
    assert (q1["fts_gap"], q2["fts_gap"]) == (pytest.approx(0.6), pytest.approx(0.2))
    assert q1["kb_fts_gap"] == pytest.approx(0.4)
    # full text confident on q1: 0.9 − 0.2; not on q2: 0.9 + 0.2, capped at 1
    assert adaptive.fconf_alpha(q1, 0.9, 0.5, 0.6, 6, 0.2) == pytest.approx(0.7)
    assert adaptive.fconf_alpha(q2, 0.9, 0.5, 0.6, 6, 0.2) == pytest.approx(1.1)
    assert adaptive.fconf_alpha(ja, 0.9, 0.5, 0.6, 6, 0.2) == 0.6
    assert adaptive.fconf_alpha(q1, 0.9, 0.5, 0.6, 6, 0.2, long_only=True) == 0.9
    member = next(c for c in adaptive.fconf_family() if c.label == "fconf a0.9/0.5 t6 ja0.6 d0.2")
    # q1 at alpha .7: vector → 1, .75, 0; bm25 / 10 → 3: 1, 1: .4
    # 1 → .7 + .3 × .4 = .82, 2 → .525, 3 → .3
    assert member.rank(q1) == [1, 2, 3]
    # q2 at alpha 1 (1.1 clipped): the vector order; q1 at alpha .2 (d .7) puts 3 first:
    # 1 → .2 + .8 × .4 = .52, 3 → .8, 2 → .15
    assert member.rank(q2) == [1, 2, 3]
    assert adaptive.fused_at(q1, 0.2) == [3, 1, 2]


def test_fconfa_moves_alpha_by_the_query_s_own_gap_against_a_fixed_threshold(
        adaptive: ModuleType) -> None:
    # gaps as above: q1 .6, q2 .2; the KB median (.4) plays no part, the threshold does
    q1 = {**_query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0]), "query": "alpha beta"}
    q2 = {**_query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 8.0]), "query": "gamma delta"}
    ja = {**_query([1], [0.9], [1], [1.0]), "query": "東京", "cjk_terms": 2}
    adaptive.word_counts([q1, q2, ja])
    assert (q1["word_terms"], q2["word_terms"]) == (2, 2)
    # threshold .5: q1 (.6) confident → 1 − .1; q2 (.2) not → 1 + .1 (fused_at caps it at 1)
    assert adaptive.fconfa_alpha(q1, 1.0, 0.5, 0.6, 6, 0.1, 0.5) == pytest.approx(0.9)
    assert adaptive.fconfa_alpha(q2, 1.0, 0.5, 0.6, 6, 0.1, 0.5) == pytest.approx(1.1)
    # threshold .1: both confident; a CJK query keeps alpha_cjk
    assert adaptive.fconfa_alpha(q2, 1.0, 0.5, 0.6, 6, 0.1, 0.1) == pytest.approx(0.9)
    assert adaptive.fconfa_alpha(ja, 1.0, 0.5, 0.6, 6, 0.1, 0.1) == 0.6
    # long query (2 word terms > t 1): alpha_long .5 − .2
    assert adaptive.fconfa_alpha(q1, 1.0, 0.5, 0.6, 1, 0.2, 0.5) == pytest.approx(0.3)
    member = next(c for c in adaptive.fconfa_family()
                  if c.label == "fconfA a1/0.5 t4 ja0.6 d0.2 g0.5")
    # vector .9, .55, .5 → 1, .125, 0; bm25 / 10 → 3: 1, 1: .4 (gap .6) or .8 (gap .2)
    sure = {**_query([1, 2, 3], [0.9, 0.55, 0.5], [3, 1], [10.0, 4.0]), "query": "alpha beta"}
    unsure = {**_query([1, 2, 3], [0.9, 0.55, 0.5], [3, 1], [10.0, 8.0]),
              "query": "gamma delta"}
    adaptive.word_counts([sure, unsure])
    # sure at alpha .8: 1 → .8 + .2 × .4 = .88, 3 → .2, 2 → .8 × .125 = .1
    assert member.rank(sure) == [1, 3, 2]
    # unsure at alpha 1 (1.2 capped): the vector order
    assert member.rank(unsure) == [1, 2, 3]


def test_cjkconf_moves_only_the_cjk_alpha_by_the_cjk_leg_s_gap(adaptive: ModuleType) -> None:
    def ja(bm25: list[float]) -> dict[str, object]:
        q = _query([1, 2], [0.9, 0.5], [], [])
        q["ids"]["fts_cjk"], q["scores"]["fts_cjk"] = [2, 1], bm25  # type: ignore[index]
        return {**q, "query": "東京", "cjk_terms": 2}
    # CJK gaps (s1 − s10) / s1: (10 − 2) / 10 = .8 and (10 − 9) / 10 = .1; KB median .45
    sure, unsure = ja([10.0, 2.0]), ja([10.0, 9.0])
    latin = {**_query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0]), "query": "alpha beta"}
    adaptive.word_counts([sure, unsure, latin])
    assert (sure["cjk_gap"], unsure["cjk_gap"]) == (pytest.approx(0.8), pytest.approx(0.1))
    assert sure["kb_cjk_gap"] == pytest.approx(0.45)
    assert adaptive.cjkconf_alpha(sure, 0.9, 0.5, 0.6, 6, 0.1, None) == pytest.approx(0.5)
    assert adaptive.cjkconf_alpha(unsure, 0.9, 0.5, 0.6, 6, 0.1, None) == pytest.approx(0.7)
    # a fixed threshold above both gaps: both take + d
    assert adaptive.cjkconf_alpha(sure, 0.9, 0.5, 0.6, 6, 0.1, 0.9) == pytest.approx(0.7)
    # a query without CJK text keeps its length rule's alpha
    assert adaptive.cjkconf_alpha(latin, 0.9, 0.5, 0.6, 6, 0.1, None) == 0.9


def test_qlen3l_puts_a_query_with_cjk_text_in_the_long_tier(adaptive: ModuleType) -> None:
    latin = {**_query([1, 2, 3], [0.9, 0.8, 0.5], [3, 1], [10.0, 4.0]), "query": "x"}
    # t1 4, t2 8: ≤ 4 word terms → short, ≤ 8 → mid, more → long
    alphas = [adaptive.qlen3l_alpha({**latin, "word_terms": n}, 0.8, 0.7, 0.5, 4, 8)
              for n in (4, 5, 8, 9)]
    assert alphas == [0.8, 0.7, 0.7, 0.5]
    # a query with CJK text takes alpha_long whatever its word-level terms
    for n in (0, 4, 9):
        ja = {**latin, "cjk_terms": 3, "word_terms": n}
        assert adaptive.qlen3l_alpha(ja, 0.8, 0.7, 0.5, 4, 8) == 0.5
        # qlen3's shared rule gives it its own alpha_cjk instead
        assert adaptive.tier_alpha(ja, 0.8, 0.7, 0.5, 0.6, 4, 8) == 0.6
    assert adaptive.tier_alpha({**latin, "word_terms": 9}, 0.8, 0.7, 0.5, 0.6, 4, 8) == 0.5


def test_qlen3l_ranks_a_cjk_query_at_alpha_long(adaptive: ModuleType) -> None:
    q = _query([1, 2], [0.9, 0.5], [], [])
    q["ids"]["fts_cjk"], q["scores"]["fts_cjk"] = [2, 1], [10.0, 4.0]  # type: ignore[index]
    ja = {**q, "query": "東京", "cjk_terms": 3, "word_terms": 0}
    member = next(c for c in adaptive.qlen3l_family() if c.label == "qlen3L a0.8/0.7/0.5 t4/8")
    assert member.params == {"alpha_short": 0.8, "alpha_mid": 0.7, "alpha_long": 0.5,
                             "words": 4, "words_mid": 8}
    # vector min-max → 1: 1, 2: 0; CJK bm25 / 10 → 2: 1, 1: .4; CJK leg weight (1 − alpha) × 2
    # alpha .5 (long): 1 → .5 + 1 × .4 = .9, 2 → 1 × 1 = 1
    assert member.rank(ja) == [2, 1]
    # qlen3 at alpha_cjk .6: 1 → .6 + .8 × .4 = .92, 2 → .8; the short tier's .8 (0 word
    # terms) would also put 1 first: 1 → .8 + .4 × .4 = .96, 2 → .4
    qlen3 = next(c for c in adaptive.qlen3_family()
                 if c.label == "qlen3 a0.8/0.7/0.5 t4/8 ja0.6")
    assert qlen3.rank(ja) == [1, 2]
    assert adaptive.fused_at(ja, 0.8) == [1, 2]


def test_qlen3l_grid_is_qlen3_s_without_the_cjk_alpha(adaptive: ModuleType) -> None:
    family = adaptive.qlen3l_family()
    assert len(family) == 3 * 4 * 2 * 2 * 4
    assert len({c.label for c in family}) == len(family)
    assert {c.family for c in family} == {"qlen3L"}
    assert len(adaptive.qlen3_family()) == len(family) * len(adaptive.CJK_ALPHAS)
    assert list(adaptive.signal_families())[:2] == ["qlen3", "qlen3L"]


def test_summarise_pairs_the_hybrid_with_its_best_leg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    for name in ("suite", "suite_report"):
        sys.modules.pop(name, None)
    import suite
    import suite_report

    def collection(fts: list[float], vector: list[float], hybrid: list[float]) -> dict[str, object]:
        return {"language": "en", "kind": None, "query_ids": ["q1", "q2", "q3", "q4"],
                "documents": 4, "chunks": 4, "pseudo": {"chosen": "-"},
                "systems": {"bm25s, plain": [0.5, 0.5, 0.5, 0.5], "groove fts": fts,
                            "groove vector": vector, "groove hybrid": hybrid},
                "candidates": {"builtin": {"built-in RRF": hybrid}}}

    out = suite.summarise({
        # fts mean 0.5 beats vector 0.2; hybrid − fts per query: 0, +0.5, +0.5, 0 → +0.25
        "a": collection([1.0, 0.5, 0.0, 0.5], [0.2] * 4, [1.0, 1.0, 0.5, 0.5]),
        # vector mean 0.6 beats fts 0.25; hybrid − vector: −0.4, 0, 0, 0 → −0.1
        "b": collection([0.25] * 4, [0.9, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5])})
    a, b = out["collections"]["a"], out["collections"]["b"]
    assert (a["best_leg"], b["best_leg"]) == ("groove fts", "groove vector")
    assert a["hybrid_vs_best_leg"]["delta"] == pytest.approx(0.25)
    assert b["hybrid_vs_best_leg"]["delta"] == pytest.approx(-0.1)
    lo, hi = a["hybrid_vs_best_leg"]["ci95"]
    assert 0.0 <= lo <= 0.25 <= hi <= 0.5
    table = suite_report._leg_table(out)
    assert table[2].startswith("| a | groove fts | +0.250 [")
    assert table[3].startswith("| b | groove vector | -0.100 [")
