"""Score fusion whose vector share follows the query (search.md §5): CJK text → `score_alpha`,
else `score_alpha_short` up to `short_query_words` word-level terms, `score_alpha_mid` up to
`mid_query_words` and `score_alpha_long` above; hand-computed rankings, the search pipeline
and `--explain`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import groove_cli
from groove_cli import config
from groove_cli.api import Filters
from groove_cli.cli import app
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.fuse import ScoredLeg, score_fuse
from groove_cli.retrieve.legs import CJK, WORDS
from groove_cli.retrieve.params import SearchParams, build_params, settings_warnings
from groove_cli.retrieve.query import compile_query
from groove_cli.store import Store

runner = CliRunner()
SCORE = SearchParams(fusion="score")


LONG = "retry budget backoff limit load queue storm cascade failure"  # 9 word terms


def test_alpha_follows_script_and_word_terms() -> None:
    assert SCORE.alpha_of(compile_query("retry budget")) == (0.8, "2 word terms <= 4")
    assert SCORE.alpha_of(compile_query("retry budget backoff limit"))[0] == 0.8
    assert SCORE.alpha_of(compile_query("retry budget backoff limit load")) == (
        0.7, "5 word terms <= 8")
    # stopwords are not word terms: 6 terms, the middle tier
    six = compile_query("how do the retry budget and the backoff limit the load of a queue")
    assert len(six.word_terms) == 6
    assert SCORE.alpha_of(six)[0] == 0.7
    assert SCORE.alpha_of(compile_query("retry budget backoff limit load queue storm cascade")
                          ) == (0.7, "8 word terms <= 8")
    assert SCORE.alpha_of(compile_query(LONG)) == (0.5, "9 word terms > 8")
    # any CJK text takes score_alpha, however many Latin words come with it
    assert SCORE.alpha_of(compile_query("評価方法 retry budget backoff limit load queue storm")
                          ) == (0.5, "CJK text")
    custom = SearchParams(fusion="score", score_alpha_short=0.7, score_alpha_mid=0.6,
                          score_alpha_long=0.3, short_query_words=1, mid_query_words=2)
    assert [custom.alpha_of(compile_query(q))[0] for q in ("retry", "retry budget",
                                                          "retry budget backoff")] == [
        0.7, 0.6, 0.3]
    # a middle tier that does not reach past short_query_words is empty
    two_tiers = SearchParams(fusion="score", score_alpha_short=0.7, score_alpha_mid=0.6,
                             score_alpha_long=0.3, short_query_words=3, mid_query_words=2)
    assert two_tiers.alpha_of(compile_query("retry budget backoff load")) == (
        0.3, "4 word terms > 3")
    assert two_tiers.score_alphas == (0.5, 0.7, 0.3)
    assert SCORE.score_alphas == (0.5, 0.8, 0.7, 0.5)


def test_for_query_fixes_the_leg_weights() -> None:
    short = SCORE.for_query(compile_query("retry budget"))
    assert short.query_alpha == 0.8
    assert short.score_vector_weight == 0.8
    assert getattr(short, WORDS.score_weight) == pytest.approx(0.2)
    long = SCORE.for_query(compile_query(LONG))
    assert (long.score_vector_weight, getattr(long, WORDS.score_weight)) == (0.5, 0.5)
    cjk = SCORE.for_query(compile_query("評価方法"))
    assert (cjk.score_vector_weight, getattr(cjk, CJK.score_weight)) == (0.5, 1.0)
    # the query's alpha is derived from the settings, not from a previous query's
    assert short.for_query(compile_query("評価方法")).query_alpha == 0.5
    # RRF settings are left alone
    rrf = SearchParams(fusion="rrf")
    assert rrf.for_query(compile_query("retry")) is rrf and rrf.query_alpha is None


def _fused(params: SearchParams) -> list[int]:
    # vector cosines 0.9, 0.7, 0.5 -> 1, 0.5, 0; word-level bm25 4, 2, 1 -> 1, 0.5, 0.25
    return [f.chunk_id for f in score_fuse([
        ScoredLeg(params.score_vector_weight, [10, 20, 30], [0.9, 0.7, 0.5], spread=True),
        ScoredLeg(getattr(params, WORDS.score_weight), [30, 40, 20], [4.0, 2.0, 1.0])])]


def test_the_same_lists_rank_by_the_query_s_length() -> None:
    settings = SearchParams(fusion="score", score_alpha_mid=0.55, score_alpha_long=0.4)
    # short, alpha 0.8: 10 = 0.8; 20 = 0.4 + 0.2 · 0.25 = 0.45; 30 = 0.2; 40 = 0.1
    assert _fused(settings.for_query(compile_query("retry budget"))) == [10, 20, 30, 40]
    # middle (6 terms), alpha 0.55: 10 = 0.55; 30 = 0.45; 20 = 0.275 + 0.45 · 0.25 = 0.3875;
    # 40 = 0.225
    mid = compile_query("retry budget backoff limit load queue")
    assert _fused(settings.for_query(mid)) == [10, 30, 20, 40]
    # long, alpha 0.4: 30 = 0.6; 10 = 0.4; 20 = 0.2 + 0.6 · 0.25 = 0.35; 40 = 0.3
    assert _fused(settings.for_query(compile_query(LONG))) == [30, 10, 20, 40]


def test_search_uses_the_query_s_alpha(golden_copy: tuple[Path, Path],
                                       real_models_dir: Path) -> None:
    kb, db = golden_copy  # a copy: the search caches its query vectors in the index
    everything = Filters(include_low_quality=True)
    with groove_cli.open(kb, db=db, models_dir=str(real_models_dir)) as index:
        short = index.search("retry budget", limit=5, fusion="score", filters=everything)
        long = index.search("how should a retry budget limit backoff storms across many "
                            "services and clients", limit=5, fusion="score", filters=everything)
    assert short.result.trace.alpha == (0.8, "2 word terms <= 4")
    assert long.result.trace.alpha == (0.5, "9 word terms > 8")
    for results, alpha in ((short, 0.8), (long, 0.5)):
        for hit in results.result.hits:
            assert hit.explain.alpha == alpha
            legs = dict(hit.explain.leg_scores)
            text = sum(v or 0.0 for name, v in legs.items() if name != "vec")
            ran = [name for name in legs if name != "vec"]
            expected = (alpha * (legs["vec"] or 0.0) + (1 - alpha) * text) / (
                alpha + (1 - alpha) * len(ran))
            assert hit.score == pytest.approx(expected, abs=1e-12)


def test_explain_shows_the_alpha_and_its_inputs(golden_copy: tuple[Path, Path],
                                                real_models_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n"
                      "[search.fusion]\nmethod = \"score\"\nscore_alpha_short = 0.7\n",
                      encoding="utf-8")
    result = runner.invoke(app, ["--config", str(config), "--db", str(golden_copy[1]), "search",
                                 "retry budget", "--explain", "--format", "json",
                                 "--include-low-quality"])
    assert result.exit_code == 0, result.output
    lines = [x for x in result.stderr.splitlines() if x.startswith("explain:")]
    assert lines[0] == ("explain: mode=hybrid preset=- fusion=score score_alpha=0.5 "
                        "score_alpha_short=0.7 score_alpha_mid=0.7 score_alpha_long=0.5 "
                        "short_query_words=4 mid_query_words=8 score_cjk_weight=1.0 "
                        "min_score=0.0")
    assert lines[1] == "explain: alpha=0.7 (2 word terms <= 4)"
    hits = json.loads(result.stdout)["results"]
    assert hits and all(h["explain"]["alpha"] == 0.7 for h in hits)


def test_bad_length_settings_are_config_errors(golden_index: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text("[search.fusion]\nshort_query_words = -1\n", encoding="utf-8")
    result = runner.invoke(app, ["--config", str(config), "--db", str(golden_index[1]),
                                 "search", "retry"])
    assert result.exit_code == 1  # a bad config file is a runtime error (config.md)
    assert "search.fusion.short_query_words = -1 is out of range [0, 32]" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("flags", "ceiling"), [
    ({}, "0.2000"),  # short queries: min(0.8, 0.2) / 1.0
    # short and middle 0.7: min(0.7, 0.3) = 0.3, below score_alpha and score_alpha_long (0.5)
    ({"search.fusion.score_alpha_short": 0.7}, "0.3000"),
    ({"search.fusion.score_alpha_short": 0.6, "search.fusion.score_alpha_mid": 0.6,
      "search.fusion.score_alpha_long": 0.35}, "0.3500"),
    # the middle tier's 0.25 reaches least
    ({"search.fusion.score_alpha_short": 0.6, "search.fusion.score_alpha_mid": 0.25},
     "0.2500"),
])
def test_min_score_warning_takes_the_alpha_that_reaches_least(
        flags: dict[str, object], ceiling: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = config.resolve({}, {"search.fusion.method": "score",
                                   "search.retrieval.min_score": 0.38, **flags})
    params = build_params(settings, limit=5, rerank=False, filters=FilterSpec())
    settings_warnings(settings, params)
    assert f"min_score 0.38 exceeds {ceiling}, the highest score" in capsys.readouterr().err


@pytest.mark.parametrize("preset", config.PRESETS)
@pytest.mark.parametrize("method", [None, "rrf"])
def test_no_preset_fires_the_min_score_warning(
        preset: str, method: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    # config.md §5: presets set no fused-score floor, so under the default fusion (score, where
    # a short query's full-text-only hit reaches 0.2) and under RRF nothing is dropped unasked
    flags: dict[str, object] = {"search.retrieval.preset": preset}
    if method is not None:
        flags["search.fusion.method"] = method
    settings = config.resolve({}, flags)
    params = build_params(settings, limit=5, rerank=False, filters=FilterSpec())
    assert params.fusion == (method or "score")
    assert params.min_score == 0.0
    settings_warnings(settings, params)
    assert capsys.readouterr().err == ""


def test_the_default_search_is_score_fusion_hand_computed(
        golden_copy: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    """No --fusion: the hits rank by 0.8 · vec + 0.2 · words (a 2-word query, search.md §5),
    the word-level scores being bm25 over the list's best read from the store; RRF ranks them
    otherwise."""
    db = golden_copy[1]  # a copy: the search caches its query vector in the index
    toml = tmp_path / "groove.toml"
    toml.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n", encoding="utf-8")
    query = compile_query("retry budget")
    expr = WORDS.expr(query)
    assert expr is not None
    store = Store.open_readonly(db)
    try:
        bm25 = [value for _, value in store.fts_scored_ids(expr, config.DEFAULT_BM25_WEIGHTS, 50,
                                                            WORDS.table)]
    finally:
        store.close()

    def run(*flags: str) -> tuple[list[str], list[dict[str, object]]]:
        result = runner.invoke(app, ["--config", str(toml), "--db", str(db), "search",
                                     "retry budget", "--explain", "--format", "json",
                                     "--include-low-quality", "--limit", "10", *flags])
        assert result.exit_code == 0, result.output
        return ([x for x in result.stderr.splitlines() if x.startswith("explain:")],
                json.loads(result.stdout)["results"])

    lines, hits = run()
    assert lines[0].startswith("explain: mode=hybrid preset=- fusion=score score_alpha=0.5 "
                               "score_alpha_short=0.8 score_alpha_mid=0.7 score_alpha_long=0.5 ")
    assert lines[1] == "explain: alpha=0.8 (2 word terms <= 4)"
    assert len(hits) == 10
    scores = []
    for hit in hits:
        e = hit["explain"]
        assert isinstance(e, dict) and e["fusion"] == "score" and e["alpha"] == 0.8
        legs = e["leg_scores"]
        assert isinstance(legs, dict) and list(legs) == ["vec", "words"]
        rank = e["fts_word_rank"]
        words = bm25[rank - 1] / bm25[0] if isinstance(rank, int) else 0.0
        assert (legs["words"] or 0.0) == pytest.approx(words, abs=1e-12)
        score = (0.8 * (legs["vec"] or 0.0) + 0.2 * words) / (0.8 + 0.2)
        assert hit["score"] == pytest.approx(score, abs=1e-12)
        scores.append(score)
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    # the same query under weighted RRF ranks differently
    rrf_lines, rrf_hits = run("--fusion", "rrf")
    assert rrf_lines[0].startswith("explain: mode=hybrid preset=- fusion=rrf rrf_k=60.0 ")
    def order(found: list[dict[str, object]]) -> list[tuple[object, object]]:
        return [(h["path"], h["line_start"]) for h in found]

    assert order(rrf_hits) != order(hits)
