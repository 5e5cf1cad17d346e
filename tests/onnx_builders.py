"""Tiny ONNX graphs and a tiny WordLevel tokenizer.json for model tests (models.md §8).

The graphs use the input and output names of real exports (`input_ids`, `attention_mask`,
optional `token_type_ids`; `last_hidden_state` or `logits`) but are a few kilobytes, randomly
initialised from a seed, so expected outputs can be computed by hand in numpy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
WORDS = (
    "query:", "passage:", "the", "cat", "dog", "sat", "on", "mat", "a", "fish", "swims",
    "bird", "flies", "red", "blue", "green", "sky", "sea", "tree", "house",
)
VOCAB: dict[str, int] = {w: i for i, w in enumerate(SPECIALS + WORDS)}
PAD_ID, UNK_ID, CLS_ID, SEP_ID = 0, 1, 2, 3


def word_level_tokenizer(vocab: dict[str, int] = VOCAB) -> str:
    """A BERT-style WordLevel tokenizer: whitespace split, `[CLS] A [SEP]`, pair segment 1."""
    doc: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True}
            for t in SPECIALS
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 1}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 1}},
            ],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [CLS_ID], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [SEP_ID], "tokens": ["[SEP]"]},
            },
        },
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }
    return json.dumps(doc)


def ids_of(text: str) -> list[int]:
    """Token ids of a whitespace-split text (no special tokens) under `VOCAB`."""
    return [VOCAB.get(w, UNK_ID) for w in text.split()]


def _inputs(token_types: bool) -> list[Any]:
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if token_types else [])
    return [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in names]


def _model(nodes: list[Any], inputs: list[Any], output: Any, inits: list[Any]) -> bytes:
    graph = helper.make_graph(nodes, "tiny", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


@dataclass(frozen=True)
class LookupGraph:
    """`last_hidden_state[b, s] = table[input_ids[b, s]] (+ types[token_type_ids[b, s]])`."""

    onnx: bytes
    table: npt.NDArray[np.float32]
    types: npt.NDArray[np.float32] | None


def lookup_embedder(dim: int, *, token_types: bool, seed: int = 0) -> LookupGraph:
    """A pure embedding-table lookup, so pooled vectors can be computed by hand."""
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(len(VOCAB), dim)).astype(np.float32)
    inits = [numpy_helper.from_array(table, "table")]
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["words"])]
    types = None
    if token_types:
        types = rng.normal(size=(2, dim)).astype(np.float32)
        inits.append(numpy_helper.from_array(types, "types"))
        nodes += [
            helper.make_node("Gather", ["types", "token_type_ids"], ["type_vecs"]),
            helper.make_node("Add", ["words", "type_vecs"], ["last_hidden_state"]),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["words"], ["last_hidden_state"]))
    # attention_mask is declared (real exports take it) but unused: a lookup needs no mask.
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", dim])
    return LookupGraph(_model(nodes, _inputs(token_types), out, inits), table, types)


def mixing_embedder(dim: int, seed: int = 0) -> bytes:
    """Gather + masked context mean + MatMul + Tanh: every token sees the other real tokens.

    Padded positions are excluded from the context through the attention mask, so a text's
    output does not depend on how much its batch pads it (beyond rounding).
    """
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(len(VOCAB), dim)).astype(np.float32)
    weight = (rng.normal(size=(dim, dim)) / np.sqrt(dim)).astype(np.float32)
    inits = [
        numpy_helper.from_array(table, "table"),
        numpy_helper.from_array(weight, "w"),
        numpy_helper.from_array(np.array([2], np.int64), "axis2"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["x"]),
        helper.make_node("Cast", ["attention_mask"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mf", "axis2"], ["m3"]),
        helper.make_node("Mul", ["x", "m3"], ["xm"]),
        helper.make_node("ReduceSum", ["xm", "axis1"], ["xsum"], keepdims=1),
        helper.make_node("ReduceSum", ["m3", "axis1"], ["msum"], keepdims=1),
        helper.make_node("Div", ["xsum", "msum"], ["ctx"]),
        helper.make_node("Add", ["x", "ctx"], ["mixed"]),
        helper.make_node("MatMul", ["mixed", "w"], ["proj"]),
        helper.make_node("Tanh", ["proj"], ["last_hidden_state"]),
    ]
    out = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "seq", dim]
    )
    return _model(nodes, _inputs(False), out, inits)


@dataclass(frozen=True)
class RerankerGraph:
    """`logits[b] = Σ_s mask · (word_score[id] + type_weight · token_type_id)`."""

    onnx: bytes
    word_score: npt.NDArray[np.float32]
    type_weight: float


def reranker(*, token_types: bool, output: str = "b1", seed: int = 0) -> RerankerGraph:
    """A tiny cross-encoder; `output` is the logits shape: "b1" [batch, 1], "b" [batch], "b2"."""
    rng = np.random.default_rng(seed)
    word_score = rng.normal(size=(len(VOCAB), 1)).astype(np.float32)
    type_weight = 10.0
    inits = [
        numpy_helper.from_array(word_score, "ws"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array([type_weight], np.float32), "tw"),
    ]
    nodes = [
        helper.make_node("Gather", ["ws", "input_ids"], ["s3"]),  # [B, S, 1]
        helper.make_node("Cast", ["attention_mask"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mf", "axis2"], ["m3"]),
    ]
    inits.append(numpy_helper.from_array(np.array([2], np.int64), "axis2"))
    total = "s3"
    if token_types:
        nodes += [
            helper.make_node("Cast", ["token_type_ids"], ["tf"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["tf", "axis2"], ["t3"]),
            helper.make_node("Mul", ["t3", "tw"], ["tws"]),
            helper.make_node("Add", ["s3", "tws"], ["st"]),
        ]
        total = "st"
    nodes += [
        helper.make_node("Mul", [total, "m3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["b1"], keepdims=0),  # [B, 1]
    ]
    shape: list[Any]
    if output == "b1":
        nodes.append(helper.make_node("Identity", ["b1"], ["logits"]))
        shape = ["batch", 1]
    elif output == "b":
        nodes.append(helper.make_node("Squeeze", ["b1", "axis1"], ["logits"]))
        shape = ["batch"]
    else:
        nodes.append(helper.make_node("Concat", ["b1", "b1"], ["logits"], axis=1))
        shape = ["batch", 2]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, shape)
    return RerankerGraph(_model(nodes, _inputs(token_types), out, inits), word_score[:, 0],
                         type_weight)


def model_dir(path: Path, onnx_bytes: bytes, toml: str | None = None,
              tokenizer: str | None = None) -> Path:
    """A local model directory: model.onnx, tokenizer.json and an optional groove-model.toml."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "model.onnx").write_bytes(onnx_bytes)
    (path / "tokenizer.json").write_text(tokenizer or word_level_tokenizer(), encoding="utf-8")
    if toml is not None:
        (path / "groove-model.toml").write_text(toml, encoding="utf-8")
    return path


# A Unigram tokenizer over the same 24 ids as VOCAB (so the lookup graphs accept its ids):
# the four specials, then pieces with hand-picked log probabilities; "zzz" holds the
# minimum score, which sets the unknown-character penalty.
UNIGRAM_PIECES: tuple[tuple[str, float], ...] = (
    ("▁", -2.0), ("▁cat", -1.0), ("▁c", -3.0), ("at", -2.0), ("a", -3.0), ("t", -3.0),
    ("c", -3.0), ("s", -3.0), ("▁cats", -1.5), ("▁dog", -1.0), ("d", -3.0), ("o", -3.0),
    ("g", -3.0), ("og", -2.5), ("▁q", -4.0), ("u", -3.0), ("e", -3.0), ("r", -3.0),
    ("y", -3.0), ("zzz", -30.0),
)


def unigram_tokenizer(pieces: tuple[tuple[str, float], ...] = UNIGRAM_PIECES) -> str:
    """An XLM-R-style Unigram tokenizer: NFKC, Metaspace, `[CLS] A [SEP]`, ids as in VOCAB."""
    doc = json.loads(word_level_tokenizer())
    doc["normalizer"] = {"type": "NFKC"}
    meta = {"replacement": "▁", "prepend_scheme": "always", "split": True}
    doc["pre_tokenizer"] = {"type": "Metaspace", **meta}
    doc["decoder"] = {"type": "Metaspace", **meta}
    vocab = [[t, 0.0] for t in SPECIALS] + [[p, s] for p, s in pieces]
    doc["model"] = {"type": "Unigram", "unk_id": UNK_ID, "vocab": vocab, "byte_fallback": False}
    return json.dumps(doc, ensure_ascii=False)
