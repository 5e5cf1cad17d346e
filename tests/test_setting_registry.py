"""A ranking setting is declared once (issue 38): one `KeySpec` and the field of the stage that
reads it give the flag of `search`/`eval` (help, range and default included), the config key,
`build_params`, the eval fingerprint and tune's key lists. Shown with a setting registered here
only, as test_leg_storage.py does for a full-text leg.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from groove_cli import config, config_schema
from groove_cli.cli_options import RetrievalFlags, retrieval_flags, retrieval_options, with_options
from groove_cli.config_schema import KeySpec, tune_keys, tune_table
from groove_cli.evaluate.fingerprint import search_member
from groove_cli.retrieve import params as params_module
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.params import SearchParams, build_params, ranks

BOOST = KeySpec("search.retrieval.test_boost", "float", 1.0, 0.0, 10.0,
                help="A knob registered by this test only.", ranks=True, flag="--test-boost",
                param="test_boost", tune="retrieval")


@dataclasses.dataclass(frozen=True, slots=True)
class BoostedParams(SearchParams):
    """The stage's side of the new setting: one declared field."""

    test_boost: float = ranks(1.0)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[KeySpec, ...]]:
    schema = (*config_schema.SCHEMA, BOOST)
    for module in (config, config_schema):
        monkeypatch.setattr(module, "SCHEMA", schema)
    monkeypatch.setitem(config_schema.SPECS, BOOST.key, BOOST)
    monkeypatch.setattr(params_module, "SearchParams", BoostedParams)
    yield schema


def command(schema: tuple[KeySpec, ...]) -> typer.Typer:
    """A command carrying the generated retrieval options, printing the config flags."""
    app = typer.Typer()

    @app.command()
    @with_options("retrieval", retrieval_flags(schema), retrieval_options(schema))
    def run(retrieval: RetrievalFlags = RetrievalFlags()) -> None:
        typer.echo(json.dumps(retrieval.config_flags()))

    return app


def test_the_flag_is_generated_with_its_help_range_and_default(
        registered: tuple[KeySpec, ...]) -> None:
    runner = CliRunner()
    app = command(registered)
    given = runner.invoke(app, ["--test-boost", "2.5", "--rrf-k", "30"])
    assert given.exit_code == 0, given.output
    assert json.loads(given.stdout) == {"search.retrieval.test_boost": 2.5,
                                        "search.fusion.rrf_k": 30.0}
    assert json.loads(runner.invoke(app, []).stdout) == {}
    help_text = " ".join(runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "--test-boost" in help_text
    assert "A knob registered by this test only (0-10; default 1.0)." in help_text
    out_of_range = runner.invoke(app, ["--test-boost", "11"])
    assert out_of_range.exit_code != 0
    assert "--test-boost 11.0 is out of range [0.0, 10.0]" in str(out_of_range.exception)


def test_the_key_reaches_the_params_and_the_fingerprint(registered: tuple[KeySpec, ...]) -> None:
    filters = FilterSpec(quality_threshold=0.0)
    default = build_params(config.resolve({}, {}), limit=10, rerank=False, filters=filters)
    from_file = build_params(config.resolve({"search.retrieval.test_boost": 3}, {}), limit=10,
                             rerank=False, filters=filters)
    from_flag = build_params(config.resolve({"search.retrieval.test_boost": 3.0},
                                            {"search.retrieval.test_boost": 4.0}),
                             limit=10, rerank=False, filters=filters)
    assert isinstance(default, BoostedParams) and default.test_boost == 1.0
    assert isinstance(from_file, BoostedParams) and from_file.test_boost == 3.0  # int → float
    assert isinstance(from_flag, BoostedParams) and from_flag.test_boost == 4.0
    settings = config.resolve({}, {})
    assert search_member(settings, default) == ()
    assert search_member(settings, from_file) == (("test_boost", 3.0),)


def test_tune_lists_the_key_in_its_declared_space(registered: tuple[KeySpec, ...]) -> None:
    names = [spec.name for spec in tune_keys("retrieval", registered)]
    assert names == ["vector_weight", "fts_weight", "cjk_weight", "min_score", "test_boost"]
    assert tune_table("retrieval", registered) == "search.retrieval"
    assert BOOST not in tune_keys("fusion", registered)


def test_the_shipped_tune_lists_are_the_declared_ones() -> None:
    grid = importlib.import_module("groove_cli.evaluate.tune.grid")  # the package's grid()
    assert grid.FUSION_KEYS == ("rrf_k", "bm25_heading_weight", "bm25_context_weight",
                                "bm25_content_weight")
    assert grid.RETRIEVAL_KEYS == ("vector_weight", "fts_weight", "cjk_weight", "min_score")
    assert grid.METHOD_KEYS == ("method", "score_alpha", "score_alpha_short", "score_alpha_mid",
                                "score_alpha_long", "short_query_words", "mid_query_words",
                                "score_cjk_weight")
    assert grid.FEEDBACK_KEYS == ("vector_beta",)
    assert grid.PER_NOTE_KEYS == ("per_note",)
    assert grid.TABLES == {"fusion": "search.fusion", "retrieval": "search.retrieval",
                           "fusion-method": "search.fusion", "feedback": "search.feedback",
                           "per-note": "search"}
    condition = grid.default_condition("fusion-method")
    assert list(condition.values()) == list(grid.METHOD_KEYS)
    assert isinstance(condition.values()["short_query_words"], int)
