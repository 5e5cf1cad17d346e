#!/usr/bin/env python3
"""Deterministic synthetic knowledge bases and queries for the search benchmarks.

    python bench/make_synthetic_kb.py --chunks 10000 --out DIR
    python bench/make_synthetic_kb.py --queries 200 --queries-out FILE

The KB is a tree `<category>/<topic>/note-NNNNNN.md` of Markdown files with YAML frontmatter and
`sections_per_file` h2 sections each (the last file takes the remainder). Every section body is
200–600 code points of pseudo-text, so no section falls under the chunker's 50-code-point merge
limit and the number of chunks groove indexes is exactly `--chunks` (index.md §3).

Words are drawn from Zipf–Mandelbrot distributions over an English vocabulary (real function and
engineering words at the head, syllable-built pseudo-words in the tail, plus identifiers such as
`E-0382` or `retry_budget`) and a Japanese one (kanji compounds and katakana words joined by
particles). Most files are English with some Japanese sentences, the rest the other way round, so
FTS phrases see realistic document frequencies: a few phrases match most rows, most match few.

Everything comes from one seed through numpy's `SeedSequence`: the vocabulary, the KB and the
queries use independent child streams, so the query set does not depend on `--chunks`, and two
runs with the same arguments write byte-identical files. Only the standard library and numpy are
used, so the script runs without installing groove.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

SECTION_MIN_CHARS = 200
"""Shortest section body in code points (well above the chunker's 50-code-point merge limit)."""
SECTION_MAX_CHARS = 600
"""Longest section body in code points."""
SECTIONS_PER_FILE = 10
"""Default number of h2 sections (= chunks) per file."""

_BLOCK = 1 << 16
"""Draws fetched from the generator at a time; only speed depends on it, never the output."""

# The head of the English vocabulary, most frequent first. Function words lead, as in real text;
# queries skip the first `_QUERY_SKIP_EN` ranks so they look like what people type.
_ENGLISH_HEAD_TEXT = (
    "the of and to a in is for on that with it as be by this we from are at or not when after "
    "before if can all one but which will should more than only then also each new into over "
    "index search query backup restore retry budget deploy release latency error timeout cache "
    "service database chunk vector embedding review incident alert config schema migration "
    "rollback pool connection metric shard replica token ranking reranker fusion recall golden "
    "runbook oncall pager upstream client server request response queue worker batch job "
    "storage bucket snapshot replay window threshold limit weight score filter tag heading note "
    "document table column row trigram phrase model dimension cosine distance neighbour cluster "
    "node region failover primary secondary lag throughput capacity quota owner team "
    "meeting decision action ticket change flag canary rollout dashboard log trace span"
)
_ENGLISH_HEAD = tuple(dict.fromkeys(_ENGLISH_HEAD_TEXT.split()))
_QUERY_SKIP_EN = 40

_ONSETS = ("b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
           "st", "tr", "pl", "gr", "ch", "sh", "br", "cl", "fr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "io")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "nd", "st", "ck", "m", "x")

_KANJI = (
    "検索設定障害対応手順復元保存期間暗号鍵管理評価分割方針遅延原因経緯概要判断基準変更承認返答期限"
    "確認通知当番連絡調査記録作成削除追加更新登録参照取得送信受信処理実行開始終了停止再試行上限下限"
    "割合負荷監視指標警告重要緊急定例議論決定報告共有担当会議資料計画予定結果改善品質性能容量費用"
    "運用構成環境本番開発試験検証移行切替接続切断応答要求時間日付件数順位候補精度範囲対象条件方式"
)
_KATAKANA = (
    "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワン"
    "ガギグゲゴザジズゼゾダデドバビブベボパピプペポ"
)
_KATAKANA_TAIL = ("ー", "ー", "ン", "ッ", "")
_PARTICLES = ("の", "の", "の", "を", "に", "は", "が", "で", "と", "から", "まで", "について", "として")
_ENDINGS = ("する。", "した。", "します。", "できる。", "である。", "しない。", "を確認する。")

_CATEGORIES = ("operations", "search", "reliability", "team", "incidents", "platform", "data",
               "security")
_TOPICS_PER_CATEGORY = 5
_TAGS = ("backup", "oncall", "deploy", "search", "ranking", "retries", "database", "review",
         "incident", "meeting", "onboarding", "security", "latency", "cache", "storage",
         "検索", "障害対応", "設定", "評価", "運用")

_JA_FILE_SHARE = 0.4
"""Share of files whose sentences are mostly Japanese."""
_JA_SENTENCE_SHARE = {False: 0.12, True: 0.85}
"""Probability that a sentence is Japanese, for English (False) and Japanese (True) files."""
_IDENTIFIER_SHARE = 0.02
"""Probability that an English word slot holds an identifier instead."""
_PARAGRAPH_BREAK = 0.2
"""Probability of a blank line (new paragraph) between two sentences."""
_JA_QUERY_SHARE = 0.3


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The three word lists in rank order (most frequent first) with their sampling CDFs."""

    english: tuple[str, ...]
    japanese: tuple[str, ...]
    identifiers: tuple[str, ...]
    english_cdf: npt.NDArray[np.float64]
    japanese_cdf: npt.NDArray[np.float64]
    identifier_cdf: npt.NDArray[np.float64]
    english_query_cdf: npt.NDArray[np.float64]
    """CDF over `english[_QUERY_SKIP_EN:]`: queries are made of content words."""


@dataclass(frozen=True, slots=True)
class KbStats:
    """What `generate_kb` wrote."""

    files: int
    chunks: int
    chars: int


def zipf_cdf(n: int, s: float = 1.0, q: float = 2.7) -> npt.NDArray[np.float64]:
    """CDF of the Zipf–Mandelbrot law p(r) ∝ 1 / (r + q)^s over ranks r = 1..n (Mandelbrot 1953).

    The last entry is exactly 1.0, so `searchsorted(cdf, u, "right")` maps u ∈ [0, 1) to 0..n-1.
    """
    if n < 1:
        raise ValueError("a distribution needs at least one rank")
    weights = 1.0 / np.power(np.arange(1, n + 1, dtype=np.float64) + q, s)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    cdf[-1] = 1.0
    return cdf


class _Draws:
    """Buffered draws from one generator: Zipf ranks, bounded integers and uniform floats.

    Every draw consumes the generator's stream in a fixed order, so the output depends only on
    the seed and the sequence of calls, never on timing.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.floats: list[float] = []
        self.pos = 0

    def uniform(self) -> float:
        """One float in [0, 1)."""
        if self.pos == len(self.floats):
            self.floats = self.rng.random(_BLOCK).tolist()
            self.pos = 0
        value = self.floats[self.pos]
        self.pos += 1
        return value

    def integer(self, low: int, high: int) -> int:
        """One integer in [low, high] (both inclusive)."""
        return low + min(int(self.uniform() * (high - low + 1)), high - low)

    def ranks(self, cdf: npt.NDArray[np.float64]) -> _Ranks:
        """A buffered stream of 0-based ranks drawn from the distribution with this CDF."""
        return _Ranks(self.rng, cdf)

    def choice(self, items: Sequence[str]) -> str:
        """One item, uniformly."""
        return items[self.integer(0, len(items) - 1)]


class _Ranks:
    """Zipf ranks drawn a block at a time (one vectorised `searchsorted` per block)."""

    def __init__(self, rng: np.random.Generator, cdf: npt.NDArray[np.float64]) -> None:
        self.rng = rng
        self.cdf = cdf
        self.buf: list[int] = []
        self.pos = 0

    def __call__(self) -> int:
        if self.pos == len(self.buf):
            uniforms = self.rng.random(_BLOCK)
            self.buf = np.searchsorted(self.cdf, uniforms, side="right").tolist()
            self.pos = 0
        value = self.buf[self.pos]
        self.pos += 1
        return value


def _pseudo_words(draws: _Draws, count: int, taken: set[str]) -> list[str]:
    """`count` distinct syllable-built words, shorter ones first (frequent words are short)."""
    words: list[str] = []
    while len(words) < count:
        syllables = 1 + min(draws.integer(0, 9) // 4, 2)  # 1: 40 %, 2: 40 %, 3: 20 %
        word = "".join(
            draws.choice(_ONSETS) + draws.choice(_VOWELS) + draws.choice(_CODAS)
            for _ in range(syllables)
        )
        if len(word) >= 3 and word not in taken:
            taken.add(word)
            words.append(word)
    words.sort(key=len)  # stable: equal lengths keep their random order
    return words


def _japanese_words(draws: _Draws, count: int) -> list[str]:
    """`count` distinct kanji compounds (2–3 kanji) and katakana words (3–6 kana), mixed."""
    taken: set[str] = set()
    words: list[str] = []
    while len(words) < count:
        if draws.uniform() < 0.65:
            word = "".join(draws.choice(_KANJI) for _ in range(draws.integer(2, 3)))
        else:
            body = "".join(draws.choice(_KATAKANA) for _ in range(draws.integer(2, 5)))
            word = body + draws.choice(_KATAKANA_TAIL)
        if len(word) >= 2 and word not in taken:
            taken.add(word)
            words.append(word)
    return words


def _identifiers(draws: _Draws, english: Sequence[str], count: int) -> list[str]:
    """`count` distinct codes: error codes `E-0382`, config keys `retry_budget`, `sqlite-vec`."""
    taken: set[str] = set()
    words: list[str] = []
    letters = "ABCDEFGHKLMNPRSTVWX"
    while len(words) < count:
        kind = draws.integer(0, 2)
        if kind == 0:
            prefix = "".join(draws.choice(letters) for _ in range(draws.integer(1, 2)))
            word = f"{prefix}-{draws.integer(0, 9999):04d}"
        else:
            first = english[draws.integer(_QUERY_SKIP_EN, min(len(english), 2000) - 1)]
            second = english[draws.integer(_QUERY_SKIP_EN, min(len(english), 2000) - 1)]
            word = f"{first}{'_' if kind == 1 else '-'}{second}"
        if word not in taken:
            taken.add(word)
            words.append(word)
    return words


def build_vocabulary(
    seed: int = 0, *, english_size: int = 30000, japanese_size: int = 8000,
    identifier_size: int = 3000,
) -> Vocabulary:
    """The benchmark vocabulary for a seed; the same seed always gives the same words."""
    vocab_seq = np.random.SeedSequence(seed).spawn(3)[0]
    draws = _Draws(np.random.default_rng(vocab_seq))
    head = list(_ENGLISH_HEAD)
    english = head + _pseudo_words(draws, english_size - len(head), set(head))
    japanese = _japanese_words(draws, japanese_size)
    identifiers = _identifiers(draws, english, identifier_size)
    return Vocabulary(
        english=tuple(english),
        japanese=tuple(japanese),
        identifiers=tuple(identifiers),
        english_cdf=zipf_cdf(len(english), s=1.05),
        japanese_cdf=zipf_cdf(len(japanese), s=1.0),
        identifier_cdf=zipf_cdf(len(identifiers), s=0.9),
        english_query_cdf=zipf_cdf(len(english) - _QUERY_SKIP_EN, s=0.9),
    )


class _Writer:
    """Sentences, sections and files drawn from one vocabulary and one stream."""

    def __init__(self, vocab: Vocabulary, draws: _Draws) -> None:
        self.vocab = vocab
        self.draws = draws
        self.english = draws.ranks(vocab.english_cdf)
        self.japanese = draws.ranks(vocab.japanese_cdf)
        self.identifier = draws.ranks(vocab.identifier_cdf)

    def english_word(self) -> str:
        if self.draws.uniform() < _IDENTIFIER_SHARE:
            return self.vocab.identifiers[self.identifier()]
        return self.vocab.english[self.english()]

    def japanese_word(self) -> str:
        return self.vocab.japanese[self.japanese()]

    def english_sentence(self) -> str:
        words = [self.english_word() for _ in range(self.draws.integer(5, 14))]
        words[0] = words[0][:1].upper() + words[0][1:]
        return " ".join(words) + "."

    def japanese_sentence(self) -> str:
        parts: list[str] = []
        for i in range(self.draws.integer(3, 7)):
            if i:
                parts.append(self.draws.choice(_PARTICLES))
            if self.draws.uniform() < 0.08:  # an English term inside Japanese text
                parts.append(f" {self.english_word()} ")
            else:
                parts.append(self.japanese_word())
        return "".join(parts).strip() + self.draws.choice(_ENDINGS)

    def section_body(self, japanese_file: bool) -> str:
        """One section body of SECTION_MIN_CHARS..SECTION_MAX_CHARS code points."""
        target = self.draws.integer(SECTION_MIN_CHARS, SECTION_MAX_CHARS)
        ja_share = _JA_SENTENCE_SHARE[japanese_file]
        text = ""
        previous_ja = False
        while len(text) < target:
            is_ja = self.draws.uniform() < ja_share
            sentence = self.japanese_sentence() if is_ja else self.english_sentence()
            if not text:
                separator = ""
            elif self.draws.uniform() < _PARAGRAPH_BREAK:
                separator = "\n\n"
            else:
                separator = "" if (is_ja and previous_ja) else " "
            if len(text) + len(separator) + len(sentence) > SECTION_MAX_CHARS:
                if len(text) >= SECTION_MIN_CHARS:
                    break
                continue  # too long to fit while still short: draw another sentence
            text += separator + sentence
            previous_ja = is_ja
        return text

    def heading(self, japanese_file: bool) -> str:
        if japanese_file:
            words = [self.japanese_word() for _ in range(self.draws.integer(1, 3))]
            return "の".join(words)
        words = [self.english_word() for _ in range(self.draws.integer(2, 4))]
        return " ".join(words).capitalize()

    def note(self, number: int, sections: int) -> tuple[str, str]:
        """(KB-relative path, file text) of note `number` with `sections` h2 sections."""
        draws = self.draws
        category = draws.choice(_CATEGORIES)
        topic = f"topic-{draws.integer(1, _TOPICS_PER_CATEGORY)}"
        japanese_file = draws.uniform() < _JA_FILE_SHARE
        title = self.heading(japanese_file)
        tags = sorted({draws.choice(_TAGS) for _ in range(draws.integer(1, 3))})
        day = draws.integer(0, 27)
        month = draws.integer(1, 12)
        lines = [
            "---",
            f'title: "{title}"',
            f"tags: [{', '.join(tags)}]",
            f"date: 2025-{month:02d}-{day + 1:02d}",
            "---",
        ]
        for _ in range(sections):
            lines += [f"## {self.heading(japanese_file)}", "", self.section_body(japanese_file), ""]
        return f"{category}/{topic}/note-{number:06d}.md", "\n".join(lines)


def generate_kb(
    out: Path, chunks: int, *, seed: int = 0, sections_per_file: int = SECTIONS_PER_FILE
) -> KbStats:
    """Write a synthetic KB of exactly `chunks` sections into `out` (created if missing).

    Args:
        out: Target folder; it must not exist or be empty, so that the chunk count stays exact.
        chunks: Total number of h2 sections, i.e. of chunks groove will index (≥ 1).
        seed: Seed of the vocabulary and the text.
        sections_per_file: Sections per file; the last file holds the remainder.

    Returns:
        The number of files and chunks written and the total code points of section text.
    """
    if chunks < 1 or sections_per_file < 1:
        raise ValueError("chunks and sections_per_file must be at least 1")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty directory")
    vocab = build_vocabulary(seed)
    draws = _Draws(np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[1]))
    writer = _Writer(vocab, draws)
    files = 0
    chars = 0
    remaining = chunks
    while remaining:
        sections = min(sections_per_file, remaining)
        rel, text = writer.note(files, sections)
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        files += 1
        chars += len(text)
        remaining -= sections
    return KbStats(files=files, chunks=chunks, chars=chars)


def generate_queries(n: int, *, seed: int = 0) -> list[str]:
    """`n` benchmark queries of 2–6 words from the KB vocabulary, about 30 % of them Japanese.

    English queries use content words (the function-word head is skipped) and sometimes an
    identifier; Japanese ones join kanji/katakana words with a particle or a space.
    """
    vocab = build_vocabulary(seed)
    draws = _Draws(np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2]))
    japanese = draws.ranks(vocab.japanese_cdf)
    identifier = draws.ranks(vocab.identifier_cdf)
    content_word = draws.ranks(vocab.english_query_cdf)
    queries: list[str] = []
    for _ in range(n):
        size = draws.integer(2, 6)
        if draws.uniform() < _JA_QUERY_SHARE:
            text = vocab.japanese[japanese()]
            for _ in range(size - 1):
                joiner = draws.choice(("の", "の", "を", " ", "と"))
                text += joiner + vocab.japanese[japanese()]
        else:
            words = []
            for _ in range(size):
                if draws.uniform() < 0.1:
                    words.append(vocab.identifiers[identifier()])
                else:
                    words.append(vocab.english[_QUERY_SKIP_EN + content_word()])
            text = " ".join(words)
        queries.append(text)
    return queries


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Write a deterministic synthetic KB and/or benchmark queries.",
        epilog="example: python bench/make_synthetic_kb.py --chunks 10000 --out bench/work/kb10k",
    )
    parser.add_argument("--chunks", type=int, help="number of h2 sections (= chunks) to write")
    parser.add_argument("--out", type=Path, help="output folder for the KB (must be empty)")
    parser.add_argument("--queries", type=int, help="number of benchmark queries to write")
    parser.add_argument("--queries-out", type=Path, help="file for the queries, one per line")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--sections-per-file", type=int, default=SECTIONS_PER_FILE,
                        help=f"h2 sections per file (default {SECTIONS_PER_FILE})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (argparse exits with 2 on bad usage)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.chunks is None and args.queries is None:
        parser.error("give --chunks/--out, --queries/--queries-out, or both")
    if (args.chunks is None) != (args.out is None):
        parser.error("--chunks and --out go together")
    if (args.queries is None) != (args.queries_out is None):
        parser.error("--queries and --queries-out go together")
    if args.chunks is not None and args.chunks < 1:
        parser.error("--chunks must be at least 1")
    if args.queries is not None and args.queries < 1:
        parser.error("--queries must be at least 1")
    if args.sections_per_file < 1:
        parser.error("--sections-per-file must be at least 1")

    if args.chunks is not None:
        try:
            stats = generate_kb(args.out, args.chunks, seed=args.seed,
                                sections_per_file=args.sections_per_file)
        except FileExistsError as exc:
            parser.error(f"{exc}; choose a new --out folder")
        print(f"files={stats.files} chunks={stats.chunks} out={args.out}")
    if args.queries is not None:
        queries = generate_queries(args.queries, seed=args.seed)
        args.queries_out.parent.mkdir(parents=True, exist_ok=True)
        args.queries_out.write_text("".join(q + "\n" for q in queries), encoding="utf-8",
                                    newline="\n")
        print(f"queries={len(queries)} out={args.queries_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
