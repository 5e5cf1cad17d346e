"""Query parsing and FTS compilation: the pinned examples of search.md §2.6 and the §2.2 rules."""

from __future__ import annotations

import pytest

from groove_cli.errors import UsageError
from groove_cli.retrieve.query import (
    FTS_QUERY_VERSION,
    MAX_NEG_PHRASES,
    MAX_PHRASES,
    MIN_MIXED_WORD_TERMS,
    MIN_PHRASE_CHARS,
    CompiledQuery,
    compile_query,
    ignored_symbols,
    query_phrases,
)
from groove_cli.text.words import ENGLISH_STOPWORDS, MAX_WORD_TERMS, MIN_WORD_CHARS

# search.md §2.6, every row that compiles to an expression, as (query, trigram MATCH, word-level
# MATCH) since issue #8: an all-Latin query goes to `fts_words` only; a query with a non-Latin
# (e.g. number-only) phrase keeps every phrase on the trigram table, and the word leg joins it
# from MIN_MIXED_WORD_TERMS (2) Latin terms on. Since issue #13 a query with CJK text goes to
# `fts_cjk` instead of the trigram table, which keeps only its quoted phrases (CJK_PINNED below);
# since issue #25 its Latin words stay there too (no word-level leg: they are CJK-table tokens).
# Word terms are plain words of >= 2 characters minus English stopwords (unless quoted, or unless
# nothing else is left), repeats kept.
PINNED: list[tuple[str, str | None, str | None]] = [
    ("再ランキングの評価について", None, None),
    ("retry budget の設定", None, None),  # retry, budget: CJK-table tokens
    # one Latin term (the quoted phrase) in a mixed query: the word leg does not join; the quoted
    # phrase stays on the trigram table as an exact substring
    ('"Foundry Local" の設定', '"Foundry Local"', None),
    ("abc abc def", None, '"abc" OR "abc" OR "def"'),  # repeats kept: BM25 query term frequency
    ('"ab" テスト', None, None),
    ("foo OR bar", None, '"foo" OR "bar"'),  # `or` is a stopword (and never an operator)
    ('foo "bar" AND', None, '"foo" OR "bar"'),  # `and` is a stopword
    ("heading:foo", None, '"heading" OR "foo"'),
    ('abc "def', None, '"abc" OR "def"'),
    ('"say ""hi"""', None, '"say ""hi"""'),
    ("UI について", None, None),
    ("ML pipelines", None, '"ML" OR "pipelines"'),  # 2-letter words count in the word table
    ("UI と ML", None, None),
    ("!!! ??? 、。", '"!!! ??? 、。"', None),  # fallback
    ("---", '"---"', None),
    ("sqlite-vec", None, '"sqlite-vec"'),
    ("E0382", None, '"E0382"'),
    ("E-0382", None, '"E-0382"'),
    ("python -async", None, '("python") NOT ("async")'),
    # CJK negatives cannot be written for the word table: they stay in `negative_expr`, whose
    # ids the word and vector legs drop
    ("python -再ランキング", None, '"python"'),
    ('python -"再ランキング"', None, '"python"'),
    ("python -ab", None, '("python") NOT ("ab")'),  # a 2-letter word is a word-level exclusion
    ('"-foo" bar', None, '"-foo" OR "bar"'),
    # --- English stopwords (NLTK's 179), quoting, stemming, mixed scripts (issue #8)
    ("What problems are there in making titles?", None, '"problems" OR "making" OR "titles"'),
    ("the of", None, '"the" OR "of"'),  # nothing but stopwords: all kept
    ('"the who"', None, '"the who"'),  # a quoted phrase is kept whole, stopwords included
    ('"the" who', None, '"the"'),  # quoting rescues a stopword; the plain `who` is dropped
    ("The THE the", None, '"The" OR "THE" OR "the"'),  # stopwords only, repeats kept
    # no stemming in the compiler: FTS5's porter tokenizer stems both the rows and the terms
    ("retrieving systems", None, '"retrieving" OR "systems"'),
    ("Café crème", None, '"Café" OR "crème"'),  # accented letters are Latin
    ("ab", None, '"ab"'),
    ('"x"', None, '"x"'),  # a quoted Latin term has no minimum length
    ("Python入門", None, None),  # one Latin word in a CJK query: served by the CJK table
    ("Python と Rust の比較", None, None),  # two Latin words in a CJK query: the CJK table too
    # a number-only phrase is not Latin: it keeps the query's phrases on the trigram table
    ("error 404 page", '"error" OR "404" OR "page"', '"error" OR "page"'),
    ("2024", '"2024"', None),
    ("python 3.12", None, '"python"'),  # `3`, `12`: no phrase, no word
    ("поиск данных", '"поиск" OR "данных"', None),  # Cyrillic is not Latin
    ("ＡＢＣ test", '"ＡＢＣ" OR "test"', None),  # full-width letters are not Latin
]


def test_constants() -> None:
    assert (MIN_PHRASE_CHARS, MAX_PHRASES, MAX_NEG_PHRASES, FTS_QUERY_VERSION) == (3, 32, 32, 5)
    assert (MIN_WORD_CHARS, MAX_WORD_TERMS, MIN_MIXED_WORD_TERMS) == (2, 32, 2)
    assert len(ENGLISH_STOPWORDS) == 179  # NLTK's English list
    assert {"the", "of", "and", "or", "not", "what", "don't", "should've"} <= ENGLISH_STOPWORDS


@pytest.mark.parametrize(("query", "trigram", "words"), PINNED)
def test_pinned_match_expression(query: str, trigram: str | None, words: str | None) -> None:
    compiled = compile_query(query)
    assert compiled.match_expr == trigram
    assert compiled.word_expr == words


# `ab` and `"ab"` were vector-only with the trigram table alone; a 2-letter word now reaches the
# word table (PINNED). A lone letter still has neither a phrase nor a word.
@pytest.mark.parametrize("query", [" a ", "I", "é"])
def test_pinned_vector_only(query: str) -> None:
    compiled = compile_query(query)
    assert compiled.match_expr is None
    assert compiled.word_expr is None and compiled.word_terms == ()
    assert compiled.phrases == ()
    assert compiled.negative_expr is None and compiled.word_negative_expr is None


def test_pinned_exclusion_without_a_trigram_phrase() -> None:
    compiled = compile_query("ab -async")
    assert compiled.match_expr is None
    assert compiled.positive_text == "ab"
    assert compiled.negatives == ("async",)
    assert compiled.negative_expr == '"async"'
    assert compiled.word_expr == '("ab") NOT ("async")'
    assert compiled.word_negative_expr == '"async"'


def test_pinned_vector_only_with_exclusion() -> None:
    # the vector leg drops the chunks either table's negative expression matches
    compiled = compile_query("x -async")
    assert (compiled.match_expr, compiled.word_expr) == (None, None)
    assert compiled.positive_text == "x"
    assert compiled.negative_expr == '"async"'
    assert compiled.word_negative_expr == '"async"'


@pytest.mark.parametrize("query", ["", "   ", "\t\n", "\u3000"])
def test_pinned_empty_refused(query: str) -> None:
    with pytest.raises(UsageError) as info:
        compile_query(query)
    assert info.value.message == "the query is empty"
    assert info.value.exit_code == 2


@pytest.mark.parametrize("query", ["-async", "-ab", '-"再ランキング"', "  -foo -bar  "])
def test_pinned_only_exclusions_refused(query: str) -> None:
    with pytest.raises(UsageError) as info:
        compile_query(query)
    assert info.value.message == (
        "the query contains only exclusions (-term); add at least one term to search for"
    )
    assert info.value.exit_code == 2


def test_full_compiled_record() -> None:
    # `-ab` is too short for a trigram negative but a word-level one; an all-Latin query has no
    # trigram expression, its negatives still feed the vector leg's exclusion scan
    assert compile_query('  python -"foo bar" -ab -async  ') == CompiledQuery(
        text='  python -"foo bar" -ab -async  ',
        positive_text="python",
        phrases=("python",),
        negatives=("foo bar", "async"),
        match_expr=None,
        negative_expr='"foo bar" OR "async"',
        phrases_capped=False,
        negatives_capped=False,
        word_terms=("python",),
        word_expr='("python") NOT ("foo bar" OR "ab" OR "async")',
        word_negative_expr='"foo bar" OR "ab" OR "async"',
    )


def test_full_compiled_record_mixed_script() -> None:
    assert compile_query("retry budget の設定 -再試行 -old") == CompiledQuery(
        text="retry budget の設定 -再試行 -old",
        positive_text="retry budget の設定",
        phrases=("retry", "budget", "の設定"),
        negatives=("再試行", "old"),
        match_expr=None,  # CJK text: the CJK table instead of the trigram table (issue #13)
        negative_expr='"再試行" OR "old"',
        phrases_capped=False,
        negatives_capped=False,
        word_terms=(),  # CJK text: its Latin words are CJK-table tokens (issue #25)
        word_expr=None,
        word_negative_expr='"old"',  # still excluded everywhere, through the word table's ids
        cjk_terms=("retry", "budget", "の設", "設", "設定", "定"),  # the lone の is dropped
        cjk_expr='"retry" OR "budget" OR "の設" OR "設" OR "設定" OR "定"',
        cjk_negative_expr=None,  # 再試行 and old are 3+ characters: the trigram NOT holds them
    )


def test_fallback_keeps_phrases_empty() -> None:
    compiled = compile_query("UI и ML")  # и: one Cyrillic letter, no phrase of 3
    assert compiled.phrases == ()
    assert compiled.match_expr == '"UI и ML"'
    # with CJK text the CJK table serves such a query: no trigram fallback
    cjk_query = compile_query("UI と ML")
    assert (cjk_query.match_expr, cjk_query.cjk_expr) == (None, '"ui" OR "ml"')


def test_fallback_with_negatives() -> None:
    assert compile_query("UI и ML -async").match_expr == '("UI и ML") NOT ("async")'


def test_fallback_drops_quoted_segments() -> None:
    # Plain text `UI ` + ` ML` (the quoted `ab` removed) is `UI  ML`, stripped: 6 code points.
    assert compile_query('UI "ab" ML').match_expr == '"UI  ML"'
    # Quoting a short word does not rescue it: only the plain `x` is left.
    assert compile_query('x "ab"').match_expr is None


def test_fallback_refuses_nul() -> None:
    assert compile_query("a\0b c").match_expr is None


def test_quoted_phrase_with_nul_is_dropped() -> None:
    compiled = compile_query('"abc\0def" xyz')
    assert compiled.phrases == ("xyz",)
    assert (compiled.match_expr, compiled.word_expr) == (None, '"xyz"')
    assert compile_query('"abc\0def" テスト').match_expr is None
    assert compile_query('"abc\0def" テスト').word_expr is None
    assert compile_query('"abc\0def" テスト').cjk_terms[-5:] == ("テ", "テス", "ス", "スト", "ト")


def test_quoted_short_word_not_rescued() -> None:
    assert compile_query('"ab" "abc"').phrases == ("abc",)


# --- exclusions (§2.2) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "phrases", "negatives"),
    [
        # A hyphen inside a word or in a run of hyphens is a word character.
        ("sqlite-vec", ("sqlite-vec",), ()),
        ("E-0382 fix", ("E-0382", "fix"), ()),
        ("--- rule", ("---", "rule"), ()),
        ("rule --verbose", ("rule", "--verbose"), ()),
        # A marker needs the query start or whitespace before it.
        ("foo-bar", ("foo-bar",), ()),
        ('"quoted"-async', ("quoted", "-async"), ()),
        # ... and a word character (not `-`) or a closed quote after it.
        ("python - async", ("python", "async"), ()),
        ("python -:async", ("python", "async"), ()),
        # Marker at the very start, followed by more positives.
        ("-async python", ("python",), ("async",)),
        # Tabs and ideographic spaces count as whitespace.
        ("python\t-async", ("python",), ("async",)),
        ("python\u3000-async", ("python",), ("async",)),
    ],
)
def test_exclusion_markers(
    query: str, phrases: tuple[str, ...], negatives: tuple[str, ...]
) -> None:
    compiled = compile_query(query)
    assert compiled.phrases == phrases
    assert compiled.negatives == negatives


def test_unquoted_exclusion_runs_to_whitespace_or_quote() -> None:
    compiled = compile_query('python -async:io"retry"')
    # `-async:io` ends at the quote; `async:io` tokenises like positive text: `async` (and `io`,
    # too short, dropped). The quoted `retry` stays positive.
    assert compiled.negatives == ("async",)
    assert compiled.positive_text == 'python "retry"'
    assert compiled.phrases == ("python", "retry")


def test_unquoted_exclusion_uses_positive_rules() -> None:
    assert compile_query("python -再ランキング").negatives == ("再ランキング", "ランキング")
    assert compile_query("python -システム化").negatives == ("システム化", "システム")


def test_quoted_exclusion_is_one_phrase() -> None:
    compiled = compile_query('python -"再ランキング" -"retry budget"')
    assert compiled.negatives == ("再ランキング", "retry budget")
    assert compiled.positive_text == "python"


def test_quoted_exclusion_short_or_nul_dropped() -> None:
    # under 3 code points: no trigram negative, but a quoted word-level one (no minimum length);
    # with NUL: neither
    compiled = compile_query('python -"ab" -"a\0bc"')
    assert compiled.negatives == ()
    assert compiled.negative_expr is None
    assert compiled.match_expr is None
    assert compiled.word_expr == '("python") NOT ("ab")'
    assert compiled.word_negative_expr == '"ab"'
    assert compiled.positive_text == "python"
    mixed = compile_query('テスト -"ab" -"a\0bc"')
    assert (mixed.match_expr, mixed.negative_expr) == (None, None)
    assert (mixed.word_expr, mixed.word_negative_expr) == (None, '"ab"')


def test_quoted_exclusion_with_doubled_quote() -> None:
    compiled = compile_query('python -"say ""hi"""')
    assert compiled.negatives == ('say "hi"',)
    assert compiled.match_expr is None
    assert compiled.word_expr == '("python") NOT ("say ""hi""")'
    assert compile_query('"テスト" -"say ""hi"""').match_expr == '("テスト") NOT ("say ""hi""")'


def test_hyphen_inside_quotes_is_positive() -> None:
    compiled = compile_query('"-foo" bar')
    assert compiled.phrases == ("-foo", "bar")
    assert compiled.negatives == ()


def test_hyphen_before_unclosed_quote_is_not_a_marker() -> None:
    compiled = compile_query('python -"async')
    assert compiled.negatives == ()
    assert compiled.positive_text == 'python -"async'
    # `-` and `"` are separate: `-` is a one-character group, `"` a separator.
    assert compiled.phrases == ("python", "async")


def test_unclosed_quote_is_plain() -> None:
    compiled = compile_query('abc "def ghi')
    assert compiled.phrases == ("abc", "def", "ghi")
    # An exclusion inside the unclosed tail is still an exclusion (the tail is Plain text).
    assert compile_query('abc "def -ghi').negatives == ("ghi",)


def test_unclosed_quote_after_doubled_quote() -> None:
    # `""` inside the region is a literal quote, so this region never closes.
    assert compile_query('"abc ""def').phrases == ("abc", "def")


def test_negatives_deduplicated() -> None:
    compiled = compile_query('python -async -async -"async" -asyncio')
    assert compiled.negatives == ("async", "asyncio")
    assert compiled.negative_expr == '"async" OR "asyncio"'


def test_negative_cap() -> None:
    words = [f"neg{i:02d}" for i in range(MAX_NEG_PHRASES + 3)]
    compiled = compile_query("python " + " ".join(f"-{w}" for w in words))
    assert compiled.negatives == tuple(words[:MAX_NEG_PHRASES])
    assert compiled.negatives_capped is True
    at_cap = compile_query("python " + " ".join(f"-{w}" for w in words[:MAX_NEG_PHRASES]))
    assert at_cap.negatives_capped is False


def test_negative_cap_counts_distinct_phrases() -> None:
    compiled = compile_query("python " + " ".join(["-async"] * 40))
    assert compiled.negatives == ("async",)
    assert compiled.negatives_capped is False


def test_positive_cap() -> None:
    words = [f"word{i:02d}" for i in range(MAX_PHRASES + 1)]
    compiled = compile_query(" ".join(words))
    assert compiled.phrases == tuple(words[:MAX_PHRASES])
    assert compiled.phrases_capped is True
    assert compiled.match_expr is None  # all Latin: the word table only
    assert compiled.word_terms == tuple(words[:MAX_WORD_TERMS])
    assert compiled.word_expr == " OR ".join(f'"{w}"' for w in words[:MAX_WORD_TERMS])
    # trigram phrases are deduplicated, word terms keep repeats and count them toward the cap
    at_cap = compile_query(" ".join(words[:MAX_PHRASES]))
    assert at_cap.phrases_capped is False
    # the cap drops only repeats of kept terms: no distinct phrase is lost, no warning (§2.4)
    repeated = compile_query(" ".join(words[:MAX_PHRASES] + words[:5]))
    assert repeated.phrases == tuple(words[:MAX_PHRASES])
    assert repeated.word_terms == tuple(words[:MAX_WORD_TERMS])
    assert repeated.phrases_capped is False
    # the 33rd term is a new word: it is dropped, and that is worth the warning
    lost = compile_query(" ".join([words[0]] * MAX_WORD_TERMS + [words[1]]))
    assert lost.phrases == (words[0], words[1])
    assert lost.word_terms == (words[0],) * MAX_WORD_TERMS
    assert lost.phrases_capped is True


def test_operators_are_plain_words() -> None:
    assert compile_query("NEAR(foo bar) NOT baz").phrases == ("NEAR", "foo", "bar", "NOT", "baz")
    assert compile_query("content:retry").phrases == ("content", "retry")


# --- runs and groups (§2.3–2.4) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        # Katakana includes the long-vowel mark and the middle dot; half-width katakana too.
        ("データベース", ["データベース"]),
        ("ﾃﾞｰﾀﾍﾞｰｽ", ["ﾃﾞｰﾀﾍﾞｰｽ"]),
        # 々 is kanji: one run.
        ("人々の", ["人々の"]),
        # ･ (U+FF65) is a separator, ・ (U+30FB) katakana.
        ("評価･分析", []),
        # Full-width alphanumerics and Cyrillic are OtherWord.
        ("ＡＢＣ", ["ＡＢＣ"]),
        ("поиск", ["поиск"]),
        # A run of 3+ after a join of short runs is also emitted on its own.
        ("の再ランキング", ["の再ランキング", "ランキング"]),
        # A join that reaches 3 with a short last run emits only the join.
        ("の評価", ["の評価"]),
        # Two leftovers widen the last unit to the group end.
        ("システム化の", ["システム化の", "システム"]),
        # No last unit and short runs only: dropped.
        ("化の", []),
        # Emoji are separators.
        ("retry🙂budget", ["retry", "budget"]),
        # Quoted text keeps its content verbatim, separators included.
        ('"a: b"', ["a: b"]),
    ],
)
def test_query_phrases(text: str, phrases: list[str]) -> None:
    assert query_phrases(text) == phrases


def test_query_phrases_does_not_apply_exclusions_or_fallback() -> None:
    assert query_phrases("python -async") == ["python", "-async"]
    assert query_phrases("UI と ML") == []


def test_query_phrases_dedupes_and_caps() -> None:
    words = [f"term{i:02d}" for i in range(40)]
    assert query_phrases(" ".join(words + words)) == words[:MAX_PHRASES]


def test_positive_text_is_what_the_embedder_sees() -> None:
    assert compile_query("  retry -async budget  ").positive_text == "retry  budget"
    assert compile_query('"Foundry Local" の設定').positive_text == '"Foundry Local" の設定'


def test_a_query_that_is_not_utf8_is_a_usage_error() -> None:
    """Issue 15 item 1: bytes that are not UTF-8 arrive as lone surrogates (PEP 383)."""
    with pytest.raises(UsageError) as caught:
        compile_query("caf\udce9 menu")
    assert caught.value.message == "the query is not valid UTF-8 text (byte 0xe9 at character 4)"
    assert caught.value.exit_code == 2
    with pytest.raises(UsageError, match="U\\+D800 at character 1"):
        compile_query("\ud800abc")


# Issue #13: (query, trigram MATCH, CJK MATCH, CJK exclusion) for queries with CJK text.
CJK_PINNED: list[tuple[str, str | None, str | None, str | None]] = [
    # every character and pair, hiragana-only tokens (の, が, きた) left out
    ("再ランキングの評価", None,
     '"再" OR "再ラ" OR "ラ" OR "ラン" OR "ン" OR "ンキ" OR "キ" OR "キン" OR "ン" OR "ング" OR '
     '"グ" OR "グの" OR "の評" OR "評" OR "評価" OR "価"', None),
    ("の", None, '"の"', None),  # nothing but a lone hiragana: kept
    ("ありがとう", None, '"あ" OR "あり" OR "り" OR "りが" OR "が" OR "がと" OR "と" OR "とう" OR "う"',
     None),  # nothing but hiragana: every token kept
    ("障害が起きたときの連絡手順", None,
     '"障" OR "障害" OR "害" OR "害が" OR "が起" OR "起" OR "起き" OR "の連" OR "連" OR "連絡" OR '
     '"絡" OR "絡手" OR "手" OR "手順" OR "順"', None),  # not きた, たと, とき, きの
    # NFKC + case folding in the CJK table; one token there, so not on the trigram table
    ("ＡＢＣ１２３のテスト", None,
     '"abc123" OR "のテ" OR "テ" OR "テス" OR "ス" OR "スト" OR "ト"', None),
    # identifiers the CJK table cuts into several tokens: also substrings on the trigram table
    ("BK-1107 が起きた原因", '"BK-1107"',
     '"bk" OR "1107" OR "が起" OR "起" OR "起き" OR "た原" OR "原" OR "原因" OR "因"',
     None),
    # a number or a one-token identifier: the CJK table alone (issue #25)
    ("1945年に何が", None, '"1945" OR "年" OR "年に" OR "に何" OR "何" OR "何が"', None),
    ("ISW13HT の価格", None, '"isw13ht" OR "の価" OR "価" OR "価格" OR "格"', None),
    ("SC-01D の価格", '"SC-01D"', '"sc" OR "01d" OR "の価" OR "価" OR "価格" OR "格"', None),
    ("E-0382 の対処 -評価", '"E-0382"', '"e" OR "0382" OR "の対" OR "対" OR "対処" OR "処"',
     '"評価"'),
    ('"再ランキング" 評価', '"再ランキング"', '"評" OR "評価" OR "価"', None),  # quoted: exact
    ('"評価"', None, '"評価"', None),  # a quoted 2-character word is one token
    ('"とき" 障害', None, '"とき" OR "障" OR "障害" OR "害"', None),  # quoted hiragana: asked for
    ("評価 -再", None, '"評" OR "評価" OR "価"', '"再"'),  # 1-character exclusion
    ('評価 -"方法"', None, '"評" OR "評価" OR "価"', '"方法"'),  # 2-character quoted exclusion
    ("方法 -42", None, '"方" OR "方法" OR "法"', '"42"'),  # a short number: one token
    ("方法 -ab", None, '"方" OR "方法" OR "法"', None),  # a Latin word: the word table's
]


@pytest.mark.parametrize(("query", "trigram", "cjk_expr", "cjk_negative"), CJK_PINNED)
def test_cjk_pinned_expressions(query: str, trigram: str | None, cjk_expr: str | None,
                                cjk_negative: str | None) -> None:
    compiled = compile_query(query)
    assert (compiled.match_expr, compiled.cjk_expr, compiled.cjk_negative_expr) == (
        trigram, cjk_expr, cjk_negative)


# --------------------------------------------------------------------------- punctuation alone


@pytest.mark.parametrize(("text", "ignored"), [
    ('"?"', ("?",)), ("what is ? in rust", ("?",)), ("->", ("->",)), ('"::" path', ("::",)),
    ("検索 ？", ("？",)),
    ("&& ||", ()),  # three or more characters: the trigram leg searches them literally
    ("C++", ()), ("E-0382", ()), ("retry budget", ()),
])
def test_punctuation_only_terms_are_named(text: str, ignored: tuple[str, ...]) -> None:
    assert ignored_symbols(compile_query(text)) == ignored


def test_search_says_which_terms_it_ignored(caplog: pytest.LogCaptureFixture) -> None:
    from groove_cli.retrieve.params import query_warnings

    with caplog.at_level("INFO", logger="groove"):
        query_warnings([compile_query('the "?" operator')])
    assert [r.getMessage() for r in caplog.records] == [
        "groove: note: `?` ignored: punctuation alone is not searched (a full-text term needs a "
        "letter, a digit or 3 characters); describe it in words"]
