"""`relevance` and the relevance-based `low_confidence` (search.md §12)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from groove_cli.retrieve.relevance import (
    DEFAULT_CALIBRATIONS,
    Calibration,
    RerankCalibration,
    default_calibration,
    features,
    low_confidence,
    relevance,
)
from tests.test_search_cli import _copy_index, groove, ok_json


@pytest.fixture(scope="module")
def config_file(real_models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "groove.toml"
    path.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def golden_private(golden_index: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
                   ) -> tuple[Path, Path]:
    """The sample index copied: hybrid searches fill its query cache, which other modules'
    fixtures expect empty in the shared one."""
    return golden_index[0], _copy_index(golden_index[1], tmp_path_factory.mktemp("relevance"))


def test_features_from_the_legs_evidence() -> None:
    # (cosine, text found, 1/best trigram-or-word rank, CJK found, 1/CJK rank,
    #  cosine - the query's best cosine)
    assert features(0.9, 4, 2, best_cosine=0.95) == pytest.approx(
        (0.9, 1.0, 0.5, 0.0, 0.0, -0.05))  # best text rank: 2
    assert features(0.8, None, None, best_cosine=0.8) == (0.8, 0.0, 0.0, 0.0, 0.0, 0.0)
    assert features(None, 3, None) == (0.0, 1.0, 1 / 3, 0.0, 0.0, 0.0)  # no query vector
    # the CJK leg is evidence of its own, never the text evidence
    assert features(0.7, None, None, 4, best_cosine=0.75) == pytest.approx(
        (0.7, 0.0, 0.0, 1.0, 0.25, -0.05))
    assert features(0.7, 8, None, 1, best_cosine=0.9) == pytest.approx(
        (0.7, 1.0, 0.125, 1.0, 1.0, -0.2))


def test_relevance_is_the_logistic_of_the_linear_score() -> None:
    cal = Calibration(-2.0, (4.0, 1.0, 0.0, -3.0, 2.0, 0.0))
    # z = -2 + 4 * 0.5 + 1 * 1 = 1
    assert relevance(cal, (0.5, 1.0, 0.0, 0.0, 0.0, 0.0)) == pytest.approx(1 / (1 + math.exp(-1)))
    # a CJK match at rank 2: z = -2 + 4 * 0.5 - 3 * 1 + 2 * 0.5 = -2
    assert relevance(cal, (0.5, 0.0, 0.0, 1.0, 0.5, 0.0)) == pytest.approx(1 / (1 + math.exp(2)))
    assert relevance(Calibration(-1000.0, (0.0,) * 6), (0.0,) * 6) == 0.0  # no overflow
    assert relevance(Calibration(1000.0, (0.0,) * 6), (0.0,) * 6) == 1.0


def test_calibration_lists_and_defaults() -> None:
    cal = Calibration.from_list([-1, 2, 3, 4, 5, 6, 7])
    assert cal == Calibration(-1.0, (2.0, 3.0, 4.0, 5.0, 6.0, 7.0))
    assert cal.as_list() == [-1, 2, 3, 4, 5, 6, 7]
    with pytest.raises(ValueError, match=r"7 finite numbers.*groove tune --space calibration"):
        Calibration.from_list([-12.6, 7.4, 1.4, 3.7, 3.6])  # a calibration of the 4-feature model
    with pytest.raises(ValueError):
        Calibration.from_list([1, 2, 3, 4, 5, 6, math.nan])
    assert default_calibration("no-such-model") == DEFAULT_CALIBRATIONS["multilingual-e5-small"]


def test_low_confidence_is_the_best_relevance_under_the_threshold() -> None:
    assert low_confidence([0.1, 0.14], 0.15) is True
    assert low_confidence([0.1, 0.15], 0.15) is False
    assert low_confidence([], 0.15) is False
    assert low_confidence([0.01], 0.0) is False


def test_hybrid_hits_carry_relevance_and_nonsense_is_low_confidence(
        golden_private: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    db = golden_private[1]
    good = ok_json(groove(config_file, db, "retry budget"))
    assert good["low_confidence"] is False
    top = good["results"][0]
    # the two notes on retry budgets come first (their order is the model's to decide)
    assert {h["path"] for h in good["results"][:2]} == {
        "team/meetings/2025-03-18-retry-budget-follow-up.md", "reliability/retry-budgets.md"}
    assert all(0.0 <= h["relevance"] <= 1.0 for h in good["results"])
    assert top["relevance"] > 0.35  # the default low_confidence_below
    # no note has these words: hybrid returns nothing rather than the nearest vectors (§12)
    assert ok_json(groove(config_file, db, "zebra quantum banana")) == {
        "schema_version": 2, "query": "zebra quantum banana", "results": [],
        "low_confidence": True, "filter_applied": {}}
    padded = workdir / "padded.toml"  # the relevance cuts off: the nearest vectors, all weak
    padded.write_text(config_file.read_text() + "[search.relevance]\nfloor = 0\n"
                      "unsupported_below = 0\n", encoding="utf-8")
    nonsense = ok_json(groove(padded, db, "zebra quantum banana"))
    assert nonsense["results"] and nonsense["low_confidence"] is True
    assert max(h["relevance"] for h in nonsense["results"]) < 0.15  # under the floor
    assert nonsense["results"][0]["score"] == 1.0  # the rank-based score is unchanged


def test_min_relevance_drops_weak_hits_and_may_leave_none(
        golden_private: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    db = golden_private[1]
    every = ok_json(groove(config_file, db, "retry budget"))["results"]
    kept = ok_json(groove(config_file, db, "retry budget", "--min-relevance", "0.5"))
    assert [h["path"] for h in kept["results"]] == [
        h["path"] for h in every if h["relevance"] >= 0.5]
    assert 0 < len(kept["results"]) < len(every)
    none = groove(config_file, db, "zebra quantum banana", "--min-relevance", "0.5",
                  "--format", "text")
    assert none.exit_code == 0
    assert none.stdout == ""  # no hit: nothing on stdout, one note on stderr says what to try
    assert none.stderr == ("groove: note: no hits; none reaches relevance 0.5: try a lower "
                           "--min-relevance\n")
    bad = groove(config_file, db, "x", "--min-relevance", "2")
    assert bad.exit_code == 2 and "--min-relevance" in bad.stderr


def test_calibration_fit_and_ece_by_hand() -> None:
    import numpy as np

    from groove_cli.evaluate.tune.calibrate import expected_calibration_error, fit_logistic

    # two bins: predictions 0.15 (rate 0/2) and 0.85 (rate 2/2) -> |0.15-0|*2 + |0.85-1|*2 / 4
    error, bins = expected_calibration_error([0.15, 0.15, 0.85, 0.85], [0, 0, 1, 1])
    assert error == pytest.approx(0.15)
    assert bins == [(0.15, 0.0, 2), (0.85, 1.0, 2)]
    # a feature that raises the odds: the fitted weight on it is positive, the others ~0
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.uniform(0.7, 0.95, 400), *(np.zeros(400) for _ in range(5))])
    y = (rng.uniform(size=400) < 1 / (1 + np.exp(-(-20 + 25 * x[:, 0])))).astype(float)
    fitted = fit_logistic(x, y)
    assert 15 < fitted.weights[0] < 35 and abs(fitted.weights[1]) < 1e-3


def test_cross_fitting_scores_each_half_by_the_other_halfs_model() -> None:
    from groove_cli.evaluate.tune.calibrate import LabelledHit, cross_fitted

    blank = (0.0,) * 6  # no evidence: each half's model is its base rate
    first = [LabelledHit("a", blank, r) for r in (True, False, False, False)]  # rate 1/4
    second = [LabelledHit("b", blank, r) for r in (True, True, False, False)]  # rate 1/2
    estimates, labels = cross_fitted(first, second)
    assert estimates == pytest.approx([0.5] * 4 + [0.25] * 4, abs=1e-3)
    assert labels == [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]


def test_tune_space_calibration_refits_and_writes(
        golden_private: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    from typer.testing import CliRunner

    from groove_cli.cli import app

    kb, db = golden_private
    target = workdir / "groove.toml"
    # weighted RRF, on whose hits the shipped calibration was fitted (bench/results/relevance.md
    # measures it on score fusion's too)
    original = (config_file.read_text(encoding="utf-8") + '[search.fusion]\nmethod = "rrf"\n'
                "# keep me\n")
    target.write_text(original, encoding="utf-8")
    args = ["--config", str(target), "--db", str(db), "tune", "--kb-path", str(kb), "--space",
            "calibration", "--format", "json", "--write"]
    # golden/'s 66 queries: the refit is better calibrated on held-out hits than the shipped
    # model (bench/results/relevance.md), so --write applies it
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["queries"] == 66 and report["hits"] == 660 and report["held_out"]["hits"] == 660
    assert report["current"] == DEFAULT_CALIBRATIONS["multilingual-e5-small"].as_list()
    assert report["held_out"]["ece_refit"] < report["held_out"]["ece_current"]
    assert report["decision"] == "refit" and report["written"] == str(target)
    assert result.stderr == ""  # 66 queries: no "too few" warning
    text = target.read_text(encoding="utf-8")
    assert text.startswith(original) and "[search.relevance]" in text
    # the written calibration is the one search now uses
    searched = ok_json(groove(target, db, "retry budget", "--limit", "1"))
    default = ok_json(groove(config_file, db, "retry budget", "--limit", "1", "--fusion", "rrf"))
    assert searched["results"][0]["path"] == default["results"][0]["path"]
    assert searched["results"][0]["relevance"] != default["results"][0]["relevance"]

    # run again: the calibration in use is now that refit, fitted on these very hits, and a
    # cross-fitted refit cannot beat it; reported, not written, unless forced
    written = target.read_text(encoding="utf-8")
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 0, refused.output
    again = json.loads(refused.stdout)
    assert again["current"] == report["calibration"]
    assert again["held_out"]["ece_refit"] >= again["held_out"]["ece_current"]
    assert again["decision"] == "keep_current" and again["written"] is None
    assert "--write refused: the refit is not better calibrated" in refused.stderr
    assert target.read_text(encoding="utf-8") == written
    forced = CliRunner().invoke(app, [*args, "--force"])
    assert forced.exit_code == 0 and json.loads(forced.stdout)["written"] == str(target)


def test_the_stacked_model_of_a_reranked_hit_by_hand() -> None:
    base = Calibration(1.0, (2.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    x = (0.25, 0.0, 0.0, 0.0, 0.0, 0.0)  # base logit z = 1 + 2 * 0.25 = 1.5
    assert relevance(base, x) == pytest.approx(1 / (1 + math.exp(-1.5)))
    stacked = RerankCalibration(-2.0, 2.0, 0.5)  # -2 + 2 * 1.5 + 0.5 * s
    assert relevance(base, x, 4.0, stacked) == pytest.approx(1 / (1 + math.exp(-3.0)))
    assert relevance(base, x, -2.0, stacked) == pytest.approx(0.5)
    # no reranker score, or no stacked model: the base model alone
    assert relevance(base, x, None, stacked) == relevance(base, x, 4.0, None) == relevance(base, x)
    assert RerankCalibration.from_list([0.0, 1.0, 0.0]).as_list() == [0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="a rerank calibration is 3 finite numbers"):
        RerankCalibration.from_list([1.0, 2.0])


def test_tune_space_calibration_with_a_reranker_fits_the_stacked_model(
        golden_private: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    from typer.testing import CliRunner

    from groove_cli.cli import app
    from tests.onnx_builders import model_dir, reranker

    kb, db = golden_private
    ranker = model_dir(workdir / "rr", reranker(token_types=True).onnx,
                       'kind = "reranker"\nmax_length = 64\nbatch_size = 8\n')
    target = workdir / "groove.toml"
    target.write_text(config_file.read_text(encoding="utf-8")
                      + f"reranker = {json.dumps(str(ranker))}\n", encoding="utf-8")
    args = ["--config", str(target), "--db", str(db), "tune", "--kb-path", str(kb), "--space",
            "calibration", "--format", "json", "--write", "--force"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["reranker"] == str(ranker)
    assert report["key"] == "search.relevance.rerank_calibration"
    assert report["current"] is None and len(report["calibration"]) == 3
    assert report["hits"] == 660 and report["written"] == str(target)
    text = target.read_text(encoding="utf-8")
    assert "rerank_calibration = [" in text and "\ncalibration = [" not in text
    # search now reads reranked hits through the written stacked model
    a, b, c = report["calibration"]
    hit = ok_json(groove(target, db, "retry budget", "--limit", "1", "--explain"))["results"][0]
    plain = ok_json(groove(config_file, db, "retry budget", "--limit", "20", "--explain"))
    base = next(h for h in plain["results"] if (h["path"], h["heading"])
                == (hit["path"], hit["heading"]))["relevance"]
    z = math.log(base / (1 - base))
    expected = 1 / (1 + math.exp(-(a + b * z + c * hit["score"])))  # score: the raw reranker score
    assert hit["relevance"] == pytest.approx(expected, abs=1e-6)


def test_a_rerank_calibration_of_another_length_is_a_config_error(
        golden_private: tuple[Path, Path], workdir: Path, config_file: Path) -> None:
    target = workdir / "groove.toml"
    target.write_text(config_file.read_text(encoding="utf-8")
                      + "[search.relevance]\nrerank_calibration = [1.0, 2.0]\n", encoding="utf-8")
    result = groove(target, golden_private[1], "retry budget")
    assert result.exit_code == 1
    assert result.stderr.startswith("groove: error: invalid config: "
                                    "search.relevance.rerank_calibration: a rerank calibration is "
                                    "3 finite numbers")


def test_write_calibration_follows_the_config_write_rules(tmp_path: Path) -> None:
    """The calibration is written like tune's recommendation (tune.md §10-§11): comments kept,
    mode kept, a read-only config refused untouched, an invalid result never written."""
    import os
    import stat

    from groove_cli.errors import GrooveError
    from groove_cli.evaluate.tune.calibrate import write_calibration

    target = tmp_path / "groove.toml"
    target.write_text("# mine\nmax_length = 256\n", encoding="utf-8")
    os.chmod(target, 0o640)
    calibration = Calibration(-1.5, (2.0, 0.25, 0.5, -1.0, 1.0, 0.75))
    assert write_calibration(target, calibration) == target
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# mine\nmax_length = 256\n")
    assert "[search.relevance]\ncalibration = [-1.5, 2.0, 0.25, 0.5, -1.0, 1.0, 0.75]\n" in text
    assert stat.S_IMODE(target.stat().st_mode) == 0o640

    os.chmod(target, 0o440)
    with pytest.raises(GrooveError, match="it is read-only"):
        write_calibration(target, Calibration(0.0, (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)))
    assert target.read_text(encoding="utf-8") == text


def test_hits_below_the_top_are_calibrated_on_the_sample_kb(
        golden_private: tuple[Path, Path], real_models_dir: Path) -> None:
    # issue 28: with 1 / vector rank as evidence, relevant hits below the top one scored near 0
    # (ranks 2-10 ECE 0.117 on golden/, never fitted on); the cosine gap calibrates them
    from groove_cli.config import load_settings
    from groove_cli.evaluate.golden import load_golden
    from groove_cli.evaluate.metrics import entry_matches
    from groove_cli.evaluate.tune.calibrate import expected_calibration_error
    from groove_cli.retrieve.filters import FilterSpec
    from groove_cli.retrieve.params import build_params
    from groove_cli.retrieve.query import compile_query
    from groove_cli.retrieve.searcher import Searcher

    kb, db = golden_private
    golden = load_golden(kb / ".groove-eval.yml", check_query=compile_query)
    # the hits of weighted RRF, on which the shipped calibration was fitted; on score fusion's
    # (the default since) ranks 2-10 miss 0.05, and so does the same fit redone on those hits
    # (bench/results/relevance.md compares the two)
    settings = load_settings(None, {"models_dir": str(real_models_dir),
                                    "search.fusion.method": "rrf",
                                    "search.relevance.unsupported_below": 0.0})  # every hit
    params = build_params(settings, limit=10, rerank=False, filters=FilterSpec(), spans=False)
    searcher = Searcher.from_settings(settings, db, kb)
    try:
        results = searcher.search_many([compile_query(q.query) for q in golden.queries], params)
    finally:
        searcher.close()
    p: list[float] = []
    y: list[bool] = []
    for q, result in zip(golden.queries, results, strict=True):
        for hit in result.hits[1:]:
            assert hit.relevance is not None and hit.features[-1] <= 0.0  # cosine_gap
            p.append(hit.relevance)
            y.append(any(entry_matches((e.path, e.heading), (hit.chunk.path, hit.chunk.heading))
                         for e in q.expected))
    assert len(p) == 9 * 66
    error, _ = expected_calibration_error(p, [float(v) for v in y])
    # issue 28's target is ECE <= 0.05 (bench/results/relevance.md); this real-model figure sits
    # near it and moves with the int8 model's numerics from CPU to CPU, across the target on
    # some (bench/results/cpu_spread.md measures the spread). The test asserts a bound with that
    # spread as margin, still far below what 1 / vector rank as evidence scored (see above)
    assert error <= 0.07
