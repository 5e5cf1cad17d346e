"""The run fingerprint: which settings a run was measured with (eval.md §6).

Two runs are compared only when their fingerprints are equal. Optional members appear only when
they differ from the built-in defaults. The `search` member is derived, not listed: every
SearchParams field declared to rank (retrieve/params.py `ranks`) without a member of its own, and
every ranking config key that reaches the search outside SearchParams, appear there when not at
their defaults — tests/test_fingerprint_complete.py fails when a field or key is left out.
`fingerprint_version` changes whenever what the fingerprint covers changes, so a run recorded
by an older groove is never taken for one with the same settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from groove_cli.config import (
    DEFAULT_BM25_WEIGHTS,
    DEFAULT_LEG_WEIGHT,
    DEFAULT_MIN_SCORE,
    DEFAULT_RRF_K,
    SPECS,
    Settings,
)
from groove_cli.evaluate.metrics import METRIC_VERSION
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.query import FTS_QUERY_VERSION

DEFAULT_MODE = SPECS["search.retrieval.mode"].default
FINGERPRINT_VERSION = 2
"""1 (absent): before the `search` member; such a run's settings are not fully known, so it is
never compared as equal with a run of today."""
SETTINGS_OUTSIDE_PARAMS = ("vector_pieces", "store.ef_search")
"""Ranking config keys (config_schema `ranks=True`) that reach the search without passing
through SearchParams: the Searcher's piece rule and pgvector's search breadth."""


def _json_value(value: object) -> object:
    """A field value as the fingerprint stores it: a fitted model as its coefficient list,
    a filter set as its non-default members, a set sorted."""
    if isinstance(value, frozenset | set):
        return sorted(value)
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        default = None
        try:
            default = type(value)()
        except TypeError:  # a model's coefficients: every one of them, in order
            flat: list[object] = []
            for item in dataclasses.astuple(value):
                flat.extend(item if isinstance(item, tuple) else (item,))
            return flat
        return {f.name: _json_value(getattr(value, f.name)) for f in dataclasses.fields(value)
                if getattr(value, f.name) != getattr(default, f.name)}
    return value


def search_member(settings: Settings, params: SearchParams) -> tuple[tuple[str, object], ...]:
    """The `search` member's (name, value) pairs: each ranking SearchParams field without a
    member of its own, then each key of SETTINGS_OUTSIDE_PARAMS, when not at its default."""
    default = type(params)()
    found: list[tuple[str, object]] = []
    for f in dataclasses.fields(params):
        if f.metadata.get("ranks") and f.metadata.get("member") is None:
            value = getattr(params, f.name)
            if value != getattr(default, f.name):
                found.append((f.name, _json_value(value)))
    for key in SETTINGS_OUTSIDE_PARAMS:
        if settings[key] != SPECS[key].default:
            found.append((key, settings[key]))
    return tuple(found)


def implied_search_defaults() -> Mapping[str, object]:
    """What an absent `search.*` member means: the field's or key's default (for diffs)."""
    default = SearchParams()
    implied: dict[str, object] = {
        f"search.{f.name}": _json_value(getattr(default, f.name))
        for f in dataclasses.fields(SearchParams)
        if f.metadata.get("ranks") and f.metadata.get("member") is None}
    implied.update({f"search.{key}": SPECS[key].default for key in SETTINGS_OUTSIDE_PARAMS})
    return implied


@dataclass(frozen=True, slots=True, kw_only=True)
class FingerprintInputs:
    """The effective settings of a run (command-line overrides included) and the index context mode.

    `mmr` is (lambda, same_doc_penalty) when MMR is effective, else None; `parent_retriever` is
    (whole_doc_threshold_tokens, max_expanded_tokens) when enabled, else None; top-k values are
    None when unset; `max_length_override` is None unless the embedding max_length is overridden.
    Every field is required so that a caller cannot forget one and silently fingerprint a default.
    """

    model: str
    reranker: str | None
    limit: int
    k_values: tuple[int, ...]
    golden_hash: str
    max_length_override: int | None
    mmr: tuple[float, float] | None
    parent_retriever: tuple[int, int] | None
    rrf_k: float
    bm25_heading_weight: float
    bm25_context_weight: float
    bm25_content_weight: float
    preset: str | None
    mode: str
    dense_top_k: int | None
    sparse_top_k: int | None
    vector_weight: float
    min_score: float
    context_mode: str
    score_fusion: tuple[float, float, float, float, float, int, int] | None = None
    """(score_alpha, score_cjk_weight, score_alpha_short, score_alpha_mid, score_alpha_long,
    short_query_words, mid_query_words) when the fusion method is `score`; None for RRF."""
    leg_weights: tuple[tuple[str, float, float], ...] = ()
    """The full-text legs' fusion weights: (key, value, built-in default), one per distinct
    weight key of retrieve/legs.py's registry, in fusion order."""
    search: tuple[tuple[str, object], ...]
    """`search_member`: the ranking settings no other member carries, when not default."""


def build_fingerprint(inputs: FingerprintInputs) -> dict[str, object]:
    """The ConfigFingerprint as a JSON-ready dict, members in the spec's order.

    Args:
        inputs: the effective settings.

    Returns:
        model, reranker, limit, k_values, golden_hash, metric_version, fts_query_version, then
        max_length / mmr / parent_retriever / fusion / retrieval / context when not default.
    """
    fp: dict[str, object] = {
        "model": inputs.model,
        "reranker": inputs.reranker,
        "limit": inputs.limit,
        "k_values": list(inputs.k_values),
        "golden_hash": inputs.golden_hash,
        "metric_version": METRIC_VERSION,
        "fts_query_version": FTS_QUERY_VERSION,
        "fingerprint_version": FINGERPRINT_VERSION,
    }
    if inputs.max_length_override is not None:
        fp["max_length"] = inputs.max_length_override
    if inputs.mmr is not None:
        mmr_lambda, same_doc_penalty = inputs.mmr
        fp["mmr"] = {"lambda": float(mmr_lambda), "same_doc_penalty": float(same_doc_penalty)}
    if inputs.parent_retriever is not None:
        whole_doc, max_expanded = inputs.parent_retriever
        fp["parent_retriever"] = {
            "whole_doc_threshold_tokens": whole_doc,
            "max_expanded_tokens": max_expanded,
        }
    fusion = (
        float(inputs.rrf_k),
        float(inputs.bm25_heading_weight),
        float(inputs.bm25_context_weight),
        float(inputs.bm25_content_weight),
    )
    if fusion != (DEFAULT_RRF_K, *DEFAULT_BM25_WEIGHTS) or inputs.score_fusion is not None:
        member: dict[str, object] = {
            "rrf_k": fusion[0],
            "bm25_heading_weight": fusion[1],
            "bm25_context_weight": fusion[2],
            "bm25_content_weight": fusion[3],
        }
        if inputs.score_fusion is not None:
            alpha, cjk, short, mid, long, words, mid_words = inputs.score_fusion
            member.update(method="score", score_alpha=float(alpha), score_cjk_weight=float(cjk),
                          score_alpha_short=float(short), score_alpha_mid=float(mid),
                          score_alpha_long=float(long), short_query_words=int(words),
                          mid_query_words=int(mid_words))
        fp["fusion"] = member
    retrieval = _retrieval_member(inputs)
    if retrieval:
        fp["retrieval"] = retrieval
    if inputs.search:
        fp["search"] = dict(inputs.search)
    if inputs.context_mode == "static":
        fp["context"] = {"mode": "static"}
    return fp


def _retrieval_member(inputs: FingerprintInputs) -> dict[str, object]:
    """The non-default resolved retrieval values, in the spec's member order."""
    member: dict[str, object] = {}
    if inputs.preset is not None:
        member["preset"] = inputs.preset
    if inputs.mode != DEFAULT_MODE:
        member["mode"] = inputs.mode
    if inputs.dense_top_k is not None:
        member["dense_top_k"] = inputs.dense_top_k
    if inputs.sparse_top_k is not None:
        member["sparse_top_k"] = inputs.sparse_top_k
    if inputs.vector_weight != DEFAULT_LEG_WEIGHT:
        member["vector_weight"] = float(inputs.vector_weight)
    for key, value, default in inputs.leg_weights:
        if value != default:
            member[key] = float(value)
    if inputs.min_score != DEFAULT_MIN_SCORE:
        member["min_score"] = float(inputs.min_score)
    return member
