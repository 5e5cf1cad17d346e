"""What a search returns through the public API: `Results`, and its JSON document.

`Results.to_json()` is exactly what `groove search --format json` prints (cli.md §5.1), so a
script, the server and the CLI read one shape. The hits are the pipeline's `SearchHit`s.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_cli.messages import Message

if TYPE_CHECKING:  # `get` renders through render/terminal, which must not load the engine
    from groove_cli.retrieve.params import SearchParams
    from groove_cli.retrieve.pipeline import SearchHit, SearchResult, SearchTrace


SCHEMA_VERSION = 2
"""The search JSON's `schema_version` (cli.md §5.1): raised when a key changes meaning or goes
away; new keys do not raise it."""


def dumps_json(document: Any) -> str:
    """One UTF-8 JSON document as groove prints and serves it: 2-space indent, non-ASCII kept,
    trailing newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def absolute(kb_root: str | Path | None, rel: str) -> Path | None:
    """The file of a KB-relative path, or None when the KB root is unknown."""
    if not kb_root:
        return None
    return Path(kb_root, *rel.split("/"))


def stale_paths(kb_root: str | Path | None, hits: Sequence[SearchHit]) -> frozenset[str]:
    """The hits' notes that changed since the index read them (search.md §15): gone (moved or
    deleted), another size, or modified after their row was written or confirmed — one `stat`
    per distinct note. Nothing is stale when the KB folder is unknown or not on this machine
    (a team store searched from elsewhere)."""
    if not kb_root or not os.path.isdir(kb_root):
        return frozenset()
    stale: set[str] = set()
    checked: set[str] = set()
    for hit in hits:
        chunk = hit.chunk
        if chunk.path in checked:
            continue
        checked.add(chunk.path)
        if _changed(absolute(kb_root, chunk.path), chunk.size_bytes, chunk.last_indexed):
            stale.add(chunk.path)
    return frozenset(stale)


def _changed(full: Path | None, size: int | None, indexed: str | None) -> bool:
    """Whether the file at `full` is gone, not a regular file, or differs from its row."""
    from groove_cli.store import stamp

    try:
        st = os.stat(full) if full is not None else None
    except OSError:
        return True
    if st is None or not stat.S_ISREG(st.st_mode):
        return True
    if size is not None and st.st_size != size:
        return True
    return bool(indexed) and stamp(st.st_mtime_ns) > str(indexed)


STALE_NOTE = ("{count} of these hits come from notes moved, deleted or changed since the "
              "index was built (marked stale): run `groove index` to refresh it")


def _explain_json(hit: SearchHit) -> dict[str, Any]:
    e = hit.explain
    return {
        **{leg.key: leg.rank for leg in e.leg_ranks}, "vec_rank": e.vec_rank,
        "fused_rank": e.fused_rank,
        "fused_raw": e.fused_raw, "fused_score": e.fused_score, "rerank_rank": e.rerank_rank,
        "rerank_score": e.rerank_score, "mmr_rank": e.mmr_rank, "fusion": e.fusion,
        "alpha": e.alpha,
        "leg_scores": dict(e.leg_scores) if e.fusion == "score" else None,
    }


@dataclass(frozen=True, slots=True)
class Hit:
    """One search hit as the library hands it out: what `search --format json` prints for it
    (cli.md §5.1), and nothing of the engine's records."""

    path: str
    """The note, relative to the KB folder ('/'-separated)."""
    abs_path: str | None
    """The note's file, when the KB folder is known."""
    line_start: int | None
    line_end: int | None
    title: str | None
    heading: str | None
    topic: str | None
    date: str | None
    tags: tuple[str, ...]
    score: float
    """The fused (or reranked) score the list is ordered by."""
    relevance: float | None
    """Estimated probability that the hit is relevant (None when the vector leg did not run)."""
    content: str
    """The chunk's text (expanded by the parent retriever when on)."""
    match_spans: tuple[tuple[int, int], ...] | None = None
    expanded_from: Mapping[str, object] | None = None
    explain: Mapping[str, object] | None = None
    """Per-stage ranks and scores (what `--explain` prints)."""
    stale: bool = False
    """The note was moved, deleted or changed since the index read it (`stale_paths`)."""

    @classmethod
    def of(cls, hit: SearchHit, kb_root: str | Path | None = None, *,
           stale: bool = False) -> Hit:
        chunk = hit.chunk
        full = absolute(kb_root, chunk.path)
        return cls(path=chunk.path, abs_path=str(full) if full is not None else None,
                   line_start=chunk.line_start, line_end=chunk.line_end, title=chunk.title,
                   heading=chunk.heading, topic=chunk.topic, date=chunk.date,
                   tags=tuple(chunk.tags), score=hit.score, relevance=hit.relevance,
                   content=hit.content, match_spans=hit.match_spans,
                   expanded_from=hit.expanded_from, explain=_explain_json(hit), stale=stale)

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """One hit of the JSON document (cli.md §5.1)."""
        doc: dict[str, Any] = {
            "score": self.score, "relevance": self.relevance, "path": self.path,
            "abs_path": self.abs_path, "line_start": self.line_start, "line_end": self.line_end,
            "title": self.title, "heading": self.heading, "topic": self.topic,
            "date": self.date, "tags": list(self.tags), "content": self.content,
            "stale": self.stale,
        }
        if self.match_spans is not None:
            doc["match_spans"] = [{"start": s, "end": e} for s, e in self.match_spans]
        if self.expanded_from is not None:
            doc["expanded_from"] = self.expanded_from
        if explain and self.explain is not None:
            doc["explain"] = dict(self.explain)
        return doc


def hit_json(hit: SearchHit, explain: bool, kb_root: str | Path | None = None, *,
             stale: bool = False) -> dict[str, Any]:
    """One engine hit as the JSON document shows it (cli.md §5.1)."""
    return Hit.of(hit, kb_root, stale=stale).to_json(explain=explain)


@dataclass(frozen=True, slots=True)
class Results:
    """One search: its hits in rank order plus everything needed to show or check them."""

    query: str
    result: SearchResult
    params: SearchParams
    filter_applied: Mapping[str, object] = field(default_factory=dict)
    kb_root: str | None = None
    """The KB folder the index was built from (hits' paths are relative to it)."""
    messages: tuple[Message, ...] = ()
    """The warnings and notes the search gave, in order (the CLI prints them on stderr)."""
    files_short: str | None = None
    """With `files=True`: why fewer files than asked were found (hits collapse to files)."""
    stale: frozenset[str] = frozenset()
    """The hits' notes changed since the index read them (`stale_paths`, checked once)."""

    @property
    def hits(self) -> tuple[Hit, ...]:
        """The hits in rank order, as public records (the engine's are `result.hits`)."""
        return tuple(Hit.of(hit, self.kb_root, stale=hit.chunk.path in self.stale)
                     for hit in self.result.hits)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.result.hits)

    @property
    def low_confidence(self) -> bool:
        return self.result.low_confidence

    @property
    def trace(self) -> SearchTrace:
        """Per-leg expressions, pool sizes and per-stage timings (what --explain prints)."""
        return self.result.trace

    @property
    def timings_ms(self) -> Mapping[str, float | None]:
        return self.result.trace.timings_ms

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(m.text for m in self.messages if m.kind == "warning")

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(m.text for m in self.messages if m.kind == "note")

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """The document `groove search --format json` prints."""
        document: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "query": self.query,
            "results": [hit.to_json(explain=explain) for hit in self.hits],
            "low_confidence": self.low_confidence,
            "filter_applied": dict(self.filter_applied),
        }
        if self.notes:  # e.g. vectors still filling in (index.md): say so with the result
            document["notes"] = list(self.notes)
        return document
