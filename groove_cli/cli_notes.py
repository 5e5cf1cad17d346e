"""`groove graph` and `groove validate`: registered by cli_app.py; like every command they
resolve settings, make one `Index` call and render the result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groove_cli.cli_options import (
    CollectionOpt,
    KbOpt,
    check_format,
    kb_flags,
    resolve_paths,
    run_core,
)
from groove_cli.render import output

if TYPE_CHECKING:
    from groove_cli.retrieve.graph import Graph
    from groove_cli.validate import ValidationReport

GRAPH_FORMATS = ("text", "json", "dot", "svg")


def graph_cmd(
    ctx: typer.Context,
    start: Annotated[str, typer.Option("--start", help=(
        "The note to start from: its KB-relative path as search shows it (or a path to it)."),
        show_default=False)],
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    depth: Annotated[int, typer.Option("--depth", help="Levels of neighbours (1 to 5).")] = 2,
    fan_out: Annotated[int, typer.Option("--fan-out", help=(
        "Neighbours kept per node, the most similar first (1 to 50)."))] = 5,
    min_similarity: Annotated[float, typer.Option("--min-similarity", help=(
        "Least cosine similarity of an edge (-1 to 1)."))] = 0.5,
    dedup_by_path: Annotated[bool, typer.Option("--dedup-by-path/--no-dedup-by-path", help=(
        "One node per note (default), or one per chunk."))] = True,
    exclude_paths: Annotated[list[str] | None, typer.Option("--exclude-paths", help=(
        "Leave out notes matching this glob (repeatable; * ** ? [..] {a,b})."))] = None,
    seed: Annotated[str, typer.Option("--seed", help=(
        "A node's query vectors: all (each chunk's) or centroid (their mean)."))] = "all",
    max_nodes: Annotated[int, typer.Option("--max-nodes", help=(
        "At most this many nodes (1 to 500); the output says when more were found."))] = 50,
    format: Annotated[str, typer.Option("--format", case_sensitive=False, help=(
        "text, json, dot (Graphviz) or svg (needs Graphviz's dot)."))] = "text",
) -> None:
    """Show the semantic neighbourhood of a note: similar notes, and theirs, with similarities.

    A breadth-first search over the index's vectors (no model is loaded): each node's
    `--fan-out` most similar notes at `--min-similarity` or more, `--depth` levels deep.

    Examples:

    * `groove graph --start ops/backup.md --depth 2 --format json`
    * `groove graph --start ops/backup.md --format svg > backup.svg`
    """
    from groove_cli.api import Index

    fmt = check_format(format, GRAPH_FORMATS)

    def run() -> Graph:
        paths = resolve_paths(ctx, kb_flags(kb_path), kb_required=False, announce=False)
        with Index(paths.settings, paths.kb, paths.db) as index:
            return index.graph(start, depth=depth, fan_out=fan_out,
                               min_similarity=min_similarity, dedup_by_path=dedup_by_path,
                               exclude_paths=tuple(exclude_paths or ()), seed=seed.lower(),
                               max_nodes=max_nodes)

    graph = run_core(run)
    from groove_cli import messages

    messages.replay(graph.messages)
    if fmt == "json":
        output.print_json(graph.to_json())
    elif fmt == "dot":
        output.print_line(graph.dot().rstrip("\n"))
    elif fmt == "svg":
        from groove_cli.render.graph import svg

        output.print_line(run_core(lambda: svg(graph.dot())).rstrip("\n"))
    else:
        output.print_line(graph.text())


def validate_cmd(
    ctx: typer.Context,
    folder: Annotated[Path | None, typer.Argument(
        help="The KB folder (the same as --kb-path).", show_default=False)] = None,
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    format: Annotated[str, typer.Option("--format", case_sensitive=False, help=(
        "text (one `path:line: problem` line per finding) or json."))] = "text",
) -> None:
    """Check every note's frontmatter against the [frontmatter] schema of groove.toml.

    Required keys, types, allowed values and the date format; one line per finding, exit 1
    when there is any (0 when every note passes). `groove index` warns on the same findings.

    Example: `groove validate ~/notes --format json`
    """
    from groove_cli.api import Index

    fmt = check_format(format, ("text", "json"))

    def run() -> ValidationReport:
        paths = resolve_paths(ctx, kb_flags(kb_path or folder), kb_required=True,
                              announce=False)
        return Index(paths.settings, paths.kb, paths.db).validate()

    report = run_core(run)
    if fmt == "json":
        output.print_json(report.to_json())
    else:
        output.print_line(report.text())
    if report.findings:
        raise typer.Exit(1)
