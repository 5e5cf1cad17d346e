"""The measuring commands: `groove eval` (a group: `eval compare A B`) and `groove tune`.

Like cli.py, each command only adapts: resolve settings, make one core call
(`run_eval`, `run_ablation`, `compare_runs`, `run_tune`), render. The rules that combine flags
(which flags `--ablate` excludes, what `--topics` needs, a valid `--gate-metric`) live in the
core, so the commands stay thin; cli.py registers `eval_app` and `tune_cmd` on the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from groove_cli import cli_commands, messages
from groove_cli.cli_options import (
    CollectionOpt,
    CompareFormatOpt,
    EvalFormatOpt,
    GoldenOpt,
    KbOpt,
    ModelOpt,
    NoColorOpt,
    RerankerOpt,
    RetrievalFlags,
    TuneFormatOpt,
    VerboseOpt,
    check_format,
    choice,
    global_options,
    kb_flags,
    resolve_paths,
    run_core,
    verbose,
    with_retrieval_flags,
)
from groove_cli.errors import UsageError
from groove_cli.failures import ReaderGone
from groove_cli.render import output

if TYPE_CHECKING:  # the core is imported inside each command, so start-up stays light
    from groove_cli.evaluate.report import EvalReport
    from groove_cli.evaluate.tune.grid import Space
    from groove_cli.evaluate.tune.report import TuneReport
    from groove_cli.render.pictures import ReportKind

_SPACES: dict[str, Space] = {"fusion": "fusion", "retrieval": "retrieval",
                             "fusion-method": "fusion-method", "feedback": "feedback",
                             "per-note": "per-note"}
"""`--space` values that sweep a grid (calibration is its own command)."""
ReportOpt = Annotated[tuple[str, str] | None, typer.Option(
    "--report", metavar="html|png FILE",
    help="Also write pictures of the run (needs matplotlib: the pictures extra): html, a "
         "self-contained page of SVG plots, or png, one image.")]
KOpt = Annotated[str | None, typer.Option(
    "--k", help="Comma list of cut-offs >= 1 for recall@k / nDCG@k (default [eval].k_values).")]

eval_app = typer.Typer(
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@eval_app.callback()
@with_retrieval_flags
def eval_cmd(
    ctx: typer.Context,
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    model: ModelOpt = None,
    reranker: RerankerOpt = None,
    golden: GoldenOpt = None,
    k: KOpt = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", help="Hits recorded per query (default: the largest k).", min=1)] = None,
    retrieval: RetrievalFlags = RetrievalFlags(),
    format: EvalFormatOpt = "text",
    no_history: Annotated[bool, typer.Option(
        "--no-history", help="Neither read nor write the history: no diff, no gate.")] = False,
    no_diff: Annotated[bool, typer.Option(
        "--no-diff", help="hides the diff only; --fail-on-regression still compares")] = False,
    no_color: NoColorOpt = False,
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression",
        help="Exit 1 when a metric fell by more than [eval].regression_threshold against the "
             "previous compatible run (the history is saved first). With --baseline, or when "
             "no stored run has identical settings: exit 1 when the gate metric fell by more "
             "than --max-drop and is significantly worse (paired randomization p < 0.05, as "
             "`eval compare` shows it).")] = False,
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", help="Compare with this baseline file whatever the settings; the "
                           "report names every setting that differs.")] = None,
    save_baseline: Annotated[Path | None, typer.Option(
        "--save-baseline", help="Write this run as a baseline file (commit it).")] = None,
    max_drop: Annotated[float, typer.Option(
        "--max-drop", min=0.0, max=1.0,
        help="Largest tolerated drop of the gate metric against a baseline (0-1).")] = 0.01,
    ablate: Annotated[bool, typer.Option(
        "--ablate", help="Score the configuration with each part switched (full-text legs, "
                         "vector leg, MMR, min_score, reranker): paired Δ, CI, p50/p95 "
                         "latency. Reads and writes no history.")] = False,
    topics: Annotated[Path | None, typer.Option(
        "--topics", help="TREC topics file (qid<TAB>query or <top> blocks); --golden is then a "
                         "TREC qrels file.")] = None,
    trec_run: Annotated[Path | None, typer.Option(
        "--trec-run", help="Also write the hits as a TREC run file (trec_eval, ranx).")] = None,
    gate_metric: Annotated[str | None, typer.Option(
        "--gate-metric", help="Metric the baseline gate judges: recall@K, mrr or ndcg@K "
                              "(default: nDCG at the largest k).")] = None,
    report: ReportOpt = None,
    verbose_flag: VerboseOpt = False,
) -> None:
    """Score retrieval against a golden query file and compare with the previous run.

    Examples:

    * `groove eval --kb-path ~/notes`
    * `groove eval --kb-path ~/notes --save-baseline eval-baseline.json`
    * `groove eval --kb-path ~/notes --baseline eval-baseline.json --fail-on-regression`   (in CI)
    * `groove eval compare eval-baseline.json 0 --kb-path ~/notes`   (baseline vs newest run)
    * `groove eval --kb-path ~/notes --report html eval.html`   (history and per-query plots)
    """
    if ctx.invoked_subcommand is not None:  # `groove eval compare …`
        return
    from groove_cli.api import Index

    # an ablation is no eval run: it has no testcases for JUnit
    fmt = check_format(format, ("text", "json", "markdown") if ablate
                       else ("text", "json", "junit", "markdown"))
    verbose(verbose_flag)
    pictures = run_core(lambda: report_target(report))
    drawn: dict[str, Any] = {}  # what the report draws besides the run: the stored runs, baseline

    def run() -> EvalReport | dict[str, Any]:
        flags = retrieval.config_flags()
        flags.update(kb_flags(kb_path, model=model, reranker=reranker))
        paths = resolve_paths(ctx, flags, kb_required=True)
        index = Index(paths.settings, paths.kb, paths.db)
        if ablate:
            if baseline or save_baseline or trec_run or fail_on_regression:
                raise UsageError("--ablate cannot be combined with --baseline, --save-baseline, "
                                 "--trec-run or --fail-on-regression")
            return index.ablate(golden, k=k, limit=limit, topics=topics)
        result = index.evaluate(golden, k=k, limit=limit, history=not no_history,
                                no_diff=no_diff, fail_on_regression=fail_on_regression,
                                baseline=baseline, save_baseline=save_baseline,
                                max_drop=max_drop, gate_metric=gate_metric, topics=topics,
                                trec_run=trec_run)
        if pictures is not None:
            drawn["history"] = [] if no_history else index.history()
            drawn["baseline"] = index.baseline(baseline) if baseline else None
        return result

    outcome = run_core(run)
    if isinstance(outcome, dict):
        output.print_ablation(outcome, fmt)
        if pictures is not None:
            from groove_cli.render.eval_pictures import write_ablation_report

            run_core(lambda: write_ablation_report(*pictures, outcome))
        return
    messages.replay(outcome.messages)
    try:
        output.print_eval(outcome, fmt, no_color=no_color, gated=fail_on_regression)
    except ReaderGone:  # `eval … | head`: a failing gate still fails (failures.py)
        if outcome.regression_error:
            raise typer.Exit(1) from None
        raise
    if pictures is not None:  # before the gate's exit: a failed gate's pictures matter most
        from groove_cli.render.eval_pictures import write_eval_report

        run_core(lambda: write_eval_report(*pictures, outcome, drawn["history"],
                                           drawn["baseline"]))
    if outcome.regression_error:
        messages.error(outcome.regression_error)
        raise typer.Exit(1)


@eval_app.command("compare")
def eval_compare_cmd(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(
        metavar="A", help="Run A: a baseline file, or a history run (0 = newest, 1 = the one "
                          "before: up to three digits; or a timestamp prefix such as 2026).")],
    b: Annotated[str, typer.Argument(metavar="B", help="Run B, compared with A (Δ = B − A).")],
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    format: CompareFormatOpt = "text",
    gate_metric: Annotated[str | None, typer.Option(
        "--gate-metric", help="The metric the CI gate judges, marked with the gate's verdict "
                              "(default: nDCG at the largest shared k).")] = None,
) -> None:
    """Compare two eval runs metric by metric: paired CIs and Holm-corrected p-values, and the
    gate metric judged by the CI gate's own rule.

    Examples:

    * `groove eval compare eval-baseline.json 0 --kb-path ~/notes`
    * `groove eval compare 1 0 --kb-path ~/notes --format markdown`
    """
    from groove_cli.api import Index

    fmt = check_format(format, ("text", "json", "markdown"))

    def run() -> dict[str, Any]:
        paths = resolve_paths(ctx, kb_flags(kb_path), kb_required=True, announce=False)
        return Index(paths.settings, paths.kb, paths.db).compare(a, b, gate_metric=gate_metric)

    output.print_compare(run_core(run), fmt)


def tune_cmd(
    ctx: typer.Context,
    kb_path: KbOpt = None,
    collection: CollectionOpt = None,
    golden: GoldenOpt = None,
    model: ModelOpt = None,
    space: Annotated[str | None, typer.Option(
        "--space", help="Grid to sweep (default: the knobs of the fusion in use, "
                        "fusion-method under score fusion, fusion under RRF): fusion (RRF: "
                        "rrf_k x bm25 weights), retrieval "
                        "(RRF: vector/fts weight ratio x cjk_weight x min_score) or "
                        "fusion-method (the built-in score fusion vs RRF, score fusion at "
                        "one score_alpha, and the length rule at narrower or wider word "
                        "counts, x score_cjk_weight); feedback (vector pseudo-relevance "
                        "feedback's vector_beta, off included), per-note (hits per note, "
                        "no cap included); "
                        "calibration refits the relevance model on the golden set.")] = None,
    k: Annotated[str | None, typer.Option(
        "--k", help="Comma list of cut-offs (0s dropped, 5 always added).")] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", help="Hits per query (default: the largest k).", min=1)] = None,
    format: TuneFormatOpt = "text",
    no_color: NoColorOpt = False,
    write: Annotated[bool, typer.Option(
        "--write", help="Apply an adopted recommendation to groove.toml in place.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="With --write: write even when the verdict is keep-defaults (or, with "
                        "--space calibration, when the refit is no better calibrated).")] = False,
    report: ReportOpt = None,
    verbose_flag: VerboseOpt = False,
) -> None:
    """Sweep the fusion knobs with nested cross-validation; recommend only a real gain.

    Deltas are measured against the built-in defaults. A change is adopted only when its
    held-out gain is above 0.02 nDCG@5, above 3x its paired standard error, stable across
    folds, and costs no recall or MRR.

    Examples: `groove tune --kb-path ~/notes --write`;
    `groove tune --kb-path ~/notes --report html tune.html` (the sweep as pictures)
    """
    from groove_cli.api import Index
    from groove_cli.render.progress import tune_progress

    fmt = check_format(format, ("text", "json", "markdown"))
    grid_space = choice("--space", space, (*_SPACES, "calibration"))
    verbose(verbose_flag)
    pictures = run_core(lambda: report_target(report))
    if grid_space == "calibration":
        if pictures is not None:
            run_core(lambda: _no_calibration_pictures())
        cli_commands.calibrate_cmd(ctx, kb_path, golden, model, fmt, write, force)
        return

    def run() -> TuneReport:
        paths = resolve_paths(ctx, kb_flags(kb_path, model=model), kb_required=True)
        index = Index(paths.settings, paths.kb, paths.db)
        with tune_progress() as bar:
            return index.tune(golden, space=_SPACES[grid_space] if grid_space else None, k=k,
                              limit=limit, write=write, force=force, progress=bar,
                              config_flag=global_options(ctx).config,
                              new_config_folder=Path.cwd())

    outcome = run_core(run)
    output.print_tune(outcome, fmt, full=verbose_flag)
    if pictures is not None:
        from groove_cli.render.tune_pictures import write_tune_report

        run_core(lambda: write_tune_report(*pictures, outcome))


def report_target(report: tuple[str, str] | None) -> tuple[ReportKind, str] | None:
    """`--report KIND FILE` checked before any work: the kind, and a FILE the output writer
    accepts (a usage error otherwise)."""
    if report is None:
        return None
    from groove_cli.outfile import output_kind
    from groove_cli.render.pictures import report_kind

    kind = report_kind(report[0])
    output_kind(report[1], "--report")
    return kind, report[1]


def _no_calibration_pictures() -> None:
    raise UsageError("--report draws the grid sweeps; --space calibration has none",
                     hint="use --space fusion, retrieval, fusion-method, feedback or "
                          "per-note with --report")
