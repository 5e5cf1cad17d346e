"""Property tests for query compilation: only the two refusals, substring invariant, valid FTS5.

The MATCH expressions run against in-memory FTS5 tables created exactly as the migrations create
`fts_chunks` (trigram, 0001) and `fts_words` (porter unicode61, 0002), so a syntax the tokenizer
or parser rejects fails here rather than in a search.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import groove_cli
from groove_cli.errors import UsageError
from groove_cli.retrieve.query import MAX_NEG_PHRASES, MAX_PHRASES, compile_query
from groove_cli.text.cjk import row_text
from groove_cli.text.words import ENGLISH_STOPWORDS, MAX_WORD_TERMS, is_latin_text

REFUSALS = {
    "the query is empty",
    "the query contains only exclusions (-term); add at least one term to search for",
}

# Characters that exercise every rule: quotes, hyphens, whitespace kinds, NUL, every class.
_INTERESTING = [
    *'"-- \t\n\u3000\0:、。･・ー々〇_',
    *"abcAB09ßéÉ'’",
    *"再評価ランキングのはテスト",
]

queries = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.sampled_from(_INTERESTING), max_size=40),
    st.lists(
        st.sampled_from(['"', "-", " ", "-abc", '-"x y z"', '"", "abc', "データ", "ab", "NOT",
                         "the", "of", '"the"', "-ab", "don't", "NEAR(", "^", "*", "Café", "12"]),
        max_size=12,
    ).map("".join),
)

MIGRATIONS = Path(groove_cli.__file__).parent / "migrations"
PROPERTY_SETTINGS = settings(max_examples=300, deadline=None)

ROWS = [
    (1, "Retry budget", "ops > backups", "python async retry の設定 再ランキングの評価"),
    (2, "Café", "notes", 'say "hi" -- sqlite-vec E-0382 データベース'),
    (3, None, "", "!!! ??? 、。 UI と ML"),
]


@pytest.fixture(scope="module")
def fts() -> Iterator[apsw.Connection]:
    """The three FTS tables, created with the migrations' statements, holding ROWS."""
    connection = apsw.Connection(":memory:")
    connection.create_scalar_function("groove_cjk", row_text, 1, deterministic=True)
    connection.execute("CREATE TABLE chunks(id INTEGER PRIMARY KEY, heading, context_text, "
                       "content)")
    connection.execute("CREATE TABLE index_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?)", ROWS)
    connection.execute((MIGRATIONS / "0003_fts_cjk.sql").read_text(encoding="utf-8"))
    connection.execute(
        """CREATE VIRTUAL TABLE fts_chunks USING fts5(
             heading, context, content,
             content = '', contentless_delete = 1,
             tokenize = 'trigram remove_diacritics 1 case_sensitive 0')"""
    )
    connection.execute(
        """CREATE VIRTUAL TABLE fts_words USING fts5(
             heading, context, content,
             content = '', contentless_delete = 1,
             tokenize = 'porter unicode61 remove_diacritics 2')"""
    )
    for table in ("fts_chunks", "fts_words"):
        for row in ROWS:
            connection.execute(
                f"INSERT INTO {table}(rowid, heading, context, content) VALUES (?, ?, ?, ?)", row
            )
    yield connection
    connection.close()


def _run(connection: apsw.Connection, expr: str, table: str = "fts_chunks") -> list[int]:
    sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rank"
    return [row[0] for row in connection.execute(sql, (expr,))]


def _words(connection: apsw.Connection, expr: str | None) -> list[int]:
    assert expr is not None
    return _run(connection, expr, "fts_words")


def _cjk(connection: apsw.Connection, expr: str | None) -> list[int]:
    assert expr is not None
    return sorted(_run(connection, expr, "fts_cjk"))


@PROPERTY_SETTINGS
@given(queries)
def test_only_the_two_refusals(query: str) -> None:
    try:
        compile_query(query)
    except UsageError as exc:
        assert exc.message in REFUSALS


@PROPERTY_SETTINGS
@given(queries)
def test_phrases_are_substrings(query: str) -> None:
    try:
        compiled = compile_query(query)
    except UsageError:
        return
    assert compiled.positive_text == compiled.positive_text.strip()
    assert len(compiled.phrases) <= MAX_PHRASES
    assert len(set(compiled.phrases)) == len(compiled.phrases)
    for phrase in compiled.phrases:
        assert len(phrase) >= 3
        assert "\0" not in phrase
        # Quoted content is the text with `""` collapsed to `"`.
        positive = compiled.positive_text
        assert phrase in positive or phrase.replace('"', '""') in positive
    assert len(compiled.negatives) <= MAX_NEG_PHRASES
    assert len(set(compiled.negatives)) == len(compiled.negatives)
    for phrase in compiled.negatives:
        assert len(phrase) >= 3
        assert "\0" not in phrase
        assert phrase in query or phrase.replace('"', '""') in query


@PROPERTY_SETTINGS
@given(queries)
def test_expressions_are_valid_fts5(fts: apsw.Connection, query: str) -> None:
    try:
        compiled = compile_query(query)
    except UsageError:
        return
    if compiled.match_expr is not None:
        _run(fts, compiled.match_expr)  # raises apsw.SQLError on invalid syntax
    if compiled.negative_expr is not None:
        _run(fts, compiled.negative_expr)


@pytest.mark.parametrize("table", ["words", "cjk"])
@PROPERTY_SETTINGS
@given(query=queries)
def test_table_expressions_are_valid_fts5(fts: apsw.Connection, table: str, query: str) -> None:
    """The word-level and CJK expressions and exclusion scans, for any query, against their
    tables (`fts_words`, `fts_cjk`)."""
    try:
        compiled = compile_query(query)
    except UsageError:
        return
    prefix = "word" if table == "words" else "cjk"
    expr, negative = getattr(compiled, f"{prefix}_expr"), getattr(compiled, f"{prefix}_negative_expr")
    assert (expr is None) == (getattr(compiled, f"{prefix}_terms") == ())
    if expr is not None:
        _run(fts, expr, f"fts_{table}")  # raises apsw.SQLError on invalid syntax
    if negative is not None:
        _run(fts, negative, f"fts_{table}")


@PROPERTY_SETTINGS
@given(queries)
def test_word_terms_are_latin_text_of_the_positive_text(query: str) -> None:
    try:
        compiled = compile_query(query)
    except UsageError:
        return
    terms = compiled.word_terms
    assert len(terms) <= MAX_WORD_TERMS
    for term in terms:
        assert is_latin_text(term) and "\0" not in term
        positive = compiled.positive_text
        assert term in positive or term.replace('"', '""') in positive
    # stopwords only survive when quoted or when nothing else is left
    plain = [t for t in terms if f'"{t}"' not in compiled.positive_text]
    if any(t.casefold() not in ENGLISH_STOPWORDS for t in plain):
        assert all(t.casefold() not in ENGLISH_STOPWORDS for t in plain)


def test_pinned_expressions_find_rows(fts: apsw.Connection) -> None:
    # Not just valid: the compiled phrases match what a user would expect.
    assert _cjk(fts, compile_query("再ランキングの評価について").cjk_expr) == [1]
    assert _run(fts, compile_query("!!! ??? 、。").match_expr or "") == [3]
    assert _run(fts, compile_query("データベース -再ランキング").negative_expr or "") == [1]
    # CJK text: every row sharing a character or pair with the query, best first
    # (row 2 shares データ's 5 tokens, row 1 評価's 3)
    assert _run(fts, compile_query("評価データ").cjk_expr or "", "fts_cjk") == [2, 1]
    assert _cjk(fts, compile_query("ML と UI").cjk_expr) == [3]  # Latin words are tokens too
    # exclusions of 1 and 2 CJK characters are exact CJK-table tokens
    assert _cjk(fts, compile_query("データ -評価").cjk_negative_expr) == [1]
    assert _cjk(fts, compile_query("データ -と").cjk_negative_expr) == [3]
    assert _run(fts, compile_query("python -async").negative_expr or "") == [1]
    # Latin queries: the word-level table
    assert compile_query("python -async").match_expr is None
    assert _words(fts, compile_query("python -async").word_expr) == []
    assert _words(fts, compile_query("retry -データベース").word_expr) == [1]
    assert _words(fts, compile_query('"say ""hi"""').word_expr) == [2]
    assert _words(fts, compile_query("cafe").word_expr) == [2]  # remove_diacritics 2
    assert _words(fts, compile_query("CAFÉ").word_expr) == [2]
    assert _words(fts, compile_query("sqlite-vec").word_expr) == [2]  # a phrase: sqlite + vec
    assert _words(fts, compile_query("E-0382").word_expr) == [2]
    assert _words(fts, compile_query("retries budgets").word_expr) == [1]  # porter stemming
    assert _words(fts, compile_query("backup").word_expr) == [1]  # stems like "backups"
    assert _words(fts, compile_query("the of").word_expr) == []  # stopwords only: kept, no row
    # the trigram table matches inside words, the word table only whole (stemmed) words
    assert _run(fts, '"sync"') == [1] and _words(fts, compile_query("sync").word_expr) == []


# search.md §2.7: the largest of 37 real golden queries produced 9 phrases; realistic queries
# must keep at least 2× headroom under the 32-phrase cap.
REALISTIC = [
    "How do I configure the retry budget and backoff for the nightly database backup job?",
    "再ランキングの評価について、リコールとnDCGの違いを説明してください",
    "梅雨は、世界的にどのあたりで見られる気象ですか？",
    "sqlite-vec cosine distance vs L2 for unit-length e5 embeddings",
    "Foundry Local の設定 と retry budget の既定値",
    '"parent retriever" whole document threshold tokens -deprecated',
    "What difficulties are involved in automatically retrieving articles from approximate titles?",
]


@pytest.mark.parametrize("query", REALISTIC)
def test_realistic_queries_keep_headroom(query: str) -> None:
    compiled = compile_query(query)
    assert not compiled.phrases_capped
    assert 2 * len(compiled.phrases) <= MAX_PHRASES
    assert 2 * len(compiled.word_terms) <= MAX_WORD_TERMS  # repeats count toward the word cap


def test_nine_phrase_query_has_headroom() -> None:
    compiled = compile_query(
        "nightly database backup retry budget schedule failure alerts runbook"
    )
    assert len(compiled.phrases) == 9
    assert 2 * len(compiled.phrases) <= MAX_PHRASES
