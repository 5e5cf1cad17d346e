"""The full-text tables, each declared once: what a full-text leg stores, and how (issue 38).

A full-text leg (retrieve/legs.py) reads one table declared here. Everything the stores do per
table is derived from `TABLES`: the SQLite store's inserts, deletes, repairs, re-tokenising,
FTS5 merges and checks and its SQL functions (store/sqlite.py, runtime.py); the Postgres store's
columns, token totals, postings codes, tokenizers and re-tokenising (store/postgres/); both
stores' reads (a table is named by its SQLite name, `named`). No other store module writes a
table's name or one of its Postgres columns; tests/test_leg_storage.py checks that, and that
the migrations create exactly the declared tables and columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from groove_cli.text.cjk import CJK_TOKENISER_VERSION, row_text


class TokeniserVersion(NamedTuple):
    """A table written through groove's own tokeniser: the `index_meta` (Postgres:
    `groove_meta`) key holding the version its rows were cut with, and the current version.
    When they differ, the next `groove index` re-tokenises the table (`backfill_fts`)."""

    key: str
    version: str


@dataclass(frozen=True, slots=True)
class FtsTable:
    """One full-text table: three columns (heading, context, content), rowid = chunk id."""

    name: str
    """The SQLite FTS5 table (`fts_…`), and the name the stores' full-text reads take."""
    tokenize: str
    """FTS5's `tokenize` argument (the migration's). The Postgres store runs the same
    tokenizer through apsw, so both stores hold the same tokens; a `trigram` table is stored
    there as folded text matched by substring (pg_trgm), any other as token postings."""
    pg_prefix: str
    """Its Postgres columns: `{prefix}_heading`, `_context`, `_content` and `_len` (the row's
    token count) on `groove_chunks`, and `{prefix}_tokens` (the KB's token total) on
    `groove_kb`."""
    postings_code: int | None = None
    """Its rows' `tbl` in Postgres's `groove_postings`; None for a trigram table (no postings)."""
    sql_function: str | None = None
    """An SQL function every value is written through (`groove_cjk(?)`), registered on each
    SQLite connection as `prepare`; None: values are written as they are."""
    prepare: Callable[[str | None], str] | None = None
    """The Python function behind `sql_function` (Postgres tokenises its result)."""
    version: TokeniserVersion | None = None
    """For a table written through groove's own tokeniser: when to re-tokenise it."""
    pg_migration: int | None = None
    """The Postgres schema version that adds its columns (postgres/schema.py derives that
    migration from this declaration); None: one of the tables migration 1 creates."""

    def __post_init__(self) -> None:
        if (self.sql_function is None) != (self.prepare is None):
            raise ValueError(f"{self.name}: sql_function and prepare go together")
        if not self.substrings and self.postings_code is None:
            raise ValueError(f"{self.name}: a token table needs a postings code")

    @property
    def substrings(self) -> bool:
        """True for a trigram table: Postgres stores folded text and matches substrings."""
        return self.tokenizer[0] == "trigram"

    @property
    def tokenizer(self) -> tuple[str, list[str]]:
        """FTS5's tokenizer name and arguments (apsw's `fts5_tokenizer(name, args)`)."""
        name, *args = self.tokenize.split()
        return name, args

    @property
    def value(self) -> str:
        """How one column value is written in SQLite: `?`, or through the SQL function."""
        return f"{self.sql_function}(?)" if self.sql_function else "?"

    @property
    def pg_columns(self) -> tuple[str, str, str]:
        """The Postgres columns of heading, context and content."""
        p = self.pg_prefix
        return f"{p}_heading", f"{p}_context", f"{p}_content"

    @property
    def pg_length(self) -> str:
        """The Postgres column of a row's token count in this table."""
        return f"{self.pg_prefix}_len"

    @property
    def pg_total(self) -> str:
        """The `groove_kb` column of the KB's token total in this table (bm25's avgdl)."""
        return f"{self.pg_prefix}_tokens"


TRIGRAM_TABLE = FtsTable("fts_chunks", "trigram remove_diacritics 1 case_sensitive 0", "tri")
"""Substrings of any script (the trigram leg)."""
WORDS_TABLE = FtsTable("fts_words", "porter unicode61 remove_diacritics 2", "word",
                       postings_code=1)
"""Latin-script words, stemmed (the word-level leg)."""
CJK_TABLE = FtsTable("fts_cjk", "unicode61 remove_diacritics 0", "cjk", postings_code=2,
                     sql_function="groove_cjk", prepare=row_text,
                     version=TokeniserVersion("cjk_tokeniser_version", str(CJK_TOKENISER_VERSION)))
"""groove's CJK unigram + bigram tokens (text/cjk.py), written space-separated (the CJK leg)."""

TABLES: tuple[FtsTable, ...] = (TRIGRAM_TABLE, WORDS_TABLE, CJK_TABLE)
"""Every full-text table, in the legs' fusion order: what the stores loop over."""
FTS_TABLES: tuple[str, ...] = tuple(table.name for table in TABLES)
"""Their SQLite names."""
_BY_NAME = {table.name: table for table in TABLES}


def named(name: str) -> FtsTable:
    """The declared table `name`; a ValueError for any other name (table names cannot be bound
    parameters: only declared ones are ever put into SQL)."""
    table = _BY_NAME.get(name)
    if table is None:
        raise ValueError(f"not an FTS table: {name!r}")
    return table
