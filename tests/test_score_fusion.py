"""Score fusion (search.md §5): normalised leg scores, their weighted sum, the vectorised form
tune sweeps, the scored store read and a search run with `--fusion score`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import groove_cli
from groove_cli.api import Filters
from groove_cli.cli import app
from groove_cli.retrieve.fuse import ScoredLeg, normalised, score_fuse, score_fuse_rows
from groove_cli.retrieve.legs import CJK, TRIGRAM, WORDS
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.query import compile_query
from groove_cli.store import Store

runner = CliRunner()

# --------------------------------------------------------------------------- score_fuse


def test_normalisation_hand_computed() -> None:
    assert normalised([0.9, 0.8, 0.5], spread=True) == pytest.approx([1.0, 0.75, 0.0])
    assert normalised([4.0, 2.0, 1.0], spread=False) == [1.0, 0.5, 0.25]
    assert normalised([0.7], spread=True) == [1.0]  # one cosine: no spread, full marks
    assert normalised([0.7, 0.7], spread=True) == [1.0, 1.0]
    assert normalised([], spread=False) == []


def test_score_fuse_hand_computed() -> None:
    # vector cosines 0.9, 0.8, 0.5 -> 1, 0.75, 0; trigram bm25 4, 2 -> 1, 0.5; words 3 -> 1
    fused = score_fuse([ScoredLeg(0.6, [10, 20, 30], [0.9, 0.8, 0.5], spread=True),
                        ScoredLeg(0.4, [30, 40], [4.0, 2.0]),
                        ScoredLeg(0.4, [20], [3.0])])
    assert [f.chunk_id for f in fused] == [20, 10, 30, 40]
    raw = {f.chunk_id: f.raw for f in fused}
    assert raw[20] == 0.6 * normalised([0.9, 0.8, 0.5], True)[1] + 0.4 * 1.0  # in leg order
    assert raw[20] == pytest.approx(0.85)
    assert raw[10] == pytest.approx(0.6) and raw[30] == pytest.approx(0.4)
    assert raw[40] == pytest.approx(0.2)
    best = 0.6 + 0.4 + 0.4
    assert [f.score for f in fused] == pytest.approx([0.85 / best, 0.6 / best, 0.4 / best,
                                                      0.2 / best])
    assert fused[0].leg_scores == pytest.approx((0.75, None, 1.0))  # type: ignore[arg-type]
    assert fused[2].leg_scores == (0.0, 1.0, None)


def test_cjk_weight_and_alpha_change_the_order() -> None:
    # the CJK leg alone finds 7; the vector leg alone finds 8
    legs = [ScoredLeg(0.6, [8, 9], [0.8, 0.4], spread=True), ScoredLeg(0.8, [7, 9], [5.0, 1.0])]
    fused = score_fuse(legs)
    # 7: 0.8 · 1 = 0.8; 8: 0.6 · 1 = 0.6; 9: 0.6 · 0 + 0.8 · 0.2 = 0.16
    assert [(f.chunk_id, round(f.raw, 12)) for f in fused] == [(7, 0.8), (8, 0.6), (9, 0.16)]
    assert fused[0].score == pytest.approx(0.8 / 1.4)
    lighter = score_fuse([legs[0], legs[1]._replace(weight=0.5)])
    assert [f.chunk_id for f in lighter] == [8, 7, 9]


def test_best_in_every_leg_scores_exactly_one_and_ties_go_by_id() -> None:
    fused = score_fuse([ScoredLeg(0.6, [5, 3], [0.9, 0.1], spread=True),
                        ScoredLeg(0.4, [5, 4, 3], [2.0, 1.0, 1.0])])
    assert fused[0].chunk_id == 5 and fused[0].score == 1.0
    # 3: 0.6 · 0 + 0.4 · 0.5 = 0.2; 4: 0.4 · 0.5 = 0.2: a tie, by chunk id
    assert [f.chunk_id for f in fused[1:]] == [3, 4]


def test_weight_zero_leg_finds_nothing_and_empty_input() -> None:
    fused = score_fuse([ScoredLeg(0.0, [1, 2], [0.9, 0.1], spread=True),
                        ScoredLeg(1.0, [3], [2.0])])
    assert [(f.chunk_id, f.score) for f in fused] == [(3, 1.0)]
    assert score_fuse([]) == [] and score_fuse([ScoredLeg(1.0, [], [])]) == []


def test_repeated_id_keeps_its_first_score() -> None:
    fused = score_fuse([ScoredLeg(1.0, [1, 2, 1], [4.0, 2.0, 1.0])])
    assert [(f.chunk_id, f.score) for f in fused] == [(1, 1.0), (2, 0.5)]


@pytest.mark.parametrize("weight", [-0.1, math.inf, math.nan])
def test_bad_weight_is_rejected(weight: float) -> None:
    with pytest.raises(ValueError, match="finite and >= 0"):
        score_fuse([ScoredLeg(weight, [1], [1.0])])


def test_leg_score_weights_follow_the_declarations() -> None:
    params = SearchParams(score_alpha=0.7, score_cjk_weight=1.5)
    assert [getattr(params, leg.score_weight) for leg in (TRIGRAM, WORDS, CJK)] == \
        pytest.approx([0.3, 0.3, 1.5])
    assert params.score_vector_weight == 0.7


# --------------------------------------------------------------------------- vectorised parity

_ids = st.lists(st.integers(1, 30), max_size=12, unique=True)


@st.composite
def _leg(draw: st.DrawFn, spread: bool) -> ScoredLeg:
    ids = draw(_ids)
    values = draw(st.lists(st.sampled_from([0.25, 0.5, 0.75, 1.0, 2.0, 3.5]),
                           min_size=len(ids), max_size=len(ids)))
    return ScoredLeg(1.0, ids, sorted(values, reverse=True), spread)


@settings(max_examples=150, deadline=None)
@given(vec=_leg(True), fts=_leg(False), cjk=_leg(False),
       alphas=st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.6, 0.8, 1.0]), min_size=1, max_size=4),
       cjk_weights=st.lists(st.sampled_from([0.0, 0.4, 0.8, 1.6]), min_size=1, max_size=4),
       limit=st.integers(1, 40))
def test_score_fuse_rows_agrees_with_score_fuse(vec: ScoredLeg, fts: ScoredLeg, cjk: ScoredLeg,
                                                alphas: list[float], cjk_weights: list[float],
                                                limit: int) -> None:
    rows = [(a, c) for a in alphas for c in cjk_weights]
    weights = {"v": np.array([a for a, _ in rows]), "t": np.array([1 - a for a, _ in rows]),
               "c": np.array([c for _, c in rows])}
    fused = score_fuse_rows([("v", vec), ("t", fts), ("c", cjk)], weights, limit)
    for r, (alpha, cjk_weight) in enumerate(rows):
        reference = score_fuse([vec._replace(weight=alpha), fts._replace(weight=1 - alpha),
                                cjk._replace(weight=cjk_weight)])[:limit]
        valid = fused.valid[r]
        assert fused.ids[r][valid].tolist() == [f.chunk_id for f in reference]
        assert fused.raw[r][valid].tolist() == [f.raw for f in reference]  # exactly
        assert fused.score[r][valid].tolist() == [f.score for f in reference]


# --------------------------------------------------------------------------- the store read


def test_sqlite_scored_read_matches_the_ranked_read(golden_index: tuple[Path, Path]) -> None:
    store = Store.open_readonly(golden_index[1])
    try:
        checked = 0
        for text in ("retry budget", "backup restore", "障害 連絡", "incident -postmortem"):
            query = compile_query(text)
            for leg in (TRIGRAM, WORDS, CJK):
                expr = leg.expr(query)
                if expr is None:
                    continue
                for weights in ((2.0, 1.0, 1.0), (1.0, 0.0, 4.0)):
                    scored = store.fts_scored_ids(expr, weights, 20, leg.table)
                    ids = store.fts_search_ids(expr, weights, 20, leg.table)
                    assert [cid for cid, _ in scored] == ids
                    bm25 = [value for _, value in scored]
                    assert all(value > 0 for value in bm25)  # FTS5's bm25 negated: higher is better
                    assert bm25 == sorted(bm25, reverse=True)
                    checked += 1
        assert checked >= 6
    finally:
        store.close()


# --------------------------------------------------------------------------- search


def test_fts_score_fusion_hit_scores_are_bm25_over_the_best(
        golden_copy: tuple[Path, Path], real_models_dir: Path) -> None:
    kb, db = golden_copy
    query = compile_query("retry budget")
    expr = WORDS.expr(query)
    assert expr is not None and TRIGRAM.expr(query) is None  # one leg runs: its scores show
    store = Store.open_readonly(db)
    try:
        bm25 = dict(store.fts_scored_ids(expr, (2.0, 1.0, 1.0), 50, WORDS.table))
    finally:
        store.close()
    best = max(bm25.values())
    with groove_cli.open(kb, db=db, models_dir=str(real_models_dir)) as index:
        everything = Filters(include_low_quality=True)
        results = index.search("retry budget", limit=5, mode="fts", fusion="score",
                               filters=everything)
        rrf = index.search("retry budget", limit=5, mode="fts", fusion="rrf",
                           filters=everything)
    hits = results.result.hits
    assert len(hits) == 5 and results.params.fusion == "score"
    assert [h.score for h in hits] == pytest.approx([bm25[h.chunk.chunk_id] / best for h in hits])
    assert hits[0].score == 1.0
    assert [name for h in hits for name, _ in h.explain.leg_scores] == ["words"] * 5
    assert [value for h in hits for _, value in h.explain.leg_scores] == \
        pytest.approx([h.score for h in hits])  # (0.4 · s) / 0.4
    assert all(h.explain.fusion == "score" for h in hits)
    # one leg: both methods keep its order
    assert [h.chunk.chunk_id for h in hits] == [h.chunk.chunk_id for h in rrf.result.hits]


def test_search_cli_fusion_score_explains_the_method_and_leg_scores(
        golden_copy: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    # a short Latin query takes score_alpha_short (search.md §5)
    config.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n"
                      "[search.fusion]\nscore_alpha_short = 0.5\n", encoding="utf-8")
    # a copy: the search caches its query vector in the index
    result = runner.invoke(app, ["--config", str(config), "--db", str(golden_copy[1]), "search",
                                 "retry budget", "--fusion", "score", "--score-alpha", "0.4",
                                 "--explain", "--format", "json", "--include-low-quality"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    lines = [x for x in result.stderr.splitlines() if x.startswith("explain:")]
    assert lines[0] == ("explain: mode=hybrid preset=- fusion=score score_alpha=0.4 "
                        "score_alpha_short=0.5 score_alpha_mid=0.7 score_alpha_long=0.5 "
                        "short_query_words=4 mid_query_words=8 score_cjk_weight=1.0 "
                        "min_score=0.0")
    hits = doc["results"]
    assert hits and all(h["explain"]["fusion"] == "score" for h in hits)
    for hit in hits:
        legs = hit["explain"]["leg_scores"]
        assert list(legs) == ["vec", "words"]  # the legs that ran, vector leg first
        # hybrid, alpha 0.5: score = (0.5 · vec + 0.5 · words) / (0.5 + 0.5)
        expected = 0.5 * (legs["vec"] or 0.0) + 0.5 * (legs["words"] or 0.0)
        assert hit["explain"]["fused_score"] == pytest.approx(expected, abs=1e-12)
        assert (legs["vec"] is None) == (hit["explain"]["vec_rank"] is None)
        assert (legs["words"] is None) == (hit["explain"]["fts_word_rank"] is None)
    scores = [h["explain"]["fused_score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 1.0


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--fusion", "borda", "--fusion must be one of rrf, score, got 'borda'"),
    ("--score-alpha", "1.5", "--score-alpha 1.5 is out of range"),
])
def test_bad_fusion_flags_are_usage_errors(golden_index: tuple[Path, Path], flag: str,
                                           value: str, message: str) -> None:
    result = runner.invoke(app, ["--db", str(golden_index[1]), "search", "retry", flag, value])
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.output
