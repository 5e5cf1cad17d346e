"""The effective settings of a search (`SearchParams`) and the rules that derive them.

Settings (flag > file > preset > default) become one frozen `SearchParams`; the rules that
decide a value from several settings live here, not in the CLI: the quality threshold's
precedence, which reranker `search` and `eval` run, the limit clamp, and the once-per-run
warnings about settings and queries (cli.md §5). Every default comes from the config schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from groove_cli import config, messages
from groove_cli.config import MAX_LIMIT, Settings
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.fuse import min_score_warning
from groove_cli.retrieve.query import MAX_CJK_TERMS, CompiledQuery, ignored_symbols
from groove_cli.retrieve.relevance import Calibration, RerankCalibration

T = TypeVar("T")


def _default(key: str) -> float:
    return config.default_float(key)


def ranks(default: Any = None, *, member: str | None = None,
          when: Mapping[str, object] | None = None, factory: Callable[[], Any] | None = None
          ) -> Any:
    """A SearchParams field that can change which hits come back or their order: the eval
    fingerprint must see it (eval.md §6). `member`: the fingerprint member that carries it
    (None: the `search` member, derived from these declarations); `when`: other fields'
    values under which it has an effect (MMR's lambda only with MMR on)."""
    metadata = {"ranks": True, "member": member, "when": dict(when or {})}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def shows(default: Any, why: str) -> Any:
    """A SearchParams field that changes no hit and no order (what a hit shows, a marker, or a
    value derived from fingerprinted ones), with the reason."""
    return field(default=default, metadata={"ranks": False, "why": why})


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Effective settings of one search (already resolved: flag > config > preset > default).

    Every field declares whether it ranks (`ranks`) or not (`shows`), so the eval fingerprint
    cannot miss one (tests/test_fingerprint_complete.py)."""

    limit: int = ranks(5, member="limit")
    mode: str = ranks("hybrid", member="retrieval.mode")
    preset: str | None = ranks(None, member="retrieval.preset")
    dense_top_k: int | None = ranks(None, member="retrieval.dense_top_k")
    dense_top_k_from_preset: bool = shows(False, "where dense_top_k came from; the preset "
                                                 "and dense_top_k are fingerprinted")
    sparse_top_k: int | None = ranks(None, member="retrieval.sparse_top_k")
    sparse_top_k_from_preset: bool = shows(False, "where sparse_top_k came from; the preset "
                                                  "and sparse_top_k are fingerprinted")
    vector_weight: float = ranks(_default("search.retrieval.vector_weight"),
                                 member="retrieval.vector_weight", when={"fusion": "rrf"})
    fts_weight: float = ranks(_default("search.retrieval.fts_weight"),
                              member="retrieval.fts_weight", when={"fusion": "rrf"})
    cjk_weight: float = ranks(config.DEFAULT_CJK_WEIGHT, member="retrieval.cjk_weight",
                              when={"fusion": "rrf"})
    min_score: float = ranks(config.DEFAULT_MIN_SCORE, member="retrieval.min_score")
    rrf_k: float = ranks(config.DEFAULT_RRF_K, member="fusion.rrf_k", when={"fusion": "rrf"})
    fusion: str = ranks(config.DEFAULT_FUSION, member="fusion.method")
    """How the legs are fused (search.md §5): `rrf` or `score`."""
    score_alpha: float = ranks(config.DEFAULT_SCORE_ALPHA, member="fusion.score_alpha")
    score_cjk_weight: float = ranks(config.DEFAULT_SCORE_CJK_WEIGHT,
                                    member="fusion.score_cjk_weight")
    score_alpha_short: float = ranks(_default("search.fusion.score_alpha_short"),
                                     member="fusion.score_alpha_short")
    score_alpha_mid: float = ranks(_default("search.fusion.score_alpha_mid"),
                                   member="fusion.score_alpha_mid")
    score_alpha_long: float = ranks(_default("search.fusion.score_alpha_long"),
                                    member="fusion.score_alpha_long")
    short_query_words: int = ranks(config.default_int("search.fusion.short_query_words"),
                                   member="fusion.short_query_words")
    mid_query_words: int = ranks(config.default_int("search.fusion.mid_query_words"),
                                 member="fusion.mid_query_words")
    query_alpha: float | None = shows(None, "fixed per query (`for_query`) from the alphas, "
                                            "which are fingerprinted")
    """Score fusion's vector share fixed for one query (`for_query`); None: not fixed yet,
    `score_alpha` applies."""
    bm25_weights: tuple[float, float, float] = ranks(config.DEFAULT_BM25_WEIGHTS,
                                                     member="fusion.bm25_*")
    per_note: int = ranks(config.default_int("search.per_note"))
    """At most this many hits per note, taken from the fused list (search.md §5.2); 0: no cap."""
    feedback_beta: float = ranks(_default("search.feedback.vector_beta"))
    """Vector pseudo-relevance feedback's weight (search.md §5.1); 0: off."""
    feedback_docs: int = ranks(config.default_int("search.feedback.docs"))
    """How many first-fusion hits feed the query vector when `feedback_beta` > 0."""
    rerank: bool = shows(False, "set when a reranker runs; the reranker is fingerprinted")
    mmr: bool = ranks(False, member="mmr")
    mmr_lambda: float = ranks(_default("search.mmr.lambda"), member="mmr", when={"mmr": True})
    mmr_same_doc_penalty: float = ranks(_default("search.mmr.same_doc_penalty"), member="mmr",
                                        when={"mmr": True})
    parent_retriever: bool = ranks(False, member="parent_retriever")
    whole_doc_threshold_tokens: int = ranks(config.default_int(
        "search.parent_retriever.whole_doc_threshold_tokens"), member="parent_retriever",
        when={"parent_retriever": True})
    max_expanded_tokens: int = ranks(
        config.default_int("search.parent_retriever.max_expanded_tokens"),
        member="parent_retriever", when={"parent_retriever": True})
    min_confidence_ratio: float = shows(_default("search.min_confidence_ratio"),
                                        "the low-confidence marker only")
    filters: FilterSpec = ranks(factory=FilterSpec)
    spans: bool = shows(True, "match spans: what a hit shows, not which hits")
    calibration: Calibration | None = ranks(None)
    """The relevance model; None: the shipped one of the index's embedding model."""
    rerank_calibration: RerankCalibration | None = ranks(None)
    """The stacked model of reranked hits; None: a reranked hit's relevance ignores the
    reranker's score (relevance.py)."""
    min_relevance: float = ranks(0.0)
    """Hits whose relevance is below this are dropped (after every ranking stage)."""
    relevance_floor: float = ranks(_default("search.relevance.floor"))
    """Hybrid, when the full-text legs found nothing: hits below this relevance are dropped
    (search.md §12)."""
    unsupported_below: float = ranks(_default("search.relevance.unsupported_below"))
    """Hybrid: a hit no full-text leg found is dropped below this relevance (search.md §12)."""
    low_confidence_below: float = shows(_default("search.relevance.low_confidence_below"),
                                        "the low-confidence marker only")
    disabled_legs: frozenset[str] = ranks(frozenset())
    """Full-text legs switched off by name (eval --ablate), whatever their weights."""

    @property
    def alpha(self) -> float:
        """Score fusion's vector share: the query's (`for_query`), else `score_alpha`."""
        return self.score_alpha if self.query_alpha is None else self.query_alpha

    @property
    def score_vector_weight(self) -> float:
        """Score fusion's weight of the vector leg: the alpha; 1 in vector mode, where it is
        the only leg and ranks alone whatever the alpha."""
        return 1.0 if self.mode == "vector" else self.alpha

    @property
    def score_text_weight(self) -> float:
        """Score fusion's weight of each trigram and word-level leg: `1 − alpha`."""
        return 1.0 - self.alpha

    @property
    def score_alphas(self) -> tuple[float, ...]:
        """Every alpha a query can take under these settings (the mid tier only when
        `mid_query_words` is above `short_query_words`)."""
        mid = (self.score_alpha_mid,) if self.mid_query_words > self.short_query_words else ()
        return (self.score_alpha, self.score_alpha_short, *mid, self.score_alpha_long)

    def alpha_of(self, query: CompiledQuery) -> tuple[float, str]:
        """Score fusion's vector share for `query` and why (search.md §5): `score_alpha` for a
        query with CJK text; else `score_alpha_short` up to `short_query_words` word-level
        terms, `score_alpha_mid` up to `mid_query_words` and `score_alpha_long` above (short
        keyword queries lean on the vector leg, long descriptive ones on full text as much)."""
        return self.alpha_for(bool(query.cjk_terms), len(query.word_terms))

    def alpha_for(self, cjk_text: bool, words: int) -> tuple[float, str]:
        """`alpha_of` from the query's two inputs: whether it has CJK text and how many
        word-level terms it has (tune keeps these per golden query)."""
        if cjk_text:
            return self.score_alpha, "CJK text"
        if words <= self.short_query_words:
            return self.score_alpha_short, f"{words} word terms <= {self.short_query_words}"
        if words <= self.mid_query_words:
            return self.score_alpha_mid, f"{words} word terms <= {self.mid_query_words}"
        return (self.score_alpha_long,
                f"{words} word terms > {max(self.short_query_words, self.mid_query_words)}")

    def for_query(self, query: CompiledQuery) -> SearchParams:
        """These settings with score fusion's alpha fixed for `query` (unchanged under RRF)."""
        if self.fusion != "score":
            return self
        return replace(self, query_alpha=self.alpha_of(query)[0])


def configured_calibration(settings: Settings) -> Calibration | None:
    """`[search.relevance] calibration` when set (None: the model's shipped one)."""
    return _coefficients(settings, "calibration", Calibration.from_list)


def configured_rerank_calibration(settings: Settings) -> RerankCalibration | None:
    """`[search.relevance] rerank_calibration` when set (None: not fitted)."""
    return _coefficients(settings, "rerank_calibration", RerankCalibration.from_list)


def _coefficients(settings: Settings, key: str, parse: Callable[[list[float]], T]) -> T | None:
    values = settings[f"search.relevance.{key}"]
    if values is None:
        return None
    try:
        return parse([float(str(v)) for v in values])  # type: ignore[attr-defined]
    except ValueError as exc:
        from groove_cli.errors import ConfigError

        raise ConfigError(f"invalid config: search.relevance.{key}: {exc}") from None


def clamp_limit(limit: int, *, note: str | None = None) -> int:
    """Limits above 1000 are clamped, with a note (cli.md §5/§6)."""
    if limit > MAX_LIMIT:
        messages.note(note or f"--limit {limit} clamped to {MAX_LIMIT}")
        return MAX_LIMIT
    return limit


def build_params(settings: Settings, *, limit: int, rerank: bool, filters: FilterSpec,
                 spans: bool = True) -> SearchParams:
    """The effective search settings from a resolved Settings (flag > file > preset > default):
    every key that declares a `param` fills that field (config_schema.py); the fields composed
    from several keys or from the call are filled here."""
    s = settings
    declared: dict[str, Any] = {spec.param: _typed(s, spec) for spec in config.SCHEMA
                                if spec.param is not None}
    return SearchParams(
        **declared,
        limit=limit,
        dense_top_k_from_preset=s.source("search.retrieval.dense_top_k") == "preset",
        sparse_top_k_from_preset=s.source("search.retrieval.sparse_top_k") == "preset",
        bm25_weights=(s.float_("search.fusion.bm25_heading_weight"),
                      s.float_("search.fusion.bm25_context_weight"),
                      s.float_("search.fusion.bm25_content_weight")),
        rerank=rerank,
        calibration=configured_calibration(s),
        rerank_calibration=configured_rerank_calibration(s),
        filters=filters,
        spans=spans,
    )


def _typed(settings: Settings, spec: config.KeySpec) -> object:
    """A key's value as its field takes it (an int written for a float key becomes a float)."""
    if spec.kind == "float":
        return settings.float_(spec.key)
    if spec.kind == "bool":
        return settings.bool_(spec.key)
    return settings[spec.key]


def search_reranker(settings: Settings) -> str | None:
    """The reranker `search` runs: a flag always; one from config only with rerank_by_default."""
    value = eval_reranker(settings)
    if value and (settings.source("reranker") == "flag" or settings.bool_("rerank_by_default")):
        return value
    return None


def eval_reranker(settings: Settings) -> str | None:
    """The reranker `eval` runs: the one selected by flag or config (none = no reranker)."""
    value = settings.str_("reranker")
    return None if not value or value == "none" else value


def quality_threshold(settings: Settings, *, min_quality: float | None,
                      include_low_quality: bool) -> float:
    """The search's quality threshold: --include-low-quality (0) > --min-quality (clamped to
    [0, 1]) > [quality_filter] threshold when enabled > 0."""
    if include_low_quality:
        return 0.0
    if min_quality is not None:
        return max(0.0, min(1.0, min_quality))
    if settings.bool_("quality_filter.enabled"):
        return settings.float_("quality_filter.threshold")
    return 0.0


def settings_warnings(settings: Settings, params: SearchParams) -> None:
    """The MMR and min_score warnings of cli.md §5, once per run."""
    mmr_flags = {"search.mmr.lambda", "search.mmr.same_doc_penalty"} & settings.flags
    if not params.mmr and mmr_flags:
        messages.warning("MMR override values were provided but effective MMR is off; "
                         "values ignored")
    if params.mmr and params.mmr_lambda == 1.0 and params.mmr_same_doc_penalty == 0:
        messages.warning("MMR lambda 1.0 with no same-doc penalty ranks by relevance only")
    if params.fusion == "score":  # the query's alpha whose lighter leg can reach the least
        lightest = replace(params, query_alpha=min(params.score_alphas,
                                                   key=lambda a: min(a, 1.0 - a)))
        text = min_score_warning(params.mode, lightest.score_vector_weight,
                                 lightest.score_text_weight, params.min_score)
    else:
        text = min_score_warning(params.mode, params.vector_weight, params.fts_weight,
                                 params.min_score)
    if text:
        messages.warning(text)


def query_warnings(queries: Sequence[CompiledQuery]) -> None:
    """The phrase-cap warnings, once per run: for one search, or summed over eval's queries."""
    phrases = sum(1 for q in queries if q.phrases_capped and not q.cjk_terms)
    tokens = sum(1 for q in queries if q.phrases_capped and q.cjk_terms)
    negatives = sum(1 for q in queries if q.negatives_capped)
    if tokens:
        which = "the query has" if len(queries) == 1 else f"{tokens} of {len(queries)} queries have"
        messages.warning(f"{which} more than {MAX_CJK_TERMS} CJK tokens (or 32 words); only the "
                         "first are searched")
    if len(queries) == 1:
        for term in ignored_symbols(queries[0]):
            messages.note(f"`{term}` ignored: punctuation alone is not searched (a full-text "
                          "term needs a letter, a digit or 3 characters); describe it in words")
        if phrases:
            messages.warning("the query has more than 32 distinct phrases; only the first 32 "
                             "are searched")
        if negatives:
            messages.warning("the query has more than 32 distinct exclusions; only the first "
                             "32 apply")
        return
    if phrases:
        messages.warning(f"{phrases} of {len(queries)} queries have more than 32 distinct "
                         "phrases; only the first 32 of each are searched")
    if negatives:
        messages.warning(f"{negatives} of {len(queries)} queries have more than 32 distinct "
                         "exclusions; only the first 32 of each apply")
