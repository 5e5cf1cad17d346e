"""Text analysis below both the store and the retrieval engine.

`checks` holds the checks every input and output path shares (re-exported here, so
`from groove_cli.text import printable` is the import); `cjk` is the CJK tokeniser and
`words` the word-level tokeniser and normalisation. The store (the `groove_cjk()` SQL
function, Postgres's token rows) and the query compiler both call them, so rows and queries
are cut alike; this package imports nothing else of groove.
"""

from groove_cli.text.checks import NOT_UTF8_HINT, iso_day, not_utf8, printable, surrogate_at

__all__ = ["NOT_UTF8_HINT", "iso_day", "not_utf8", "printable", "surrogate_at"]
