"""Command adapters that cli.py registers but does not declare inline (`get`, `tune --space
calibration`, `models`), kept apart so cli.py stays a short table of commands. Like cli.py they
only adapt: resolve settings, make one core call, render.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groove_cli import config
from groove_cli.cli_options import (
    CollectionOpt,
    FormatOpt,
    KbOpt,
    NoColorOpt,
    check_format,
    kb_flags,
    resolve_paths,
    run_core,
    settings_for,
)
from groove_cli.render import output

if TYPE_CHECKING:
    from groove_cli.evaluate.tune.calibrate import CalibrationReport
    from groove_cli.models import ModelStatus, ResolvedModel


def get_cmd(
    ctx: typer.Context,
    location: Annotated[str, typer.Argument(help=(
        "PATH, PATH:LINE or PATH:LINE:COUNT; a location line printed by `search` works as is."))],
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    format: FormatOpt = "text",
    no_color: NoColorOpt = False,
    no_server: Annotated[bool, typer.Option("--no-server", hidden=True, help=(
        "Accepted for scripts written for older versions: get always reads the file "
        "itself."))] = False,
) -> None:
    """Print a note, or the lines of a search hit, from the file itself.

    PATH:LINE prints the chunk that starts or covers LINE (what `search` found there);
    PATH:LINE:COUNT prints COUNT lines. PATH is tried from the working directory, then
    inside the KB folder. Lines are numbered on a terminal.

    Examples:

    * `groove get notes/ops/backup.md:12`
    * `groove get ops/backup.md:12:5 --kb-path ~/notes --format json`
    """
    from groove_cli.chunk import ChunkRules
    from groove_cli.get import Excerpt, read_excerpt
    from groove_cli.render.terminal import print_excerpt

    fmt = check_format(format, ("text", "json"))

    def run() -> Excerpt:
        settings = settings_for(ctx, kb_flags(kb_path), announce=False)
        kb = config.kb_path(settings, required=False)
        return read_excerpt(location, kb, ChunkRules.of(settings))

    excerpt = run_core(run)
    print_excerpt(excerpt.path, excerpt.line_start, excerpt.line_end, excerpt.lines(), fmt,
                  no_color=no_color)


def calibrate_cmd(ctx: typer.Context, kb_path: Path | None, golden: Path | None, model: str | None,
                  fmt: str, write: bool, force: bool) -> None:
    """`tune --space calibration`: refit the relevance model, print it, --write it (only a
    refit that beats the calibration in use on held-out hits, unless --force)."""
    from groove_cli.api import Index

    def run() -> CalibrationReport:
        paths = resolve_paths(ctx, kb_flags(kb_path, model=model), kb_required=True)
        return Index(paths.settings, paths.kb, paths.db).calibrate(
            golden, write=write, force=force, new_config_folder=Path.cwd())

    report = run_core(run)
    if fmt == "json":
        output.print_json(report.to_json())
    else:
        output.print_line(report.text().rstrip("\n"))


def models_list(ctx: typer.Context, format: FormatOpt = "text") -> None:
    """List the registry models and whether each is cached, convertible, downloadable.

    Example: `groove models list`
    """
    from groove_cli.api import list_models

    fmt = check_format(format, ("text", "json"))

    def run() -> list[ModelStatus]:
        settings = settings_for(ctx, {}, announce=False)
        return list_models(settings, offline=config.offline_mode())

    output.print_models(run_core(run), fmt)


def models_resolve(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Registry name or local model directory.")],
    offline: Annotated[bool, typer.Option("--offline", help="Never download.")] = False,
    format: FormatOpt = "text",
) -> None:
    """Make a model ready to use: convert the offline pack or download it, then print its folder.

    Example: `groove models resolve multilingual-e5-small`
    """
    from groove_cli.api import prepare_model

    fmt = check_format(format, ("text", "json"))

    def run() -> ResolvedModel:
        settings = settings_for(ctx, {}, announce=False)
        return prepare_model(name, settings, offline=offline or config.offline_mode())

    output.print_resolved(run_core(run), fmt)
