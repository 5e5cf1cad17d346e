"""Model directories: groove-model.toml, §3 detection rules, ONNX signature scan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groove_cli.errors import ModelError
from groove_cli.models.directory import (
    ModelRecord,
    cached_record,
    detect_settings,
    graph_signature,
    is_path_value,
    local_settings,
    read_model_toml,
    write_model_toml,
)
from groove_cli.models.registry import REGISTRY, ModelSettings
from tests.onnx_builders import lookup_embedder, model_dir, reranker


@pytest.mark.parametrize(
    ("value", "is_path"),
    [("bge-m3", False), ("./m", True), ("~/models/m", True), ("a/b", True), (".m", True),
     ("/abs/m", True), ("multilingual-e5-small", False)],
)
def test_path_values_are_told_apart_from_names(value: str, is_path: bool) -> None:
    assert is_path_value(value) is is_path


def test_model_toml_round_trips_settings_and_provenance(tmp_path: Path) -> None:
    settings = ModelSettings(
        kind="embedder", pooling="cls", normalise=True, query_prefix='say "hi": ',
        passage_prefix="文書: ", max_length=8192, output="last_hidden_state", dim=1024,
        batch_size=32,
    )
    record = ModelRecord(
        name="bge-m3", settings=settings, source="hub", revision="BAAI/bge-m3@main",
        onnx_sha256="ab" * 32, onnx_size=123, extra_files=("model.onnx_data",),
    )
    write_model_toml(tmp_path, record)
    assert read_model_toml(tmp_path) == record


def test_reranker_toml_has_no_dim_or_pooling(tmp_path: Path) -> None:
    entry = REGISTRY["bge-reranker-base"]
    record = ModelRecord(entry.name, entry.settings, "hub", "r", "cd" * 32, 9)
    write_model_toml(tmp_path, record)
    text = (tmp_path / "groove-model.toml").read_text()
    assert "dim =" not in text and "pooling =" not in text
    assert read_model_toml(tmp_path).settings == entry.settings


def test_cached_record_requires_matching_onnx_size(tmp_path: Path) -> None:
    directory = model_dir(tmp_path / "m", lookup_embedder(4, token_types=False).onnx)
    size = (directory / "model.onnx").stat().st_size
    entry = REGISTRY["bge-small-en-v1.5"]
    write_model_toml(directory, ModelRecord(entry.name, entry.settings, "hub", "r", "ef" * 32, size))
    assert cached_record(directory) is not None
    write_model_toml(
        directory, ModelRecord(entry.name, entry.settings, "hub", "r", "ef" * 32, size + 1)
    )
    assert cached_record(directory) is None


def test_detection_defaults_for_a_bare_embedder_directory(tmp_path: Path) -> None:
    directory = model_dir(tmp_path / "m", lookup_embedder(12, token_types=True).onnx)
    s = detect_settings(directory, "embedder")
    assert (s.pooling, s.normalise, s.query_prefix, s.passage_prefix, s.max_length, s.output,
            s.dim) == ("mean", True, "", "", 512, "last_hidden_state", 12)


def test_detection_reads_pooling_and_max_length_files(tmp_path: Path) -> None:
    directory = model_dir(tmp_path / "m", lookup_embedder(4, token_types=False).onnx)
    (directory / "1_Pooling").mkdir()
    (directory / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    (directory / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 8192}))
    (directory / "config.json").write_text(json.dumps({"max_position_embeddings": 514}))
    s = detect_settings(directory, "embedder")
    assert (s.pooling, s.max_length) == ("cls", 8192)
    # The "no limit" sentinel (1e30) is ignored; config.json decides then.
    (directory / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 1e30}))
    assert detect_settings(directory, "embedder").max_length == 514
    (directory / "config.json").unlink()
    assert detect_settings(directory, "embedder").max_length == 512


def test_detection_in_an_onnx_subfolder_for_a_reranker(tmp_path: Path) -> None:
    directory = tmp_path / "rr"
    (directory / "onnx").mkdir(parents=True)
    (directory / "onnx" / "model.onnx").write_bytes(reranker(token_types=True).onnx)
    (directory / "tokenizer.json").write_text("{}")
    s = detect_settings(directory, "reranker")
    assert (s.kind, s.output, s.dim, s.pooling, s.normalise) == (
        "reranker", "logits", None, None, False,
    )


def test_partial_toml_overrides_detected_settings(tmp_path: Path) -> None:
    toml = 'query_prefix = "q: "\npassage_prefix = "p: "\n'
    directory = model_dir(tmp_path / "m", lookup_embedder(4, token_types=False).onnx, toml)
    s = local_settings(directory, "embedder")
    assert (s.query_prefix, s.passage_prefix, s.dim, s.pooling) == ("q: ", "p: ", 4, "mean")


def test_toml_type_errors_name_the_key(tmp_path: Path) -> None:
    directory = model_dir(tmp_path / "m", lookup_embedder(4, token_types=False).onnx,
                          'max_length = "long"\n')
    with pytest.raises(ModelError, match="max_length: expected int, got str"):
        local_settings(directory, "embedder")


def test_graph_signature_reads_names_and_shapes(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(lookup_embedder(5, token_types=True).onnx)
    sig = graph_signature(path)
    assert sig.input_names() == ["input_ids", "attention_mask", "token_type_ids"]
    assert [(o.name, o.shape) for o in sig.outputs] == [
        ("last_hidden_state", ("batch", "seq", 5))
    ]


def test_graph_signature_refuses_a_non_onnx_file(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\xff\xff\xff")
    with pytest.raises(ModelError, match="not a readable ONNX file"):
        graph_signature(path)
