"""Tune's grids (tune.md §4), constants (§8) and inputs (§2, §3): what is swept, and how it is labelled."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from groove_cli.config import (
    DEFAULT_BM25_WEIGHTS,
    DEFAULT_CJK_WEIGHT,
    DEFAULT_FUSION,
    DEFAULT_LEG_WEIGHT,
    DEFAULT_MIN_SCORE,
    DEFAULT_RRF_K,
    DEFAULT_SCORE_ALPHA,
    DEFAULT_SCORE_ALPHA_LONG,
    DEFAULT_SCORE_ALPHA_MID,
    DEFAULT_SCORE_ALPHA_SHORT,
    DEFAULT_SCORE_CJK_WEIGHT,
    MAX_LIMIT,
    KeySpec,
    default_float,
    default_int,
)
from groove_cli.config_schema import TuneSpace, tune_keys, tune_table
from groove_cli.evaluate.metrics import METRICS
from groove_cli.retrieve.legs import candidate_pool, vector_k

__all__ = ["candidate_pool", "vector_k"]  # the legs' pool and k, as tune reports them

Space = TuneSpace

# --------------------------------------------------------------------------- constants (§8)

ADOPT_MIN_MEAN_DELTA = 0.02
"""Criterion 2: the held-out mean nDCG@5 gain must exceed this floor."""
ADOPT_SE_MULTIPLIER = 3.0
"""Criterion 3: the held-out mean must exceed this many paired standard errors (calibrated, §8)."""
STABILITY_MIN = 0.5
"""Criterion 4: the share of folds that select the refit condition must exceed this."""
SMALL_N_WARN = 50
"""Below this many effective queries the verdict is flagged as indicative (IR convention)."""
PRIMARY_METRIC = "ndcg"
"""The metric selection and the verdict work on (at PRIMARY_K); the other registered metrics
(evaluate.metrics.METRICS) are the secondary ones of criterion 5."""
PRIMARY_K = 5
"""The primary metric is nDCG@5; 5 is always part of the k list."""
SECONDARY_METRICS = tuple(m for m in METRICS if m.name != PRIMARY_METRIC)
"""Criterion 5's metrics and the report's secondary table, in registry order."""
MAX_TUNE_K = MAX_LIMIT
"""Cap on every k and on the limit, as in eval."""
PLATEAU_EPS = 1e-9
"""Scores within this of the best join the selection plateau."""
TIE_EPS = 1e-12
"""Per-query differences within this count as ties (sign test, impact, criterion 5)."""

# --------------------------------------------------------------------------- grids (§4)

RRF_K_VALUES: tuple[float, ...] = (5.0, 10.0, 20.0, 30.0, 60.0, 100.0)
BM25_WEIGHT_VALUES: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
WEIGHT_RATIOS: tuple[float, ...] = (0.5, 0.67, 1.0, 1.5, 2.0)
MIN_SCORES: tuple[float, ...] = (0.0, 0.2, 0.3, 0.4)
CJK_WEIGHTS: tuple[float, ...] = (0.5 * DEFAULT_CJK_WEIGHT, DEFAULT_CJK_WEIGHT,
                                  2.0 * DEFAULT_CJK_WEIGHT)
"""The CJK leg's weight (issue #13): half, equal to and twice the built-in value."""
SCORE_ALPHAS: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
"""Score fusion's vector-leg weight (search.md §5), around the built-in score_alpha."""
SCORE_CJK_WEIGHTS: tuple[float, ...] = (0.5 * DEFAULT_SCORE_CJK_WEIGHT, DEFAULT_SCORE_CJK_WEIGHT,
                                        2.0 * DEFAULT_SCORE_CJK_WEIGHT)
"""Score fusion's CJK-leg weight: half, equal to and twice the built-in value."""

FEEDBACK_BETAS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.35, 0.5)
"""Vector feedback's beta (search.md §5.1): off and four strengths (bench/results/feedback.md)."""
PER_NOTE_VALUES: tuple[int, ...] = (0, 1, 2, 3)
"""The per-note cap (search.md §5.2): none, then 1 to 3 hits per note."""

BUILTIN_RRF_K = DEFAULT_RRF_K
BUILTIN_BM25_WEIGHTS: tuple[float, float, float] = DEFAULT_BM25_WEIGHTS
BUILTIN_LEG_WEIGHT = DEFAULT_LEG_WEIGHT
BUILTIN_CJK_WEIGHT = DEFAULT_CJK_WEIGHT
BUILTIN_MIN_SCORE = DEFAULT_MIN_SCORE
BUILTIN_SCORE_ALPHA = DEFAULT_SCORE_ALPHA
BUILTIN_SCORE_CJK_WEIGHT = DEFAULT_SCORE_CJK_WEIGHT
BUILTIN_SCORE_ALPHA_SHORT = DEFAULT_SCORE_ALPHA_SHORT
BUILTIN_SCORE_ALPHA_MID = DEFAULT_SCORE_ALPHA_MID
BUILTIN_SCORE_ALPHA_LONG = DEFAULT_SCORE_ALPHA_LONG
BUILTIN_SHORT_WORDS = default_int("search.fusion.short_query_words")
BUILTIN_MID_WORDS = default_int("search.fusion.mid_query_words")
BUILTIN_FEEDBACK_BETA = default_float("search.feedback.vector_beta")
BUILTIN_PER_NOTE = default_int("search.per_note")
LENGTH_TIERS: tuple[tuple[int, int], ...] = (
    (BUILTIN_SHORT_WORDS, BUILTIN_MID_WORDS),
    (BUILTIN_SHORT_WORDS - 1, BUILTIN_MID_WORDS - 2),
    (BUILTIN_SHORT_WORDS + 2, BUILTIN_MID_WORDS + 4))
"""The length rule's word boundaries (short_query_words, mid_query_words) the fusion-method
space tries: the built-in ones, narrower and wider tiers."""

DEFAULT_K_INDEX = 4
DEFAULT_WEIGHT_INDEX = (2 * 4 + 1) * 4 + 1
"""(h=2.0, ctx=1.0, content=1.0) = grid indices (2, 1, 1) ⇒ 37."""
DEFAULT_FUSION_INDEX = DEFAULT_WEIGHT_INDEX * len(RRF_K_VALUES) + DEFAULT_K_INDEX
"""(2, 1, 1, 4) ⇒ 37 × 6 + 4 = 226."""
DEFAULT_RATIO_INDEX = 2
DEFAULT_CJK_INDEX = 1
DEFAULT_RETRIEVAL_INDEX = (DEFAULT_RATIO_INDEX * len(CJK_WEIGHTS) + DEFAULT_CJK_INDEX) * len(
    MIN_SCORES)
"""(ratio 1, cjk ×1, min_score 0) = indices (2, 1, 0) ⇒ (2 × 3 + 1) × 4 = 28."""
RRF_METHOD_INDEX = 0
"""The fusion-method grid's condition 0 is the built-in weighted RRF; 1 + alpha_index × 3 +
cjk_index are the score-fusion conditions with one alpha, LENGTH_RULE_INDEX + tier_index × 3 +
cjk_index those with the built-in length rule's alphas at the word boundaries of LENGTH_TIERS."""
DEFAULT_SCORE_ALPHA_INDEX = SCORE_ALPHAS.index(DEFAULT_SCORE_ALPHA)
DEFAULT_SCORE_CJK_INDEX = 1
LENGTH_RULE_INDEX = 1 + len(SCORE_ALPHAS) * len(SCORE_CJK_WEIGHTS)
"""The fusion-method grid's first condition with the built-in length rule (search.md §5)."""
DEFAULT_METHOD_INDEX = (LENGTH_RULE_INDEX + DEFAULT_SCORE_CJK_INDEX if DEFAULT_FUSION == "score"
                        else RRF_METHOD_INDEX)
"""The built-in fusion in the fusion-method grid: score fusion with the length rule at the
built-in score_cjk_weight (20)."""
DEFAULT_FEEDBACK_INDEX = FEEDBACK_BETAS.index(BUILTIN_FEEDBACK_BETA)
"""The built-in vector feedback (off) in the feedback grid."""
DEFAULT_PER_NOTE_INDEX = PER_NOTE_VALUES.index(BUILTIN_PER_NOTE)
"""The built-in per-note cap (none) in the per-note grid."""
RERUN_SPACES: tuple[str, ...] = ("feedback", "per-note")
"""Spaces whose conditions change what the legs return or which candidates stay, so the sweep
runs each golden query through the search per condition (tune.md §5): one axis, one phase."""

BM25_PROBE_WEIGHT_INDICES: tuple[int, int] = ((3 * 4 + 0) * 4 + 0, (0 * 4 + 0) * 4 + 3)
"""Weight sets behind `bm25_sensitive`: (h=4, ctx=0.5, c=0.5) = 48, (h=0.5, ctx=0.5, c=4) = 3."""

SPACE_KEYS: dict[Space, tuple[KeySpec, ...]] = {space: tune_keys(space)
                                                for space in get_args(TuneSpace)}
"""The keys each space writes, as the config schema declares them (`KeySpec.tune`); a
Condition has one field per key name."""
FUSION_KEYS = tuple(spec.name for spec in SPACE_KEYS["fusion"])
RETRIEVAL_KEYS = tuple(spec.name for spec in SPACE_KEYS["retrieval"])
METHOD_KEYS = tuple(spec.name for spec in SPACE_KEYS["fusion-method"])
FEEDBACK_KEYS = tuple(spec.name for spec in SPACE_KEYS["feedback"])
PER_NOTE_KEYS = tuple(spec.name for spec in SPACE_KEYS["per-note"])
TABLES: dict[Space, str] = {space: tune_table(space) for space in get_args(TuneSpace)}


@dataclass(frozen=True, slots=True)
class Condition:
    """One grid point; the members of the other space stay at the built-in values."""

    space: Space
    index: int
    rrf_k: float = BUILTIN_RRF_K
    bm25_heading_weight: float = BUILTIN_BM25_WEIGHTS[0]
    bm25_context_weight: float = BUILTIN_BM25_WEIGHTS[1]
    bm25_content_weight: float = BUILTIN_BM25_WEIGHTS[2]
    vector_weight: float = BUILTIN_LEG_WEIGHT
    fts_weight: float = BUILTIN_LEG_WEIGHT
    cjk_weight: float = BUILTIN_CJK_WEIGHT
    min_score: float = BUILTIN_MIN_SCORE
    method: str = "rrf"
    score_alpha: float = BUILTIN_SCORE_ALPHA
    score_cjk_weight: float = BUILTIN_SCORE_CJK_WEIGHT
    score_alpha_short: float = BUILTIN_SCORE_ALPHA_SHORT
    score_alpha_mid: float = BUILTIN_SCORE_ALPHA_MID
    score_alpha_long: float = BUILTIN_SCORE_ALPHA_LONG
    short_query_words: int = BUILTIN_SHORT_WORDS
    mid_query_words: int = BUILTIN_MID_WORDS
    vector_beta: float = BUILTIN_FEEDBACK_BETA
    per_note: int = BUILTIN_PER_NOTE

    @property
    def grid_indices(self) -> tuple[int, ...]:
        """Fusion: (h, ctx, content, k) indices; retrieval: (ratio, cjk, min_score) indices;
        fusion-method: (method, alpha, cjk, length tier) indices; feedback: (beta,);
        per-note: (cap,)."""
        return grid_indices(self.space, self.index)

    @property
    def weight_index(self) -> int:
        """The FTS list this condition reads: its bm25 weight set (fusion), always 0 (retrieval)."""
        return self.index // len(RRF_K_VALUES) if self.space == "fusion" else 0

    def values(self) -> dict[str, float | str]:
        """The config keys this space writes, in schema order (the JSON `condition` object),
        each typed as its key is."""
        return {spec.name: _typed(spec, getattr(self, spec.name))
                for spec in SPACE_KEYS[self.space]}


def _typed(spec: KeySpec, value: Any) -> float | str:
    if spec.kind in ("enum", "enum_opt", "str"):
        return str(value)
    return int(value) if spec.kind == "int" else float(value)


def weight_sets() -> list[tuple[float, float, float]]:
    """The 64 bm25 (heading, context, content) weight triples in weight_index order."""
    return [(h, c, t) for h in BM25_WEIGHT_VALUES for c in BM25_WEIGHT_VALUES
            for t in BM25_WEIGHT_VALUES]


def fusion_grid() -> list[Condition]:
    """The 384 fusion conditions; index = weight_index × 6 + k_index."""
    grid: list[Condition] = []
    for weight_index, (h, c, t) in enumerate(weight_sets()):
        for k_index, rrf_k in enumerate(RRF_K_VALUES):
            grid.append(Condition(
                "fusion", weight_index * len(RRF_K_VALUES) + k_index, rrf_k=rrf_k,
                bm25_heading_weight=h, bm25_context_weight=c, bm25_content_weight=t,
            ))
    return grid


def retrieval_grid() -> list[Condition]:
    """The 60 retrieval conditions; index = (ratio_index × 3 + cjk_index) × 4 + min_score_index."""
    return [
        Condition("retrieval", (r * len(CJK_WEIGHTS) + c) * len(MIN_SCORES) + m,
                  vector_weight=ratio, fts_weight=1.0, cjk_weight=cjk, min_score=floor)
        for r, ratio in enumerate(WEIGHT_RATIOS) for c, cjk in enumerate(CJK_WEIGHTS)
        for m, floor in enumerate(MIN_SCORES)
    ]


def method_grid() -> list[Condition]:
    """The 28 fusion-method conditions: 0 = the built-in weighted RRF; score fusion with one
    alpha for every query (score_alpha = score_alpha_short = _mid = _long) at index
    1 + alpha_index × 3 + cjk_index; then the built-in alphas (the query's length and script
    choose, search.md §5) at the word boundaries of LENGTH_TIERS, at LENGTH_RULE_INDEX +
    tier_index × 3 + cjk_index (tier 0, the built-in boundaries, first)."""
    return [Condition("fusion-method", 0), *(
        Condition("fusion-method", 1 + a * len(SCORE_CJK_WEIGHTS) + c, method="score",
                  score_alpha=alpha, score_cjk_weight=cjk, score_alpha_short=alpha,
                  score_alpha_mid=alpha, score_alpha_long=alpha)
        for a, alpha in enumerate(SCORE_ALPHAS) for c, cjk in enumerate(SCORE_CJK_WEIGHTS)), *(
        Condition("fusion-method", LENGTH_RULE_INDEX + t * len(SCORE_CJK_WEIGHTS) + c,
                  method="score", score_cjk_weight=cjk, short_query_words=short,
                  mid_query_words=mid)
        for t, (short, mid) in enumerate(LENGTH_TIERS) for c, cjk in enumerate(SCORE_CJK_WEIGHTS))]


def feedback_grid() -> list[Condition]:
    """The 5 feedback conditions, one per beta (index = beta index; 0 = off)."""
    return [Condition("feedback", i, vector_beta=beta) for i, beta in enumerate(FEEDBACK_BETAS)]


def per_note_grid() -> list[Condition]:
    """The 4 per-note conditions, one per cap (index = cap index; 0 = no cap)."""
    return [Condition("per-note", i, per_note=cap) for i, cap in enumerate(PER_NOTE_VALUES)]


def grid(space: Space) -> list[Condition]:
    """The grid of `space`, in condition-index order."""
    if space == "fusion-method":
        return method_grid()
    if space == "feedback":
        return feedback_grid()
    if space == "per-note":
        return per_note_grid()
    return fusion_grid() if space == "fusion" else retrieval_grid()


def default_index(space: Space) -> int:
    """The condition index of the built-in defaults in `space`."""
    if space == "fusion-method":
        return DEFAULT_METHOD_INDEX
    if space == "feedback":
        return DEFAULT_FEEDBACK_INDEX
    if space == "per-note":
        return DEFAULT_PER_NOTE_INDEX
    return DEFAULT_FUSION_INDEX if space == "fusion" else DEFAULT_RETRIEVAL_INDEX


def default_condition(space: Space) -> Condition:
    """The built-in defaults as a grid condition."""
    return grid(space)[default_index(space)]


def grid_indices(space: Space, index: int) -> tuple[int, ...]:
    """Per-axis grid indices of a condition index."""
    if space in RERUN_SPACES:
        return (index,)
    if space == "fusion":
        weight_index, k_index = divmod(index, len(RRF_K_VALUES))
        h, rest = divmod(weight_index, 16)
        c, t = divmod(rest, 4)
        return (h, c, t, k_index)
    if space == "fusion-method":
        if index == RRF_METHOD_INDEX:
            return (0, DEFAULT_SCORE_ALPHA_INDEX, DEFAULT_SCORE_CJK_INDEX, 0)
        if index >= LENGTH_RULE_INDEX:
            tier, cjk = divmod(index - LENGTH_RULE_INDEX, len(SCORE_CJK_WEIGHTS))
            return (2, DEFAULT_SCORE_ALPHA_INDEX, cjk, tier)
        return (1, *divmod(index - 1, len(SCORE_CJK_WEIGHTS)), 0)
    pair, m = divmod(index, len(MIN_SCORES))
    return (*divmod(pair, len(CJK_WEIGHTS)), m)


def _num(value: float) -> str:
    """A float as Python writes it, so it always carries a decimal point (4.0, 0.67)."""
    return repr(float(value))


def _rrf_k_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else _num(value)


def label_of(values: Mapping[str, Any]) -> str:
    """Label of a JSON `condition` object (its keys tell the space)."""
    if "vector_beta" in values:
        return f"vector_beta={_num(values['vector_beta'])}"
    if "per_note" in values:
        return f"per_note={int(values['per_note'])}"
    if "method" in values:
        if values["method"] != "score":
            return f"method={values['method']}"
        alpha = values["score_alpha"]
        tiers = {key: values.get(key, alpha) for key in
                 ("score_alpha_short", "score_alpha_mid", "score_alpha_long")}
        if all(value == alpha for value in tiers.values()):  # one alpha for every query
            return (f"method=score score_alpha={_num(alpha)} "
                    f"score_cjk_weight={_num(values['score_cjk_weight'])}")
        words = "".join(f"{key}={int(values[key])} " for key in
                        ("short_query_words", "mid_query_words") if key in values)
        return (f"method=score score_alpha={_num(alpha)} "
                + "".join(f"{key}={_num(value)} " for key, value in tiers.items()) + words
                + f"score_cjk_weight={_num(values['score_cjk_weight'])}")
    if "rrf_k" in values:
        return (f"h={_num(values['bm25_heading_weight'])} ctx={_num(values['bm25_context_weight'])}"
                f" content={_num(values['bm25_content_weight'])} k={_rrf_k_text(values['rrf_k'])}")
    cjk = f" cjk_weight={_num(values['cjk_weight'])}" if "cjk_weight" in values else ""
    return (f"vector_weight={_num(values['vector_weight'])} fts_weight={_num(values['fts_weight'])}"
            f"{cjk} min_score={_num(values['min_score'])}")


def label(condition: Condition) -> str:
    """`h=4.0 ctx=1.0 content=0.5 k=10`, `vector_weight=1.5 fts_weight=1.0 min_score=0.2` or
    `method=score score_alpha=0.5 score_cjk_weight=1.0`."""
    return label_of(condition.values())


def toml_snippet(condition: Condition) -> str:
    """The config table that applies `condition`; floats always carry a decimal point, the
    word counts are integers."""
    lines = [f"[{TABLES[condition.space]}]"]
    lines += [f'{key} = "{value}"' if isinstance(value, str)
              else f"{key} = {value}" if isinstance(value, int) else f"{key} = {_num(value)}"
              for key, value in condition.values().items()]
    return "\n".join(lines)


# --------------------------------------------------------------------------- inputs (§2, §3)


def normalise_k_values(values: Iterable[int]) -> tuple[int, ...]:
    """Zeros dropped, 5 always added, each capped at 1000, sorted and deduplicated."""
    kept = {min(int(k), MAX_TUNE_K) for k in values if int(k) > 0}
    kept.add(PRIMARY_K)
    return tuple(sorted(kept))


def tune_limit(limit: int | None, k_values: Sequence[int]) -> int:
    """`max(limit or max k, max k)`, capped at 1000 (the runner writes eval's cap note)."""
    largest = max(k_values) if k_values else PRIMARY_K
    return min(max(limit if limit is not None else largest, largest), MAX_TUNE_K)
