"""Shared output helpers: JSON documents, plain lines, `config show`, and each command's report."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from groove_cli import messages
from groove_cli.config import SCHEMA, SPECS, KeySpec, Settings
from groove_cli.dburl import mask
from groove_cli.results import dumps_json
from groove_cli.text import printable
from groove_cli.text.durations import human_duration

if TYPE_CHECKING:
    from groove_cli.evaluate.report import EvalReport
    from groove_cli.evaluate.tune.report import TuneReport
    from groove_cli.index import IndexReport
    from groove_cli.models import ModelStatus, ResolvedModel
    from groove_cli.status import DoctorReport, StatusReport


def use_color(stream: TextIO, no_color: bool = False) -> bool:
    """ANSI colour only on a terminal, without --no-color and without NO_COLOR (cli.md §2)."""
    return not no_color and "NO_COLOR" not in os.environ and stream.isatty()


def print_json(document: Any) -> None:
    sys.stdout.write(dumps_json(document))
    sys.stdout.flush()


def print_eval(report: EvalReport, fmt: str, *, no_color: bool, gated: bool) -> None:
    """The eval report as text, JSON, JUnit or Markdown (the Markdown also goes to
    $GITHUB_STEP_SUMMARY when set); stdout is flushed so the report precedes a gate error."""
    from groove_cli.render.eval_formats import render_ci_format

    ci_document = render_ci_format(report, fmt, gated=gated)
    if fmt == "json":
        print_json(report.to_json())
        return
    if ci_document:
        sys.stdout.write(ci_document)
    else:
        from groove_cli.render.eval_report import render_eval_text

        sys.stdout.write(render_eval_text(
            report.full_json(), threshold=report.threshold, show_diff=report.show_diff,
            color=use_color(sys.stdout, no_color), incompatibility=report.incompatibility))
        if report.comparison is not None:
            from groove_cli.render.gate import render_comparison_text

            sys.stdout.write(render_comparison_text(report.comparison))
    sys.stdout.flush()


def print_ablation(report: dict[str, Any], fmt: str) -> None:
    """`eval --ablate` as text, JSON or Markdown (the Markdown also to the step summary)."""
    from groove_cli.render.ablate import render_ablation_markdown, render_ablation_text
    from groove_cli.render.markdown import append_step_summary

    markdown = render_ablation_markdown(report)
    append_step_summary(markdown)
    if fmt == "json":
        print_json(report)
    else:
        sys.stdout.write(markdown if fmt == "markdown" else render_ablation_text(report))


def print_compare(report: dict[str, Any], fmt: str) -> None:
    """`eval compare` as text, JSON or Markdown."""
    from groove_cli.render.compare import render_compare_markdown, render_compare_text

    if fmt == "json":
        print_json(report)
    else:
        sys.stdout.write(render_compare_markdown(report) if fmt == "markdown"
                         else render_compare_text(report))


def print_tune(report: TuneReport, fmt: str, *, full: bool = False) -> None:
    """The tune report as JSON, or as text or Markdown rendered from the same document; the
    Markdown also goes to $GITHUB_STEP_SUMMARY when set, whatever the format. Text is a short
    summary unless `full` (`--verbose`) asks for the whole report."""
    from groove_cli.render.markdown import append_step_summary
    from groove_cli.render.tune_markdown import render_tune_markdown

    document = report.to_json()
    markdown = render_tune_markdown(document)
    append_step_summary(markdown)
    if fmt == "json":
        print_json(document)
        return
    from groove_cli.render.tune_report import render_tune_summary, render_tune_text

    if fmt == "markdown":
        sys.stdout.write(markdown)
    else:
        sys.stdout.write((render_tune_text if full else render_tune_summary)(document))


def print_index_done(report: IndexReport) -> None:
    """The `Done` line, or the interrupted line (cli.md §4)."""
    if report.interrupted and report.to_embed:
        messages.progress(f"Interrupted after embedding {report.embedded:,} of "
                          f"{report.to_embed:,} chunks; the index is valid, full-text search "
                          "covers every note and the next run continues from here.")
        return
    if report.interrupted:
        messages.progress(f"Interrupted after {report.processed} of {report.total} files; the "
                          "index is valid and the next run continues from here.")
        return
    messages.progress(
        f"Done in {human_duration(report.elapsed_ms / 1000)}: {report.documents} docs "
        f"({report.updated} updated, {report.renamed} renamed, {report.deleted} deleted, "
        f"{report.skipped} skipped), {report.chunks} chunks")



def print_line(line: str) -> None:
    sys.stdout.write(line + "\n")


def _toml_value(value: object) -> str:
    if value is None:
        return "(unset)"
    return json.dumps(value, ensure_ascii=False)


def _shown(key: str, value: object) -> object:
    """A setting as printed: a store URL without its password."""
    return mask(value) if key == "store.url" and isinstance(value, str) else value


def print_config(settings: Settings, fmt: str,
                 overrides: dict[str, tuple[object, str]] | None = None) -> None:
    """Every setting with its resolved value and source; `overrides` replaces the
    (value, source) of keys that something outside the settings decides (store.url:
    `--db` or GROOVE_DB_URL, config.store_url)."""
    config_path = str(settings.config.path) if settings.config else None
    shown = {spec.key: overrides[spec.key] if overrides and spec.key in overrides
             else (settings[spec.key], settings.source(spec.key)) for spec in SCHEMA}
    if fmt == "json":
        print_json({
            "config_file": config_path,
            "settings": {key: {"value": _shown(key, value), "source": source,
                               **_declared(SPECS[key])}
                         for key, (value, source) in shown.items()},
        })
        return
    print_line(f"# config file: {config_path or 'none (built-in defaults)'}")
    width = max(len(spec.key) for spec in SCHEMA)
    for key, (value, source) in shown.items():
        print_line(f"{key:<{width}} = {_toml_value(_shown(key, value))}  ({source})")


def _declared(spec: KeySpec) -> dict[str, object]:
    """What the schema declares about a key: its help, its flag, whether it ranks."""
    flag = {"flag": spec.flag} if spec.flag else {}
    return {"help": spec.help, **flag, "ranks": bool(spec.ranks)}


def print_status(report: StatusReport, fmt: str, server: dict[str, Any] | None = None, *,
                 verbose: bool = False) -> None:
    """cli.md §8: text lines or the JSON object; `server` the running `groove serve` of the
    index (pid, address), shown when there is one; `verbose` lists the pending files."""
    if fmt == "json":
        print_json({**report.to_json(), **({"server": server} if server else {})})
        return
    print_line(f"Index: {report.index}")
    print_line(f"KB: {report.kb_path or '-'}")
    print_line(f"Schema version: {report.schema_version}")
    print_line(f"Documents: {report.documents}")
    print_line(f"Chunks: {report.chunks}")
    print_line(f"Model: {report.model_name or '-'} ({report.model_dim} dim, "
               f"max_length {report.model_max_length})")
    print_line(f"Context mode: {report.context_mode}")
    print_line(f"Last indexed: {report.last_indexed or 'never'}")
    if server:
        print_line(f"Server: pid {server['pid']} at {server['address']}")
    if report.pending is not None:
        p = report.pending
        skipped = (f" ({p.skipped} skipped: empty, frontmatter-only or not UTF-8)"
                   if p.skipped else "")
        renamed = f" / {p.renamed} renamed" if p.renamed else ""
        print_line(f"Pending: {p.new} new / {p.changed} changed / {p.deleted} deleted{renamed}"
                   f"{skipped}")
        if verbose:
            for file in p.files:
                moved = ("" if file.previous is None
                         else f" (from {printable(file.previous, keep_newlines=False)})")
                print_line(f"  {file.change}: {printable(file.path, keep_newlines=False)}{moved}")
    if report.pending_vectors:
        print_line(f"Pending vectors: {report.pending_vectors:,} of {report.chunks:,} chunks "
                   "(full-text search covers all; `groove index` embeds the rest)")
    if report.piece_vectors:
        print_line(f"Extra piece vectors: {report.piece_vectors:,} (the text of long chunks "
                   "past the model's window)")
    if report.pieces_switch:
        print_line(f"Vector pieces: {report.pieces_switch}")
    if report.quality_threshold > 0:
        print_line(f"Quality filter (threshold={report.quality_threshold}): "
                   f"{report.quality_passing} passing, {report.quality_below} below threshold")
    if report.knowledge_bases:
        print_line(f"Knowledge bases in this database: {len(report.knowledge_bases)}")
        for name, docs, chunks, last in report.knowledge_bases:
            print_line(f"  {name}: {docs} documents, {chunks} chunks, last indexed {last or 'never'}")


def print_doctor(report: DoctorReport, fmt: str) -> None:
    """cli.md §9: the doctor report."""
    if fmt == "json":
        print_json({
            "documents": report.documents,
            "chunks": report.chunks,
            "findings": [
                {"check": f.check, "severity": f.severity, "summary": f.summary, "count": f.count,
                 "samples": list(f.samples), "remedy": f.remedy}
                for f in report.findings
            ],
            "pending_vectors": report.pending_vectors,
            **({"server": list(report.server)} if report.server else {}),
        })
        return
    print_line(f"groove doctor — {report.documents} document(s), {report.chunks} chunk(s)")
    for fact in report.server:
        print_line(f"Server: {fact}")
    if report.pending_vectors:
        print_line(f"Pending: {report.pending_vectors:,} chunk(s) wait for their vectors (not "
                   "damage: `groove index` embeds them)")
    if not report.findings:
        print_line("No issues found.")
        return
    for f in report.findings:
        print_line(f"[{f.severity}] {f.check}: {f.summary}")
        for sample in f.samples:
            print_line(f"    {sample}")
        if f.count > len(f.samples) and f.samples:
            print_line(f"    ... and {f.count - len(f.samples)} more")
        print_line(f"  fix: {f.remedy}")


def print_models(rows: list[ModelStatus], fmt: str) -> None:
    """`groove models list` (cli.md §10)."""
    if fmt == "json":
        print_json([{"name": r.name, "kind": r.kind, "dim": r.dim, "pooling": r.pooling,
                     "max_length": r.max_length, "status": r.status, "default": r.default}
                    for r in rows])
        return
    width = max(len(r.name) for r in rows) + 2
    print_line(f"{'name':<{width}}{'kind':<10}{'dim':>5}  {'pooling':<8}{'max_len':>8}  status")
    for r in rows:
        mark = "  (default)" if r.default else ""
        print_line(f"{r.name:<{width}}{r.kind:<10}{r.dim or '-':>5}  {r.pooling or '-':<8}"
                   f"{r.max_length:>8}  {r.status}{mark}")


def print_resolved(model: ResolvedModel, fmt: str) -> None:
    """`groove models resolve`: the directory, or the JSON record."""
    if fmt == "json":
        print_json({"name": model.name, "kind": model.kind, "dir": str(model.dir),
                    "source": model.source, "dim": model.settings.dim,
                    "max_length": model.settings.max_length, "sha256": model.sha256})
        return
    print_line(str(model.dir))
