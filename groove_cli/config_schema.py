"""The groove.toml schema: every key with its type, default and range, the presets, and the
built-in defaults and caps derived from it. The single source of truth that validation,
`config show`, the shared retrieval flags of `search`/`eval` (cli_options.py), `build_params`
(retrieve/params.py), the eval fingerprint, tune's key lists and the groove.toml.example test
read. Adding a setting is one `KeySpec` here plus the stage that reads it (code.md §"Adding a
setting").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["path", "str", "int", "float", "bool", "list_str", "list_int", "list_float", "enum",
               "enum_opt"]
TuneSpace = Literal["fusion", "retrieval", "fusion-method", "feedback", "per-note"]
"""The grids `groove tune --space` sweeps (tune.md §4)."""

DEFAULT_MODEL = "multilingual-e5-small"
DEFAULT_EXCLUDE_DIRS = (".obsidian", ".git", "node_modules", "target", ".vscode", ".idea")
PARSER_IDS = ("md", "txt")
MODES = ("hybrid", "vector", "fts")
FUSION_METHODS = ("rrf", "score")
"""How the legs' lists are fused (search.md §5): weighted RRF of ranks, or a weighted sum of
normalised leg scores."""
PRESETS = ("fast", "balanced", "accurate")
MAX_TOP_K = 4096
"""Cap on a leg's candidate count: `dense_top_k`, `sparse_top_k` and the vector leg's k."""
MAX_LIMIT = 1000
"""Cap on the hits of one search (`--limit`, eval's depth, tune's limit and every k)."""


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One config key: dotted name, kind, default (None = unset) and range."""

    key: str
    kind: Kind
    default: object = None
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    finite: bool = False
    help: str = ""
    ranks: bool | None = None
    """Whether the key can change which hits a search of a given index returns, or their order,
    so it must reach the eval fingerprint (eval.md §6). Keys that shape the index itself (which
    files, which chunks) reach eval through the corpus digest instead. Every key says so
    explicitly: None is refused by tests/test_fingerprint_complete.py."""
    flag: str | None = None
    """The option `search` and `eval` share for it (`--rrf-k`); its help is `help` plus the
    range and default, generated (cli_options.retrieval_options)."""
    param: str | None = None
    """The `SearchParams` field it feeds one to one (`build_params`); keys that feed a field
    together with others (the bm25 weights, the calibrations) are composed there by hand."""
    tune: TuneSpace | None = None
    """The tune space whose grid sweeps it (tune.md §4); None: tune holds it at its value."""

    @property
    def table(self) -> str:
        return self.key.rpartition(".")[0]

    @property
    def name(self) -> str:
        return self.key.rpartition(".")[2]


SCHEMA: tuple[KeySpec, ...] = (
    KeySpec("kb_path", "path", help="Knowledge-base root (the folder of notes).", ranks=False),
    KeySpec("db_path", "path", help="Index file; default <state folder>/index.db.", ranks=False),
    KeySpec("store.location", "enum_opt", None, choices=("kb", "user"),
            help="The KB's state folder (index, snapshot, eval history): kb = <kb>/.groove/, "
                 "user = the user's data folder; unset: kb, or user when the KB is read-only.",
            ranks=False),
    KeySpec("store.url", "str",
            help="postgresql://… URL of a Postgres store (GROOVE_DB_URL and --db override it).",
            ranks=False),
    KeySpec("store.kb", "str", help="KB id in a Postgres store; default: from the KB folder.",
            ranks=False),
    KeySpec("store.ef_search", "int", 800, 1, 1000,
            help="pgvector HNSW ef_search (raised to the vector leg's k).", ranks=True),
    KeySpec("store.vector_index", "enum", "hnsw", choices=("hnsw", "exact"),
            help="A new Postgres KB's vectors: hnsw (pgvector) or exact (KNN in groove).",
            ranks=False),
    KeySpec("model", "str", help="Embedding model: registry name or model directory.", ranks=True),
    KeySpec("max_length", "int", lo=16, help="Embedding input cap in tokens.", ranks=True),
    KeySpec("vector_pieces", "bool", True,
            help="Embed a chunk longer than max_length in window-sized pieces; the vector leg "
                 "ranks it by its first piece, or by a later one less what its number of pieces "
                 "gains by chance when that is higher. false: truncate at max_length.", ranks=True),
    KeySpec("threads", "int", 0, 0, 1024,
            help="Model threads of `index` (and eval's batched queries); 0: the cores this "
                 "process may use. GROOVE_THREADS overrides it.", ranks=False),
    KeySpec("reranker", "str", "none", help="Reranker: registry name, directory or none.",
            ranks=True),
    KeySpec("rerank_by_default", "bool", True, help="Use a configured reranker in search.",
            ranks=False),
    KeySpec("models_dir", "path", help="Model cache folder.", ranks=False),
    KeySpec("exclude_dirs", "list_str", list(DEFAULT_EXCLUDE_DIRS), help="Skipped folders.",
            ranks=False),
    KeySpec("index_hidden_dirs", "bool", False,
            help="Also index folders whose name starts with '.' (.github, .claude, …).",
            ranks=False),
    KeySpec("exclude_headings", "list_str", [],
            help="Drop sections whose heading contains one of these.", ranks=False),
    KeySpec("chunk.heading_levels", "list_int", [2, 3, 4, 5, 6], 1, 6,
            help="Markdown heading levels (# = 1 … ###### = 6) that start a section; a "
                 "note's # title stays in its first chunk.",
            ranks=False),
    KeySpec("chunk.max_tokens", "int", 700, 32, 8192,
            help="Largest chunk in estimated model tokens; longer sections are split at "
                 "paragraphs and code blocks.", ranks=False),
    KeySpec("chunk.html_comments", "bool", False,
            help="Index the text inside HTML comments (<!-- … -->).", ranks=False),
    KeySpec("parsers.enabled", "list_str", ["md"], help="File types: md, txt.", ranks=False),
    KeySpec("quality_filter.enabled", "bool", True,
            help="search drops chunks whose quality score is below threshold.", ranks=False),
    KeySpec("quality_filter.threshold", "float", 0.3, 0.0, 1.0,
            help="search's quality threshold (eval and tune never apply it).", ranks=False),
    KeySpec("search.min_confidence_ratio", "float", 1.06, 0.0, None, finite=True,
            help="Without the vector leg (fts mode): low_confidence when max/mean score is "
                 "below this; 0 disables.", ranks=False, param="min_confidence_ratio"),
    KeySpec("search.relevance.low_confidence_below", "float", 0.35, 0.0, 1.0,
            help="low_confidence when the best hit's relevance is below this (0: never).",
            ranks=False, param="low_confidence_below"),
    KeySpec("search.relevance.min_relevance", "float", 0.0, 0.0, 1.0,
            help="Drop hits whose estimated relevance is below this; may leave no hit.",
            ranks=True, flag="--min-relevance", param="min_relevance"),
    # floor, unsupported_below and the ratio above: bench/results/noise_floor.md
    KeySpec("search.relevance.floor", "float", 0.15, 0.0, 1.0,
            help="Hybrid, when no full-text leg finds anything: hits need at least this "
                 "relevance (0: keep every hit).", ranks=True, param="relevance_floor"),
    KeySpec("search.relevance.unsupported_below", "float", 0.002, 0.0, 1.0,
            help="Hybrid: a hit no full-text leg found needs at least this relevance (0: keep "
                 "every hit).", ranks=True, param="unsupported_below"),
    KeySpec("search.relevance.calibration", "list_float", None,
            help="Relevance model (unset: the model's shipped one; tune --space calibration fits it).",
            ranks=True),
    KeySpec("search.relevance.rerank_calibration", "list_float", None,
            help="Stacked relevance model of reranked hits (unset: the reranker's score is not "
                 "used; tune --space calibration with a reranker fits it).", ranks=True),
    KeySpec("search.retrieval.mode", "enum", "hybrid", choices=MODES,
            help="Which legs run: hybrid, vector or fts.", ranks=True, flag="--mode",
            param="mode"),
    KeySpec("search.retrieval.preset", "enum_opt", None, choices=PRESETS,
            help="Preset candidate depth per leg: fast (20), balanced (40) or accurate (80).",
            ranks=True, flag="--preset", param="preset"),
    KeySpec("search.retrieval.dense_top_k", "int", None, 1, MAX_TOP_K,
            help="Vector-leg candidate count.", ranks=True, flag="--dense-top-k",
            param="dense_top_k"),
    KeySpec("search.retrieval.sparse_top_k", "int", None, 1, MAX_TOP_K,
            help="Full-text-leg candidate count.", ranks=True, flag="--sparse-top-k",
            param="sparse_top_k"),
    KeySpec("search.retrieval.vector_weight", "float", 1.0, 0.0, 1e6, finite=True,
            help="Weight of the vector leg in RRF; 0: leg off.", ranks=True,
            flag="--vector-weight", param="vector_weight", tune="retrieval"),
    KeySpec("search.retrieval.fts_weight", "float", 1.0, 0.0, 1e6, finite=True,
            help="Weight of the trigram and word-level legs in RRF; 0: legs off.", ranks=True,
            flag="--fts-weight", param="fts_weight", tune="retrieval"),
    # 6.0: the smallest of 1, 2, 3, 4, 6 at which JSQuAD's default hybrid is not below its
    # full-text leg (issue #13, bench/results/quality.md); only queries with CJK text run it.
    KeySpec("search.retrieval.cjk_weight", "float", 6.0, 0.0, 1e6, finite=True,
            help="Weight of the CJK full-text leg (queries with Japanese or other CJK text) in "
                 "RRF; 0: leg off.",
            ranks=True, flag="--cjk-weight", param="cjk_weight", tune="retrieval"),
    KeySpec("search.retrieval.min_score", "float", 0.0, 0.0, 1.0,
            help="Floor on the normalised fused score, before the reranker.", ranks=True,
            flag="--min-score", param="min_score", tune="retrieval"),
    # score: the family chosen by leave-one-collection-out on the benchmark suite
    # (bench/results/suite.md, `qlen`); rrf stays available.
    KeySpec("search.fusion.method", "enum", "score", choices=FUSION_METHODS,
            help="Fusion of the legs: score (weighted sum of normalised bm25 and cosine "
                 "scores, the vector share following the query) or rrf (weighted RRF of ranks).",
            ranks=True, flag="--fusion", param="fusion", tune="fusion-method"),
    KeySpec("search.fusion.rrf_k", "float", 60.0, 1.0, 1e6, finite=True, help="RRF constant.",
            ranks=True, flag="--rrf-k", param="rrf_k", tune="fusion"),
    # The `qlen3L` member refit on all 8 collections of the suite, the family chosen by
    # leave-one-collection-out (bench/results/suite_signals.md): three length tiers for Latin
    # queries, and a query with CJK text weighed like a long one (alpha 0.5, CJK leg 1.0).
    KeySpec("search.fusion.score_alpha", "float", 0.5, 0.0, 1.0,
            help="Score fusion: weight of the vector leg for a query with CJK text; the "
                 "trigram and word-level legs each weigh 1 - the query's alpha (other queries: "
                 "score_alpha_short / _mid / _long by length).",
            ranks=True, flag="--score-alpha", param="score_alpha", tune="fusion-method"),
    KeySpec("search.fusion.score_alpha_short", "float", 0.8, 0.0, 1.0,
            help="Score fusion: weight of the vector leg for a query without CJK text of at "
                 "most short_query_words word terms.", ranks=True, param="score_alpha_short",
            tune="fusion-method"),
    KeySpec("search.fusion.score_alpha_mid", "float", 0.7, 0.0, 1.0,
            help="Score fusion: weight of the vector leg for a query without CJK text of more "
                 "than short_query_words and at most mid_query_words word terms.", ranks=True,
            param="score_alpha_mid", tune="fusion-method"),
    KeySpec("search.fusion.score_alpha_long", "float", 0.5, 0.0, 1.0,
            help="Score fusion: weight of the vector leg for a longer query without CJK text.",
            ranks=True, param="score_alpha_long", tune="fusion-method"),
    KeySpec("search.fusion.short_query_words", "int", 4, 0, 32,
            help="Score fusion: a query without CJK text of at most this many word terms "
                 "(stopwords dropped, repeats kept) takes score_alpha_short.", ranks=True,
            param="short_query_words", tune="fusion-method"),
    KeySpec("search.fusion.mid_query_words", "int", 8, 0, 64,
            help="Score fusion: a query without CJK text of more than short_query_words and at "
                 "most this many word terms takes score_alpha_mid (none when it is not above "
                 "short_query_words).", ranks=True, param="mid_query_words",
            tune="fusion-method"),
    KeySpec("search.fusion.score_cjk_weight", "float", 1.0, 0.0, 1e6, finite=True,
            help="Score fusion: weight of the CJK full-text leg.", ranks=True,
            flag="--score-cjk-weight", param="score_cjk_weight", tune="fusion-method"),
    # The bm25 column weights feed SearchParams.bm25_weights together (build_params).
    KeySpec("search.fusion.bm25_heading_weight", "float", 2.0, 0.0, 1e6, finite=True,
            help="Word-level leg: bm25 weight of the heading column.", ranks=True,
            tune="fusion"),
    KeySpec("search.fusion.bm25_context_weight", "float", 1.0, 0.0, 1e6, finite=True,
            help="Word-level leg: bm25 weight of the context column.", ranks=True,
            tune="fusion"),
    KeySpec("search.fusion.bm25_content_weight", "float", 1.0, 0.0, 1e6, finite=True,
            help="Word-level leg: bm25 weight of the content column.", ranks=True,
            tune="fusion"),
    KeySpec("search.per_note", "int", 0, 0, 1000,
            help="Hits per note: a note's chunks after its best this many leave the fused "
                 "list, so a result names more notes (0: no cap).",
            ranks=True, flag="--per-note", param="per_note", tune="per-note"),
    # Off by default: no held-out gain on the suite (bench/results/feedback.md); tune adopts it.
    KeySpec("search.feedback.vector_beta", "float", 0.0, 0.0, 1.0,
            help="Vector pseudo-relevance feedback (Rocchio): the vector leg runs a second "
                 "time with the query vector plus beta × the mean vector of the first fused "
                 "hits, and the legs are fused again; 0: off.",
            ranks=True, flag="--feedback-beta", param="feedback_beta", tune="feedback"),
    KeySpec("search.feedback.docs", "int", 3, 1, 20,
            help="Vector feedback: how many of the first fusion's hits feed the query vector.",
            ranks=True, flag="--feedback-docs", param="feedback_docs"),
    KeySpec("search.mmr.enabled", "bool", False, help="MMR diversity stage.", ranks=True,
            flag="--mmr", param="mmr"),
    KeySpec("search.mmr.lambda", "float", 0.7, 0.0, 1.0,
            help="MMR relevance/diversity balance.", ranks=True, flag="--mmr-lambda",
            param="mmr_lambda"),
    KeySpec("search.mmr.same_doc_penalty", "float", 0.0, 0.0, 1.0,
            help="MMR penalty for a second chunk of a document.", ranks=True,
            flag="--mmr-same-doc-penalty", param="mmr_same_doc_penalty"),
    KeySpec("search.parent_retriever.enabled", "bool", False,
            help="Expand hits with their document or neighbours.", ranks=True,
            flag="--parent-retriever", param="parent_retriever"),
    KeySpec("search.parent_retriever.whole_doc_threshold_tokens", "int", 100, 0, None,
            help="Parent expansion: a hit of fewer tokens returns its whole document (when "
                 "that fits max_expanded_tokens).",
            ranks=True, param="whole_doc_threshold_tokens"),
    KeySpec("search.parent_retriever.max_expanded_tokens", "int", 2000, None, 8192,
            help="Parent expansion: cap on an expanded hit's tokens.", ranks=True,
            param="max_expanded_tokens"),
    KeySpec("eval.golden", "path",
            help="Golden file (relative to the config file); default <kb>/.groove-eval.yml.",
            ranks=False),
    KeySpec("eval.history_size", "int", 10, 1, 1000, help="Eval runs kept in the history.",
            ranks=False),
    KeySpec("eval.k_values", "list_int", [1, 5, 10], 0, MAX_LIMIT,
            help="The cut-offs eval (and tune) report metrics at.", ranks=True),
    KeySpec("eval.regression_threshold", "float", 0.05, 0.0, 1.0, finite=True,
            help="A metric drop larger than this fails --fail-on-regression.", ranks=False),
    KeySpec("serve.editor_url", "str", "vscode://file/{path}:{line}",
            help="The web view's link to a hit (groove serve): {path} is the note's absolute "
                 "path without its leading /, {line} the hit's first line.", ranks=False),
    KeySpec("contextual.enabled", "bool", False,
            help="Desired context mode (the index's recorded mode decides).", ranks=False),
    KeySpec("frontmatter.required", "list_str", [],
            help="groove validate: frontmatter keys every note must have (not empty).",
            ranks=False),
    KeySpec("frontmatter.types", "list_str", [],
            help='groove validate: "key:type" entries, type one of string, int, number, '
                 'bool, list, date.', ranks=False),
    KeySpec("frontmatter.enums", "list_str", [],
            help='groove validate: "key:a|b|c" entries, the values a key may take (each item '
                 "of a list).", ranks=False),
    KeySpec("frontmatter.date_format", "str", "%Y-%m-%d",
            help="groove validate: the strftime format of the values of date-typed keys.",
            ranks=False),
)

SPECS: dict[str, KeySpec] = {s.key: s for s in SCHEMA}
TABLES: tuple[str, ...] = tuple(dict.fromkeys(s.table for s in SCHEMA if s.table))


def tune_keys(space: TuneSpace, schema: tuple[KeySpec, ...] = SCHEMA) -> tuple[KeySpec, ...]:
    """The keys tune's `space` sweeps or writes, in schema order (its JSON `condition` object
    and its groove.toml snippet follow this order)."""
    return tuple(spec for spec in schema if spec.tune == space)


def tune_table(space: TuneSpace, schema: tuple[KeySpec, ...] = SCHEMA) -> str:
    """The one config table that holds the keys of tune's `space` (its snippet's header)."""
    tables = {spec.table for spec in tune_keys(space, schema)}
    assert len(tables) == 1, f"tune space {space} spans tables {sorted(tables)}"
    return tables.pop()


def default_float(key: str) -> float:
    """The built-in default of a float key: the one place search, eval and tune take it from."""
    value = SPECS[key].default
    assert isinstance(value, (int, float))
    return float(value)


def default_int(key: str) -> int:
    """The built-in default of an int key."""
    value = SPECS[key].default
    assert isinstance(value, int)
    return value


DEFAULT_RRF_K = default_float("search.fusion.rrf_k")
DEFAULT_BM25_WEIGHTS: tuple[float, float, float] = (
    default_float("search.fusion.bm25_heading_weight"),
    default_float("search.fusion.bm25_context_weight"),
    default_float("search.fusion.bm25_content_weight"),
)
DEFAULT_LEG_WEIGHT = default_float("search.retrieval.vector_weight")
DEFAULT_MIN_SCORE = default_float("search.retrieval.min_score")
DEFAULT_CJK_WEIGHT = default_float("search.retrieval.cjk_weight")
DEFAULT_FUSION = str(SPECS["search.fusion.method"].default)
DEFAULT_VECTOR_PIECES = bool(SPECS["vector_pieces"].default)
"""The built-in fusion method (search.md §5)."""
DEFAULT_SCORE_ALPHA = default_float("search.fusion.score_alpha")
DEFAULT_SCORE_CJK_WEIGHT = default_float("search.fusion.score_cjk_weight")
DEFAULT_SCORE_ALPHA_SHORT = default_float("search.fusion.score_alpha_short")
DEFAULT_SCORE_ALPHA_MID = default_float("search.fusion.score_alpha_mid")
DEFAULT_SCORE_ALPHA_LONG = default_float("search.fusion.score_alpha_long")

PRESET_VALUES: dict[str, dict[str, object]] = {
    # Candidate depth only: no fused-score floor (its scale depends on the fusion method and, under
    # score fusion, on each query's alpha; min_relevance is the calibrated cut) and no leg
    # weights (score fusion reads them only to switch legs on and off). config.md §5.
    "fast": {
        "search.retrieval.dense_top_k": 20,
        "search.retrieval.sparse_top_k": 20,
    },
    "balanced": {
        "search.retrieval.dense_top_k": 40,
        "search.retrieval.sparse_top_k": 40,
    },
    "accurate": {
        "search.retrieval.dense_top_k": 80,
        "search.retrieval.sparse_top_k": 80,
    },
}
