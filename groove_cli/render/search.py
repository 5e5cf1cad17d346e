"""Search output: JSON (cli.md §5.1), text (§5.2), files (§5.3) and `--explain` lines (§5.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groove_cli import messages
from groove_cli.render.output import print_json
from groove_cli.render.terminal import Painter, absolute, location, shown_path
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.pipeline import SearchHit, SearchResult
from groove_cli.text import printable


def hit_json(hit: SearchHit, explain: bool, kb_root: str | Path | None = None) -> dict[str, Any]:
    chunk = hit.chunk
    full = absolute(kb_root, chunk.path)
    doc: dict[str, Any] = {
        "score": hit.score,
        "relevance": hit.relevance,
        "path": chunk.path,
        "abs_path": str(full) if full is not None else None,
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
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

    def pool(size: int) -> str:  # a leg that did not run has no pool
        return str(size) if size else "-"

    messages.always(f"explain: pool vec={pool(trace.pool_vec)} fts={pool(trace.pool_fts)} "
                    f"fused={len(result.hits)} (dropped by min_score: {trace.dropped_by_min_score})")
    parts = " ".join(
        f"{name}={value:.1f}" if value is not None else f"{name}=-"
        for name, value in trace.timings_ms.items()
    )
    messages.always(f"explain: timings ms: {parts}")


def _weak_text(result: SearchResult, params: SearchParams) -> str:
    """Why the result is low-confidence (search.md §12): the relevance rule, or the ratio rule
    when the vector leg did not run."""
    relevances = [h.relevance for h in result.hits if h.relevance is not None]
    if relevances:
        return f"best relevance {max(relevances):.2f} < {params.low_confidence_below}"
    if not result.hits:
        return f"no hit reaches relevance {params.min_relevance}"
    return f"max / mean ratio < {params.min_confidence_ratio}"


def display_title(hit: SearchHit) -> str:
    """The note's title, else its file name (a note without frontmatter title still reads)."""
    return hit.chunk.title or hit.chunk.path.rsplit("/", 1)[-1]


def print_search(result: SearchResult, params: SearchParams, fmt: str, *, explain: bool,
                 filter_applied: dict[str, object], kb_root: str | Path | None = None,
                 no_color: bool = False, notes: tuple[str, ...] = ()) -> None:
    """Print a search result; `kb_root` (the indexed KB folder) turns KB-relative paths into
    ones that open from the working directory."""
    if explain:
        explain_stderr(result, params)
    weak = _weak_text(result, params)
    if fmt == "json":
        print_json({
            "results": [hit_json(hit, explain, kb_root) for hit in result.hits],
            "low_confidence": result.low_confidence,
            "filter_applied": filter_applied,
            **({"notes": list(notes)} if notes else {}),
        })
        return
    painter = Painter(no_color=no_color)
    if fmt == "files":
        if result.low_confidence:
            messages.note(f"low confidence ({weak})")
        seen: set[str] = set()
        for hit in result.hits:
            # one path per line: a newline or ESC inside a path is shown escaped
            path = printable(hit.chunk.path, keep_newlines=False)
            if explain:
                messages.always(f"{path}: {explain_line(hit)}")
            if hit.chunk.path not in seen:
                seen.add(hit.chunk.path)
                painter.line([(shown_path(kb_root, hit.chunk.path), "magenta")],
                             link=absolute(kb_root, hit.chunk.path))
        painter.flush()
        return
    if result.low_confidence:
        painter.line([(f"[low_confidence: {weak}]", "yellow")])
        painter.line([])
    for number, hit in enumerate(result.hits):
        if number:
            painter.line([("", None)])
            painter.line([("---", "dim")])
            painter.line([("", None)])
        _print_hit(painter, hit, explain, kb_root)
    painter.flush()


def _print_hit(painter: Painter, hit: SearchHit, explain: bool,
               kb_root: str | Path | None) -> None:
    """One hit of the text format (cli.md §5.2)."""
    chunk = hit.chunk
    painter.line([(f"# {display_title(hit)}", "bold")])
    where: list[tuple[str, str | None]] = [
        (location(shown_path(kb_root, chunk.path), chunk.line_start), "magenta")]
    if chunk.heading:
        where.append((f"  § {chunk.heading}", "cyan"))
    painter.line(where, link=absolute(kb_root, chunk.path))
    scores = f"score: {hit.score:.4f}"
    if hit.relevance is not None:
        scores += f"  relevance: {hit.relevance:.2f}"
    painter.line([(scores, "dim")])
    if chunk.tags:
        painter.line([(f"tags: {', '.join(chunk.tags)}", "dim")])
    if hit.match_spans:
        texts = ", ".join(f'"{hit.content[s:e]}"' for s, e in hit.match_spans[:3])
        painter.line([(f"match_spans: {texts}", "dim")])
    if explain:
        painter.line([(explain_line(hit), "dim")])
    painter.line([("", None)])
    painter.highlighted(hit.content, hit.match_spans)
