"""The CJK table's tokeniser (text/cjk.py) on hand-checked sentences, and a round trip
through FTS5's unicode61 tokenizer as `fts_cjk` is declared (migration 0003)."""

from __future__ import annotations

import apsw
import pytest

from groove_cli.text.cjk import (
    ROW_WINDOW_CHARS,
    has_cjk,
    is_cjk,
    normalise,
    row_text,
    tokens,
)


@pytest.mark.parametrize(("text", "expected"), [
    # Japanese: every character and every pair of neighbours, across kanji/kana boundaries
    ("東京都に住む", ["東", "東京", "京", "京都", "都", "都に", "に", "に住", "住", "住む", "む"]),
    # English: words case-folded; punctuation separates (it's → it, s)
    ("Hello, World! It's 2024.", ["hello", "world", "it", "s", "2024"]),
    # mixed: a Latin word is one token, the CJK run after it is cut as above
    ("Pythonで機械学習", ["python", "で", "で機", "機", "機械", "械", "械学", "学", "学習", "習"]),
    # numbers: a digit run is one token; a comma separates; 第 and 円 are CJK unigrams
    ("第3版は2,000円", ["第", "3", "版", "版は", "は", "2", "000", "円"]),
    # full-width Latin and digits fold to ASCII, half-width katakana to full width (NFKC)
    ("ＡＢＣ１２３とｶﾀｶﾅ", ["abc123", "と", "とカ", "カ", "カタ", "タ", "タカ", "カ", "カナ",
                          "ナ"]),
    # the prolonged sound mark belongs to the katakana run
    ("コーヒー", ["コ", "コー", "ー", "ーヒ", "ヒ", "ヒー", "ー"]),
    # ideographic space and punctuation separate runs: no bigram crosses them
    ("評価。方法　です", ["評", "評価", "価", "方", "方法", "法", "で", "です", "す"]),
    ("한국어", ["한", "한국", "국", "국어", "어"]),
    ("  ", []),
])
def test_tokens_of_hand_checked_sentences(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_row_text_and_helpers() -> None:
    assert row_text("再ランキング") == "再 再ラ ラ ラン ン ンキ キ キン ン ング グ"
    assert row_text(None) == "" and row_text("") == ""
    assert normalise("Ｇｒｏｏｖｅ") == "groove"
    assert has_cjk("UI について") and not has_cjk("error 404") and has_cjk("ｶﾅ")
    assert is_cjk("々") and is_cjk("ー") and not is_cjk("a") and not is_cjk("。")


@pytest.mark.parametrize("text", [
    "東京都に住む", "ＡＢＣ１２３とｶﾀｶﾅ", "Pythonで機械学習、v2.1 は 100%", "コーヒー々〆",
    "Crème brûlée と日本酒",
])
def test_unicode61_keeps_every_token_whole(text: str) -> None:
    """What groove writes is what FTS5 indexes: unicode61 reads the space-separated tokens back
    one for one (a token it split or folded would never match the query's)."""
    con = apsw.Connection(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(c, tokenize = 'unicode61 remove_diacritics 0')")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    con.execute("INSERT INTO t(rowid, c) VALUES (1, ?)", (row_text(text),))
    indexed = [str(r[0]) for r in con.execute("SELECT term FROM v ORDER BY offset")]
    assert indexed == tokens(text)


def test_a_long_row_is_tokenised_in_windows_with_the_same_tokens() -> None:
    """row_text cuts a long text at separators; the tokens equal the whole text's, also across a
    window-long run without whitespace and full-width forms that NFKC changes."""
    text = ("障害の連絡手順 Retry-Budget ＡＢＣ１２３ café\n" * 5000 + "評価" * ROW_WINDOW_CHARS
            + "、x" + "y" * (ROW_WINDOW_CHARS + 7) + " 終わり")
    assert len(text) > 3 * ROW_WINDOW_CHARS
    assert row_text(text) == " ".join(tokens(text))
    assert row_text("") == "" and row_text(None) == ""
    assert row_text("  、。 ") == ""


def reference_tokens(text: str) -> list[str]:
    """The module docstring's rule, one character at a time (what `tokens` must equal)."""
    out: list[str] = []
    run = ""
    kind = " "
    for ch in normalise(text) + " ":
        mine = "c" if is_cjk(ch) else "w" if ch.isalnum() else " "
        if mine == kind and mine != " ":
            run += ch
            continue
        if kind == "w":
            out.append(run)
        elif kind == "c":
            out.extend(t for i, c in enumerate(run) for t in (c, run[i:i + 2]))
            out.pop()  # the last character has no right neighbour: its "bigram" is itself
        run, kind = ch, mine
    return out


def test_tokens_equal_the_per_character_rule_on_random_mixed_text() -> None:
    import random

    rng = random.Random(25)
    alphabet = "東京都評価方法にはでーカタナ한국어abcXYZ019ＡＢ１ｶﾀ 、。,.!\n\t_-"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert tokens(text) == reference_tokens(text), text
