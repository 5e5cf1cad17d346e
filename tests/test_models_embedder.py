"""Embedder on tiny hand-checkable graphs (models.md §5, §8)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from groove_cli.errors import ConfigError, ModelError
from groove_cli.models import Embedder, resolve_model
from tests.onnx_builders import (
    CLS_ID,
    SEP_ID,
    ids_of,
    lookup_embedder,
    mixing_embedder,
    model_dir,
)

DIM = 8


def settings_toml(
    *, pooling: str = "mean", normalise: bool = False, max_length: int = 64,
    query_prefix: str = "", passage_prefix: str = "", dim: int = DIM, batch_size: int = 4,
) -> str:
    return (
        'kind = "embedder"\n'
        f'pooling = "{pooling}"\n'
        f"normalise = {'true' if normalise else 'false'}\n"
        f'query_prefix = "{query_prefix}"\n'
        f'passage_prefix = "{passage_prefix}"\n'
        f"max_length = {max_length}\n"
        f"dim = {dim}\n"
        f"batch_size = {batch_size}\n"
    )


def load(tmp_path: Path, onnx_bytes: bytes, toml: str, max_length: int | None = None) -> Embedder:
    directory = model_dir(tmp_path / "model", onnx_bytes, toml)
    return Embedder.load(resolve_model(str(directory), tmp_path / "cache"), max_length)


def full_ids(text: str) -> list[int]:
    return [CLS_ID, *ids_of(text), SEP_ID]


def test_mean_pooling_is_the_mean_of_the_looked_up_rows(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    emb = load(tmp_path, graph.onnx, settings_toml(pooling="mean"))
    got = emb.embed_passages(["cat sat on mat", "dog"])
    # Mean over all tokens, [CLS] and [SEP] included.
    assert np.allclose(got[0], graph.table[full_ids("cat sat on mat")].mean(axis=0), atol=1e-6)
    assert np.allclose(got[1], graph.table[full_ids("dog")].mean(axis=0), atol=1e-6)
    assert got.dtype == np.float32 and got.shape == (2, DIM)


def test_cls_pooling_takes_token_zero(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    emb = load(tmp_path, graph.onnx, settings_toml(pooling="cls"))
    got = emb.embed_queries(["cat", "fish swims"])
    assert np.allclose(got, np.stack([graph.table[CLS_ID]] * 2), atol=1e-7)


def test_normalise_scales_to_unit_length(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    emb = load(tmp_path, graph.onnx, settings_toml(pooling="mean", normalise=True))
    got = emb.embed_passages(["red sky"])[0]
    raw = graph.table[full_ids("red sky")].mean(axis=0)
    assert np.allclose(got, raw / np.linalg.norm(raw), atol=1e-6)
    assert abs(float(np.linalg.norm(got)) - 1.0) < 1e-6


def test_token_type_ids_are_fed_as_zeros_when_declared(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=True)
    assert graph.types is not None
    emb = load(tmp_path, graph.onnx, settings_toml(pooling="mean"))
    got = emb.embed_passages(["blue sea"])[0]
    # Zeros select type row 0 for every token.
    expected = (graph.table[full_ids("blue sea")] + graph.types[0]).mean(axis=0)
    assert np.allclose(got, expected, atol=1e-6)


def test_graph_without_token_type_ids_is_not_fed_them(tmp_path: Path) -> None:
    # onnxruntime rejects an undeclared input, so this run proves none was fed.
    graph = lookup_embedder(DIM, token_types=False)
    emb = load(tmp_path, graph.onnx, settings_toml())
    assert emb.embed_queries(["tree"]).shape == (1, DIM)


def test_prefixes_are_prepended_before_tokenisation(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    toml = settings_toml(pooling="mean", query_prefix="query: ", passage_prefix="passage: ")
    emb = load(tmp_path, graph.onnx, toml)
    q = emb.embed_queries(["cat"])[0]
    p = emb.embed_passages(["cat"])[0]
    assert np.allclose(q, graph.table[full_ids("query: cat")].mean(axis=0), atol=1e-6)
    assert np.allclose(p, graph.table[full_ids("passage: cat")].mean(axis=0), atol=1e-6)
    assert emb.input_lengths(["cat"], "query") == [1 + 1 + 2]
    assert emb.count_tokens(["cat sat"]) == [2]  # bare text: no prefix, no specials


def test_inputs_are_truncated_at_max_length(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    toml = settings_toml(pooling="mean", passage_prefix="passage: ", max_length=64)
    emb = load(tmp_path, graph.onnx, toml, max_length=16)
    words = ("cat dog fish bird " * 5).split()  # 20 words
    text = " ".join(words)
    got = emb.embed_passages([text])[0]
    # 16 tokens = [CLS] + "passage:" + 13 words + [SEP].
    kept = [CLS_ID, *ids_of("passage: " + " ".join(words[:13])), SEP_ID]
    assert len(kept) == 16
    assert np.allclose(got, graph.table[kept].mean(axis=0), atol=1e-6)
    assert emb.input_lengths([text], "passage") == [1 + 20 + 2]  # untruncated
    assert emb.count_tokens([text]) == [20]
    assert emb.max_length == 16


def test_max_length_above_the_models_own_is_a_config_error(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    with pytest.raises(ConfigError) as err:
        load(tmp_path, graph.onnx, settings_toml(max_length=64), max_length=65)
    assert err.value.message == "max_length = 65 is out of range [16, 64]"


def test_batch_independence_within_padded_length_sorted_batches(tmp_path: Path) -> None:
    emb = load(tmp_path, mixing_embedder(DIM), settings_toml(pooling="mean", batch_size=2))
    texts = [
        "cat",
        "the red bird flies over the green tree on a blue sky",
        "dog sat on mat",
        "fish swims",
        "the sea",
    ]
    together = emb.embed_passages(texts)
    alone = np.stack([emb.embed_passages([t])[0] for t in texts])
    assert float(np.max(np.abs(together - alone))) <= 1e-5
    # Results come back in input order although batches are formed from sorted lengths.
    assert not np.allclose(together[0], together[1])


def test_wrong_output_dimension_is_refused_at_load(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    with pytest.raises(ModelError, match=r"has dimension 8, but .* expects 12"):
        load(tmp_path, graph.onnx, settings_toml(dim=12))


def test_missing_output_is_refused_at_load(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    toml = settings_toml() + 'output = "sentence_embedding"\n'
    with pytest.raises(ModelError, match="no output 'sentence_embedding'"):
        load(tmp_path, graph.onnx, toml)


def test_optimised_graph_is_saved_once_and_reused(tmp_path: Path) -> None:
    graph = lookup_embedder(DIM, token_types=False)
    directory = model_dir(tmp_path / "model", graph.onnx, settings_toml())
    model = resolve_model(str(directory), tmp_path / "cache")
    first = Embedder.load(model).embed_passages(["cat sat"])
    saved = sorted(p.name for p in directory.glob("model.opt-*.onnx"))
    assert saved and saved[0].startswith(f"model.opt-{model.sha256[:16]}-")
    second = Embedder.load(model).embed_passages(["cat sat"])
    assert np.array_equal(first, second)
    assert sorted(p.name for p in directory.glob("model.opt-*")) == saved


def test_length_batches_sort_cap_inputs_and_padded_tokens() -> None:
    from groove_cli.models.runtime import BatchBudget, length_batches

    lengths = [5, 1, 4, 2, 3]
    assert length_batches(lengths, 2) == [[1, 3], [4, 2], [0]]
    # 3 inputs of width 4 = 12 padded tokens > 10, so the budget splits before the third.
    assert length_batches([4, 4, 4, 20], 8, BatchBudget(10, 10**9)) == [[0, 1], [2], [3]]
    # attention: 3 x 4² = 48 cells > 40 splits the same way, whatever the token cap
    assert length_batches([4, 4, 4, 20], 8, BatchBudget(10**9, 40)) == [[0, 1], [2], [3]]


def test_output_of_the_wrong_rank_is_refused_at_load(tmp_path: Path) -> None:
    from tests.onnx_builders import reranker

    toml = settings_toml(dim=1) + 'output = "logits"\n'  # a [batch, 1] output
    with pytest.raises(ModelError, match=r"expected \[batch, seq, hidden\]"):
        load(tmp_path, reranker(token_types=False).onnx, toml)
