"""Run fingerprint members and the corpus digest encoding (eval.md §6)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct

import pytest

from groove_cli.evaluate.corpus import corpus_block, corpus_digest
from groove_cli.evaluate.fingerprint import FingerprintInputs, build_fingerprint

DEFAULTS = FingerprintInputs(
    model="multilingual-e5-small",
    reranker=None,
    limit=10,
    k_values=(1, 5, 10),
    golden_hash="ab" * 32,
    max_length_override=None,
    mmr=None,
    parent_retriever=None,
    rrf_k=60.0,
    bm25_heading_weight=2.0,
    bm25_context_weight=1.0,
    bm25_content_weight=1.0,
    preset=None,
    mode="hybrid",
    dense_top_k=None,
    sparse_top_k=None,
    vector_weight=1.0,
    leg_weights=(("fts_weight", 1.0, 1.0), ("cjk_weight", 6.0, 6.0)),
    min_score=0.0,
    context_mode="off",
    search=(),
)

MINIMAL = {
    "model": "multilingual-e5-small",
    "reranker": None,
    "limit": 10,
    "k_values": [1, 5, 10],
    "golden_hash": "ab" * 32,
    "metric_version": 1,
    "fts_query_version": 5,  # 2: word table (#8); 3: CJK table (#13); 4: no kana pairs; 5: #25
    "fingerprint_version": 2,  # 2: the derived `search` member (#38)
}


def fingerprint(**changes: object) -> dict[str, object]:
    return build_fingerprint(dataclasses.replace(DEFAULTS, **changes))  # type: ignore[arg-type]


def test_defaults_give_the_minimal_member_set_in_order() -> None:
    fp = build_fingerprint(DEFAULTS)
    assert fp == MINIMAL
    assert list(fp) == list(MINIMAL)
    assert json.loads(json.dumps(fp)) == fp  # JSON-ready: lists, not tuples


def test_reranker_name_is_kept() -> None:
    assert fingerprint(reranker="bge-reranker-base")["reranker"] == "bge-reranker-base"


@pytest.mark.parametrize(
    ("changes", "member", "value"),
    [
        ({"max_length_override": 256}, "max_length", 256),
        ({"mmr": (0.7, 0.0)}, "mmr", {"lambda": 0.7, "same_doc_penalty": 0.0}),
        ({"parent_retriever": (100, 2000)}, "parent_retriever",
         {"whole_doc_threshold_tokens": 100, "max_expanded_tokens": 2000}),
        ({"rrf_k": 20.0}, "fusion", {"rrf_k": 20.0, "bm25_heading_weight": 2.0,
                                     "bm25_context_weight": 1.0, "bm25_content_weight": 1.0}),
        ({"bm25_heading_weight": 3.0}, "fusion", {"rrf_k": 60.0, "bm25_heading_weight": 3.0,
                                                  "bm25_context_weight": 1.0,
                                                  "bm25_content_weight": 1.0}),
        ({"bm25_context_weight": 0.5}, "fusion", {"rrf_k": 60.0, "bm25_heading_weight": 2.0,
                                                  "bm25_context_weight": 0.5,
                                                  "bm25_content_weight": 1.0}),
        ({"bm25_content_weight": 0.0}, "fusion", {"rrf_k": 60.0, "bm25_heading_weight": 2.0,
                                                  "bm25_context_weight": 1.0,
                                                  "bm25_content_weight": 0.0}),
        ({"preset": "fast"}, "retrieval", {"preset": "fast"}),
        ({"mode": "vector"}, "retrieval", {"mode": "vector"}),
        ({"dense_top_k": 50}, "retrieval", {"dense_top_k": 50}),
        ({"sparse_top_k": 40}, "retrieval", {"sparse_top_k": 40}),
        ({"vector_weight": 1.2}, "retrieval", {"vector_weight": 1.2}),
        ({"leg_weights": (("fts_weight", 0.8, 1.0), ("cjk_weight", 6.0, 6.0))}, "retrieval",
         {"fts_weight": 0.8}),
        ({"leg_weights": (("fts_weight", 1.0, 1.0), ("cjk_weight", 3.0, 6.0))}, "retrieval",
         {"cjk_weight": 3.0}),
        ({"min_score": 0.3}, "retrieval", {"min_score": 0.3}),
        ({"context_mode": "static"}, "context", {"mode": "static"}),
    ],
)
def test_each_optional_member_appears_when_changed(
    changes: dict[str, object], member: str, value: object
) -> None:
    fp = fingerprint(**changes)
    assert fp == {**MINIMAL, member: value}


def test_all_optional_members_in_spec_order() -> None:
    fp = fingerprint(
        context_mode="static", min_score=0.1, vector_weight=1.2, sparse_top_k=30,
        dense_top_k=20, mode="fts", preset="balanced", rrf_k=10.0, parent_retriever=(50, 1000),
        mmr=(0.5, 0.2), max_length_override=128,
        leg_weights=(("fts_weight", 0.8, 1.0), ("cjk_weight", 12.0, 6.0)),
    )
    assert list(fp) == [*MINIMAL, "max_length", "mmr", "parent_retriever", "fusion",
                        "retrieval", "context"]
    assert list(fp["retrieval"]) == [  # type: ignore[call-overload]
        "preset", "mode", "dense_top_k", "sparse_top_k", "vector_weight", "fts_weight",
        "cjk_weight", "min_score",
    ]


def test_integral_weights_are_recorded_as_floats() -> None:
    fp = fingerprint(rrf_k=20, vector_weight=2)
    assert json.dumps(fp["fusion"]).startswith('{"rrf_k": 20.0,')
    assert json.dumps(fp["retrieval"]) == '{"vector_weight": 2.0}'


def field(value: bytes | None) -> bytes:
    if value is None:
        return b"\x00"
    return b"\x01" + struct.pack("<Q", len(value)) + value


def test_corpus_digest_byte_encoding() -> None:
    rows = [
        ("a.md", 0, None, "Intro text", None),
        ("a.md", 1, "Setup", "Run é", "a > Setup"),
        ("b.md", 10, "", "", None),
    ]
    expected = (
        b"\x01" + (4).to_bytes(8, "little") + b"a.md"
        + b"\x01" + (1).to_bytes(8, "little") + b"0"
        + b"\x00"
        + b"\x01" + (10).to_bytes(8, "little") + b"Intro text"
        + b"\x00"
        + b"\x01\x04\x00\x00\x00\x00\x00\x00\x00a.md"
        + b"\x01\x01\x00\x00\x00\x00\x00\x00\x001"
        + b"\x01\x05\x00\x00\x00\x00\x00\x00\x00Setup"
        + b"\x01\x06\x00\x00\x00\x00\x00\x00\x00Run \xc3\xa9"  # é is 2 UTF-8 bytes: length 6
        + b"\x01\x09\x00\x00\x00\x00\x00\x00\x00a > Setup"
        + field(b"b.md") + field(b"10") + field(b"") + field(b"") + field(None)
    )
    assert corpus_digest(rows) == hashlib.sha256(expected).hexdigest()


def test_corpus_digest_distinguishes_null_from_empty_and_boundaries() -> None:
    assert corpus_digest([("a.md", 0, None, "x", None)]) != corpus_digest([("a.md", 0, "", "x", None)])
    assert corpus_digest([("a.md", 0, "ab", "c", None)]) != corpus_digest([("a.md", 0, "a", "bc", None)])
    assert corpus_digest([]) == hashlib.sha256(b"").hexdigest()


def test_corpus_block() -> None:
    assert corpus_block(20, 60, "ff") == {"documents": 20, "chunks": 60, "digest": "ff"}


def test_score_fusion_adds_the_method_to_the_fusion_member() -> None:
    # a score-fusion run is never compared with an RRF run, even at the built-in bm25 / rrf_k
    base = fingerprint(score_fusion=(0.5, 1.0, 0.8, 0.7, 0.5, 4, 8))
    member = base["fusion"]
    assert member == {
        "rrf_k": 60.0, "bm25_heading_weight": 2.0, "bm25_context_weight": 1.0,
        "bm25_content_weight": 1.0, "method": "score", "score_alpha": 0.5,
        "score_cjk_weight": 1.0, "score_alpha_short": 0.8, "score_alpha_mid": 0.7,
        "score_alpha_long": 0.5, "short_query_words": 4, "mid_query_words": 8}
    assert isinstance(member, dict) and list(member) == [
        "rrf_k", "bm25_heading_weight", "bm25_context_weight", "bm25_content_weight", "method",
        "score_alpha", "score_cjk_weight", "score_alpha_short", "score_alpha_mid",
        "score_alpha_long", "short_query_words", "mid_query_words"]
    assert fingerprint(score_fusion=(0.6, 1.0, 0.8, 0.7, 0.5, 4, 8)) != base
    # the length rule's knobs change the ranking too
    assert fingerprint(score_fusion=(0.5, 1.0, 0.8, 0.7, 0.5, 6, 8)) != base
    assert fingerprint(score_fusion=(0.5, 1.0, 0.8, 0.7, 0.4, 4, 8)) != base
    assert fingerprint(score_fusion=(0.5, 1.0, 0.8, 0.6, 0.5, 4, 8)) != base
    assert fingerprint(score_fusion=(0.5, 1.0, 0.8, 0.7, 0.5, 4, 10)) != base
    assert "fusion" not in fingerprint(score_fusion=None)
