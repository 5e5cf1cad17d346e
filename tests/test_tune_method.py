"""tune's fusion-method space (tune.md §4): the built-in score fusion (the length rule, search.md
§5) against weighted RRF and score fusion with one alpha for every query, × score_cjk_weight,
swept in memory, selected and written."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groove_cli.cli import app
from groove_cli.config import validate_text
from groove_cli.evaluate import tune as T
from groove_cli.evaluate.tune.grid import LENGTH_TIERS, method_grid
from groove_cli.evaluate.tune.sweep import QueryLists
from groove_cli.evaluate.tune.write import edit_config_text

runner = CliRunner()


def test_method_grid_layout_and_default() -> None:
    grid = method_grid()
    assert len(grid) == 1 + 6 * 3 + 3 * 3 and [c.index for c in grid] == list(range(28))
    # the built-in fusion is score fusion with the length rule at score_cjk_weight 1.0
    assert T.default_index("fusion-method") == 19 + 1
    assert T.default_condition("fusion-method") == grid[20]
    # RRF sits at the built-in alpha (0.5, index 2) and score_cjk_weight (1.0, index 1)
    assert T.label(grid[0]) == "method=rrf" and grid[0].grid_indices == (0, 2, 1, 0)
    # index = 1 + alpha_index × 3 + cjk_index; score_cjk_weight 0.5, 1.0, 2.0
    assert T.label(grid[1 + 3 * 3 + 1]) == "method=score score_alpha=0.6 score_cjk_weight=1.0"
    assert T.label(grid[1 + 0 * 3 + 2]) == "method=score score_alpha=0.3 score_cjk_weight=2.0"
    assert T.label(grid[1 + 2 * 3 + 0]) == "method=score score_alpha=0.5 score_cjk_weight=0.5"
    assert grid[1 + 5 * 3 + 0].grid_indices == (1, 5, 0, 0)
    # one alpha for every query: every tier of the length rule takes it
    assert grid[1 + 3 * 3 + 1].values() == {
        "method": "score", "score_alpha": 0.6, "score_alpha_short": 0.6, "score_alpha_mid": 0.6,
        "score_alpha_long": 0.6, "short_query_words": 4, "mid_query_words": 8,
        "score_cjk_weight": 1.0}
    # then the built-in length rule (search.md §5) × its word boundaries × score_cjk_weight:
    # index 19 + tier × 3 + cjk_index, tiers (4, 8) built in, (3, 6) and (6, 12)
    assert LENGTH_TIERS == ((4, 8), (3, 6), (6, 12))
    assert T.label(grid[19 + 1]) == ("method=score score_alpha=0.5 score_alpha_short=0.8 "
                                     "score_alpha_mid=0.7 score_alpha_long=0.5 "
                                     "short_query_words=4 mid_query_words=8 "
                                     "score_cjk_weight=1.0")
    assert grid[19 + 1].values() == {
        "method": "score", "score_alpha": 0.5, "score_alpha_short": 0.8, "score_alpha_mid": 0.7,
        "score_alpha_long": 0.5, "short_query_words": 4, "mid_query_words": 8,
        "score_cjk_weight": 1.0}
    assert grid[19 + 2].grid_indices == (2, 2, 2, 0)
    wide = grid[19 + 2 * 3 + 1]
    assert (wide.short_query_words, wide.mid_query_words, wide.grid_indices) == (
        6, 12, (2, 2, 1, 2))
    assert T.label(grid[19 + 1 * 3 + 0]).endswith(
        "short_query_words=3 mid_query_words=6 score_cjk_weight=0.5")
    assert T.phase1_conditions("fusion-method") == (0, 2, 5, 8, 11, 14, 17, 20, 23, 26)
    assert T.phase2_conditions("fusion-method", 11) == (10, 11, 12)
    assert T.phase2_conditions("fusion-method", 20) == (19, 20, 21)
    assert T.phase2_conditions("fusion-method", 26) == (25, 26, 27)
    assert T.phase2_conditions("fusion-method", 0) == (0,)


def test_method_snippet_and_write_keep_the_rest_of_the_table() -> None:
    condition = method_grid()[1 + 3 * 3 + 1]
    # one alpha: adopting it gives every query (short, middle, long, CJK) alpha 0.6
    assert T.toml_snippet(condition) == (
        '[search.fusion]\nmethod = "score"\nscore_alpha = 0.6\nscore_alpha_short = 0.6\n'
        'score_alpha_mid = 0.6\nscore_alpha_long = 0.6\nshort_query_words = 4\n'
        'mid_query_words = 8\nscore_cjk_weight = 1.0')
    # the length rule writes its three tiers and their word boundaries (integers)
    assert T.toml_snippet(method_grid()[19 + 2 * 3 + 2]) == (
        '[search.fusion]\nmethod = "score"\nscore_alpha = 0.5\nscore_alpha_short = 0.8\n'
        'score_alpha_mid = 0.7\nscore_alpha_long = 0.5\nshort_query_words = 6\n'
        'mid_query_words = 12\nscore_cjk_weight = 2.0')
    edited = edit_config_text("[search.fusion]\nrrf_k = 30.0  # mine\n", "fusion-method",
                              condition)
    assert edited == ('[search.fusion]\nrrf_k = 30.0  # mine\nmethod = "score"\n'
                      "score_alpha = 0.6\nscore_alpha_short = 0.6\nscore_alpha_mid = 0.6\n"
                      "score_alpha_long = 0.6\nshort_query_words = 4\nmid_query_words = 8\n"
                      "score_cjk_weight = 1.0\n")
    assert validate_text(edited, Path("groove.toml"))["search.fusion.method"] == "score"
    assert tomllib.loads(edited)["search"]["fusion"]["method"] == "score"


def _query(n: int, words: int = 0) -> QueryLists:
    """Chunk 3 is the answer: first in the vector leg by a wide cosine margin, absent from the
    trigram leg. Weighted RRF ranks 2 (second in both legs) first and 1 before 3 (a tie at
    1/61, by id): 3 is third. Score fusion at alpha ≥ 0.6: 3 scores alpha · 1, 1 scores
    (1 − alpha) · 1, 2 scores alpha · 0 + (1 − alpha) · 0.2: 3 is first (at 0.5, 3 and 1 tie:
    by id, 1 first)."""
    return QueryLists(id=f"q{n}", expected=(("r.md", None),), vector_ids=(3, 2, 4),
                      leg_ids={"fts": ((1, 2),)}, vector_scores=(0.9, 0.5, 0.5),
                      leg_scores={"fts": ((5.0, 1.0),)}, word_terms=words)


META = {1: ("x.md", None), 2: ("y.md", None), 3: ("r.md", None), 4: ("w.md", None)}


def test_the_score_default_is_kept_where_it_ranks_the_answer_first() -> None:
    queries = [_query(n) for n in range(20)]  # 0 word terms: the length rule's alpha 0.8
    sweep = T.score_matrix(queries, META, "fusion-method", 10, [1, 5, 10])
    rrf, one_alpha, default = 0, 1 + 3 * 3 + 1, 19 + 1
    assert sweep.ndcg5[rrf] == pytest.approx([0.5] * 20)  # 1 / log2(3 + 1)
    assert sweep.ndcg5[one_alpha] == pytest.approx([1.0] * 20)
    assert sweep.ndcg5[default] == pytest.approx([1.0] * 20)
    # alpha 0.5: 3 and 1 tie at 0.5, by id: 1 first
    assert sweep.ndcg5[1 + 2 * 3 + 1] == pytest.approx([1 / 1.5849625007211562] * 20)
    loo = T.loo_cv(sweep.ndcg5, range(20), "fusion-method")
    assert loo.refit == default and loo.stability == 1.0  # a plateau holding the default
    assert T.verdict(sweep, loo).decision == "keep_default"


def _rrf_query(n: int) -> QueryLists:
    """Chunk 2 is the answer: second in both legs, far below each leg's first (cosines 0.9,
    0.51, 0.5 -> 1, 0.025, 0; bm25 5, 1 -> 1, 0.2). Weighted RRF ranks it first (2 / 62 above
    1 / 61); score fusion at any alpha a third (0.025 a + 0.2 (1 − a) < max(a, 1 − a))."""
    return QueryLists(id=f"q{n}", expected=(("r.md", None),), vector_ids=(3, 2, 4),
                      leg_ids={"fts": ((1, 2),)}, vector_scores=(0.9, 0.51, 0.5),
                      leg_scores={"fts": ((5.0, 1.0),)}, word_terms=2)


def test_rrf_is_adopted_where_it_ranks_the_answer_first() -> None:
    meta = {1: ("x.md", None), 2: ("r.md", None), 3: ("w.md", None), 4: ("v.md", None)}
    sweep = T.score_matrix([_rrf_query(n) for n in range(20)], meta, "fusion-method", 10,
                           [1, 5, 10])
    assert sweep.ndcg5[0] == pytest.approx([1.0] * 20)
    assert sweep.ndcg5[19 + 1] == pytest.approx([0.5] * 20)  # 1 / log2(3 + 1)
    loo = T.loo_cv(sweep.ndcg5, range(20), "fusion-method")
    assert loo.refit == 0 and loo.stability == 1.0
    decision = T.verdict(sweep, loo)
    assert decision.decision == "adopt", decision.reasons
    assert decision.refit.values()["method"] == "rrf"


def _tier_query(n: int, words: int) -> QueryLists:
    """Chunk 3 is the answer: first in the vector leg, absent from the trigram leg, whose first
    is 1, the vector leg's second (cosines 0.9, 0.8, 0.6 -> 1, 2/3, 0; bm25 5, 1 -> 1, 0.2).
    Score fusion: 3 scores alpha, 1 scores 2/3 · alpha + (1 − alpha) = 1 − alpha / 3, so 3 is
    first only above alpha 0.75: at 0.8 (0.8 against 0.7333), not at 0.7 (0.7 against 0.7667)
    nor below."""
    return QueryLists(id=f"t{n}", expected=(("r.md", None),), vector_ids=(3, 1, 4),
                      leg_ids={"fts": ((1, 2),)}, vector_scores=(0.9, 0.8, 0.6),
                      leg_scores={"fts": ((5.0, 1.0),)}, word_terms=words)


def test_the_length_rule_gives_each_query_its_alpha() -> None:
    # the built-in rule: up to 4 word terms -> alpha 0.8, 5 to 8 -> 0.7, more -> 0.5.
    # _query: 3 first at 0.8 and 0.7 (against 1's 0.2 / 0.3); at 0.5 3 and 1 tie, by id: 1
    # first, 3 second. _tier_query: 3 first at 0.8 only, second at 0.7 and 0.5.
    queries = [_query(0, words=8), _query(1, words=9), _tier_query(2, words=4),
               _tier_query(3, words=5)]
    sweep = T.score_matrix(queries, META, "fusion-method", 10, [5])
    second = 1 / 1.5849625007211562  # 1 / log2(2 + 1)
    rule = 19 + 1
    assert sweep.ndcg5[rule] == pytest.approx([1.0, second, 1.0, second])
    # one alpha for every query (0.6): _query's 3 first, _tier_query's second (0.6 < 0.8)
    assert sweep.ndcg5[1 + 3 * 3 + 1] == pytest.approx([1.0, 1.0, second, second])
    # one alpha 0.8 (the short tier's) for every query: 3 first in all four
    assert sweep.ndcg5[1 + 5 * 3 + 1] == pytest.approx([1.0] * 4)


def _full_text_query(n: int) -> QueryLists:
    """Chunk 3 is the answer: first in the trigram leg, second in the vector leg (cosines 0.9,
    0.8, 0.6 -> 1, 2/3, 0; bm25 5, 1 -> 1, 0.2). Score fusion: 3 scores 2/3 · alpha +
    (1 − alpha) = 1 − alpha / 3, 1 scores alpha: 3 is first below alpha 0.75 only. 20 word
    terms: a long query under every tier of LENGTH_TIERS (alpha 0.5)."""
    return QueryLists(id=f"f{n}", expected=(("r.md", None),), vector_ids=(1, 3, 4),
                      leg_ids={"fts": ((3, 2),)}, vector_scores=(0.9, 0.8, 0.6),
                      leg_scores={"fts": ((5.0, 1.0),)}, word_terms=20)


def test_wider_length_tiers_are_adopted_where_they_rank_the_answer_first() -> None:
    # 5-word queries that need alpha 0.8 (_tier_query: the short tier only under the wide
    # boundaries 6 / 12; built in they are middle, 0.7) and long ones that need alpha < 0.75
    queries = [_tier_query(n, words=5) for n in range(10)] + [_full_text_query(n)
                                                              for n in range(10)]
    sweep = T.score_matrix(queries, META, "fusion-method", 10, [1, 5, 10])
    second = 1 / 1.5849625007211562
    wide, built_in, one_alpha_08 = 19 + 2 * 3 + 1, 19 + 1, 1 + 5 * 3 + 1
    assert sweep.ndcg5[wide] == pytest.approx([1.0] * 20)
    assert sweep.ndcg5[built_in] == pytest.approx([second] * 10 + [1.0] * 10)
    assert sweep.ndcg5[one_alpha_08] == pytest.approx([1.0] * 10 + [second] * 10)
    loo = T.loo_cv(sweep.ndcg5, range(20), "fusion-method")
    assert loo.refit == wide and loo.stability == 1.0
    decision = T.verdict(sweep, loo)
    assert decision.decision == "adopt", decision.reasons
    assert T.toml_snippet(decision.refit).endswith(
        "short_query_words = 6\nmid_query_words = 12\nscore_cjk_weight = 1.0")


def test_tune_cli_sweeps_the_method_space_and_writes_the_method(
        golden_copy: tuple[Path, Path], real_models_dir: Path, workdir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROOVE_OFFLINE", "1")
    kb, db = golden_copy
    config = workdir / "groove.toml"
    config.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n\n"
                      "[search.fusion]\nrrf_k = 60.0\n", encoding="utf-8")
    result = runner.invoke(app, ["--db", str(db), "tune", "--kb-path", str(kb), "--space",
                                 "fusion-method", "--format", "json", "--write", "--force"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["space"] == "fusion-method"
    assert report["grid"]["methods"] == ["rrf", "score"]
    assert report["grid"]["score_alphas"] == [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    assert report["grid"]["length_tiers"] == [[4, 8], [3, 6], [6, 12]]
    swept = {T.label_of(e["condition"]) for e in report["grid"]["alpha_sweep"]}
    assert len(swept) == 5 and swept <= {T.label(c) for c in method_grid()}
    refit = report["loo"]["refit"]
    assert report["written"] == {"path": str(config), "table": "search.fusion",
                                 "keys": ["method", "score_alpha", "score_alpha_short",
                                          "score_alpha_mid", "score_alpha_long",
                                          "short_query_words", "mid_query_words",
                                          "score_cjk_weight"]}
    assert config.read_text(encoding="utf-8").endswith(
        f'[search.fusion]\nrrf_k = 60.0\nmethod = "{refit["method"]}"\n'
        f'score_alpha = {refit["score_alpha"]!r}\n'
        f'score_alpha_short = {refit["score_alpha_short"]!r}\n'
        f'score_alpha_mid = {refit["score_alpha_mid"]!r}\n'
        f'score_alpha_long = {refit["score_alpha_long"]!r}\n'
        f'short_query_words = {refit["short_query_words"]!r}\n'
        f'mid_query_words = {refit["mid_query_words"]!r}\n'
        f'score_cjk_weight = {refit["score_cjk_weight"]!r}\n')
    text = runner.invoke(app, ["--db", str(db), "tune", "--kb-path", str(kb), "--space",
                               "fusion-method", "--verbose"])
    assert text.exit_code == 0, text.output
    assert "Phase 2: every score_cjk_weight at the phase-1 alpha or rule" in text.stdout


def test_the_method_space_needs_the_scores() -> None:
    unscored = QueryLists(id="q", expected=(("r.md", None),), vector_ids=(3, 2),
                          leg_ids={"fts": ((1, 2),)})
    with pytest.raises(ValueError, match="query 'q': score fusion needs every list's scores"):
        T.score_matrix([unscored], META, "fusion-method", 10, [5])
