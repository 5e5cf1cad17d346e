"""The eval fingerprint cannot miss a ranking setting (eval.md §6, issue 38).

Every SearchParams field declares whether it ranks (retrieve/params.py `ranks`/`shows`) and every
config key whether it does (config_schema `ranks=`); each one that ranks must change the
fingerprint when its value changes — under the settings in which it has an effect. A field or
key added without a declaration, or declared to rank but not fingerprinted, fails here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import groove_cli
from groove_cli.config import SCHEMA, SPECS, Settings, resolve
from groove_cli.config_schema import DEFAULT_MODEL, KeySpec
from groove_cli.evaluate.baseline import settings_diff
from groove_cli.evaluate.fingerprint import build_fingerprint
from groove_cli.evaluate.history import CONFIG_CHANGED
from groove_cli.evaluate.runner import fingerprint_inputs
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.params import SearchParams, build_params, eval_reranker
from groove_cli.retrieve.relevance import FEATURES, Calibration, RerankCalibration

# Values a field or key takes in the perturbation tests where "the default plus a bit" does
# not fit its type.
FIELD_VALUES: dict[str, object] = {
    "mode": "fts", "fusion": "rrf", "preset": "fast", "bm25_weights": (3.0, 1.0, 1.0),
    "filters": FilterSpec(tags_any=("ops",)), "disabled_legs": frozenset({"fts_words"}),
    "calibration": Calibration.from_list([0.5] * (len(FEATURES) + 1)),
    "rerank_calibration": RerankCalibration(0.0, 1.0, 0.5),
}
KEY_VALUES: dict[str, object] = {
    "model": "other-model", "reranker": "some-reranker",
    "search.relevance.calibration": [0.5] * (len(FEATURES) + 1),
    "search.relevance.rerank_calibration": [0.0, 1.0, 0.5],
    "eval.k_values": [1, 5, 20],
}
# The settings under which a key has an effect: the key-level twin of its field's `when`,
# mapped through the keys' `param` declarations (fusion -> search.fusion.method).
FIELD_KEYS = {spec.param: spec.key for spec in SCHEMA if spec.param is not None}
KEY_CONTEXT: dict[str, dict[str, object]] = {
    FIELD_KEYS[f.name]: {FIELD_KEYS[name]: value for name, value in f.metadata["when"].items()}
    for f in dataclasses.fields(SearchParams)
    if f.name in FIELD_KEYS and f.metadata.get("when")}
# The fields build_params fills from the call or from several keys, not from one `param` key.
COMPOSED_FIELDS = {"limit", "rerank", "filters", "spans", "dense_top_k_from_preset",
                   "sparse_top_k_from_preset", "bm25_weights", "calibration",
                   "rerank_calibration", "query_alpha", "disabled_legs"}

def changed(value: object, choices: tuple[str, ...] = ()) -> object:
    """Another value of the same type: a bool flipped, a number moved, another choice."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.125
    if choices:
        return next(c for c in choices if c != value)
    if value is None:
        return 7
    raise AssertionError(f"no perturbation for {value!r}: add one to FIELD_VALUES/KEY_VALUES")


def fingerprint_of(settings: Settings, params: SearchParams | None = None) -> dict[str, object]:
    """The fingerprint eval records for these settings, derived as runner.py derives it."""
    if params is None:
        params = build_params(settings, limit=10, rerank=eval_reranker(settings) is not None,
                              filters=FilterSpec(quality_threshold=0.0), spans=False)
    return build_fingerprint(fingerprint_inputs(
        settings, params, model=settings.str_("model") or DEFAULT_MODEL,
        reranker=eval_reranker(settings), limit=params.limit,
        k_values=tuple(int(str(k)) for k in settings.list_("eval.k_values")),
        golden_hash="ab" * 32, context_mode="off"))


def test_every_search_params_field_says_whether_it_ranks() -> None:
    undeclared = [f.name for f in dataclasses.fields(SearchParams) if "ranks" not in f.metadata]
    assert undeclared == []
    for f in dataclasses.fields(SearchParams):
        if not f.metadata["ranks"]:
            assert f.metadata["why"], f.name  # a field that does not rank says why


def test_every_config_key_says_whether_it_ranks() -> None:
    assert [spec.key for spec in SCHEMA if spec.ranks is None] == []


def test_every_field_is_fed_by_one_declared_key_or_composed_by_hand() -> None:
    names = {f.name for f in dataclasses.fields(SearchParams)}
    fed = [spec.param for spec in SCHEMA if spec.param is not None]
    assert len(fed) == len(set(fed))  # one key per field
    assert set(fed) <= names and not set(fed) & COMPOSED_FIELDS
    assert names - set(fed) == COMPOSED_FIELDS  # a new field needs a key or a line here
    for spec in SCHEMA:
        if spec.param is not None:  # the key and its field agree on ranking
            field = next(f for f in dataclasses.fields(SearchParams) if f.name == spec.param)
            assert field.metadata["ranks"] == spec.ranks, spec.key


def test_the_context_table_is_derived_from_the_fields() -> None:
    assert KEY_CONTEXT["search.mmr.lambda"] == {"search.mmr.enabled": True}
    assert KEY_CONTEXT["search.fusion.rrf_k"] == {"search.fusion.method": "rrf"}
    assert KEY_CONTEXT["search.parent_retriever.max_expanded_tokens"] == {
        "search.parent_retriever.enabled": True}


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(SearchParams)
                                  if f.metadata.get("ranks")])
def test_each_ranking_field_changes_the_fingerprint(name: str) -> None:
    meta = next(f for f in dataclasses.fields(SearchParams) if f.name == name).metadata
    settings = resolve({}, {})
    base = dataclasses.replace(SearchParams(), **meta["when"])
    value = FIELD_VALUES[name] if name in FIELD_VALUES else changed(getattr(base, name))
    other = dataclasses.replace(base, **{name: value})
    assert fingerprint_of(settings, other) != fingerprint_of(settings, base)


@pytest.mark.parametrize("spec", [s for s in SCHEMA if s.ranks], ids=lambda s: s.key)
def test_each_ranking_key_changes_the_fingerprint(spec: KeySpec) -> None:
    context = KEY_CONTEXT.get(spec.key, {})
    base = resolve({}, context)
    value = (KEY_VALUES[spec.key] if spec.key in KEY_VALUES
             else changed(base[spec.key], spec.choices))
    other = resolve({}, {**context, spec.key: value})
    assert fingerprint_of(other) != fingerprint_of(base)


def test_a_key_that_does_not_rank_leaves_the_fingerprint_alone() -> None:
    base = resolve({}, {})
    for key in ("threads", "quality_filter.threshold", "search.min_confidence_ratio",
                "eval.history_size"):
        assert not SPECS[key].ranks
        other = resolve({}, {key: changed(base[key])})
        assert fingerprint_of(other) == fingerprint_of(base), key


def test_the_search_member_carries_min_relevance_and_a_diff_names_it() -> None:
    base = fingerprint_of(resolve({}, {}))
    strict = fingerprint_of(resolve({}, {"search.relevance.min_relevance": 0.9}))
    assert "search" not in base and strict["search"] == {"min_relevance": 0.9}
    assert base["fingerprint_version"] == 2
    assert settings_diff(base, strict) == [
        {"setting": "search.min_relevance", "before": 0.0, "after": 0.9}]
    older = {k: v for k, v in base.items() if k != "fingerprint_version"}
    assert settings_diff(older, base) == [
        {"setting": "fingerprint_version", "before": 1, "after": 2}]


def test_min_relevance_runs_are_not_comparable_with_default_runs(sample_kb: Path) -> None:
    """The case of issue 38: a run at min_relevance 0.9 loses most of its recall; it must
    never be compared with a default run as if the settings were the same."""
    with groove_cli.open(sample_kb) as kb:
        default = kb.evaluate(k=[10])
    with groove_cli.open(sample_kb, min_relevance=0.9) as kb:
        strict = kb.evaluate(k=[10])
    assert default.run["fingerprint"] != strict.run["fingerprint"]
    assert strict.run["fingerprint"]["search"] == {"min_relevance": 0.9}
    assert strict.compared is None and strict.incompatibility == CONFIG_CHANGED
    drop: Any = strict.run["aggregate"]["recall_at_k"]["10"]
    assert drop < default.run["aggregate"]["recall_at_k"]["10"]
    json.dumps(strict.to_json())  # the report stays JSON
