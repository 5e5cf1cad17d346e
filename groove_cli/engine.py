"""The engine's stages, for benchmarks and research: stable names, no CLI.

`groove_cli.open(...)` and its `Index` are the door for using groove; this namespace is the
second public door, for code that measures or studies one stage on its own (bench/): the bare
embedder against an index's throughput, one full-text leg against a bare FTS5 query, the vector
snapshot against numpy, tune's phases, model conversion and quantisation, each leg's list with
its scores for fusion research. The names are the engine's own (no copies); they are grouped
below and load on first use, and `import groove_cli` never imports this module.

    import groove_cli
    from groove_cli import engine

    with groove_cli.open("golden") as kb:
        searcher = engine.searcher_of(kb)          # the stage-level reader of that index
        query = engine.compile_query("retry storms")
        words = next(leg for leg in engine.registered() if leg.name == "words")
        ids = searcher.store.fts_scored_ids(query.word_expr, engine.DEFAULT_BM25_WEIGHTS,
                                            10, words.table)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groove_cli.api import Index
    from groove_cli.chunk import (
        DEFAULT_MAX_TOKENS,
        chunker_fingerprint,
        estimate_tokens,
        parse_document,
    )
    from groove_cli.config import (
        DEFAULT_BM25_WEIGHTS,
        DEFAULT_CJK_WEIGHT,
        DEFAULT_LEG_WEIGHT,
        DEFAULT_RRF_K,
        Settings,
    )
    from groove_cli.dburl import DEFAULT_EF_SEARCH, PgTarget, kb_name_for
    from groove_cli.evaluate.golden import Expected, load_golden
    from groove_cli.evaluate.metrics import HitRecord, entry_matches, score_query
    from groove_cli.evaluate.paired import paired_delta, randomization_p
    from groove_cli.evaluate.report import aggregate
    from groove_cli.evaluate.stats import bootstrap_ci
    from groove_cli.evaluate.tune.calibrate import (
        LabelledHit,
        cross_fitted,
        expected_calibration_error,
        fit_logistic,
        split_half,
    )
    from groove_cli.evaluate.tune.grid import label_of
    from groove_cli.evaluate.tune.lists import ListFetcher
    from groove_cli.evaluate.tune.run import PHASES as TUNE_PHASES
    from groove_cli.evaluate.tune.run import TuneRequest, run_tune
    from groove_cli.index import embedding_input
    from groove_cli.models import Embedder, default_models_dir, resolve_model
    from groove_cli.models.directory import ResolvedModel, file_sha256, write_model_toml
    from groove_cli.models.pack import (
        PACK_VARIANT,
        PROBES,
        convert,
        find_pack,
        quantize_int8,
        read_pack,
        write_converted,
    )
    from groove_cli.models.registry import REGISTRY
    from groove_cli.models.resolve import model_record
    from groove_cli.models.runtime import (
        BATCH_BUDGET,
        length_batches,
        pad_batch,
    )
    from groove_cli.retrieve.filters import FilterSpec, compile_filters
    from groove_cli.retrieve.legs import (
        NO_FILTER,
        candidate_pool,
        excluded_ids,
        fetch_size,
        fts_exprs,
        keep,
        registered,
        vector_k,
        vector_leg,
    )
    from groove_cli.retrieve.params import SearchParams, build_params
    from groove_cli.retrieve.pipeline import pool_sizes, search
    from groove_cli.retrieve.query import FTS_QUERY_VERSION, CompiledQuery, compile_query
    from groove_cli.retrieve.relevance import FEATURES, Calibration, default_calibration, relevance
    from groove_cli.retrieve.searcher import Searcher
    from groove_cli.store import FTS_TABLES, SCHEMA_VERSION, Store, open_writer, utc_now
    from groove_cli.store.postgres.reads import knn_sql
    from groove_cli.store.postgres.store import HNSW_EF_CONSTRUCTION
    from groove_cli.text import cjk
    from groove_cli.text.words import (
        ENGLISH_STOPWORDS,
        is_latin_text,
        latin_words,
        match_expression,
        or_expr,
        select_terms,
    )
    from groove_cli.types import ChunkRow, DocumentRow
    from groove_cli.vectors import refresh_snapshot

_GROUPS: dict[str, tuple[str, ...]] = {
    # models: resolve, load and run the embedder; convert and quantise the offline pack
    "groove_cli.models": ("Embedder", "default_models_dir", "resolve_model"),
    "groove_cli.models.directory": ("ResolvedModel", "file_sha256", "write_model_toml"),
    "groove_cli.models.pack": ("PACK_VARIANT", "PROBES", "convert", "find_pack", "quantize_int8",
                               "read_pack", "write_converted"),
    "groove_cli.models.registry": ("REGISTRY",),
    "groove_cli.models.resolve": ("model_record",),
    "groove_cli.models.runtime": ("BATCH_BUDGET", "length_batches", "pad_batch"),
    # store: the index's rows written without the indexer, its readers, the Postgres target
    "groove_cli.store": ("FTS_TABLES", "SCHEMA_VERSION", "Store", "open_writer", "utc_now"),
    "groove_cli.store.postgres.reads": ("knn_sql",),
    "groove_cli.store.postgres.store": ("HNSW_EF_CONSTRUCTION",),
    "groove_cli.dburl": ("DEFAULT_EF_SEARCH", "PgTarget", "kb_name_for"),
    "groove_cli.types": ("ChunkRow", "DocumentRow"),
    "groove_cli.chunk": ("DEFAULT_MAX_TOKENS", "chunker_fingerprint", "estimate_tokens",
                         "parse_document"),
    "groove_cli.index": ("embedding_input",),
    "groove_cli.vectors": ("refresh_snapshot",),
    # legs: the query compiler, the tokenisers, each leg and the pipeline around them
    "groove_cli.config": ("DEFAULT_BM25_WEIGHTS", "DEFAULT_CJK_WEIGHT", "DEFAULT_LEG_WEIGHT",
                          "DEFAULT_RRF_K"),
    "groove_cli.text": ("cjk",),
    "groove_cli.text.words": ("ENGLISH_STOPWORDS", "is_latin_text", "latin_words",
                              "match_expression", "or_expr", "select_terms"),
    "groove_cli.retrieve.query": ("FTS_QUERY_VERSION", "CompiledQuery", "compile_query"),
    "groove_cli.retrieve.filters": ("FilterSpec", "compile_filters"),
    "groove_cli.retrieve.params": ("SearchParams", "build_params"),
    "groove_cli.retrieve.legs": ("NO_FILTER", "candidate_pool", "excluded_ids", "fetch_size",
                                 "fts_exprs", "keep", "registered", "vector_k", "vector_leg"),
    "groove_cli.retrieve.pipeline": ("pool_sizes", "search"),
    "groove_cli.retrieve.searcher": ("Searcher",),
    "groove_cli.retrieve.relevance": ("FEATURES", "Calibration", "default_calibration",
                                      "relevance"),
    # evaluation: eval's formulas and statistics, for runs groove did not make (peers)
    "groove_cli.evaluate.golden": ("Expected", "load_golden"),
    "groove_cli.evaluate.metrics": ("HitRecord", "entry_matches", "score_query"),
    "groove_cli.evaluate.report": ("aggregate",),
    "groove_cli.evaluate.stats": ("bootstrap_ci",),
    "groove_cli.evaluate.paired": ("paired_delta", "randomization_p"),
    # tune phases: the run with its phase hook, its lists, the calibration fit
    "groove_cli.evaluate.tune.run": ("TUNE_PHASES", "TuneRequest", "run_tune"),
    "groove_cli.evaluate.tune.grid": ("label_of",),
    "groove_cli.evaluate.tune.lists": ("ListFetcher",),
    "groove_cli.evaluate.tune.calibrate": ("LabelledHit", "cross_fitted",
                                           "expected_calibration_error", "fit_logistic",
                                           "split_half"),
}
_RENAMED = {"TUNE_PHASES": "PHASES"}
_HOME = {name: module for module, names in _GROUPS.items() for name in names}

__all__ = [
    "BATCH_BUDGET",
    "DEFAULT_BM25_WEIGHTS",
    "DEFAULT_CJK_WEIGHT",
    "DEFAULT_EF_SEARCH",
    "DEFAULT_LEG_WEIGHT",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_RRF_K",
    "ENGLISH_STOPWORDS",
    "FEATURES",
    "FTS_QUERY_VERSION",
    "FTS_TABLES",
    "HNSW_EF_CONSTRUCTION",
    "NO_FILTER",
    "PACK_VARIANT",
    "PROBES",
    "REGISTRY",
    "SCHEMA_VERSION",
    "TUNE_PHASES",
    "Calibration",
    "ChunkRow",
    "CompiledQuery",
    "DocumentRow",
    "Embedder",
    "Expected",
    "FilterSpec",
    "HitRecord",
    "LabelledHit",
    "ListFetcher",
    "PgTarget",
    "ResolvedModel",
    "SearchParams",
    "Searcher",
    "Store",
    "TuneRequest",
    "aggregate",
    "bootstrap_ci",
    "build_params",
    "candidate_pool",
    "chunker_fingerprint",
    "cjk",
    "compile_filters",
    "compile_query",
    "compiling_with",
    "convert",
    "cross_fitted",
    "default_calibration",
    "default_models_dir",
    "default_settings",
    "embedding_input",
    "entry_matches",
    "estimate_tokens",
    "excluded_ids",
    "expected_calibration_error",
    "fetch_size",
    "file_sha256",
    "find_pack",
    "fit_logistic",
    "fts_exprs",
    "is_latin_text",
    "kb_name_for",
    "keep",
    "knn_sql",
    "label_of",
    "latin_words",
    "length_batches",
    "load_golden",
    "match_expression",
    "model_record",
    "open_writer",
    "or_expr",
    "pad_batch",
    "paired_delta",
    "parse_document",
    "pool_sizes",
    "quantize_int8",
    "randomization_p",
    "read_pack",
    "refresh_snapshot",
    "registered",
    "relevance",
    "resolve_model",
    "run_tune",
    "score_query",
    "search",
    "searcher_of",
    "select_terms",
    "split_half",
    "utc_now",
    "vector_k",
    "vector_leg",
    "write_converted",
    "write_model_toml",
]


def __getattr__(name: str) -> Any:
    """The re-exported names, imported on first use (this module stays cheap to import)."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), _RENAMED.get(name, name))


def __dir__() -> list[str]:
    return __all__


def default_settings() -> Settings:
    """The built-in settings: no groove.toml, no GROOVE_* variable, no override (what a
    benchmark measures so that no local file changes its figures)."""
    from groove_cli import config

    return config.resolve({}, {})


def searcher_of(index: Index) -> Searcher:
    """A stage-level reader (`Searcher`) of an opened `Index`, with its settings' model and
    length; the caller closes it. For the legs, the store and the vector snapshot on their own."""
    from groove_cli.retrieve.searcher import Searcher

    return Searcher.from_settings(index.settings, index.location, index.kb)


@contextmanager
def compiling_with(compiler: Callable[[str], CompiledQuery]) -> Iterator[None]:
    """Within the block, `Index.evaluate` compiles the golden queries with `compiler` instead of
    `compile_query` (research on the query compiler: an older version against today's)."""
    from groove_cli.evaluate.runner import QUERY_COMPILER

    token = QUERY_COMPILER.set(compiler)
    try:
        yield
    finally:
        QUERY_COMPILER.reset(token)
