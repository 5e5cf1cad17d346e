"""The full-text tokens of the Postgres store: exactly the tokens the SQLite tables hold.

Postgres does no tokenising or stemming of its own here. Each chunk's three full-text "tables"
are computed in Python by SQLite's own FTS5 tokenizers (through apsw, a core dependency), so a
query finds the same rows and counts the same term frequencies as on SQLite:

- trigram (`fts_chunks`): the text folded as FTS5's `trigram remove_diacritics 1` folds it
  (lower case, diacritics and combining marks removed); a phrase is a substring of the folded
  text and its frequency the number of (overlapping) occurrences; a column of n folded
  characters holds n − 2 tokens;
- words (`fts_words`): `porter unicode61 remove_diacritics 2` tokens (English stems);
- CJK (`fts_cjk`): `unicode61 remove_diacritics 0` tokens of groove's CJK row text
  (`text/cjk.row_text`: unigrams + bigrams).

Word and CJK rows are stored as (term, frequency per column) postings plus, per column, the
token stream wrapped as ` t1  t2  … ` so that a multi-token phrase is a substring of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import apsw

from groove_cli.text.cjk import row_text

WINDOW_CHARS = 65_536
"""Texts are tokenised a window at a time, cut at whitespace (no token spans whitespace)."""

TRIGRAM = "fts_chunks"
WORDS = "fts_words"
CJK = "fts_cjk"
TABLE_CODES = {TRIGRAM: 0, WORDS: 1, CJK: 2}
"""The `tbl` column of the postings table."""


@cache
def _tokenizers() -> dict[str, apsw.FTS5Tokenizer]:
    con = apsw.Connection(":memory:")
    return {
        TRIGRAM: con.fts5_tokenizer("trigram", ["remove_diacritics", "1", "case_sensitive", "0"]),
        WORDS: con.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"]),
        CJK: con.fts5_tokenizer("unicode61", ["remove_diacritics", "0"]),
    }


def _run(table: str, text: str, query: bool = False) -> list[str]:
    flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    tokens = _tokenizers()[table](text.encode("utf-8"), flags, None, include_offsets=False,
                                  include_colocated=False)
    return [str(t) for t in tokens]


def _windows(text: str) -> list[str]:
    """`text` in pieces of about WINDOW_CHARS, each cut at whitespace (a long run without
    any stays whole)."""
    out: list[str] = []
    start = 0
    while start < len(text):
        end = start + WINDOW_CHARS
        if end < len(text):
            cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
            if cut > start:
                end = cut
            else:
                while end < len(text) and not text[end].isspace():
                    end += 1
        out.append(text[start:end])
        start = end
    return out


def word_tokens(table: str, text: str) -> list[str]:
    """The document tokens of `text` for the words or the CJK table."""
    source = row_text(text) if table == CJK else text
    out: list[str] = []
    for window in _windows(source):
        out.extend(_run(table, window))
    return out


_FOLD: dict[int, str] = {}
_SEEN: set[str] = set()


def fold(text: str) -> str:
    """`text` as the trigram tokenizer sees it: each character folded on its own (FTS5 folds
    code point by code point), a dropped one (a combining mark) as ''; it stops at a NUL."""
    text = text.split("\0", 1)[0]
    for ch in set(text).difference(_SEEN):
        tokens = _run(TRIGRAM, ch * 3)
        folded = tokens[0][0] if tokens else ""
        if folded != ch:
            _FOLD[ord(ch)] = folded
        _SEEN.add(ch)
    return text.translate(_FOLD)


def trigram_length(folded: str) -> int:
    return max(0, len(folded) - 2)


def wrap(tokens: Sequence[str]) -> str:
    """A token stream as stored: ` t1  t2  t3 ` (each token wrapped in spaces)."""
    return "".join(f" {t} " for t in tokens)


@dataclass(frozen=True, slots=True)
class TableRow:
    """One chunk's row of a words or CJK table."""

    postings: list[tuple[str, int, int, int]]
    """(term, frequency in heading, in context, in content)."""
    streams: tuple[str, str, str]
    length: int


def table_row(table: str, heading: str | None, context: str | None, content: str) -> TableRow:
    columns = [word_tokens(table, text or "") for text in (heading, context, content)]
    counts = [Counter(tokens) for tokens in columns]
    terms = sorted(set().union(*counts))
    postings = [(t, counts[0][t], counts[1][t], counts[2][t]) for t in terms]
    streams = (wrap(columns[0]), wrap(columns[1]), wrap(columns[2]))
    return TableRow(postings, streams, sum(len(c) for c in columns))


@dataclass(frozen=True, slots=True)
class Needle:
    """One quoted phrase of a query, as the store searches it.

    `tokens`: the phrase's tokens (words/CJK), or () for the trigram table; `text`: what must
    occur in a stored column (the folded phrase, or the wrapped token stream); `overlaps`: two
    occurrences can overlap (the needle has a border), so they are counted one start at a time.
    """

    tokens: tuple[str, ...]
    text: str
    overlaps: bool


def _has_border(items: Sequence[object]) -> bool:
    return any(items[:k] == items[len(items) - k:] for k in range(1, len(items)))


def needle(table: str, phrase: str) -> Needle | None:
    """The phrase of a query for `table`; None when it has no token (it then matches nothing,
    as in FTS5)."""
    if table == TRIGRAM:
        folded = fold(phrase)
        if len(folded) < 3:
            return None
        return Needle((), folded, _has_border(folded))
    tokens = tuple(_run(table, phrase, query=True))
    if not tokens:
        return None
    return Needle(tokens, wrap(tokens), _has_border(tokens))
