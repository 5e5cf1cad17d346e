"""Search output: JSON (cli.md §5.1), text (§5.2), files (§5.3) and `--explain` lines (§5.4)."""

from __future__ import annotations

import functools
from typing import Any

from groove_cli import messages
from groove_cli.render.output import print_json, print_line
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.pipeline import SearchHit, SearchResult
from groove_cli.text import printable


def hit_json(hit: SearchHit, explain: bool) -> dict[str, Any]:
    chunk = hit.chunk
    doc: dict[str, Any] = {
        "score": hit.score,
        "path": chunk.path,
        "title": chunk.title,
        "heading": chunk.heading,
        "topic": chunk.topic,
        "date": chunk.date,
        "tags": list(chunk.tags),
        "content": hit.content,
    }
    if hit.match_spans is not None:
        doc["match_spans"] = [{"start": s, "end": e} for s, e in hit.match_spans]
    if hit.expanded_from is not None:
        doc["expanded_from"] = hit.expanded_from
    if explain:
        e = hit.explain
        doc["explain"] = {
            "fts_rank": e.fts_rank, "fts_word_rank": e.fts_word_rank,
            "fts_cjk_rank": e.fts_cjk_rank, "vec_rank": e.vec_rank,
            "fused_rank": e.fused_rank,
            "fused_raw": e.fused_raw, "fused_score": e.fused_score, "rerank_rank": e.rerank_rank,
            "rerank_score": e.rerank_score, "mmr_rank": e.mmr_rank,
        }
    return doc


def _rank(value: int | None) -> str:
    return f"#{value}" if value is not None else "-"


def explain_line(hit: SearchHit) -> str:
    e = hit.explain
    fused = f"{_rank(e.fused_rank)} ({e.fused_score:.4f})" if e.fused_score is not None else "-"
    return (f"explain: fts={_rank(e.fts_rank)} words={_rank(e.fts_word_rank)} "
            f"cjk={_rank(e.fts_cjk_rank)} "
            f"vec={_rank(e.vec_rank)} fused={fused} "
            f"rerank={_rank(e.rerank_rank)} mmr={_rank(e.mmr_rank)}")


def explain_stderr(result: SearchResult, params: SearchParams) -> None:
    """The run-level `explain:` lines on stderr (always written)."""
    messages.always(
        f"explain: mode={params.mode} preset={params.preset or '-'} rrf_k={params.rrf_k} "
        f"vector_weight={params.vector_weight} fts_weight={params.fts_weight} "
        f"cjk_weight={params.cjk_weight} "
        f"min_score={params.min_score}")
    trace = result.trace
    if trace.fts_expr is not None:
        messages.always(f"explain: fts MATCH {trace.fts_expr}")
    else:
        messages.always("explain: fts skipped (no phrase)")
    if trace.word_expr is not None:
        messages.always(f"explain: words MATCH {trace.word_expr}")
    else:
        messages.always("explain: words skipped (no Latin word)")
    if trace.cjk_expr is not None:
        messages.always(f"explain: cjk MATCH {trace.cjk_expr}")
    elif params.cjk_weight == 0 or params.mode == "vector":
        messages.always("explain: cjk skipped (cjk_weight 0)" if params.mode != "vector"
                        else "explain: cjk skipped (vector mode)")
    else:
        messages.always("explain: cjk skipped (no CJK text)")
    messages.always(f"explain: pool vec={trace.pool_vec} fts={trace.pool_fts} "
                    f"fused={len(result.hits)} (dropped by min_score: {trace.dropped_by_min_score})")
    parts = " ".join(
        f"{name}={value:.1f}" if value is not None else f"{name}=-"
        for name, value in trace.timings_ms.items()
    )
    messages.always(f"explain: timings ms: {parts}")


def print_search(result: SearchResult, params: SearchParams, fmt: str, *, explain: bool,
                 filter_applied: dict[str, object]) -> None:
    if explain:
        explain_stderr(result, params)
    ratio = params.min_confidence_ratio
    if fmt == "json":
        print_json({
            "results": [hit_json(hit, explain) for hit in result.hits],
            "low_confidence": result.low_confidence,
            "filter_applied": filter_applied,
        })
        return
    if fmt == "files":
        if result.low_confidence:
            messages.note(f"low confidence (max / mean ratio < {ratio})")
        seen: set[str] = set()
        for hit in result.hits:
            # one path per line: a newline or ESC inside a path is shown escaped
            path = printable(hit.chunk.path, keep_newlines=False)
            if explain:
                messages.always(f"{path}: {explain_line(hit)}")
            if hit.chunk.path not in seen:
                seen.add(hit.chunk.path)
                print_line(path)
        return
    blocks: list[str] = []
    for hit in result.hits:
        chunk = hit.chunk
        # text output goes to a terminal: a note's ESC/BEL/NUL are shown, not obeyed
        line = functools.partial(printable, keep_newlines=False)
        lines = [f"# {line(chunk.title or '(no title)')}",
                 line(f"{chunk.path}#{chunk.heading}" if chunk.heading else chunk.path),
                 f"score: {hit.score:.4f}"]
        if chunk.tags:
            lines.append(f"tags: {line(', '.join(chunk.tags))}")
        if hit.match_spans:
            texts = ", ".join(f'"{line(hit.content[s:e])}"' for s, e in hit.match_spans[:3])
            lines.append(f"match_spans: {texts}")
        if explain:
            lines.append(explain_line(hit))
        lines.extend(["", printable(hit.content)])
        blocks.append("\n".join(lines))
    if result.low_confidence:
        print_line(f"[low_confidence: max / mean ratio < {ratio}]")
        print_line("")
    if blocks:
        print_line("\n\n---\n\n".join(blocks))
