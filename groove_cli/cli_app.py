"""The command line: resolve settings, make one core call, render the result.

Each command adapts flags to the core and nothing more; the core raises GrooveError subclasses
and `run_core` turns them into `groove: error: …` lines with the right exit code, never a
traceback. The options several commands share are declared once in cli_options.py. The
`groove` script starts in cli.py, which loads this module only when no server runs the command.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groove_cli import cli_commands, cli_kb, cli_notes, cli_serve, cli_service, config, messages
from groove_cli.cli_eval import eval_app, tune_cmd
from groove_cli.cli_options import (
    CollectionOpt,
    FilterFlags,
    FormatOpt,
    GlobalOptions,
    GrooveGroup,
    KbOpt,
    ModelOpt,
    NoColorOpt,
    NoServerOpt,
    RerankerOpt,
    RetrievalFlags,
    VerboseOpt,
    check_format,
    chosen_collections,
    global_options,
    kb_flags,
    print_version,
    resolve_paths,
    run_core,
    settings_for,
    sub_app,
    verbose,
    with_filter_flags,
    with_retrieval_flags,
)
from groove_cli.errors import IndexMissing, UsageError
from groove_cli.failures import ReaderGone
from groove_cli.render import output

if TYPE_CHECKING:  # the core is imported inside each command, so start-up stays light
    from groove_cli.index import IndexReport
    from groove_cli.results import Results
    from groove_cli.status import DoctorReport, StatusReport

app = typer.Typer(
    cls=GrooveGroup,
    name="groove",
    help=(
        "Hybrid full-text + vector search over a folder of Markdown notes, "
        "with built-in evaluation and tuning.\n\n"
        "Global options go before the command: `groove --config x.toml search 'query'`"
    ),
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (README: Shell completion)
    pretty_exceptions_enable=False,
)
config_app = sub_app("Inspect and validate groove.toml.")
app.add_typer(config_app, name="config")


@app.callback()
def main_callback(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Use this groove.toml instead of discovering one."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", help="The index: a file (default: config db_path, else "
                     "KB/.groove/index.db) or a postgresql:// URL (a shared Postgres server; "
                     "needs pip install 'groove-cli[postgres]')."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=print_version, is_eager=True,
                     help="Print the version and exit."),
    ] = False,
) -> None:
    """groove — search your notes the way a good retrieval system does, and measure it."""
    ctx.obj = GlobalOptions(config, db)
    messages.set_verbose(False)  # a command's --verbose turns it on


@config_app.command("show")
def config_show(
    ctx: typer.Context,
    format: FormatOpt = "text",
) -> None:
    """Print every resolved setting and where it came from (default, file, preset, flag).

    Example: `groove config show --format json`
    """
    fmt = check_format(format, ("text", "json"))
    settings = run_core(lambda: settings_for(ctx, {}, announce=False))
    url = config.store_url(settings, global_options(ctx).db)
    output.print_config(settings, fmt, {"store.url": url})


@config_app.command("check")
def config_check(ctx: typer.Context) -> None:
    """Validate groove.toml: exit 0 when valid, 1 with the first problem otherwise.

    Example: `groove --config ./groove.toml config check`
    """
    from groove_cli.status import check_config_models

    settings = run_core(lambda: check_config_models(settings_for(ctx, {}, announce=False)))
    where = settings.config.path if settings.config else None
    output.print_line(f"{where}: ok" if where else "no config file; built-in defaults are valid")


# --------------------------------------------------------------------------- index


@app.command("index")
def index_cmd(
    ctx: typer.Context,
    folder: Annotated[Path | None, typer.Argument(
        help="The KB folder (the same as --kb-path), e.g. `groove index .`",
        show_default=False)] = None,
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    model: ModelOpt = None,
    force: Annotated[bool, typer.Option("--force", help=(
        "Full rebuild: required to change model, dimension or max_length, or to index a KB "
        "other than the one the index records. A damaged index file is first moved aside as "
        ".corrupt-<time>."))] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help=(
        "Only the Indexing, Found and Done lines (warnings and errors still appear)."))] = False,
    progress: Annotated[bool, typer.Option("--progress", help=(
        "Also print `Progress: N/M (P%)` lines for the files read when stderr is not a "
        "terminal (a terminal always shows bars; other output gets a line every 10 s)."))
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help=(
        "Per-file lines: indexed, renamed, deleted, emptied."))] = False,
    text_only: Annotated[bool, typer.Option("--text-only", help=(
        "Stop after the full-text phase: chunks are searchable with --mode fts, vectors are "
        "left for the next run without this flag."))] = False,
) -> None:
    """Index (or incrementally update) a folder of notes into one SQLite file.

    Two phases: first every new or changed note's text (then `--mode fts` searches see every
    note), then the vectors of the chunks that have none yet. Unchanged files are skipped by
    content hash, renames are detected, deleted files are removed. Ctrl-C or a kill leaves a
    valid index; the next run continues where this one stopped.

    Example: `groove index ~/notes` (or `groove index --kb-path ~/notes`)
    """
    from groove_cli.api import Index
    from groove_cli.render.progress import progress_for
    from groove_cli.signals import StopFlag

    if quiet and (progress or verbose):
        raise typer.BadParameter("--quiet conflicts with --progress and --verbose",
                                 param_hint="--quiet")
    messages.set_verbose(verbose)

    def run() -> IndexReport:
        if folder is not None and kb_path is not None and folder.resolve() != kb_path.resolve():
            raise UsageError(f"the folder {folder} and --kb-path {kb_path} name two KBs",
                             hint="name the KB once: groove index FOLDER")
        paths = resolve_paths(ctx, kb_flags(kb_path or folder, model=model), kb_required=True,
                              announce=not quiet, writing=True, force=force)
        assert paths.kb is not None
        stop = StopFlag()
        with stop.installed(), progress_for(quiet=quiet, plain_lines=progress) as bar:
            return Index(paths.settings, paths.kb, paths.db).index(
                force=force, progress=bar, stop=stop.is_set, verbose=verbose, quiet=quiet,
                text_only=text_only)

    report = run_core(run)
    output.print_index_done(report)
    if report.interrupted:
        raise typer.Exit(130)


# --------------------------------------------------------------------------- status / doctor


@app.command("status")
def status_cmd(
    ctx: typer.Context,
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    format: FormatOpt = "text",
    no_server: NoServerOpt = False,
    verbose_flag: VerboseOpt = False,
) -> None:
    """Show what the index holds, what is pending (with a KB path), and a running server;
    --verbose lists the pending files by name (the JSON always does).

    Example: `groove status --kb-path ~/notes`
    """
    from groove_cli.api import Index
    from groove_cli.serve import client

    verbose(verbose_flag)
    fmt = check_format(format, ("text", "json"))
    server: dict[str, object] | None = None

    def run() -> StatusReport | None:
        nonlocal server
        # with --db, status and doctor need no KB path (cli.md §1)
        paths = resolve_paths(ctx, kb_flags(kb_path), kb_required=False)
        if not no_server:
            report = client.forward_status(paths.db, paths.kb)
            running = client.running_server(paths.db, paths.kb)
            server = {"pid": running.pid, "address": running.address} if running else None
            if report is not None:
                return report  # type: ignore[no-any-return]
        if isinstance(paths.db, Path) and not paths.db.exists():
            hint = paths.kb if paths.kb else "<path>"
            messages.note(f"no index found at {paths.db}. Run `groove index --kb-path {hint}` first.")
            return None
        try:
            return Index(paths.settings, paths.kb, paths.db).status()
        except IndexMissing as missing:
            if isinstance(paths.db, Path):
                raise
            messages.note(missing.message)  # a Postgres store without this KB, as for a file
            return None

    report = run_core(run)
    if report is not None:
        output.print_status(report, fmt, server, verbose=verbose_flag)


@app.command("doctor")
def doctor_cmd(
    ctx: typer.Context,
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    format: FormatOpt = "text",
) -> None:
    """Check the index for damage and integrity problems; exit 1 when there are findings.

    Runs SQLite's integrity check (full-text tables included), checks that every chunk has
    its full-text rows and vector and that the vector snapshot matches the index.

    Example: `groove doctor --kb-path ~/notes`
    """
    from groove_cli.api import Index

    fmt = check_format(format, ("text", "json"))

    def run() -> DoctorReport:
        paths = resolve_paths(ctx, kb_flags(kb_path), kb_required=False)
        return Index(paths.settings, paths.kb, paths.db).doctor()

    report = run_core(run)
    try:
        output.print_doctor(report, fmt)
    except ReaderGone:  # `doctor | head`: findings still fail (failures.py)
        if report.findings:
            raise typer.Exit(1) from None
        raise
    if report.findings:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- search

@app.command("search")
@with_retrieval_flags
@with_filter_flags
def search_cmd(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help=(
        'The query. Quote phrases with "…"; exclude a term with -term or -"a phrase". '
        'A query that starts with - goes after --: groove search -- "-draft notes".'))],
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    model: ModelOpt = None,
    reranker: RerankerOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Number of hits (>= 1; capped at 1000).",
                                       min=1)] = 5,
    retrieval: RetrievalFlags = RetrievalFlags(),
    filters: FilterFlags = FilterFlags(),
    min_confidence_ratio: Annotated[float | None, typer.Option("--min-confidence-ratio", help=(
        "Without the vector leg (fts mode): low_confidence when max/mean score < R; 0 "
        "disables."))] = None,
    explain: Annotated[bool, typer.Option("--explain", help=(
        "Per-hit stage ranks and per-stage timings."))] = False,
    format: Annotated[str, typer.Option("--format", help=(
        "json, text (a snippet per hit), md, csv or files."))] = "json",
    full: Annotated[bool, typer.Option("--full", help=(
        "text, md, csv: whole chunks instead of snippets."))] = False,
    all_kbs: Annotated[bool, typer.Option("--all", help=(
        "Search every named collection (groove kb list): one fused list, each hit naming its "
        "KB. Several -c NAME do the same for those KBs."))] = False,
    no_color: NoColorOpt = False,
    verbose_flag: VerboseOpt = False,
    no_server: NoServerOpt = False,
) -> None:
    """Search the index: full-text + vector legs fused by score (or --fusion rrf: by rank).

    Japanese (CJK) text is matched by its characters and character pairs, so 評価 counts; English
    words by a stemmed word index without stopwords; numbers and identifiers by substring. "…"
    asks for exactly that text; -term / -"a phrase" excludes (any length). --explain: ranks per leg.

    Examples:

    * `groove search "retry budget" --kb-path ~/notes --format text`
    * `groove search "再ランキング -評価" --mode fts`
    """
    from groove_cli.api import Index
    from groove_cli.render import search as render_search
    from groove_cli.retrieve.query import compile_query

    fmt = check_format(format, ("json", "text", "md", "csv", "files"))
    verbose(verbose_flag)

    def flags() -> dict[str, object]:
        if min_confidence_ratio is not None and not (
                math.isfinite(min_confidence_ratio) and min_confidence_ratio >= 0):
            raise UsageError(f"--min-confidence-ratio {min_confidence_ratio} must be finite and >= 0")
        flags = retrieval.config_flags()
        flags.update(kb_flags(kb_path, model=model, reranker=reranker,
                              **{"search.min_confidence_ratio": min_confidence_ratio}))
        compile_query(query)  # an empty query is a usage error before any file is read
        return flags

    if all_kbs or len(chosen_collections(ctx)) > 1:  # cli_kb.py: several KBs, one list
        cli_kb.search_several(ctx, flags, query, limit=limit, filters=filters, fmt=fmt,
                              explain=explain, all_kbs=all_kbs, kb_path=kb_path,
                              no_color=no_color, full=full)
        return

    def run() -> Results:
        given = flags()
        paths = resolve_paths(ctx, given, kb_required=False)
        if not no_server:  # a running `groove serve` answers with its warm index
            from groove_cli.serve.client import forward_search

            found = forward_search(paths.settings, paths.db, paths.kb, query, limit,
                                   filters.filters(), given, files=fmt == "files")
            if found is not None:
                return found  # type: ignore[no-any-return]
        with Index(paths.settings, paths.kb, paths.db) as index:
            return index.search(query, limit=limit, filters=filters.filters(),
                                files=fmt == "files")

    results = run_core(run)
    messages.replay(results.messages)
    render_search.print_search(results, fmt, explain=explain, no_color=no_color, full=full)


# --------------------------------------------------------------------------- get


app.command("get")(cli_commands.get_cmd)


# --------------------------------------------------------------------------- graph, validate, service

app.command("graph")(cli_notes.graph_cmd)  # cli_notes.py
app.command("validate")(cli_notes.validate_cmd)
app.add_typer(cli_service.service_app, name="service")  # cli_service.py


# --------------------------------------------------------------------------- serve, mcp

app.command("serve")(cli_serve.serve_cmd)
app.command("mcp")(cli_serve.mcp_cmd)


# --------------------------------------------------------------------------- eval, tune

app.add_typer(eval_app, name="eval")  # cli_eval.py: `eval`, `eval compare`
app.add_typer(cli_kb.kb_app, name="kb")  # cli_kb.py: `kb add`, `kb list`, `kb remove`
app.command("tune")(tune_cmd)


# --------------------------------------------------------------------------- models

models_app = sub_app("List and resolve embedding and reranker models.")
app.add_typer(models_app, name="models")


models_app.command("list")(cli_commands.models_list)
models_app.command("resolve")(cli_commands.models_resolve)


GLOBAL_VALUED = ("--config", "--db")
"""The global options that take a value (main_callback); `invoked_command` skips them."""


def invoked_command(args: Sequence[str]) -> str | None:
    """The top-level command name `args` run, past the global options; None when it cannot
    tell (no command, --help, --version, an unknown option)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in GLOBAL_VALUED:
            i += 2
        elif arg.startswith(tuple(f"{name}=" for name in GLOBAL_VALUED)):
            i += 1
        elif arg.startswith("-"):
            return None
        else:
            return arg
    return None


def narrowed(full: typer.Typer, args: Sequence[str]) -> typer.Typer:
    """`full` with only the command `args` run registered, else `full` itself.

    typer builds every command's click parameters from its signature before parsing anything,
    a noticeable share of a cold `--mode fts` search (bench/results/code-notes.md#narrowed);
    one command's are enough to run it. Anything this cannot name for certain
    (top-level --help, a typo that needs the "no such command" error) gets the full tree.
    """
    name = invoked_command(args)
    commands = [c for c in full.registered_commands if c.name == name]
    groups = [g for g in full.registered_groups if g.name == name]
    if name is None or not (commands or groups):
        return full
    subset = copy.copy(full)
    subset.registered_commands = commands
    subset.registered_groups = groups
    return subset


def main() -> None:
    """Run the command line in this process: `narrowed(app, argv)`, its messages on stderr."""
    messages.install_stderr()
    narrowed(app, sys.argv[1:])()
