"""Run-level warnings of retrieve/params.py: once per search, summed over eval's queries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groove_cli import messages
from groove_cli.retrieve.params import query_warnings
from groove_cli.retrieve.query import compile_query

LONG = " ".join(f"word{i:02d}" for i in range(40))  # 40 distinct words: over the cap of 32


@pytest.fixture
def lines() -> Iterator[list[str]]:
    captured: list[str] = []
    messages.set_sink(captured.append)
    yield captured
    messages.set_sink(None)


def test_one_search_warns_in_the_singular(lines: list[str]) -> None:
    query_warnings([compile_query(LONG)])
    assert lines == ["groove: warning: the query has more than 32 distinct phrases; only the "
                     "first 32 are searched"]


def test_eval_warns_once_with_the_count(lines: list[str]) -> None:
    queries = [compile_query(LONG), compile_query("short query"), compile_query(LONG + " extra")]
    query_warnings(queries)
    assert lines == ["groove: warning: 2 of 3 queries have more than 32 distinct phrases; only "
                     "the first 32 of each are searched"]


def test_no_warning_under_the_cap(lines: list[str]) -> None:
    query_warnings([compile_query("retry budget の設定")])
    assert lines == []


def test_a_long_japanese_query_warns_about_cjk_tokens(lines: list[str]) -> None:
    # 200 distinct kanji: 200 unigrams + 199 bigrams, over the 256-token cap
    long_ja = "".join(chr(0x4E00 + i) for i in range(200))
    assert len(compile_query(long_ja).cjk_terms) == 256
    query_warnings([compile_query(long_ja)])
    query_warnings([compile_query(long_ja), compile_query("評価")])
    assert lines == [
        "groove: warning: the query has more than 256 CJK tokens (or 32 words); only the first "
        "are searched",
        "groove: warning: 1 of 2 queries have more than 256 CJK tokens (or 32 words); only the "
        "first are searched"]
