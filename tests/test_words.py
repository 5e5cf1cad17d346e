"""The word-level query helpers (`text/words.py`, issue #8): which text is Latin, how plain
text splits into words, which words the `fts_words` expression keeps, and how it is written.

Expressions compiled end to end are pinned in `test_query.py`; here each rule is checked alone.
"""

from __future__ import annotations

import pytest

from groove_cli.text.words import (
    ENGLISH_STOPWORDS,
    MAX_WORD_TERMS,
    dedupe_cap,
    is_latin_letter,
    is_latin_text,
    latin_words,
    match_expression,
    or_expr,
    quote,
    select_terms,
)


@pytest.mark.parametrize(("text", "latin"), [
    ("python", True),
    ("Café", True),  # accented letters are Latin
    ("ß", True),  # LATIN SMALL LETTER SHARP S
    ("ﬁle", True),  # LATIN SMALL LIGATURE FI
    ("E0382", True),  # digits are allowed beside a Latin letter
    ("sqlite-vec", True),
    ("say \"hi\"", True),  # punctuation and spaces are allowed
    ("0382", False),  # a number alone is not a Latin word: it stays on the trigram table
    ("3.12", False),
    ("---", False),
    ("", False),
    ("Python入門", False),  # one non-Latin letter is enough
    ("ＡＢＣ", False),  # FULLWIDTH LATIN CAPITAL LETTER …: not Latin here
    ("поиск", False),
    ("Ωmega", False),
])
def test_is_latin_text(text: str, latin: bool) -> None:
    assert is_latin_text(text) is latin


def test_is_latin_letter_needs_a_letter() -> None:
    assert is_latin_letter("a") and is_latin_letter("É")
    assert not is_latin_letter("1") and not is_latin_letter("_") and not is_latin_letter("-")
    assert not is_latin_letter("ア") and not is_latin_letter("Ａ")


@pytest.mark.parametrize(("text", "words"), [
    ("retry budget の設定", ["retry", "budget"]),
    ("Python入門", ["Python"]),  # other scripts separate words
    ("error 404 page", ["error", "page"]),  # numbers are left out
    ("v2 API", ["v2", "API"]),  # a letter makes a token with digits a word
    ("sqlite-vec E-0382 pg_dump don't rock’n’roll",
     ["sqlite-vec", "E-0382", "pg_dump", "don't", "rock’n’roll"]),
    ("-async --verbose a--b x_ _y", ["async", "verbose", "a", "b", "x", "y"]),
    ("heading:foo (bar) NOT baz", ["heading", "foo", "bar", "NOT", "baz"]),
    ("naïve café ＡＢＣ", ["naïve", "café"]),
    ("!!! ??? 、。", []),
])
def test_latin_words(text: str, words: list[str]) -> None:
    assert latin_words(text) == words


def plain(*words: str) -> list[tuple[str, bool]]:
    return [(w, False) for w in words]


@pytest.mark.parametrize(("candidates", "terms"), [
    # stopwords are dropped (case-insensitively) ...
    (plain("What", "problems", "are", "there", "in", "making", "titles"),
     ("problems", "making", "titles")),
    (plain("The", "Cat"), ("Cat",)),
    # ... unless nothing else is left
    (plain("the", "of"), ("the", "of")),
    (plain("to", "be", "or", "not", "to", "be"), ("to", "be", "or", "not", "to", "be")),
    # quoting keeps a stopword, and a quoted term has no minimum length
    ([("the", True), ("who", False)], ("the",)),
    ([("the who", True), ("cat", False)], ("the who", "cat")),
    ([("x", True)], ("x",)),
    # plain words need 2 characters; a 1-character stopword-only query keeps nothing
    (plain("a", "ML", "x"), ("ML",)),
    (plain("a", "i"), ()),
    # a repeated word stays repeated: BM25's query term frequency
    (plain("retry", "budget", "retry"), ("retry", "budget", "retry")),
    ([], ()),
])
def test_select_terms(candidates: list[tuple[str, bool]], terms: tuple[str, ...]) -> None:
    assert select_terms(candidates) == (terms, False)


def test_select_terms_cap_warns_only_when_a_distinct_term_is_lost() -> None:
    words = [f"w{i:02d}" for i in range(MAX_WORD_TERMS + 1)]
    assert select_terms(plain(*words)) == (tuple(words[:MAX_WORD_TERMS]), True)
    assert select_terms(plain(*words[:MAX_WORD_TERMS])) == (tuple(words[:MAX_WORD_TERMS]), False)
    # 33 times one word: the cut term is already searched
    assert select_terms(plain(*["wx"] * 33)) == (("wx",) * MAX_WORD_TERMS, False)
    # case does not make a term distinct (FTS5 folds case)
    assert select_terms(plain(*["Retry"] * 32, "retry")) == (("Retry",) * 32, False)
    assert select_terms(plain(*["retry"] * 32, "budget")) == (("retry",) * 32, True)


def test_dedupe_cap_folds_case_and_keeps_the_first_spelling() -> None:
    assert dedupe_cap(["Async", "async", "ASYNC", "io"]) == (("Async", "io"), False)
    many = [f"n{i}" for i in range(MAX_WORD_TERMS + 2)]
    assert dedupe_cap(many) == (tuple(many[:MAX_WORD_TERMS]), True)


def test_expressions() -> None:
    assert quote('say "hi"') == '"say ""hi"""'
    assert or_expr(["a", "b c"]) == '"a" OR "b c"'
    assert match_expression([], ["n"]) is None
    assert match_expression(["a"], []) == '"a"'
    assert match_expression(["a", "b"], ["n", "m"]) == '("a" OR "b") NOT ("n" OR "m")'


def test_stopword_list() -> None:
    assert len(ENGLISH_STOPWORDS) == 179  # NLTK's English list
    assert all(w == w.casefold() and " " not in w for w in ENGLISH_STOPWORDS)
    # words that look like stopwords but carry meaning in a query stay searchable
    assert not {"retry", "budget", "python", "search", "api"} & ENGLISH_STOPWORDS
