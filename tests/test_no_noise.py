"""Hybrid returns nothing neither leg supports (issue 46 item 3, search.md §12), on a 3-note
index with hand-set vectors and a hand-set relevance model, so each relevance is arithmetic:
relevance = 1 / (1 + exp(-(4·cosine - 4))) — cosine 1 → 0.5, 0 → 0.018, -1 → 0.00034."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.pipeline import SearchResult, search
from groove_cli.retrieve.query import compile_query
from groove_cli.retrieve.relevance import Calibration
from groove_cli.store import Store
from groove_cli.vectors import vec0_knn
from tests.test_pipeline import Chunk, Note, build

MODEL = Calibration(-4.0, (4.0, 0.0, 0.0, 0.0, 0.0, 0.0))
NOTES = [Note("a.md", [Chunk("zebra crossing at the corner", (1.0, 0.0))]),
         Note("b.md", [Chunk("lions rest in the shade", (0.0, 1.0))]),
         Note("c.md", [Chunk("whales sing in the deep", (-1.0, 0.0))])]


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build(tmp_path_factory.mktemp("noise") / "index.db", NOTES)


def run(store: Store, text: str, vector: tuple[float, float], **settings: Any) -> SearchResult:
    params = SearchParams(**{"calibration": MODEL, "limit": 10, **settings})
    return search(store, compile_query(text), params, vector=np.array(vector, dtype=np.float32),
                  knn=vec0_knn(store), dim=store.vec_dim())


def found(result: SearchResult) -> list[tuple[str, float]]:
    return [(h.chunk.path, round(h.relevance or 0.0, 5)) for h in result.hits]


def test_the_defaults_are_the_measured_ones() -> None:
    assert (SearchParams().relevance_floor, SearchParams().unsupported_below) == (0.15, 0.002)


def test_hits_at_relevance_zero_are_not_padded_in(store: Store) -> None:
    result = run(store, "zebra", (1.0, 0.0))
    assert result.trace.text_found == 1
    # a.md: found by the words leg; b.md: vector only at 0.018 >= 0.002; c.md: 0.00034 < 0.002
    assert found(result) == [("a.md", round(sigmoid(0.0), 5)), ("b.md", round(sigmoid(-4), 5))]
    padded = run(store, "zebra", (1.0, 0.0), unsupported_below=0.0)
    assert found(padded)[2] == ("c.md", round(sigmoid(-8), 5))


def test_a_text_hit_is_kept_whatever_its_relevance(store: Store) -> None:
    # the query vector points away from a.md (relevance 0.00034), but its words are in it
    result = run(store, "zebra", (-1.0, 0.0))
    assert ("a.md", round(sigmoid(-8), 5)) in found(result)


def test_words_in_no_note_need_the_floor(store: Store) -> None:
    near = run(store, "quokka", (1.0, 0.0))  # in no note: only relevance >= 0.15 is kept
    assert near.trace.text_found == 0
    assert found(near) == [("a.md", round(sigmoid(0.0), 5))]
    far = run(store, "quokka", (0.0, -1.0))  # every note at 0.018 or less: nothing
    assert far.hits == () and far.low_confidence is True
    assert len(run(store, "quokka", (0.0, -1.0), relevance_floor=0.0).hits) == 3


def test_vector_and_fts_modes_are_not_cut(store: Store) -> None:
    assert len(run(store, "quokka", (0.0, -1.0), mode="vector").hits) == 3
    assert [h.chunk.path for h in run(store, "zebra", (1.0, 0.0), mode="fts").hits] == ["a.md"]


def test_the_cut_is_in_the_eval_fingerprint() -> None:
    from groove_cli.config import SPECS

    assert SPECS["search.relevance.floor"].ranks and SPECS["search.relevance.unsupported_below"].ranks


