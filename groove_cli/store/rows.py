"""Row helpers shared by the store's modules: column lists, blob codecs, row → record."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import apsw

from groove_cli.types import IndexedChunk

if TYPE_CHECKING:  # numpy is imported where vectors are read or written, not at start-up
    import numpy as np
    import numpy.typing as npt

CHUNK_COLUMNS = """c.id, c.document_id, c.chunk_index, c.heading, c.level, c.ancestry, c.content,
       c.context_text, c.token_count, c.quality_score, d.path, d.title, d.topic, d.category,
       d.date, d.tags, c.line_start, c.line_end, d.size_bytes, d.last_indexed"""


def scalar_int(con: apsw.Connection, sql: str, args: tuple[object, ...] = ()) -> int:
    value = con.execute(sql, args).fetchall()[0][0]
    assert isinstance(value, int)
    return value


def f32_blob(vector: npt.NDArray[np.float32]) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def f32_vector(blob: object) -> npt.NDArray[np.float32]:
    import numpy as np

    return np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)  # type: ignore[call-overload]


def row_to_chunk(row: Sequence[object]) -> IndexedChunk:
    (cid, did, idx, heading, level, ancestry, content, context, tokens, quality, path, title, topic,
     category, date, tags, line_start, line_end, size, indexed) = row
    return IndexedChunk(
        chunk_id=int(cid),  # type: ignore[call-overload]
        document_id=int(did),  # type: ignore[call-overload]
        chunk_index=int(idx),  # type: ignore[call-overload]
        heading=heading,  # type: ignore[arg-type]
        level=level,  # type: ignore[arg-type]
        ancestry=json_tuple(ancestry),
        content=str(content),
        context_text=context,  # type: ignore[arg-type]
        token_count=tokens,  # type: ignore[arg-type]
        quality_score=float(quality),  # type: ignore[arg-type]
        path=str(path),
        title=title,  # type: ignore[arg-type]
        topic=topic,  # type: ignore[arg-type]
        category=category,  # type: ignore[arg-type]
        date=date,  # type: ignore[arg-type]
        tags=json_tuple(tags),
        line_start=line_start,  # type: ignore[arg-type]
        line_end=line_end,  # type: ignore[arg-type]
        size_bytes=size,  # type: ignore[arg-type]
        last_indexed=indexed,  # type: ignore[arg-type]
    )


def json_tuple(text: object) -> tuple[str, ...]:
    """A stored JSON list as a tuple; the common empty list skips the parser (a search reads
    two of these per hit)."""
    return () if text == "[]" else tuple(json.loads(str(text)))
