"""The core of `groove tune` (tune.md): a package of small stages, one job each.

1. `lists` fetches, once per usable query, the vector list and the full-text lists of every bm25
   weight set of the space — the search's own legs (retrieve/legs.py), run with tune's pool.
2. `preflight` computes the per-query diagnostics and the effective queries (§3).
3. `sweep` fuses every condition of the `grid` (§4) for every query in memory, exactly as
   search.md §5 does (`retrieve.fuse.fuse_rows`), and scores the cut lists with eval's formulas
   (`evaluate.metrics.rank_metrics`), so a 384-condition sweep over a few hundred queries takes
   seconds.
4. `select` picks a condition by coordinate descent with a plateau rule that prefers the
   default, then the grid centre (§6), inside nested leave-one-query-out cross-validation (§7),
   so that the reported gain is measured on queries the selection never saw.
5. `verdict` applies the adoption criteria (§8), conservative on purpose: a tuned condition is
   only recommended when its held-out gain clears a floor, a multiple of its paired standard
   error and a stability bar, and it costs no recall or MRR.
6. `report` holds the typed `TuneReport` (`to_json()` is the §9 document); `write` applies an
   adopted condition to groove.toml (§10); `run` is the one core call the CLI makes.

RRF: G. V. Cormack, C. L. A. Clarke and S. Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
and individual Rank Learning Methods", SIGIR 2009. nDCG: K. Järvelin and J. Kekäläinen,
"Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4), 2002.

The names below are re-exported so callers can write `from groove_cli.evaluate import tune`.
"""

from __future__ import annotations

from groove_cli.evaluate.tune.grid import (
    ADOPT_MIN_MEAN_DELTA,
    ADOPT_SE_MULTIPLIER,
    BM25_PROBE_WEIGHT_INDICES,
    BM25_WEIGHT_VALUES,
    BUILTIN_BM25_WEIGHTS,
    BUILTIN_CJK_WEIGHT,
    BUILTIN_LEG_WEIGHT,
    BUILTIN_MIN_SCORE,
    BUILTIN_RRF_K,
    CJK_WEIGHTS,
    DEFAULT_CJK_INDEX,
    DEFAULT_FUSION_INDEX,
    DEFAULT_K_INDEX,
    DEFAULT_RATIO_INDEX,
    DEFAULT_RETRIEVAL_INDEX,
    DEFAULT_WEIGHT_INDEX,
    FUSION_KEYS,
    MAX_TUNE_K,
    MIN_SCORES,
    PLATEAU_EPS,
    PRIMARY_K,
    RETRIEVAL_KEYS,
    RRF_K_VALUES,
    SMALL_N_WARN,
    STABILITY_MIN,
    TABLES,
    TIE_EPS,
    WEIGHT_RATIOS,
    Condition,
    Space,
    candidate_pool,
    default_condition,
    default_index,
    fusion_grid,
    grid,
    grid_indices,
    label,
    label_of,
    normalise_k_values,
    retrieval_grid,
    toml_snippet,
    tune_limit,
    vector_k,
    weight_sets,
)
from groove_cli.evaluate.tune.preflight import (
    CONTEXT_NOOP_NOTE,
    SCOPE_NOTE_DEFAULTS,
    SCOPE_NOTE_STAGES,
    QueryDiagnostics,
    check_preflight,
    diagnostics,
    effective_note,
    insensitive_note,
    no_effective_query_error,
    small_n_warning,
)
from groove_cli.evaluate.tune.report import TuneReport, WrittenKeys, build_tune_json
from groove_cli.evaluate.tune.select import (
    LooResult,
    Selection,
    SignTest,
    loo_cv,
    paired_se,
    phase1_conditions,
    phase2_conditions,
    sample_sd,
    select,
    select_detail,
    sign_test,
)
from groove_cli.evaluate.tune.sweep import (
    ChunkMeta,
    QueryLists,
    SweepScores,
    progress_line,
    score_matrix,
)
from groove_cli.evaluate.tune.verdict import (
    Aggregate,
    Impact,
    Verdict,
    aggregate,
    per_query_impact,
    secondary_violations,
    verdict,
)

__all__ = [
    "ADOPT_MIN_MEAN_DELTA", "ADOPT_SE_MULTIPLIER", "BM25_PROBE_WEIGHT_INDICES",
    "BM25_WEIGHT_VALUES", "BUILTIN_BM25_WEIGHTS", "BUILTIN_CJK_WEIGHT", "BUILTIN_LEG_WEIGHT",
    "BUILTIN_MIN_SCORE", "BUILTIN_RRF_K", "CJK_WEIGHTS", "CONTEXT_NOOP_NOTE", "DEFAULT_CJK_INDEX",
    "DEFAULT_FUSION_INDEX", "DEFAULT_K_INDEX",
    "DEFAULT_RATIO_INDEX", "DEFAULT_RETRIEVAL_INDEX", "DEFAULT_WEIGHT_INDEX", "FUSION_KEYS",
    "MAX_TUNE_K", "MIN_SCORES", "PLATEAU_EPS", "PRIMARY_K", "RETRIEVAL_KEYS", "RRF_K_VALUES",
    "SCOPE_NOTE_DEFAULTS", "SCOPE_NOTE_STAGES", "SMALL_N_WARN", "STABILITY_MIN", "TABLES",
    "TIE_EPS", "WEIGHT_RATIOS", "Aggregate", "ChunkMeta", "Condition", "Impact", "LooResult",
    "QueryDiagnostics", "QueryLists", "Selection", "SignTest", "Space", "SweepScores",
    "TuneReport", "Verdict", "WrittenKeys", "aggregate", "build_tune_json", "candidate_pool",
    "check_preflight", "default_condition", "default_index", "diagnostics", "effective_note",
    "fusion_grid", "grid", "grid_indices", "insensitive_note", "label", "label_of", "loo_cv",
    "no_effective_query_error", "normalise_k_values", "paired_se", "per_query_impact",
    "phase1_conditions", "phase2_conditions", "progress_line", "retrieval_grid", "sample_sd",
    "score_matrix", "secondary_violations", "select", "select_detail", "sign_test",
    "small_n_warning", "toml_snippet", "tune_limit", "vector_k", "verdict", "weight_sets",
]
