"""groove's own word tokens for the CJK full-text table (`fts_cjk`): pure, no dependencies.

FTS5 has no Japanese tokenizer, and the trigram table cannot match 1- or 2-character words
(most Japanese words) and ranks by phrase, not by the characters a question shares with a
passage. So chunks and queries are cut here into tokens that FTS5's `unicode61` tokenizer keeps
as they are once written space-separated:

- text is NFKC-normalised (full-width `ＡＢＣ１２３` → `abc123`, half-width katakana → full
  width) and case-folded;
- a run of CJK characters (kanji, kana, hangul) gives every character (unigram) and every pair
  of neighbours (bigram): `評価方法` → `評 評価 価 価方 方 方法 法`;
- a run of other letters or digits (a Latin word, a number) is one token: `Python3.12` →
  `python3 12`;
- everything else (spaces, punctuation, symbols) separates.

On a JSQuAD sample (issue #13) character unigrams + bigrams scored within noise of the best
variant tried (MeCab lemmas + bigrams) without an analyser, its load time or its install size
(bench/results/code-notes.md#cjk-tokens).
"""

from __future__ import annotations

import re
import unicodedata

CJK_TOKENISER_VERSION = 1
"""Bumped when `tokens` changes; an index written by another version is re-tokenised."""


def is_cjk(ch: str) -> bool:
    """Kanji (with 々 〆), hiragana, katakana (with ー) and hangul: characters whose words are
    not separated by spaces (after NFKC, so half-width katakana is full width)."""
    cp = ord(ch)
    return (
        0x4E00 <= cp <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= cp <= 0x4DBF  # extension A
        or 0x20000 <= cp <= 0x2FA1F  # extensions B–F, compatibility supplement
        or 0xF900 <= cp <= 0xFAFF  # compatibility ideographs
        or cp in (0x3005, 0x3006)  # 々 〆
        or 0x3041 <= cp <= 0x3096  # hiragana
        or 0x309D <= cp <= 0x309F  # ゝ ゞ ゟ
        or 0x30A1 <= cp <= 0x30FA  # katakana
        or 0x30FC <= cp <= 0x30FF  # ー ヽ ヾ ヿ
        or 0x31F0 <= cp <= 0x31FF  # katakana phonetic extensions
        or 0xAC00 <= cp <= 0xD7A3  # hangul syllables
    )


class _Kinds(dict[int, str]):
    """Code point → "c" (CJK), "w" (another letter or digit: Unicode's L and N categories) or
    " " (a separator), for `str.translate`; each code point is classified the first time it is
    seen. Text mapped through it is scanned for runs by a regular expression over three ASCII
    letters: no Python loop per character, and no character class over the CJK ranges, whose
    compilation at import every cold search would pay (bench/results/code-notes.md#cjk-tokeniser)."""

    def __missing__(self, cp: int) -> str:
        ch = chr(cp)
        kind = "c" if is_cjk(ch) else "w" if unicodedata.category(ch)[0] in "LN" else " "
        self[cp] = kind
        return kind


_KINDS = _Kinds()
_RUNS = re.compile("c+|w+")


def normalise(text: str) -> str:
    """NFKC + case folding: the form both the rows and the queries are tokenised in."""
    return unicodedata.normalize("NFKC", text).casefold()


def tokens(text: str) -> list[str]:
    """The tokens of `text` in order (see the module docstring); repeats are kept."""
    return _normalised_tokens(normalise(text))


def _normalised_tokens(norm: str) -> list[str]:
    """The tokens of NFKC-normalised, case-folded text (see `_Kinds`)."""
    out: list[str] = []
    for match in _RUNS.finditer(norm.translate(_KINDS)):
        start, end = match.span()
        if match.group()[0] == "w":  # a Latin word or a number
            out.append(norm[start:end])
            continue
        for i in range(start, end - 1):  # 評価方法 → 評 評価 価 価方 方 方法 法
            out.append(norm[i])
            out.append(norm[i : i + 2])
        out.append(norm[end - 1])
    return out


ROW_WINDOW_CHARS = 65_536
"""`row_text` tokenises a long text this many characters at a time (cut at a separator)."""


def _window_end(norm: str, start: int) -> int:
    """Where the window from `start` ends: at a whitespace character no token spans, or at the
    next separator after the window when a window-long run holds none."""
    end = start + ROW_WINDOW_CHARS
    if end >= len(norm):
        return len(norm)
    cut = max(norm.rfind(" ", start, end), norm.rfind("\n", start, end))
    if cut > start:
        return cut
    while end < len(norm) and _KINDS[ord(norm[end])] != " ":
        end += 1
    return end


def row_text(text: str | None) -> str:
    """A column value for `fts_cjk`: the tokens of `text`, space-separated.

    A long text is tokenised a window at a time, each cut at a separator, which gives the same
    tokens as the whole text without holding millions of small strings at once (a 10 MB chunk:
    2.5 million tokens).
    """
    if not text:
        return ""
    norm = normalise(text)
    parts: list[str] = []
    start = 0
    while start < len(norm):
        end = _window_end(norm, start)
        part = " ".join(_normalised_tokens(norm[start:end]))
        if part:
            parts.append(part)
        start = end
    return " ".join(parts)


def has_cjk(text: str) -> bool:
    """True when `text` holds a CJK character (after NFKC)."""
    return "c" in normalise(text).translate(_KINDS)
