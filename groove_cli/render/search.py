"""Search output: JSON (cli.md §5.1), text (§5.2), files (§5.3) and `--explain` lines (§5.4)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli import messages
from groove_cli.render.output import print_json
from groove_cli.render.snippet import ELLIPSIS, note_title, snippet
from groove_cli.render.terminal import Painter, location, shown_path
from groove_cli.results import absolute
from groove_cli.text import printable

if TYPE_CHECKING:  # a forwarded search renders the answer without loading the engine
    from groove_cli.results import Results
    from groove_cli.retrieve.params import SearchParams
    from groove_cli.retrieve.pipeline import SearchHit, SearchResult

HIT_LINES = 12
"""A text-format hit prints at most this many lines unless `--full`."""
INDENT = "  "
"""Snippet lines are indented so a note's own `# ` line never reads as a hit's title."""


def _rank(value: int | None) -> str:
    return f"#{value}" if value is not None else "-"


def explain_line(hit: SearchHit) -> str:
    e = hit.explain
    fused = f"{_rank(e.fused_rank)} ({e.fused_score:.4f})" if e.fused_score is not None else "-"
    legs = "".join(f"{leg.name}={_rank(leg.rank)} " for leg in e.leg_ranks)
    scores = "".join(f" {name}={value:.4f}" if value is not None else f" {name}=-"
                     for name, value in e.leg_scores)
    return (f"explain: {legs}"
            f"vec={_rank(e.vec_rank)} fused={fused} "
            f"rerank={_rank(e.rerank_rank)} mmr={_rank(e.mmr_rank)}"
            f"{' scores:' + scores if scores else ''}")


def explain_stderr(result: SearchResult, params: SearchParams) -> None:
    """The run-level `explain:` lines on stderr (always written)."""
    from groove_cli.retrieve.legs import registered

    legs = {leg.name: leg for leg in registered()}
    if params.fusion == "score":
        fusion = (f"fusion=score score_alpha={params.score_alpha} "
                  f"score_alpha_short={params.score_alpha_short} "
                  f"score_alpha_mid={params.score_alpha_mid} "
                  f"score_alpha_long={params.score_alpha_long} "
                  f"short_query_words={params.short_query_words} "
                  f"mid_query_words={params.mid_query_words} "
                  f"score_cjk_weight={params.score_cjk_weight}")
    else:
        weights = dict.fromkeys(["vector_weight", *(leg.weight for leg in legs.values())])
        fusion = f"fusion=rrf rrf_k={params.rrf_k} " + " ".join(
            f"{key}={getattr(params, key)}" for key in weights)
    messages.always(f"explain: mode={params.mode} preset={params.preset or '-'} {fusion} "
                    f"min_score={params.min_score}")
    trace = result.trace
    if trace.alpha is not None:
        messages.always(f"explain: alpha={trace.alpha[0]} ({trace.alpha[1]})")
    for name, expr in trace.exprs:
        if expr is not None:
            messages.always(f"explain: {name} MATCH {expr}")
        elif name in legs:
            messages.always(f"explain: {name} skipped ({legs[name].skipped(params)})")

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
        return (f"the best hit's relevance is {max(relevances):.2f}, below "
                f"{params.low_confidence_below}")
    if not result.hits:
        return f"no hit reaches relevance {params.min_relevance}"
    return (f"no hit stands out from the rest (max / mean score below "
            f"{params.min_confidence_ratio})")


def display_title(hit: SearchHit, kb_root: str | Path | None = None) -> str:
    """The note's title: as indexed (frontmatter `title`, else its first heading, else its file
    name), else, for an index built before titles were stored, its first `# ` heading (read
    from the file), else its file name."""
    return (hit.chunk.title or note_title(absolute(kb_root, hit.chunk.path))
            or hit.chunk.path.rsplit("/", 1)[-1])


def breadcrumb(hit: SearchHit) -> str | None:
    """The hit's heading with its ancestors, `Setup > Linux > Packages`; None without one. A
    first ancestor that is the note's title (its `# ` heading, shown above the hit) is left out."""
    if not hit.chunk.heading:
        return None
    ancestry = list(hit.chunk.ancestry)
    if ancestry and ancestry[0] == hit.chunk.title:
        ancestry = ancestry[1:]
    return " > ".join([*ancestry, hit.chunk.heading])


def empty_hint(params: SearchParams, filter_applied: dict[str, object]) -> str:
    """The one stderr line for a search without hits: what to try, for this mode."""
    if params.min_relevance > 0 and params.mode != "fts":
        return (f"no hits; none reaches relevance {params.min_relevance}: try a lower "
                "--min-relevance")
    if filter_applied:
        return "no hits; try fewer filters (" + ", ".join(filter_applied) + ")"
    if params.mode == "fts":
        return "no hits; try fewer or other words, or --mode hybrid (also matches by meaning)"
    if params.mode == "vector":
        return "no hits; try --mode hybrid, or check the index with `groove status`"
    return "no hits; try fewer words, or --mode fts for exact words"


def print_search(results: Results, fmt: str, *, explain: bool, no_color: bool = False,
                 full: bool = False) -> None:
    """Print a search's results; its `kb_root` (the indexed KB folder) turns KB-relative paths
    into ones that open from the working directory; `full` prints whole chunks instead of
    snippets; with `--format files`, `results.files_short` says why there are fewer files
    than asked."""
    result, params, kb_root = results.result, results.params, results.kb_root
    filter_applied, files_short = dict(results.filter_applied), results.files_short
    if explain:
        explain_stderr(result, params)
    if not result.hits:
        messages.note(empty_hint(params, filter_applied))
    weak = _weak_text(result, params)
    if fmt == "json":
        print_json(results.to_json(explain=explain))
        return
    if fmt in ("md", "csv"):
        from groove_cli.render.search_formats import print_csv, print_markdown

        rows = [(hit, display_title(hit, kb_root), breadcrumb(hit)) for hit in result.hits]
        if fmt == "md":
            print_markdown(rows, kb_root, full=full, low_confidence=weak
                           if result.low_confidence and result.hits else None)
        else:
            print_csv(rows, kb_root, full=full)
        return
    painter = Painter(no_color=no_color)
    if fmt == "files":
        if result.low_confidence and result.hits:
            messages.note(f"weak match: {weak}")
        if files_short:
            messages.note(files_short)
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
    if result.low_confidence and result.hits:
        painter.line([(f"[weak match: {weak}]", "yellow")])
        painter.line([])
    for number, hit in enumerate(result.hits):
        if number and full:
            painter.line([("", None)])
            painter.line([("---", "dim")])
            painter.line([("", None)])
        elif number:
            painter.line([("", None)])
        _print_hit(painter, hit, explain, kb_root, full, stale=hit.chunk.path in results.stale)
    painter.flush()


STALE_MARK = "  [stale: changed since indexed]"
"""After a stale hit's location (search.md §15): the note was moved, deleted or edited."""


def _print_hit(painter: Painter, hit: SearchHit, explain: bool,
               kb_root: str | Path | None, full: bool, *, stale: bool = False) -> None:
    """One hit of the text format (cli.md §5.2): a snippet of at most HIT_LINES lines, or
    with `full` the whole chunk; a stale hit's location line says so."""
    chunk = hit.chunk
    head = 0

    def line(parts: list[tuple[str, str | None]], link: Path | None = None) -> None:
        nonlocal head
        painter.line(parts, link=link)
        head += 1

    line([(f"# {display_title(hit, kb_root)}", "bold")])
    where: list[tuple[str, str | None]] = [
        (location(shown_path(kb_root, chunk.path), chunk.line_start), "magenta")]
    crumb = breadcrumb(hit)
    if crumb:
        where.append((f"  § {crumb}", "cyan"))
    if stale:
        where.append((STALE_MARK, "yellow"))
    line(where, link=absolute(kb_root, chunk.path))
    scores = f"score: {hit.score:.4f}"
    if hit.relevance is not None:
        scores += f"  relevance: {hit.relevance:.2f}"
    line([(scores, "dim")])
    if chunk.tags:
        line([(f"tags: {', '.join(chunk.tags)}", "dim")])
    if hit.match_spans and full:
        texts = ", ".join(f'"{hit.content[s:e]}"' for s, e in hit.match_spans[:3])
        line([(f"match_spans: {texts}", "dim")])
    if explain:
        line([(explain_line(hit), "dim")])
    if full:
        painter.line([("", None)])
        painter.highlighted(hit.content, hit.match_spans)
        return
    shown = snippet(hit.content, hit.match_spans, HIT_LINES - head - 1)
    if shown:
        painter.line([("", None)])
    for part in shown:
        if part.gap_before:
            painter.line([(f"{INDENT}{ELLIPSIS}", "dim")])
        painter.highlighted(INDENT + part.text,
                            [(s + len(INDENT), e + len(INDENT)) for s, e in part.spans])
