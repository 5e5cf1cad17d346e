"""The full-text tokens of the Postgres store: exactly the tokens the SQLite tables hold.

Postgres does no tokenising or stemming of its own here. Each chunk's full-text "tables" (one
per declared table, store/fts_tables.py) are computed in Python by SQLite's own FTS5 tokenizers
(through apsw, a core dependency), each run with its table's `tokenize` arguments on the text
its `prepare` makes (the CJK table: `text/cjk.row_text`, unigrams + bigrams), so a query finds
the same rows and counts the same term frequencies as on SQLite:

- a trigram table: the text folded as its trigram tokenizer folds it (lower case, diacritics
  and combining marks removed); a phrase is a substring of the folded text and its frequency
  the number of (overlapping) occurrences; a column of n folded characters holds n − 2 tokens;
- any other table (the words table's English stems, the CJK table's tokens): stored as (term,
  frequency per column) postings plus, per column, the token stream wrapped as ` t1  t2  … `
  so that a multi-token phrase is a substring of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import apsw

from groove_cli.store.fts_tables import TABLES, FtsTable

WINDOW_CHARS = 65_536
"""Texts are tokenised a window at a time, cut at whitespace (no token spans whitespace)."""


@cache
def _tokenizers() -> dict[str, apsw.FTS5Tokenizer]:
    """Each declared table's FTS5 tokenizer, with its `tokenize` arguments."""
    con = apsw.Connection(":memory:")
    return {table.name: con.fts5_tokenizer(*table.tokenizer) for table in TABLES}


def _run(table: FtsTable, text: str, query: bool = False) -> list[str]:
    flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    tokens = _tokenizers()[table.name](text.encode("utf-8"), flags, None,
                                       include_offsets=False, include_colocated=False)
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


def document_tokens(table: FtsTable, text: str) -> list[str]:
    """The document tokens of `text` for a token (not trigram) table."""
    source = table.prepare(text) if table.prepare is not None else text
    out: list[str] = []
    for window in _windows(source):
        out.extend(_run(table, window))
    return out


_FOLDS: dict[str, tuple[dict[int, str], set[str]]] = {}
"""Per trigram table: its folding of each character seen so far, and the characters seen."""


def fold(table: FtsTable, text: str) -> str:
    """`text` as a trigram table's tokenizer sees it: each character folded on its own (FTS5
    folds code point by code point), a dropped one (a combining mark) as ''; it stops at a NUL."""
    text = text.split("\0", 1)[0]
    mapping, seen = _FOLDS.setdefault(table.name, ({}, set()))
    for ch in set(text).difference(seen):
        tokens = _run(table, ch * 3)
        folded = tokens[0][0] if tokens else ""
        if folded != ch:
            mapping[ord(ch)] = folded
        seen.add(ch)
    return text.translate(mapping)


def trigram_length(folded: str) -> int:
    return max(0, len(folded) - 2)


def wrap(tokens: Sequence[str]) -> str:
    """A token stream as stored: ` t1  t2  t3 ` (each token wrapped in spaces)."""
    return "".join(f" {t} " for t in tokens)


@dataclass(frozen=True, slots=True)
class TableRow:
    """One chunk's row of a full-text table: its three column values and token count."""

    postings: list[tuple[str, int, int, int]]
    """(term, frequency in heading, in context, in content); none in a trigram table."""
    streams: tuple[str, str, str]
    """A trigram table's folded text, any other's wrapped token streams."""
    length: int


def table_row(table: FtsTable, heading: str | None, context: str | None, content: str
              ) -> TableRow:
    """A chunk's row of `table`, as the Postgres store writes it."""
    if table.substrings:
        folded = (fold(table, heading or ""), fold(table, context or ""), fold(table, content))
        return TableRow([], folded, sum(trigram_length(f) for f in folded))
    columns = [document_tokens(table, text or "") for text in (heading, context, content)]
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


def needle(table: FtsTable, phrase: str) -> Needle | None:
    """The phrase of a query for `table`; None when it has no token (it then matches nothing,
    as in FTS5)."""
    if table.substrings:
        folded = fold(table, phrase)
        if len(folded) < 3:
            return None
        return Needle((), folded, _has_border(folded))
    tokens = tuple(_run(table, phrase, query=True))
    if not tokens:
        return None
    return Needle(tokens, wrap(tokens), _has_border(tokens))
