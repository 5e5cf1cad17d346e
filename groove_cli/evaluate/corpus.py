"""The corpus snapshot recorded with each run: counts and a content digest (eval.md §6).

The corpus is kept outside the fingerprint: a changed corpus does not make runs incomparable,
but the report says so, because new or edited notes shift rankings on their own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

CorpusRow = tuple[str, int, str | None, str, str | None]
"""(path, chunk_index, heading, content, context_text), in (path, chunk_index) order."""


def _field(value: str | None) -> bytes:
    """0x00 for NULL, else 0x01 + UTF-8 length as u64 little-endian + the UTF-8 bytes."""
    if value is None:
        return b"\x00"
    data = value.encode("utf-8")
    return b"\x01" + len(data).to_bytes(8, "little") + data


def corpus_digest(rows: Iterable[CorpusRow]) -> str:
    """SHA-256 hex over every chunk row, each field length-prefixed so no two corpora collide.

    Args:
        rows: the rows of `SELECT d.path, c.chunk_index, c.heading, c.content, c.context_text`
            ordered by `d.path` (BINARY collation) and `c.chunk_index`.

    Returns:
        The hex digest; chunk_index is hashed as its decimal text.
    """
    digest = hashlib.sha256()
    for path, chunk_index, heading, content, context_text in rows:
        for value in (path, str(chunk_index), heading, content, context_text):
            digest.update(_field(value))
    return digest.hexdigest()


def corpus_block(documents: int, chunks: int, digest: str) -> dict[str, object]:
    """The run's `corpus` member: `{documents, chunks, digest}`."""
    return {"documents": documents, "chunks": chunks, "digest": digest}
