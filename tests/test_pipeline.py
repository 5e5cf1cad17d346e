"""The search pipeline end to end on small hand-made indexes (search.md §1–§12).

Every index here is written through `Store` with 2–3-dim vectors chosen by hand, so the legs'
rankings are known exactly: the vector leg ranks by cosine distance to the query vector (ties
by chunk id), a full-text leg by bm25 (equal-length contents with more occurrences rank higher,
identical contents tie and go to the lower chunk id). Expected values are written as the
formulas of search.md, not as copied outputs.

Since issue #8 an all-Latin query (`zebra`, `gamma`, …) runs the word-level full-text leg
(`fts_words`, reported as `fts_word_rank`) and not the trigram leg; CJK queries run the trigram
leg (`fts_rank`), and a mixed query with 2+ Latin words runs both, fused as separate legs after
the vector leg, each weighted `fts_weight`. Since issue #13 a query with CJK text runs the CJK
leg (`fts_cjk`, `fts_cjk_rank`, weighted `cjk_weight`) instead of the trigram leg.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from groove_cli.config import resolve
from groove_cli.evaluate.tune.lists import BUILTIN_BM25, ListFetcher
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.legs import CJK, TRIGRAM, WORDS, legs_to_run
from groove_cli.retrieve.params import SearchParams, build_params, search_reranker
from groove_cli.retrieve.pipeline import Pools, SearchResult, pool_sizes, search
from groove_cli.retrieve.query import CompiledQuery, compile_query
from groove_cli.store import Store
from groove_cli.types import ChunkRow, DocumentRow
from groove_cli.vectors import vec0_knn

K = 60.0  # rrf_k


def rrf_params(**settings: Any) -> SearchParams:
    """Settings of weighted RRF, whose formulas these tests compute (search.md §5); score
    fusion, the default, is pinned in test_score_fusion.py and test_fusion_length.py. Every
    fused candidate is returned: the relevance cuts of hybrid (search.md §12) are off unless a
    test sets them (test_no_noise.py pins them)."""
    return SearchParams(**{"fusion": "rrf", "relevance_floor": 0.0, "unsupported_below": 0.0,
                           **settings})


# --------------------------------------------------------------------------- building indexes


@dataclass(frozen=True)
class Chunk:
    content: str
    vector: Sequence[float]
    heading: str | None = None
    level: int | None = 2
    ancestry: tuple[str, ...] = ()
    tokens: int | None = 10
    quality: float = 1.0


@dataclass(frozen=True)
class Note:
    path: str
    chunks: Sequence[Chunk]
    title: str | None = None
    topic: str | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()
    date: str | None = None


def build(db: Path, notes: Sequence[Note]) -> Store:
    """Write `notes` (chunk ids 1, 2, … in order) and reopen the index read-only."""
    dim = len(notes[0].chunks[0].vector)
    store = Store.open_for_index(db)
    store.create_vec_table(dim)
    with store.transaction():
        for note in notes:
            doc = DocumentRow(note.path, note.title, note.topic, note.category, None, note.tags,
                              note.date, f"hash-{note.path}", 100, "2025-01-01T00:00:00Z")
            rows = [ChunkRow(i, c.heading, c.level, c.ancestry, c.content, None, c.tokens,
                             c.quality) for i, c in enumerate(note.chunks)]
            vectors = np.array([c.vector for c in note.chunks], dtype=np.float32)
            store.write_document(doc, rows, vectors, None)
    store.close()
    return Store.open_readonly(db)


def run(store: Store, text: str, params: SearchParams | None = None,
        vector: Sequence[float] | None = None, reranker: FakeReranker | None = None) -> SearchResult:
    query = compile_query(text)
    qvec = None if vector is None else np.array(vector, dtype=np.float32)
    return search(store, query, params or rrf_params(), vector=qvec, knn=vec0_knn(store),
                  reranker=reranker, dim=store.vec_dim())


def ids(result: SearchResult) -> list[int]:
    return [hit.chunk.chunk_id for hit in result.hits]


class FakeReranker:
    """A real object implementing the Reranker protocol: scores come from a function of the
    document text, and every call is recorded."""

    def __init__(self, scoring: dict[str, float] | None = None, default: float = 0.0) -> None:
        self.scoring = scoring or {}
        self.default = default
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, documents: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append((query, list(documents)))
        return np.array([self.scoring.get(d, self.default) for d in documents], dtype=np.float32)


# --------------------------------------------------------------------------- fusion

# Query "zebra" with query vector (1, 0); "zebra" is a Latin word: the word-level leg runs.
#   chunk  content                     vector      vec rank          word rank
#   1      zebra zebra zebra quiet     (0, 1)      5 (distance 1.0)  1
#   2      zebra zebra quiet quiet     (0.6, 0.8)  3 (0.4, tie: id)  2
#   3      zebra quiet quiet quiet     (0.8, 0.6)  2 (0.2)           3
#   4      quiet quiet quiet quiet     (1, 0)      1 (0.0)           -
#   5      quiet quiet quiet quiet     (0.6, 0.8)  4 (0.4, tie: id)  -
FUSION = [
    Note("a.md", [Chunk("zebra zebra zebra quiet", (0.0, 1.0))]),
    Note("b.md", [Chunk("zebra zebra quiet quiet", (0.6, 0.8))]),
    Note("c.md", [Chunk("zebra quiet quiet quiet", (0.8, 0.6))]),
    Note("d.md", [Chunk("quiet quiet quiet quiet", (1.0, 0.0))]),
    Note("e.md", [Chunk("quiet quiet quiet quiet", (0.6, 0.8))]),
]
VEC_RANK = {1: 5, 2: 3, 3: 2, 4: 1, 5: 4}
WORD_RANK = {1: 1, 2: 2, 3: 3}


@pytest.fixture(scope="module")
def fusion(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("fusion") / "index.db", FUSION)


def raw_score(cid: int, wv: float, wf: float) -> float:
    """Σ w_leg / (rrf_k + rank), vector leg first (search.md §5)."""
    raw = 0.0
    raw += wv / (K + VEC_RANK[cid])
    if cid in WORD_RANK:
        raw += wf / (K + WORD_RANK[cid])
    return raw


def test_legs_rank_as_designed(fusion: Store) -> None:
    result = run(fusion, "zebra", vector=(1.0, 0.0))
    assert (result.trace.expr("fts"), result.trace.expr("words")) == (None, '"zebra"')
    for hit in result.hits:
        assert hit.explain.vec_rank == VEC_RANK[hit.chunk.chunk_id]
        assert hit.explain.rank("words") == WORD_RANK.get(hit.chunk.chunk_id)
        assert hit.explain.rank("fts") is None  # the trigram leg did not run


def test_weighted_rrf_equal_weights_hand_computed(fusion: Store) -> None:
    result = run(fusion, "zebra", vector=(1.0, 0.0))
    # raw(2) = 1/63 + 1/62 == raw(3) = 1/62 + 1/63: the tie goes to the lower chunk id
    assert raw_score(2, 1, 1) == raw_score(3, 1, 1)
    assert ids(result) == [2, 3, 1, 4, 5]
    best = 1.0 / (K + 1) + 1.0 / (K + 1)
    for rank, hit in enumerate(result.hits, 1):
        raw = raw_score(hit.chunk.chunk_id, 1.0, 1.0)
        assert hit.explain.fused_raw == raw
        assert hit.score == hit.explain.fused_score == raw / best
        assert hit.explain.fused_rank == rank
    assert result.hits[3].score == 0.5  # vector-only 1st: 1/61 / (2/61)


def test_weighted_rrf_balanced_weights_hand_computed(fusion: Store) -> None:
    params = rrf_params(vector_weight=1.2, fts_weight=0.8)
    result = run(fusion, "zebra", params, vector=(1.0, 0.0))
    # 3: 1.2/62 + 0.8/63 = 0.032053 > 2: 1.2/63 + 0.8/62 = 0.031951 > 1: 1.2/65 + 0.8/61
    assert ids(result) == [3, 2, 1, 4, 5]
    best = 1.2 / (K + 1) + 0.8 / (K + 1)
    assert [h.score for h in result.hits] == [raw_score(c, 1.2, 0.8) / best for c in ids(result)]
    assert result.hits[3].score == pytest.approx(0.6)  # config.md §5: vector-only 1st scores 0.6


def test_equal_weights_are_plain_rrf(fusion: Store) -> None:
    # only the ratio matters: 3 / 3 gives the order and (up to rounding) the scores of 1 / 1
    plain = run(fusion, "zebra", vector=(1.0, 0.0))
    scaled = run(fusion, "zebra", rrf_params(vector_weight=3.0, fts_weight=3.0),
                 vector=(1.0, 0.0))
    assert ids(scaled) == ids(plain)
    assert [h.score for h in scaled.hits] == pytest.approx([h.score for h in plain.hits])


def test_normalised_score_bounds(fusion: Store) -> None:
    # (0, 1) query vector: chunk 1 is first in both legs and scores exactly 1.0
    result = run(fusion, "zebra", vector=(0.0, 1.0))
    assert ids(result)[0] == 1
    assert result.hits[0].score == 1.0
    assert all(0.0 < h.score <= 1.0 for h in result.hits)
    assert all(h.score < 1.0 for h in result.hits[1:])


def test_a_leg_that_returns_nothing_does_not_count_in_max(fusion: Store) -> None:
    # "walrus" compiles to a word expression that matches no row: only the vector leg counts
    result = run(fusion, "walrus", vector=(1.0, 0.0))
    assert (result.trace.expr("fts"), result.trace.expr("words")) == (None, '"walrus"')
    assert ids(result) == [4, 3, 2, 5, 1]
    assert [h.score for h in result.hits] == [(1 / (K + r)) / (1 / (K + 1)) for r in range(1, 6)]


def test_min_score_drops_a_tail(fusion: Store) -> None:
    # scores: 2, 3 ≈ 0.9760, 1 ≈ 0.9692, 4 = 0.5 exactly, 5 = (1/64)/(2/61) ≈ 0.4766
    kept = run(fusion, "zebra", rrf_params(min_score=0.5), vector=(1.0, 0.0))
    assert ids(kept) == [2, 3, 1, 4]  # 0.5 is kept: only score < min_score drops
    assert kept.trace.dropped_by_min_score == 1
    cut = run(fusion, "zebra", rrf_params(min_score=0.6), vector=(1.0, 0.0))
    assert ids(cut) == [2, 3, 1]
    assert cut.trace.dropped_by_min_score == 2
    none = run(fusion, "zebra", rrf_params(min_score=0.0), vector=(1.0, 0.0))
    assert none.trace.dropped_by_min_score == 0


def test_min_score_count_in_explain_line(fusion: Store, capsys: pytest.CaptureFixture[str]) -> None:
    from groove_cli.render.search import explain_stderr

    params = rrf_params(min_score=0.6)
    explain_stderr(run(fusion, "zebra", params, vector=(1.0, 0.0)), params)
    lines = capsys.readouterr().err.splitlines()
    assert lines[1:5] == ["explain: fts skipped (no phrase)",
                          'explain: words MATCH "zebra"',
                          "explain: cjk skipped (no CJK text)",
                          "explain: pool vec=50 fts=50 fused=3 (dropped by min_score: 2)"]


def test_vector_mode(fusion: Store) -> None:
    result = run(fusion, "zebra", rrf_params(mode="vector"), vector=(1.0, 0.0))
    assert ids(result) == [4, 3, 2, 5, 1]
    assert [h.score for h in result.hits] == [(1 / (K + r)) / (1 / (K + 1)) for r in range(1, 6)]
    assert all(h.explain.rank("fts") is None and h.explain.rank("words") is None
               for h in result.hits)
    assert result.trace.expr("fts") is None and result.trace.expr("words") is None
    assert result.trace.pool_fts == 0


def test_fts_mode_needs_no_vector(fusion: Store) -> None:
    result = run(fusion, "zebra", rrf_params(mode="fts"), vector=None)
    assert ids(result) == [1, 2, 3]
    assert [h.score for h in result.hits] == [(1 / (K + r)) / (1 / (K + 1)) for r in range(1, 4)]
    assert all(h.explain.vec_rank is None for h in result.hits)
    assert result.trace.pool_vec == 0
    assert result.trace.timings_ms["embed"] is None and result.trace.timings_ms["vec"] is None


def test_fts_mode_without_a_phrase_returns_nothing(fusion: Store) -> None:
    result = run(fusion, "x", rrf_params(mode="fts"), vector=None)
    assert result.hits == () and result.trace.expr("fts") is None and result.trace.expr("words") is None
    assert result.trace.pool_fts == 0
    # a 2-letter word is enough for the word-level leg; it runs and finds nothing here
    two = run(fusion, "ab", rrf_params(mode="fts"), vector=None)
    assert two.hits == () and two.trace.expr("words") == '"ab"' and two.trace.pool_fts == 50


def test_hybrid_with_a_zero_weight_runs_one_leg(fusion: Store) -> None:
    fts_only = run(fusion, "zebra", rrf_params(vector_weight=0.0), vector=None)
    assert ids(fts_only) == [1, 2, 3]
    vec_only = run(fusion, "zebra", rrf_params(fts_weight=0.0), vector=(1.0, 0.0))
    assert ids(vec_only) == [4, 3, 2, 5, 1]


def ran(query: CompiledQuery, params: SearchParams) -> tuple[bool, bool, bool, bool]:
    """Whether the vector, trigram, word and CJK legs run."""
    legs = legs_to_run(query, params)
    return (legs.vector, legs.runs("fts"), legs.runs("words"), legs.runs("cjk"))


def test_legs_to_run() -> None:
    latin, cjk = compile_query("zebra"), compile_query("再ランキング")
    mixed, nothing = compile_query("retry budget 404"), compile_query("x")
    mixed_cjk, quoted = compile_query("retry budget の設定"), compile_query('"再ランキング" 評価')
    hybrid = rrf_params()
    assert ran(latin, hybrid) == (True, False, True, False)
    assert ran(cjk, hybrid) == (True, False, False, True)
    assert ran(mixed, hybrid) == (True, True, True, False)
    assert ran(mixed_cjk, hybrid) == (True, False, False, True)  # Latin words: CJK tokens
    assert ran(quoted, hybrid) == (True, True, False, True)
    assert ran(nothing, hybrid) == (True, False, False, False)
    for query in (latin, cjk, mixed, mixed_cjk):
        assert ran(query, rrf_params(mode="vector")) == (True, False, False, False)
    assert ran(latin, rrf_params(mode="fts")) == (False, False, True, False)
    assert ran(mixed, rrf_params(mode="fts")) == (False, True, True, False)
    assert ran(mixed_cjk, rrf_params(mode="fts")) == (False, False, False, True)
    assert ran(nothing, rrf_params(mode="fts")) == (False, False, False, False)
    assert not legs_to_run(nothing, rrf_params(mode="fts")).any
    assert ran(mixed, rrf_params(vector_weight=0.0)) == (False, True, True, False)
    # fts_weight weighs the trigram and word legs: 0 turns both off; cjk_weight the CJK leg
    assert ran(mixed, rrf_params(fts_weight=0.0)) == (True, False, False, False)
    assert ran(mixed_cjk, rrf_params(fts_weight=0.0)) == (True, False, False, True)
    assert ran(mixed_cjk, rrf_params(cjk_weight=0.0)) == (True, False, False, False)
    # cjk_weight 0 turns the CJK leg off in every mode (fusion refuses a weight-0 leg)
    assert ran(mixed_cjk, rrf_params(mode="fts", cjk_weight=0.0)) == (False, False, False,
                                                                        False)
    # eval --ablate switches one leg off by name, whatever its weight
    assert ran(mixed_cjk, rrf_params(disabled_legs=frozenset({"words"}))) == (
        True, False, False, True)


def test_low_confidence_ratio_rule_without_the_vector_leg(fusion: Store) -> None:
    full = run(fusion, "zebra", rrf_params(limit=5, mode="fts"))
    scores = [h.score for h in full.hits]
    ratio = max(scores) / (sum(scores) / len(scores))
    assert ratio < 1.5 and len(scores) >= 2
    assert all(h.relevance is None for h in full.hits)  # no cosine, no relevance
    assert full.low_confidence is True  # default ratio 1.5
    calm = run(fusion, "zebra", rrf_params(limit=5, mode="fts", min_confidence_ratio=ratio - 0.01))
    assert calm.low_confidence is False
    off = run(fusion, "zebra", rrf_params(limit=5, mode="fts", min_confidence_ratio=0.0))
    assert off.low_confidence is False
    single = run(fusion, "zebra", rrf_params(limit=1, mode="fts", min_confidence_ratio=100.0))
    assert single.low_confidence is False  # fewer than 2 hits


def test_relevance_and_low_confidence_with_the_vector_leg(fusion: Store) -> None:
    from groove_cli.retrieve.relevance import Calibration

    # only the cosine counts: relevance = 1 / (1 + exp(-(-1 + 2 cos)))
    cal = Calibration(-1.0, (2.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    result = run(fusion, "zebra", rrf_params(limit=5, calibration=cal), vector=(1.0, 0.0))
    stored = fusion.vectors_by_id([h.chunk.chunk_id for h in result.hits], 2)
    for hit in result.hits:
        v = stored[hit.chunk.chunk_id].astype(np.float64)
        cosine = float(v[0]) / float(np.linalg.norm(v))  # the query is (1, 0)
        assert hit.features[0] == pytest.approx(cosine)
        assert hit.relevance == pytest.approx(1 / (1 + math.exp(1 - 2 * cosine)))
    best = max(h.relevance or 0.0 for h in result.hits)
    below = run(fusion, "zebra", rrf_params(limit=5, calibration=cal,
                                              low_confidence_below=best + 1e-6),
                vector=(1.0, 0.0))
    assert below.low_confidence is True
    above = run(fusion, "zebra", rrf_params(limit=5, calibration=cal,
                                              low_confidence_below=best - 1e-6),
                vector=(1.0, 0.0))
    assert above.low_confidence is False
    kept = run(fusion, "zebra", rrf_params(limit=5, calibration=cal, min_relevance=best),
               vector=(1.0, 0.0))
    assert [h.relevance for h in kept.hits] == [r for r in (h.relevance for h in result.hits)
                                                 if r is not None and r >= best]
    none = run(fusion, "zebra", rrf_params(limit=5, calibration=cal, min_relevance=0.999),
               vector=(1.0, 0.0))
    assert none.hits == () and none.low_confidence is True
    # two hits with equal scores: max / mean = 1 < 1.5
    assert run(fusion, "zebra", rrf_params(limit=2), vector=(1.0, 0.0)).low_confidence is True


# --------------------------------------------------------------------------- two full-text legs

# Query "retry budget 404" (mixed: a number is not a Latin word, so trigram `"retry" OR "budget"
# OR "404"`, words `"retry" OR "budget"`), query vector (1, 0). Four filler chunks keep every idf
# unclamped (n ≤ 2 of N = 7).
#   chunk  content            vector      vec rank  trigram rank             word rank
#   1      404 404            (1, 0)      1         2 (404 only)             -
#   2      retries retries    (0.8, 0.6)  2         - (no "retry" substring)  1 (stem retri, tf 2)
#   3      retry 404          (0.6, 0.8)  3         1 (two phrases)          2 (tf 1)
#   4–7    filler words       (0, 1)      4–7       -                        -
MIXED = [
    Note("a.md", [Chunk("404 404", (1.0, 0.0))]),
    Note("b.md", [Chunk("retries retries", (0.8, 0.6))]),
    Note("c.md", [Chunk("retry 404", (0.6, 0.8))]),
    *(Note(f"f{i}.md", [Chunk(f"filler words {i}", (0.0, 1.0))]) for i in range(4, 8)),
    # chunk 8: CJK text for the CJK leg (no word of the queries above)
    Note("j.md", [Chunk("の設定 の設定", (0.0, 1.0))]),
    Note("k.md", [Chunk("設定 です", (0.0, 1.0))]),
]
MIXED_QUERY = "retry budget 404"
MIXED_VEC = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9}
MIXED_TRIGRAM = {3: 1, 1: 2}
MIXED_WORDS = {2: 1, 3: 2}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("mixed") / "index.db", MIXED)


def mixed_raw(cid: int, wv: float, wf: float, legs: str = "vtw") -> float:
    """Σ w_leg / (rrf_k + rank) in leg order: vector, trigram, words (search.md §5, issue #8)."""
    raw = 0.0
    for leg, weight, ranks in (("v", wv, MIXED_VEC), ("t", wf, MIXED_TRIGRAM),
                               ("w", wf, MIXED_WORDS)):
        if leg in legs and cid in ranks:
            raw += weight / (K + ranks[cid])
    return raw


def test_a_mixed_query_fuses_three_legs(mixed: Store) -> None:
    params = rrf_params(limit=10, vector_weight=1.2, fts_weight=0.8)
    result = run(mixed, MIXED_QUERY, params, vector=(1.0, 0.0))
    assert result.trace.expr("fts") == '"retry" OR "budget" OR "404"'
    assert result.trace.expr("words") == '"retry" OR "budget"'
    for hit in result.hits:
        cid = hit.chunk.chunk_id
        assert hit.explain.vec_rank == MIXED_VEC[cid]
        assert hit.explain.rank("fts") == MIXED_TRIGRAM.get(cid)
        assert hit.explain.rank("words") == MIXED_WORDS.get(cid)
    # 3: 1.2/63 + 0.8/61 + 0.8/62; 1: 1.2/61 + 0.8/62 > 2: 1.2/62 + 0.8/61; fillers by vector
    assert ids(result)[:7] == [3, 1, 2, 4, 5, 6, 7]
    best = 0.0 + 1.2 / (K + 1) + 0.8 / (K + 1) + 0.8 / (K + 1)  # all three legs returned rows
    for hit in result.hits:
        raw = mixed_raw(hit.chunk.chunk_id, 1.2, 0.8)
        assert hit.explain.fused_raw == raw
        assert hit.score == raw / best


def test_equal_weights_tie_across_the_two_full_text_legs(mixed: Store) -> None:
    # 1: 1/61 (vec) + 1/62 (trigram) == 2: 1/62 (vec) + 1/61 (words): the lower id wins
    result = run(mixed, MIXED_QUERY, rrf_params(limit=3), vector=(1.0, 0.0))
    assert mixed_raw(1, 1, 1) == mixed_raw(2, 1, 1)
    assert ids(result) == [3, 1, 2]
    assert result.hits[0].score == mixed_raw(3, 1, 1) / (3 / (K + 1))


def test_fts_mode_runs_both_full_text_legs(mixed: Store) -> None:
    result = run(mixed, MIXED_QUERY, rrf_params(mode="fts"), vector=None)
    # 3: 1/61 + 1/62 (both legs), 2: 1/61 (words 1st), 1: 1/62 (trigram 2nd)
    assert ids(result) == [3, 2, 1]
    best = 1 / (K + 1) + 1 / (K + 1)
    assert [h.score for h in result.hits] == [mixed_raw(c, 0, 1, "tw") / best for c in (3, 2, 1)]
    assert result.trace.pool_vec == 0 and result.trace.pool_fts == 50


def test_a_cjk_query_runs_the_cjk_leg_only(mixed: Store) -> None:
    result = run(mixed, "の設定", rrf_params(mode="fts"), vector=None)
    # the lone の is dropped from the query: its bigram の設 carries it
    assert (result.trace.expr("fts"), result.trace.expr("words"), result.trace.expr("cjk")) == (
        None, None, '"の設" OR "設" OR "設定" OR "定"')
    # chunk 8 holds all four tokens twice, chunk 9 three of them (設 設定 定) once
    assert ids(result) == [8, 9]
    assert [(h.explain.rank("fts"), h.explain.rank("words"), h.explain.rank("cjk"))
            for h in result.hits] == [(None, None, 1), (None, None, 2)]
    # hybrid: the CJK leg weighs cjk_weight (6 by default), the vector leg 1:
    # 8: 6/61 + 1/(60 + vec rank of 8); the normaliser sums both legs' best
    hybrid = run(mixed, "の設定", rrf_params(limit=2, cjk_weight=6.0), vector=(1.0, 0.0))
    assert ids(hybrid) == [8, 9]
    vec_rank_8 = 8  # (0, 1) ties chunks 4–9 at distance 1; ties go to the lower id
    raw = 6.0 / (K + 1) + 1.0 / (K + vec_rank_8)
    assert hybrid.hits[0].explain.fused_raw == raw
    assert hybrid.hits[0].score == raw / (1.0 / (K + 1) + 6.0 / (K + 1))


# A Japanese query with Latin words (issue #25). The word table's unicode61 tokens cannot see a
# Latin word glued to Japanese text (`NTTドコモの…` is one token there), so a word leg would rank
# chunk 2, which has the words alone, first and outvote the CJK leg: chunk 1 6/61, chunk 2
# 6/62 + 1/61. The CJK table holds `ntt` and `android` as tokens: it alone ranks the query.
GLUED = [
    Note("a.md", [Chunk("NTTドコモがAndroidの新機種を発表", (1.0, 0.0))]),
    Note("b.md", [Chunk("NTT と Android の話題 NTT Android", (0.0, 1.0))]),
]


def test_a_cjk_query_leaves_its_latin_words_to_the_cjk_leg(tmp_path: Path) -> None:
    store = build(tmp_path / "index.db", GLUED)
    result = run(store, "NTTドコモのAndroid新機種", rrf_params(mode="fts"), vector=None)
    assert (result.trace.expr("fts"), result.trace.expr("words")) == (None, None)
    # chunk 1 holds ntt android ドコ コモ 新機 機種 …; chunk 2 only ntt and android (twice)
    assert ids(result) == [1, 2]
    assert [h.explain.rank("cjk") for h in result.hits] == [1, 2]
    assert [h.score for h in result.hits] == [1.0, (6 / (K + 2)) / (6 / (K + 1))]
    # an identifier the CJK tokens split stays on the trigram table too; a one-token one not
    assert run(store, "SC-01D の新機種", rrf_params(mode="fts")).trace.expr("fts") == '"SC-01D"'
    assert run(store, "ISW13HT の新機種", rrf_params(mode="fts")).trace.expr("fts") is None


def test_a_latin_query_runs_the_word_leg_only(mixed: Store) -> None:
    # porter stemming: "retry" and "retries" are one term; the trigram "retry" would miss 2
    result = run(mixed, "retry", rrf_params(mode="fts"), vector=None)
    assert (result.trace.expr("fts"), result.trace.expr("words")) == (None, '"retry"')
    assert ids(result) == [2, 3]
    assert mixed.fts_match_ids('"retry"', "fts_chunks") == {3}  # the trigram table alone


def test_stemming_finds_a_chunk_through_the_word_leg(tmp_path: Path) -> None:
    store = build(tmp_path / "index.db", [
        Note("ir.md", [Chunk("notes on retrieval systems and their users", (0.6, 0.8))]),
        Note("garden.md", [Chunk("roses and tulips in the spring garden", (1.0, 0.0))]),
    ])
    # "retrieving"/"retrieval" stem to "retriev", "system"/"systems" to "system"
    result = run(store, "retrieving system", rrf_params(mode="fts"), vector=None)
    assert result.trace.expr("words") == '"retrieving" OR "system"'
    assert ids(result) == [1]
    assert result.hits[0].explain.rank("words") == 1
    # spans are literal substrings (§11): "system" inside "systems", no span for "retrieving"
    content = result.hits[0].content
    assert result.hits[0].match_spans == ((content.index("system"), content.index("system") + 6),)
    # the trigram table finds neither query word in the chunk
    assert store.fts_match_ids('"retrieving" OR "system"', "fts_chunks") == {1}  # ⊂ "systems"
    assert store.fts_match_ids('"retrieving"', "fts_chunks") == set()
    # hybrid: the vector prefers the garden note, the word leg lifts the stemmed match first
    hybrid = run(store, "retrieving system", rrf_params(limit=2), vector=(1.0, 0.0))
    assert ids(hybrid) == [1, 2]  # 1: 1/62 + 1/61 > 2: 1/61
    assert hybrid.hits[0].score == (1 / (K + 2) + 1 / (K + 1)) / (2 / (K + 1))


# --------------------------------------------------------------------------- exclusions

# Query vector (1, 0). Chunk 5 mentions "async" only in its heading.
EXCLUSION = [
    Note("a.md", [Chunk("python async await", (1.0, 0.0))]),
    Note("b.md", [Chunk("python sync code", (0.8, 0.6))]),
    Note("c.md", [Chunk("ruby async code", (0.6, 0.8))]),
    Note("d.md", [Chunk("java threads", (0.0, 1.0))]),
    Note("e.md", [Chunk("python stuff here", (0.96, 0.28), heading="async notes")]),
]


@pytest.fixture(scope="module")
def exclusion(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("exclusion") / "index.db", EXCLUSION)


def test_without_exclusion_async_chunks_are_found(exclusion: Store) -> None:
    result = run(exclusion, "python", rrf_params(limit=10), vector=(1.0, 0.0))
    assert set(ids(result)) == {1, 2, 3, 4, 5}


def test_exclusion_removes_chunks_from_both_legs(exclusion: Store) -> None:
    result = run(exclusion, "python -async", rrf_params(limit=10), vector=(1.0, 0.0))
    assert result.trace.expr("fts") is None
    assert result.trace.expr("words") == '("python") NOT ("async")'
    assert ids(result) == [2, 4]
    two, four = result.hits
    assert (two.explain.rank("words"), two.explain.vec_rank) == (1, 1)
    assert (four.explain.rank("words"), four.explain.vec_rank) == (None, 2)
    assert two.score == 1.0


def test_exclusion_without_fts_phrase_still_filters_the_vector_leg(exclusion: Store) -> None:
    result = run(exclusion, "x -async", rrf_params(limit=10), vector=(1.0, 0.0))
    assert (result.trace.expr("fts"), result.trace.expr("words")) == (None, None)
    assert ids(result) == [2, 4]
    assert all(h.explain.rank("fts") is None and h.explain.rank("words") is None
               for h in result.hits)
    # `ab` has no trigram phrase but is a word: the word leg runs (and matches no chunk)
    two = run(exclusion, "ab -async", rrf_params(limit=10), vector=(1.0, 0.0))
    assert two.trace.expr("words") == '("ab") NOT ("async")'
    assert ids(two) == [2, 4]


def test_exclusion_over_fetches_the_vector_leg(exclusion: Store) -> None:
    # dense_top_k 1: without exclusion the nearest chunk 1 wins; with it, the ×10 over-fetch
    # still finds chunk 2 after dropping 1 and 5.
    params = rrf_params(mode="vector", dense_top_k=1)
    assert ids(run(exclusion, "python", params, vector=(1.0, 0.0))) == [1]
    assert ids(run(exclusion, "python -async", params, vector=(1.0, 0.0))) == [2]


def test_reranker_and_spans_see_the_positive_text(exclusion: Store) -> None:
    reranker = FakeReranker()
    result = run(exclusion, "python -async", rrf_params(limit=10, rerank=True),
                 vector=(1.0, 0.0), reranker=reranker)
    assert [query for query, _ in reranker.calls] == ["python"]
    assert ids(result) == [2, 4]  # equal reranker scores keep the fused order
    assert result.hits[0].match_spans == ((0, 6),)
    assert result.hits[1].match_spans == ()


def test_excluded_term_reappearing_in_expanded_text_gets_no_span(tmp_path: Path) -> None:
    first, second = "python basics", "async python tricks"
    store = build(tmp_path / "index.db", [Note("p.md", [Chunk(first, (1.0, 0.0)),
                                                         Chunk(second, (0.0, 1.0))])])
    result = run(store, "python -async", rrf_params(limit=10, parent_retriever=True),
                 vector=(1.0, 0.0))
    assert ids(result) == [1]
    hit = result.hits[0]
    assert hit.content == first + "\n\n" + second
    at = len(first + "\n\n" + "async ")
    assert hit.match_spans == ((0, 6), (at, at + 6))


# Exclusions across the two full-text tables. Query vector (1, 0).
#   chunk  content                            vector
#   1      python 再ランキング notes           (1, 0)
#   2      python basics for new readers      (0.8, 0.6)   longer: the word leg ranks it last
#   3      python ランキング tips              (0.6, 0.8)
#   4      再ランキング ab test                 (0.28, 0.96)
#   5      再ランキング only here               (0, 1)
CROSS = [
    Note("a.md", [Chunk("python 再ランキング notes", (1.0, 0.0))]),
    Note("b.md", [Chunk("python basics for new readers", (0.8, 0.6))]),
    Note("c.md", [Chunk("python ランキング tips", (0.6, 0.8))]),
    Note("d.md", [Chunk("再ランキング ab test", (0.28, 0.96))]),
    Note("e.md", [Chunk("再ランキング only here", (0.0, 1.0))]),
]


@pytest.fixture(scope="module")
def cross(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("cross") / "index.db", CROSS)


def test_a_cjk_exclusion_filters_the_word_leg(cross: Store) -> None:
    # `"python"` cannot carry `NOT 再ランキング` in fts_words: the word leg drops the ids the
    # trigram negatives match (1, 3 and 4, 5 hold ランキング), over-fetching like a filter
    query = "python -再ランキング"
    compiled = compile_query(query)
    assert (compiled.word_expr, compiled.negative_expr) == (
        '"python"', '"再ランキング" OR "ランキング"')
    plain = run(cross, "python", rrf_params(mode="fts", sparse_top_k=1), vector=None)
    assert ids(plain) == [1]  # without the exclusion a shorter row ranks first
    result = run(cross, query, rrf_params(mode="fts", sparse_top_k=1), vector=None)
    assert ids(result) == [2]
    hybrid = run(cross, query, rrf_params(limit=10), vector=(1.0, 0.0))
    assert ids(hybrid) == [2]
    assert (hybrid.hits[0].explain.rank("words"), hybrid.hits[0].explain.vec_rank) == (1, 1)


def test_a_word_exclusion_filters_the_trigram_and_cjk_legs(cross: Store) -> None:
    # `-ab` is too short for a trigram negative but excludes the word "ab": every leg drops 4
    query = '"再ランキング" -ab'  # quoted: exactly that text, on the trigram leg only
    compiled = compile_query(query)
    assert (compiled.match_expr, compiled.negative_expr) == ('"再ランキング"', None)
    assert (compiled.word_negative_expr, compiled.cjk_expr) == ('"ab"', None)
    assert cross.fts_match_ids('"ab"', "fts_words") == {4}
    assert set(ids(run(cross, '"再ランキング"', rrf_params(mode="fts"), vector=None))) == {
        1, 4, 5}
    fts_only = run(cross, query, rrf_params(mode="fts"), vector=None)
    assert set(ids(fts_only)) == {1, 5}
    hybrid = run(cross, query, rrf_params(limit=10), vector=(1.0, 0.0))
    assert set(ids(hybrid)) == {1, 2, 3, 5}
    # unquoted, the CJK leg runs its tokens and drops 4 as well: 3 holds ランキング
    cjk_only = run(cross, "ランキング -ab", rrf_params(mode="fts"), vector=None)
    assert set(ids(cjk_only)) == {1, 3, 5}
    assert all(h.explain.rank("cjk") is not None for h in cjk_only.hits)


@pytest.mark.parametrize(("query", "held"), [
    ("python -再", {1, 4, 5}), ("python -再ラ", {1, 4, 5}), ("python -ン", {1, 3, 4, 5}),
    ('python -"ラン"', {1, 3, 4, 5}), ("ランキング -再", {1, 4, 5}),
])
def test_one_and_two_character_cjk_exclusions_hold_on_every_leg(
        cross: Store, query: str, held: set[int]) -> None:
    """Issue #13: `-再` / `-再ラ` exclude every chunk holding that substring, whatever the leg
    (too short for the trigram table: the CJK table's unigram / bigram tokens find them)."""
    compiled = compile_query(query)
    assert compiled.cjk_negative_expr is not None and compiled.negative_expr is None
    for mode in ("fts", "hybrid", "vector"):
        found = set(ids(run(cross, query, rrf_params(mode=mode, limit=10), vector=(1.0, 0.0))))
        assert found and not found & held, (mode, found)
        assert all(compiled.cjk_negative_expr.strip('"') not in run_text
                   for run_text in (CROSS[i - 1].chunks[0].content for i in found))


@pytest.mark.parametrize("query", ["python -再ランキング", "再ランキング -ab", '"ランキング" -ab',
                                   "ランキング -再", "python -再ラ",
                                   "python ランキング tips -ab", "python -async", "python"])
def test_tune_fetches_the_lists_the_search_legs_rank(cross: Store, query: str) -> None:
    """tune scores the lists it fetches itself: they must be the search's full-text legs,
    exclusions across tables included (limit 10: P = 50, every candidate is a hit here)."""
    compiled = compile_query(query)
    result = run(cross, query, rrf_params(mode="fts", limit=10), vector=None)

    def leg(ranks: list[int | None]) -> tuple[int, ...]:
        ranked = sorted((r, h.chunk.chunk_id) for r, h in zip(ranks, result.hits, strict=True)
                        if r is not None)
        return tuple(cid for _, cid in ranked)

    trigram = leg([h.explain.rank("fts") for h in result.hits])
    words = leg([h.explain.rank("words") for h in result.hits])
    cjk = leg([h.explain.rank("cjk") for h in result.hits])
    assert trigram or words or cjk
    fetcher = ListFetcher(cross, compiled, 50)
    assert fetcher.fetch(TRIGRAM, BUILTIN_BM25) == trigram
    assert fetcher.fetch(WORDS, BUILTIN_BM25) == words
    assert fetcher.fetch(CJK, BUILTIN_BM25) == cjk


# --------------------------------------------------------------------------- filters

# Every chunk contains "gamma" (identical contents: FTS ranks by chunk id) and has its own vector.
FILTERED = [
    Note("notes/a.md", [Chunk("gamma ray note", (1.0, 0.0), quality=0.9)], category="notes",
         topic="db", tags=("x", "y"), date="2025-01-10"),
    Note("notes/sub/b.md", [Chunk("gamma ray note", (0.96, 0.28), quality=0.2)],
         category="notes", topic="web", tags=("y",), date="2025-03-01"),
    Note("ops/c.md", [Chunk("gamma ray note", (0.8, 0.6), quality=0.5)], category="ops",
         topic="db", tags=("z",)),
    Note("ops/d.txt", [Chunk("gamma ray note", (0.6, 0.8), quality=0.8)], category="ops",
         date="2024-12-31"),
    Note("archive/e.md", [Chunk("gamma ray note", (0.28, 0.96), quality=1.0)],
         tags=("x", "z"), date="2025-06-30"),
]


@pytest.fixture(scope="module")
def filtered(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("filters") / "index.db", FILTERED)


@pytest.mark.parametrize(("spec", "expected"), [
    (FilterSpec(), [1, 2, 3, 4, 5]),
    (FilterSpec(quality_threshold=0.5), [1, 3, 4, 5]),  # 0.5 itself passes: drop only < t
    (FilterSpec(quality_threshold=0.0), [1, 2, 3, 4, 5]),  # --include-low-quality
    (FilterSpec(quality_threshold=1.0), [5]),
    (FilterSpec(category="notes"), [1, 2]),
    (FilterSpec(category="Notes"), []),  # exact, case-sensitive
    (FilterSpec(topic="db"), [1, 3]),
    (FilterSpec(path_globs=("notes/**",)), [1, 2]),
    (FilterSpec(path_globs=("*.md",)), [1, 2, 3, 5]),  # * crosses /
    (FilterSpec(path_globs=("notes/?.md",)), [1]),
    (FilterSpec(path_globs=("!notes/**",)), [3, 4, 5]),
    (FilterSpec(path_globs=("ops/*", "!**/*.txt")), [3]),
    (FilterSpec(path_globs=("{ops,archive}/*.md",)), [3, 5]),
    (FilterSpec(path_globs=("ops/[!c].*",)), [4]),
    (FilterSpec(tags_any=("x",)), [1, 5]),
    (FilterSpec(tags_any=("y", "z")), [1, 2, 3, 5]),
    (FilterSpec(tags_any=("X",)), []),
    (FilterSpec(tags_all=("x", "z")), [5]),
    (FilterSpec(tags_all=("y",)), [1, 2]),
    (FilterSpec(date_from="2025-01-01"), [1, 2, 5]),  # a NULL date fails any bound
    (FilterSpec(date_to="2025-03-01"), [1, 2, 4]),
    (FilterSpec(date_from="2025-01-10", date_to="2025-03-01"), [1, 2]),
    (FilterSpec(category="notes", quality_threshold=0.5), [1]),
    (FilterSpec(topic="db", tags_any=("z",), path_globs=("ops/**",)), [3]),
])
def test_filters_apply_to_both_legs(filtered: Store, spec: FilterSpec, expected: list[int]) -> None:
    result = run(filtered, "gamma", rrf_params(limit=10, filters=spec), vector=(1.0, 0.0))
    assert sorted(ids(result)) == expected
    # the legs agree: every surviving chunk was ranked by both ("gamma": the word-level leg)
    assert all(h.explain.rank("words") is not None and h.explain.vec_rank is not None
               for h in result.hits)
    for mode in ("vector", "fts"):
        one_leg = run(filtered, "gamma", rrf_params(limit=10, mode=mode, filters=spec),
                      vector=(1.0, 0.0))
        assert sorted(ids(one_leg)) == expected


def test_filters_over_fetch_each_leg(filtered: Store) -> None:
    # Both legs keep 1 candidate; chunk 3 is 3rd in each, found through the ×10 over-fetch.
    params = rrf_params(dense_top_k=1, sparse_top_k=1, filters=FilterSpec(category="ops"))
    result = run(filtered, "gamma", params, vector=(1.0, 0.0))
    assert ids(result) == [3]
    assert (result.hits[0].explain.vec_rank, result.hits[0].explain.rank("words")) == (1, 1)
    assert result.hits[0].score == 1.0


# --------------------------------------------------------------------------- MMR

# Vector mode, query (1, 0, 0); chunks 1 and 2 share a document.
#   chunk  vector         cos(q)  vec rank  fused score        rel = (s − min) / (max − min)
#   1      (1, 0, 0)      1.0     1         61/61              1
#   2      (.8, .6, 0)    0.8     2         61/62              (61/62 − 61/64)/(3/64) = 0.6559
#   3      (.6, 0, .8)    0.6     3 (tie)   61/63              (61/63 − 61/64)/(3/64) = 0.3228
#   4      (.6, .8, 0)    0.6     4 (tie)   61/64              0
# cosines: (1,2) .8, (1,3) .6, (1,4) .6, (2,3) .48, (2,4) .96, (3,4) .36
MMR_NOTES = [
    Note("a.md", [Chunk("m one", (1.0, 0.0, 0.0)), Chunk("m two", (0.8, 0.6, 0.0))]),
    Note("b.md", [Chunk("m three", (0.6, 0.0, 0.8))]),
    Note("c.md", [Chunk("m four", (0.6, 0.8, 0.0))]),
]


@pytest.fixture(scope="module")
def mmr_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("mmr") / "index.db", MMR_NOTES)


def _mmr(store: Store, lam: float, penalty: float = 0.0) -> SearchResult:
    params = rrf_params(limit=3, mode="vector", mmr=True, mmr_lambda=lam,
                          mmr_same_doc_penalty=penalty)
    return run(store, "m", params, vector=(1.0, 0.0, 0.0))


def test_mmr_hand_computed_selection(mmr_store: Store) -> None:
    # λ = 0.3. Step 1: chunk 1 (rel 1). Step 2: 2 → .3·.6559 − .7·.8 = −.3632,
    # 3 → .3·.3228 − .7·.6 = −.3232, 4 → −.7·.6 = −.42: chunk 3. Step 3: 2 → −.3632 (max cos .8),
    # 4 → −.42 (max cos .6): chunk 2.
    result = _mmr(mmr_store, 0.3)
    assert ids(result) == [1, 3, 2]
    # original fused scores are kept, MMR ranks recorded
    assert [h.score for h in result.hits] == [(1 / (K + r)) / (1 / (K + 1)) for r in (1, 3, 2)]
    assert [h.explain.mmr_rank for h in result.hits] == [1, 2, 3]
    assert [h.explain.fused_rank for h in result.hits] == [1, 3, 2]


def test_mmr_lambda_one_keeps_relevance_order(mmr_store: Store) -> None:
    assert ids(_mmr(mmr_store, 1.0)) == [1, 2, 3]


def test_mmr_default_lambda(mmr_store: Store) -> None:
    # λ = 0.7. Step 2: 2 → .7·.6559 − .3·.8 = .2191 beats 3 → .7·.3228 − .3·.6 = .0459.
    assert ids(_mmr(mmr_store, 0.7)) == [1, 2, 3]


def test_mmr_same_doc_penalty(mmr_store: Store) -> None:
    # λ = 1, penalty .5: step 2: 2 → .6559 − .5 = .1559 < 3 → .3228; step 3: 2 → .1559 > 4 → 0
    assert ids(_mmr(mmr_store, 1.0, 0.5)) == [1, 3, 2]


def test_mmr_drops_candidates_without_a_stored_vector(tmp_path: Path) -> None:
    store = build(tmp_path / "index.db", MMR_NOTES)
    store.close()
    writer = Store.open_for_index(tmp_path / "index.db")
    with writer.transaction():
        writer.con.execute("DELETE FROM vec_chunks WHERE chunk_id = 2")
    writer.close()
    reader = Store.open_readonly(tmp_path / "index.db")
    try:
        # chunk 2 is no longer a vector candidate; in FTS mode it is fused but has no vector
        params = rrf_params(limit=4, mode="fts", mmr=True, mmr_lambda=1.0)
        query = "one two three four"
        assert set(ids(run(reader, query, replace(params, mmr=False)))) == {1, 2, 3, 4}
        assert set(ids(run(reader, query, params))) == {1, 3, 4}
    finally:
        reader.close()


# --------------------------------------------------------------------------- pool sizes


def test_pool_sizes_per_path() -> None:
    assert pool_sizes(rrf_params(limit=5)) == Pools(50, 50, 5)
    assert pool_sizes(rrf_params(limit=20)) == Pools(100, 100, 20)
    assert pool_sizes(rrf_params(limit=5000)) == Pools(5000, 5000, 1000)  # limit clamped
    assert pool_sizes(rrf_params(limit=5, rerank=True)) == Pools(250, 250, 50)
    assert pool_sizes(rrf_params(limit=10, rerank=True)) == Pools(250, 250, 50)
    assert pool_sizes(rrf_params(limit=20, rerank=True)) == Pools(500, 500, 100)
    assert pool_sizes(rrf_params(limit=5, mmr=True)) == Pools(50, 50, None)
    assert pool_sizes(rrf_params(limit=20, mmr=True, rerank=True)) == Pools(100, 100, None)


def test_top_k_from_file_applies_on_every_path() -> None:
    base = rrf_params(limit=5, dense_top_k=30, sparse_top_k=7)
    for params in (base, replace(base, rerank=True), replace(base, mmr=True)):
        pools = pool_sizes(params)
        assert (pools.vec, pools.fts) == (30, 7)


def test_top_k_from_preset_applies_only_without_reranker() -> None:
    preset = rrf_params(limit=5, dense_top_k=40, dense_top_k_from_preset=True,
                          sparse_top_k=40, sparse_top_k_from_preset=True)
    assert pool_sizes(preset) == Pools(40, 40, 5)
    assert pool_sizes(replace(preset, rerank=True)) == Pools(250, 250, 50)
    assert pool_sizes(replace(preset, mmr=True)) == Pools(40, 40, None)


def test_build_params_marks_where_top_k_came_from() -> None:
    def pools(file_values: Mapping[str, object], flags: Mapping[str, object],
              rerank: bool) -> Pools:
        settings = resolve(file_values, flags)
        return pool_sizes(build_params(settings, limit=5, rerank=rerank, filters=FilterSpec()))

    balanced = {"search.retrieval.preset": "balanced"}
    assert pools(balanced, {}, rerank=False) == Pools(40, 40, 5)
    assert pools(balanced, {}, rerank=True) == Pools(250, 250, 50)
    # a file value beats the preset and applies with a reranker; the other leg keeps the pool
    file_dense = {**balanced, "search.retrieval.dense_top_k": 30}
    assert pools(file_dense, {}, rerank=True) == Pools(30, 250, 50)
    assert pools(balanced, {"search.retrieval.sparse_top_k": 12}, rerank=True) == Pools(250, 12, 50)


@pytest.mark.parametrize(("file_values", "flags", "expected"), [
    ({}, {}, None),
    ({}, {"reranker": "bge-reranker-v2-m3"}, "bge-reranker-v2-m3"),
    ({"reranker": "bge-reranker-v2-m3"}, {}, "bge-reranker-v2-m3"),  # rerank_by_default true
    ({"reranker": "bge-reranker-v2-m3", "rerank_by_default": False}, {}, None),
    ({"reranker": "bge-reranker-v2-m3", "rerank_by_default": False},
     {"reranker": "bge-reranker-v2-m3"}, "bge-reranker-v2-m3"),  # a flag is unconditional
    ({"reranker": "bge-reranker-v2-m3"}, {"reranker": "none"}, None),
])
def test_which_reranker_search_runs(file_values: dict[str, object], flags: dict[str, object],
                                    expected: str | None) -> None:
    assert search_reranker(resolve(file_values, flags)) == expected


# Sixty chunks "delta 01" … "delta 60": identical FTS scores, so the FTS leg ranks by id
# (1, 2, …); the vectors are at angle (60 − i) · 0.02 rad, so the vector leg ranks 60, 59, ….
# Fused with equal weights, chunk i and chunk 61 − i tie (1/(121 − i) + 1/(60 + i)), the
# extremes rank first: 1, 60, 2, 59, …; the ten middle chunks 26–35 rank last.
POOL_NOTES = [
    Note(f"p{i:02d}.md", [Chunk(f"delta {i:02d}", (math.cos((60 - i) * 0.02),
                                                   math.sin((60 - i) * 0.02)))])
    for i in range(1, 61)
]


@pytest.fixture(scope="module")
def pool_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("pool") / "index.db", POOL_NOTES)


def by_number() -> FakeReranker:
    """Scores each document by its number: the reranker prefers higher chunk ids."""
    return FakeReranker({f"delta {i:02d}": float(i) for i in range(1, 61)})


def test_pool_plain_path(pool_store: Store) -> None:
    # Legs of P = 50: vector 60 … 11, words 1 … 50. Chunks 11 … 50 are in both and come first,
    # i and 61 − i tying again: 11 (vec 50th, words 11th), 50 (vec 11th, words 50th), 12, 49, …
    result = run(pool_store, "delta", rrf_params(limit=5), vector=(1.0, 0.0))
    assert ids(result) == [11, 50, 12, 49, 13]
    assert (result.trace.pool_vec, result.trace.pool_fts, result.trace.fused) == (50, 50, 5)
    assert [(h.explain.vec_rank, h.explain.rank("words"))
            for h in result.hits[:2]] == [(50, 11), (11, 50)]


def test_pool_reranker_path(pool_store: Store) -> None:
    reranker = by_number()
    result = run(pool_store, "delta", rrf_params(limit=5, rerank=True), vector=(1.0, 0.0),
                 reranker=reranker)
    (query, documents), = reranker.calls
    # legs of 250 return all 60, the fused list is cut to P = 50: the middle ten are left out
    assert query == "delta" and len(documents) == 50
    assert set(documents) == {f"delta {i:02d}" for i in [*range(1, 26), *range(36, 61)]}
    assert ids(result) == [60, 59, 58, 57, 56]
    assert [h.score for h in result.hits] == [60.0, 59.0, 58.0, 57.0, 56.0]  # raw reranker score
    assert [h.explain.rerank_rank for h in result.hits] == [1, 2, 3, 4, 5]
    assert [h.explain.fused_rank for h in result.hits] == [2, 4, 6, 8, 10]


def test_reranker_ties_keep_fused_order(pool_store: Store) -> None:
    result = run(pool_store, "delta", rrf_params(limit=5, rerank=True), vector=(1.0, 0.0),
                 reranker=FakeReranker(default=-2.5))
    assert ids(result) == [1, 60, 2, 59, 3]
    assert all(h.score == -2.5 for h in result.hits)
    assert result.low_confidence is False  # mean ≤ 0


def test_pool_mmr_path_reranks_the_whole_union(pool_store: Store) -> None:
    reranker = by_number()
    params = rrf_params(limit=5, rerank=True, mmr=True)
    result = run(pool_store, "delta", params, vector=(1.0, 0.0), reranker=reranker)
    # legs of P = 50 each (vector 60…11, FTS 1…50): the union is all 60, all reranked and kept
    assert len(reranker.calls[0][1]) == 60
    assert result.trace.fused == 60
    assert len(result.hits) == 5 and ids(result)[0] == 60  # MMR's first pick: best relevance
    assert [h.explain.mmr_rank for h in result.hits] == [1, 2, 3, 4, 5]


def test_dense_top_k_from_file_with_reranker(pool_store: Store) -> None:
    reranker = by_number()
    params = rrf_params(limit=5, rerank=True, dense_top_k=20)
    result = run(pool_store, "delta", params, vector=(1.0, 0.0), reranker=reranker)
    assert (result.trace.pool_vec, result.trace.pool_fts) == (20, 250)
    vec_ranks = [h.explain.vec_rank for h in result.hits if h.explain.vec_rank is not None]
    assert vec_ranks and max(vec_ranks) <= 20


def test_dense_top_k_from_preset_ignored_with_reranker(pool_store: Store) -> None:
    params = rrf_params(limit=5, rerank=True, dense_top_k=20, dense_top_k_from_preset=True)
    result = run(pool_store, "delta", params, vector=(1.0, 0.0), reranker=by_number())
    assert (result.trace.pool_vec, result.trace.pool_fts) == (250, 250)


def test_small_top_k_can_return_fewer_than_limit(pool_store: Store) -> None:
    params = rrf_params(limit=5, mode="fts", sparse_top_k=3)
    assert ids(run(pool_store, "delta", params)) == [1, 2, 3]


# --------------------------------------------------------------------------- parent retriever

PARENT = [
    # whole document: every estimate is tiny; the middle chunk has quality 0 (not filtered)
    Note("w.md", [Chunk("whale alpha", (1.0, 0.0)), Chunk("beta text", (1.0, 0.0), quality=0.0),
                  Chunk("gamma text", (1.0, 0.0))]),
    # level-aware adjacent merge, 150 tokens each
    Note("a.md", [Chunk("intro", (1.0, 0.0), tokens=150),
                  Chunk("section one", (1.0, 0.0), tokens=150),
                  Chunk("walrus here", (1.0, 0.0), tokens=150),
                  Chunk("sub detail", (1.0, 0.0), level=3, ancestry=("S",), tokens=150),
                  Chunk("closing", (1.0, 0.0), tokens=150)]),
    # same level, different ancestry
    Note("b.md", [Chunk("first", (1.0, 0.0), level=3, ancestry=("P",), tokens=150),
                  Chunk("narwhal", (1.0, 0.0), level=3, ancestry=("Q",), tokens=150),
                  Chunk("third", (1.0, 0.0), level=3, ancestry=("Q",), tokens=150)]),
    # NULL / 0 token counts: estimate = UTF-8 bytes // 4 = 360 // 4 = 90 (120 kana, 3 bytes each)
    Note("n.md", [Chunk("い" * 120, (1.0, 0.0), tokens=0),
                  Chunk("ぺんぎん" + "あ" * 116, (1.0, 0.0), tokens=None),
                  Chunk("う" * 120, (1.0, 0.0), tokens=None)]),
]


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("parent") / "index.db", PARENT)


def _parent(store: Store, text: str, *, whole_doc_threshold_tokens: int = 100,
            max_expanded_tokens: int = 2000) -> SearchResult:
    params = rrf_params(limit=1, mode="fts", parent_retriever=True,
                          whole_doc_threshold_tokens=whole_doc_threshold_tokens,
                          max_expanded_tokens=max_expanded_tokens,
                          filters=FilterSpec(quality_threshold=0.5))
    return run(store, text, params)


def test_whole_document_expansion(parent: Store) -> None:
    plain = run(parent, "whale", rrf_params(limit=1, mode="fts"))
    hit = _parent(parent, "whale").hits[0]
    assert hit.content == "whale alpha\n\nbeta text\n\ngamma text"
    assert hit.expanded_from == {"kind": "whole_document", "chunk_index": 0, "total_chunks": 3}
    assert (hit.score, hit.chunk.chunk_id) == (plain.hits[0].score, plain.hits[0].chunk.chunk_id)
    assert hit.match_spans == ((0, 5),)
    assert plain.hits[0].expanded_from is None


def test_adjacent_merge_is_level_aware(parent: Store) -> None:
    # hit: a.md chunk 2 (150 ≥ 100 tokens). Before: 1, then 0 (same level, no ancestry);
    # after: chunk 3 is level 3, so that side closes at once.
    hit = _parent(parent, "walrus").hits[0]
    assert hit.content == "intro\n\nsection one\n\nwalrus here"
    assert hit.expanded_from == {"kind": "adjacent", "chunk_index": 2, "from_index": 0,
                                 "to_index": 2}


def test_adjacent_merge_token_cap(parent: Store) -> None:
    # cap 400: 150 + 150 = 300 fits, a third 150 would make 450
    hit = _parent(parent, "walrus", max_expanded_tokens=400).hits[0]
    assert hit.expanded_from == {"kind": "adjacent", "chunk_index": 2, "from_index": 1,
                                 "to_index": 2}
    # cap below the hit's own estimate: considered, not expanded
    alone = _parent(parent, "walrus", max_expanded_tokens=120).hits[0]
    assert alone.content == "walrus here"
    assert alone.expanded_from == {"kind": "adjacent", "chunk_index": 2, "from_index": 2,
                                   "to_index": 2}


def test_adjacent_merge_needs_the_same_ancestry(parent: Store) -> None:
    hit = _parent(parent, "narwhal").hits[0]
    assert hit.content == "narwhal\n\nthird"
    assert hit.expanded_from == {"kind": "adjacent", "chunk_index": 1, "from_index": 1,
                                 "to_index": 2}


def test_null_token_counts_fall_back_to_bytes(parent: Store) -> None:
    # est = 90 for each chunk (not 120 // 4 = 30 code points): 90 ≥ threshold 50, so no
    # whole document; before: 90 + 90 = 180 ≤ 200; after: 270 > 200.
    hit = _parent(parent, "ぺんぎん", whole_doc_threshold_tokens=50,
                  max_expanded_tokens=200).hits[0]
    assert hit.expanded_from == {"kind": "adjacent", "chunk_index": 1, "from_index": 0,
                                 "to_index": 1}
    assert hit.content == "い" * 120 + "\n\n" + "ぺんぎん" + "あ" * 116
    assert hit.match_spans == ((122, 126),)  # code points into the expanded content


def test_whole_document_row_limit_falls_through(tmp_path: Path) -> None:
    # max_expanded_tokens 2 ⇒ LIMIT 2·2 + 64 = 68 rows; the document has 70 (68 empty chunks of
    # estimate 0), so whole-document falls through to an adjacent merge over all 70.
    chunks = [Chunk("", (1.0, 0.0), tokens=None) for _ in range(35)]
    chunks += [Chunk("kiwi", (1.0, 0.0), tokens=None)]
    chunks += [Chunk("", (1.0, 0.0), tokens=None) for _ in range(34)]
    store = build(tmp_path / "index.db", [Note("k.md", chunks)])
    params = rrf_params(limit=1, mode="fts", parent_retriever=True,
                          whole_doc_threshold_tokens=2, max_expanded_tokens=2)
    hit = run(store, "kiwi", params).hits[0]
    assert hit.expanded_from == {"kind": "adjacent", "chunk_index": 35, "from_index": 0,
                                 "to_index": 69}
    assert hit.content == "\n\n" * 35 + "kiwi" + "\n\n" * 34


def test_expanded_from_in_json(parent: Store) -> None:
    from groove_cli.results import hit_json

    expanded = hit_json(_parent(parent, "walrus").hits[0], explain=False)
    assert list(expanded) == ["score", "relevance", "path", "abs_path", "line_start", "line_end", "title",
                              "heading", "topic", "date", "tags", "content", "stale",
                              "match_spans", "expanded_from"]
    assert expanded["expanded_from"] == {"kind": "adjacent", "chunk_index": 2, "from_index": 0,
                                         "to_index": 2}
    plain = hit_json(run(parent, "walrus", rrf_params(limit=1, mode="fts")).hits[0], False)
    assert "expanded_from" not in plain
