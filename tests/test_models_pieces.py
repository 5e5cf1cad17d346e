"""The piece table: a few queries tokenised without building the full Unigram tokenizer.

Every path is checked against the full tokenizer's ids: a tiny hand-written Unigram tokenizer
for the exact cases, and the real multilingual-e5-small tokenizer for real and generated text.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli.models import Embedder, resolve_model
from groove_cli.models.pieces import PiecePaths, PieceTokenizer, build_pieces, ensure_pieces
from groove_cli.models.runtime import load_tokenizer
from tests.onnx_builders import (
    CLS_ID,
    SEP_ID,
    UNK_ID,
    lookup_embedder,
    model_dir,
    unigram_tokenizer,
    word_level_tokenizer,
)
from tests.test_models_embedder import settings_toml

CAT, DOG, CATS, SPACE, D = 5, 13, 12, 4, 14


def full_rows(tok: object, texts: list[str], cap: int = 1 << 20) -> list[list[int]]:
    rows = []
    for enc in tok.encode_batch(texts, add_special_tokens=False):  # type: ignore[attr-defined]
        if len(enc.ids) > cap:
            enc.truncate(cap)
        rows.append(list(tok.post_process(enc).ids))  # type: ignore[attr-defined]
    return rows


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A tokenizer.json holding the tiny Unigram tokenizer, with its piece table built."""
    path = tmp_path / "tokenizer.json"
    path.write_text(unigram_tokenizer(), encoding="utf-8")
    tok, pad = load_tokenizer(path)
    assert build_pieces(path, tok, pad)
    return path


def test_hand_computed_ids_match_the_full_tokenizer(tiny: Path) -> None:
    table = PieceTokenizer.open(tiny)
    assert table is not None
    texts = ["cats", "cat dog", "ｃａｔ", "dx"]
    # "▁cats" beats "▁cat"+"s" (-1.5 > -4); full-width folds to "cat" under NFKC;
    # "dx": no "▁d" piece, so "▁" + "d", and "x" has no piece at all: [UNK].
    expected = [[CLS_ID, CATS, SEP_ID], [CLS_ID, CAT, DOG, SEP_ID], [CLS_ID, CAT, SEP_ID],
                [CLS_ID, SPACE, D, UNK_ID, SEP_ID]]
    assert table.encode_rows(texts, 100) == expected
    assert full_rows(load_tokenizer(tiny)[0], texts) == expected


def test_the_sub_vocabulary_holds_only_pieces_the_text_can_use(tiny: Path) -> None:
    table = PieceTokenizer.open(tiny)
    assert table is not None
    tok, full_ids = table.tokenizer_for(["cat"])
    vocab = {piece: int(full_ids[i]) for piece, i in tok.get_vocab().items()}
    # the four specials and the minimum-score piece always, then substrings of "▁cat"
    assert set(vocab) == {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "zzz",
                          "▁", "▁c", "▁cat", "c", "a", "t", "at"}
    assert vocab["▁cat"] == CAT and vocab["zzz"] == 23


def test_truncation_cuts_content_before_the_special_tokens(tiny: Path) -> None:
    table = PieceTokenizer.open(tiny)
    assert table is not None
    assert table.encode_rows(["cat dog cats"], 2) == [[CLS_ID, CAT, DOG, SEP_ID]]


def test_special_token_text_is_left_to_the_full_tokenizer(tiny: Path) -> None:
    table = PieceTokenizer.open(tiny)
    assert table is not None
    assert table.covers(["cat dog"])
    assert not table.covers(["cat [SEP] dog"])


def test_building_never_touches_the_tokenizer_file(tiny: Path) -> None:
    before = hashlib.sha256(tiny.read_bytes()).hexdigest()
    paths = PiecePaths.of(tiny)
    assert {paths.meta.name, paths.keys.name, paths.values.name} == {
        "tokenizer.pieces.json", "tokenizer.pieces-keys.npy", "tokenizer.pieces-values.npy"}
    tok, pad = load_tokenizer(tiny)
    assert build_pieces(tiny, tok, pad)
    assert hashlib.sha256(tiny.read_bytes()).hexdigest() == before


def test_a_changed_tokenizer_file_makes_the_table_stale(tiny: Path) -> None:
    st_ = tiny.stat()
    os.utime(tiny, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000_000))
    assert PieceTokenizer.open(tiny) is None
    tok, pad = load_tokenizer(tiny)
    ensure_pieces(tiny, tok, pad)
    assert PieceTokenizer.open(tiny) is not None


def test_a_table_that_disagrees_with_the_tokenizer_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(unigram_tokenizer(), encoding="utf-8")
    other = tmp_path / "other.json"
    # same pieces, but "▁cat" is now unlikely, so "cat" splits differently
    changed = json.loads(unigram_tokenizer())
    changed["model"]["vocab"][CAT][1] = -20.0
    other.write_text(json.dumps(changed), encoding="utf-8")
    assert not build_pieces(path, load_tokenizer(other)[0], 0)
    assert not PiecePaths.of(path).meta.exists()


def test_no_table_for_a_non_unigram_tokenizer(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(word_level_tokenizer(), encoding="utf-8")
    tok, pad = load_tokenizer(path)
    ensure_pieces(path, tok, pad)
    assert not build_pieces(path, tok, pad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer.json"]


def test_a_corrupt_table_falls_back_to_the_full_tokenizer(tiny: Path) -> None:
    PiecePaths.of(tiny).keys.write_bytes(b"not numpy")
    assert PieceTokenizer.open(tiny) is None


def test_embedder_for_few_queries_skips_the_full_tokenizer(tmp_path: Path) -> None:
    graph = lookup_embedder(8, token_types=False)
    directory = model_dir(tmp_path / "model", graph.onnx, settings_toml(query_prefix="query: "),
                          tokenizer=unigram_tokenizer())
    model = resolve_model(str(directory), tmp_path / "cache")
    full = Embedder.load(model)  # builds the table
    assert PieceTokenizer.open(model.tokenizer_path) is not None
    few = Embedder.load(model, few_queries=True)
    assert few._tok is None  # the full tokenizer was never built
    texts = ["cats", "dog cat", "query x"]
    assert np.array_equal(few.embed_queries(texts), full.embed_queries(texts))
    assert few._tok is None
    # a text the table does not cover loads the full tokenizer on demand
    assert np.array_equal(few.embed_queries(["cat [SEP]"]), full.embed_queries(["cat [SEP]"]))
    assert few._tok is not None


def test_a_read_only_model_directory_just_uses_the_full_tokenizer(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    path = tmp_path / "ro" / "tokenizer.json"
    path.parent.mkdir()
    path.write_text(unigram_tokenizer(), encoding="utf-8")
    path.parent.chmod(0o555)
    try:
        tok, pad = load_tokenizer(path)
        ensure_pieces(path, tok, pad)
        assert PieceTokenizer.open(path) is None
    finally:
        path.parent.chmod(0o755)


# ---------------------------------------------------------------- the real default tokenizer


@pytest.fixture(scope="module")
def real(real_models_dir: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[PieceTokenizer, object]:
    """The default model's tokenizer (a private copy) and its freshly built piece table."""
    source = real_models_dir / "multilingual-e5-small" / "tokenizer.json"
    path = tmp_path_factory.mktemp("pieces") / "tokenizer.json"
    shutil.copy2(source, path)
    tok, pad = load_tokenizer(path)
    assert build_pieces(path, tok, pad)
    table = PieceTokenizer.open(path)
    assert table is not None
    return table, tok


REAL_TEXTS = [
    "query: how do I rotate the API keys?",
    "query: 春が終わりに差し掛かるにつれて、南シナ海付近にある勢力を増し北上してくる気団は?",
    "query: ＲＥＳＴ ＡＰＩ のレート制限は 1,000 件／分",
    "query: café naïve Ångström ﬁnance ㈱ ① Ⅻ",
    "query:    spaced\tout\n\ntext   ",
    "query: 🚀 emoji ☃ and \u0378 unassigned",
    "query: <mask> and <s> are special, ＜ｍａｓｋ＞ is not",
]


def test_real_tokenizer_agrees_on_mixed_script_queries(
        real: tuple[PieceTokenizer, object]) -> None:
    table, tok = real
    covered = [t for t in REAL_TEXTS if table.covers([t])]
    assert len(covered) == len(REAL_TEXTS) - 1  # only the text with literal <mask>/<s>
    assert table.encode_rows(covered, 510) == full_rows(tok, covered, 510)
    for text in covered:
        assert table.encode_rows([text], 8) == full_rows(tok, [text], 8)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_real_tokenizer_agrees_on_any_text(real: tuple[PieceTokenizer, object],
                                           text: str) -> None:
    table, tok = real
    if table.covers([text]):
        assert table.encode_rows([text], 510) == full_rows(tok, [text], 510)
