"""Cross-encoder on tiny hand-checkable graphs (models.md §6, §8)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from groove_cli.errors import ModelError
from groove_cli.models import CrossEncoder, resolve_model
from tests.onnx_builders import CLS_ID, SEP_ID, ids_of, model_dir, reranker


def toml(max_length: int = 64, batch_size: int = 2) -> str:
    return f'kind = "reranker"\nmax_length = {max_length}\nbatch_size = {batch_size}\n'


def load(tmp_path: Path, onnx_bytes: bytes, settings: str) -> CrossEncoder:
    directory = model_dir(tmp_path / "rr", onnx_bytes, settings)
    return CrossEncoder.load(resolve_model(str(directory), tmp_path / "cache", kind="reranker"))


def pair_ids(query: str, doc: str) -> tuple[list[int], list[int]]:
    """`[CLS] q [SEP] d [SEP]` with segment ids 0 for the query part and 1 for the document part."""
    q, d = ids_of(query), ids_of(doc)
    return [CLS_ID, *q, SEP_ID, *d, SEP_ID], [0] * (len(q) + 2) + [1] * (len(d) + 1)


def test_pair_segment_ids_are_fed_when_declared(tmp_path: Path) -> None:
    graph = reranker(token_types=True)
    enc = load(tmp_path, graph.onnx, toml())
    docs = ["the cat sat on the mat", "fish", "a blue bird flies"]
    got = enc.score("cat", docs)
    expected = []
    for doc in docs:
        ids, types = pair_ids("cat", doc)
        expected.append(graph.word_score[ids].sum() + graph.type_weight * sum(types))
    assert np.allclose(got, expected, atol=1e-5)
    assert got.dtype == np.float32


def test_graph_without_token_type_ids_scores_the_pair_ids(tmp_path: Path) -> None:
    graph = reranker(token_types=False)
    enc = load(tmp_path, graph.onnx, toml())
    got = enc.score("red tree", ["green sea", "house"])
    expected = [graph.word_score[pair_ids("red tree", d)[0]].sum() for d in ("green sea", "house")]
    assert np.allclose(got, expected, atol=1e-5)


def test_query_longer_than_max_length_is_cut_to_half_then_the_document(tmp_path: Path) -> None:
    graph = reranker(token_types=True)
    enc = load(tmp_path, graph.onnx, toml(max_length=16))
    query_words = ("cat dog fish bird " * 5).split()  # 20 tokens > max_length
    doc_words = ("red blue green sky sea " * 2).split()  # 10 tokens
    got = enc.score(" ".join(query_words), [" ".join(doc_words)])
    # Query kept to 16 // 2 = 8 tokens; the document gets 16 - 8 - 3 specials = 5 tokens.
    ids, types = pair_ids(" ".join(query_words[:8]), " ".join(doc_words[:5]))
    assert len(ids) == 16
    assert np.allclose(got, [graph.word_score[ids].sum() + graph.type_weight * sum(types)],
                       atol=1e-5)


def test_order_follows_the_logits_and_input_order_is_kept(tmp_path: Path) -> None:
    graph = reranker(token_types=False, seed=3)
    enc = load(tmp_path, graph.onnx, toml(batch_size=2))
    docs = ["cat", "dog sat on the mat", "fish swims", "bird flies over the house", "sea"]
    got = enc.score("the", docs)
    expected = np.array([graph.word_score[pair_ids("the", d)[0]].sum() for d in docs])
    assert np.allclose(got, expected, atol=1e-5)
    assert list(np.argsort(-got, kind="stable")) == list(np.argsort(-expected, kind="stable"))


def test_flat_batch_logits_are_accepted(tmp_path: Path) -> None:
    graph = reranker(token_types=False, output="b")
    enc = load(tmp_path, graph.onnx, toml())
    got = enc.score("cat", ["dog"])
    assert np.allclose(got, [graph.word_score[pair_ids("cat", "dog")[0]].sum()], atol=1e-5)


def test_two_column_logits_are_refused_at_load(tmp_path: Path) -> None:
    graph = reranker(token_types=False, output="b2")
    with pytest.raises(ModelError, match=r"expected \[batch, 1\] or \[batch\]"):
        load(tmp_path, graph.onnx, toml())


def test_empty_document_list_scores_nothing(tmp_path: Path) -> None:
    enc = load(tmp_path, reranker(token_types=False).onnx, toml())
    assert enc.score("cat", []).shape == (0,)
