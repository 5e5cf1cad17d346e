"""The command line: resolve settings, make one core call, render the result.

Each command adapts flags to the core and nothing more; the core raises GrooveError subclasses
and `run_core` turns them into `groove: error: …` lines with the right exit code, never a
traceback. The options several commands share are declared once in cli_options.py.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groove_cli import config, messages
from groove_cli.cli_options import (
    FilterFlags,
    FormatOpt,
    GlobalOptions,
    GoldenOpt,
    GrooveGroup,
    KbOpt,
    ModelOpt,
    NoColorOpt,
    RerankerOpt,
    RetrievalFlags,
    check_format,
    choice,
    global_options,
    kb_flags,
    print_version,
    resolve_paths,
    run_core,
    settings_for,
    sub_app,
    with_filter_flags,
    with_retrieval_flags,
)
from groove_cli.errors import UsageError
from groove_cli.render import output

if TYPE_CHECKING:  # the core is imported inside each command, so start-up stays light
    from groove_cli.evaluate.report import EvalReport
    from groove_cli.evaluate.tune.report import TuneReport
    from groove_cli.index import IndexReport
    from groove_cli.models import ModelStatus, ResolvedModel
    from groove_cli.retrieve.searcher import SearchOutcome
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
    add_completion=False,
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
        Path | None,
        typer.Option("--db", help="The index file (default: config db_path, else KB/.groove.db)."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=print_version, is_eager=True,
                     help="Print the version and exit."),
    ] = False,
) -> None:
    """groove — search your notes the way a good retrieval system does, and measure it."""
    ctx.obj = GlobalOptions(config, db)


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
    output.print_config(settings, fmt)


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
    kb_path: KbOpt = None,
    model: ModelOpt = None,
    force: Annotated[bool, typer.Option("--force", help=(
        "Full rebuild: required to change model, dimension or max_length, or to index a KB "
        "other than the one the index records. A damaged index file is first moved aside as "
        ".corrupt-<time>."))] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help=(
        "Only the Indexing, Found and Done lines (warnings and errors still appear)."))] = False,
    progress: Annotated[bool, typer.Option("--progress", help=(
        "Show progress: a bar on a terminal, `Progress: N/M (P%)` lines otherwise."))] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help=(
        "Per-file lines: indexed, renamed, deleted, emptied."))] = False,
) -> None:
    """Index (or incrementally update) a folder of notes into one SQLite file.

    Unchanged files are skipped by content hash, renames are detected, deleted files are
    removed. Ctrl-C leaves a valid index; the next run continues where this one stopped.

    Example: `groove index --kb-path ~/notes`
    """
    from groove_cli.index import IndexOptions, index_kb
    from groove_cli.render.progress import progress_for
    from groove_cli.signals import StopFlag

    if quiet and (progress or verbose):
        raise typer.BadParameter("--quiet conflicts with --progress and --verbose",
                                 param_hint="--quiet")

    def run() -> IndexReport:
        paths = resolve_paths(ctx, kb_flags(kb_path, model=model), kb_required=True,
                              announce=not quiet)
        assert paths.kb is not None
        options = IndexOptions.from_settings(paths.settings, paths.kb, paths.db, force=force,
                                             verbose=verbose, quiet=quiet)
        stop = StopFlag()
        with stop.installed(), progress_for(quiet=quiet, plain_lines=progress) as bar:
            return index_kb(options, bar, stop.is_set)

    report = run_core(run)
    output.print_index_done(report)
    if report.interrupted:
        raise typer.Exit(130)


# --------------------------------------------------------------------------- status / doctor


@app.command("status")
def status_cmd(
    ctx: typer.Context,
    kb_path: KbOpt = None,
    format: FormatOpt = "text",
) -> None:
    """Show what the index holds and, with a KB path, what is pending.

    Example: `groove status --kb-path ~/notes`
    """
    from groove_cli.status import settings_status

    fmt = check_format(format, ("text", "json"))

    def run() -> StatusReport | None:
        # with --db, status and doctor need no KB path (cli.md §1)
        paths = resolve_paths(ctx, kb_flags(kb_path), kb_required=False)
        if not paths.db.exists():
            hint = paths.kb if paths.kb else "<path>"
            messages.note(f"no index found at {paths.db}. Run `groove index --kb-path {hint}` first.")
            return None
        return settings_status(paths.settings, paths.db, paths.kb)

    report = run_core(run)
    if report is not None:
        output.print_status(report, fmt)


@app.command("doctor")
def doctor_cmd(
    ctx: typer.Context,
    kb_path: KbOpt = None,
    format: FormatOpt = "text",
) -> None:
    """Check the index for damage and integrity problems; exit 1 when there are findings.

    Runs SQLite's integrity check (full-text tables included), checks that every chunk has
    its full-text rows and vector and that the vector snapshot matches the index.

    Example: `groove doctor --kb-path ~/notes`
    """
    from groove_cli.status import run_doctor

    fmt = check_format(format, ("text", "json"))

    def run() -> DoctorReport:
        paths = resolve_paths(ctx, kb_flags(kb_path), kb_required=False)
        return run_doctor(paths.db, paths.kb, config.models_dir(paths.settings),
                          reranker=paths.settings.str_("reranker"))

    report = run_core(run)
    output.print_doctor(report, fmt)
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
    model: ModelOpt = None,
    reranker: RerankerOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Number of hits (>= 1; capped at 1000).",
                                       min=1)] = 5,
    retrieval: RetrievalFlags = RetrievalFlags(),
    filters: FilterFlags = FilterFlags(),
    min_confidence_ratio: Annotated[float | None, typer.Option("--min-confidence-ratio", help=(
        "low_confidence when max/mean score < R; 0 disables."))] = None,
    explain: Annotated[bool, typer.Option("--explain", help=(
        "Per-hit stage ranks and per-stage timings."))] = False,
    format: Annotated[str, typer.Option("--format", help="json, text or files.")] = "json",
    no_color: NoColorOpt = False,
) -> None:
    """Search the index: full-text + vector legs fused with weighted RRF.

    Japanese (CJK) text is matched by its characters and character pairs, so 評価 counts; English
    words by a stemmed word index without stopwords; numbers and identifiers by substring. "…"
    asks for exactly that text; -term / -"a phrase" excludes (any length). --explain: ranks per leg.

    Examples:

    * `groove search "retry budget" --kb-path ~/notes --format text`
    * `groove search "再ランキング -評価" --mode fts`
    """
    from groove_cli.render import search as render_search
    from groove_cli.retrieve.query import compile_query
    from groove_cli.retrieve.searcher import run_search

    fmt = check_format(format, ("json", "text", "files"))

    def run() -> SearchOutcome:
        if min_confidence_ratio is not None and not (
                math.isfinite(min_confidence_ratio) and min_confidence_ratio >= 0):
            raise UsageError(f"--min-confidence-ratio {min_confidence_ratio} must be finite and >= 0")
        filters.check()
        flags = retrieval.config_flags()
        flags.update(kb_flags(kb_path, model=model, reranker=reranker,
                              **{"search.min_confidence_ratio": min_confidence_ratio}))
        compile_query(query)  # an empty query is a usage error before any file is read
        paths = resolve_paths(ctx, flags, kb_required=False)
        return run_search(paths.settings, paths.db, paths.kb, query, limit=limit,
                          filters=filters.spec(paths.settings), explicit_ratio=min_confidence_ratio)

    outcome = run_core(run)
    render_search.print_search(outcome.result, outcome.params, fmt, explain=explain,
                               filter_applied=outcome.filter_applied)


# --------------------------------------------------------------------------- eval

KOpt = Annotated[str | None, typer.Option(
    "--k", help="Comma list of cut-offs >= 1 for recall@k / nDCG@k (default [eval].k_values).")]


@app.command("eval")
@with_retrieval_flags
def eval_cmd(
    ctx: typer.Context,
    kb_path: KbOpt = None,
    model: ModelOpt = None,
    reranker: RerankerOpt = None,
    golden: GoldenOpt = None,
    k: KOpt = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", help="Hits recorded per query (default: the largest k).", min=1)] = None,
    retrieval: RetrievalFlags = RetrievalFlags(),
    format: FormatOpt = "text",
    no_history: Annotated[bool, typer.Option(
        "--no-history", help="Neither read nor write the history: no diff, no gate.")] = False,
    no_diff: Annotated[bool, typer.Option(
        "--no-diff", help="hides the diff only; --fail-on-regression still compares")] = False,
    no_color: NoColorOpt = False,
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression",
        help="Exit 1 when a metric fell by more than [eval].regression_threshold against the "
             "previous compatible run (the history is saved first).")] = False,
) -> None:
    """Score retrieval against a golden query file and compare with the previous run.

    Examples:

    * `groove eval --kb-path ~/notes`
    * `groove eval --kb-path ~/notes --fail-on-regression --format json`   (in CI)
    """
    from groove_cli.evaluate.runner import EvalRequest, effective_limit, k_values_from, run_eval
    from groove_cli.retrieve.params import eval_reranker

    fmt = check_format(format, ("text", "json"))

    def run() -> EvalReport:
        flags = retrieval.config_flags()
        flags.update(kb_flags(kb_path, model=model, reranker=reranker))
        paths = resolve_paths(ctx, flags, kb_required=True)
        assert paths.kb is not None
        s = paths.settings
        k_values = k_values_from(s, k)
        request = EvalRequest(
            settings=s, db=paths.db, kb=paths.kb, golden=golden, k_values=k_values,
            limit=effective_limit(limit, k_values), reranker=eval_reranker(s),
            no_history=no_history, no_diff=no_diff, fail_on_regression=fail_on_regression)
        return run_eval(request)

    outcome = run_core(run)
    output.print_eval(outcome, fmt, no_color=no_color)
    if outcome.regression_error:
        messages.error(outcome.regression_error)
        raise typer.Exit(1)


# --------------------------------------------------------------------------- tune


@app.command("tune")
def tune_cmd(
    ctx: typer.Context,
    kb_path: KbOpt = None,
    golden: GoldenOpt = None,
    model: ModelOpt = None,
    space: Annotated[str, typer.Option(
        "--space", help="Grid to sweep: fusion (rrf_k x bm25 weights) or retrieval "
                        "(vector/fts weight ratio x cjk_weight x min_score).")] = "fusion",
    k: Annotated[str | None, typer.Option(
        "--k", help="Comma list of cut-offs (0s dropped, 5 always added).")] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", help="Hits per query (default: the largest k).", min=1)] = None,
    format: FormatOpt = "text",
    no_color: NoColorOpt = False,
    write: Annotated[bool, typer.Option(
        "--write", help="Apply an adopted recommendation to groove.toml in place.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="With --write: write even when the verdict is keep-defaults.")] = False,
) -> None:
    """Sweep the fusion knobs with nested cross-validation; recommend only a real gain.

    Deltas are measured against the built-in defaults. A change is adopted only when its
    held-out gain is above 0.02 nDCG@5, above 3x its paired standard error, stable across
    folds, and costs no recall or MRR.

    Example: `groove tune --kb-path ~/notes --write`
    """
    from groove_cli.evaluate.tune.run import TuneRequest, run_tune, tune_k_values

    fmt = check_format(format, ("text", "json"))
    grid_space = choice("--space", space, ("fusion", "retrieval"))

    def run() -> TuneReport:
        paths = resolve_paths(ctx, kb_flags(kb_path, model=model), kb_required=True)
        assert paths.kb is not None and grid_space is not None
        s = paths.settings
        request = TuneRequest(
            settings=s, db=paths.db, kb=paths.kb, golden=golden,
            k_values=tune_k_values(s, k), limit=limit,
            space="fusion" if grid_space == "fusion" else "retrieval",
            write=write, force=force, config_flag=global_options(ctx).config)
        return run_tune(request)

    output.print_tune(run_core(run), fmt)


# --------------------------------------------------------------------------- models

models_app = sub_app("List and resolve embedding and reranker models.")
app.add_typer(models_app, name="models")


@models_app.command("list")
def models_list(ctx: typer.Context, format: FormatOpt = "text") -> None:
    """List the registry models and whether each is cached, convertible, downloadable.

    Example: `groove models list`
    """
    from groove_cli.models import list_models

    fmt = check_format(format, ("text", "json"))

    def run() -> list[ModelStatus]:
        settings = settings_for(ctx, {}, announce=False)
        return list_models(config.models_dir(settings), offline=config.offline_mode())

    output.print_models(run_core(run), fmt)


@models_app.command("resolve")
def models_resolve(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Registry name or local model directory.")],
    offline: Annotated[bool, typer.Option("--offline", help="Never download.")] = False,
    format: FormatOpt = "text",
) -> None:
    """Make a model ready to use: convert the offline pack or download it, then print its folder.

    Example: `groove models resolve multilingual-e5-small`
    """
    from groove_cli.models import registry_names, resolve_model

    fmt = check_format(format, ("text", "json"))

    def run() -> ResolvedModel:
        settings = settings_for(ctx, {}, announce=False)
        kind = "reranker" if name in registry_names("reranker") else "embedder"
        return resolve_model(name, config.models_dir(settings), kind=kind,
                             offline=offline or config.offline_mode())

    output.print_resolved(run_core(run), fmt)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
