#!/usr/bin/env python3
"""Index memory and honest progress (issue 46 item 2), default model, one documentation book.

    .venv/bin/python bench/bench_index_memory.py --book-git DIR   (or GROOVE_BOOK_GIT=DIR)
    .venv/bin/python bench/bench_index_memory.py --docs DIR       (or GROOVE_DOCS=DIR)
        [--repeats 2] [--no-shapes] [--no-variants]

The corpus: The Rust Programming Language (`rust-lang/book`, its `src/*.md` at BOOK_COMMIT:
112 chapters with `##`–`####` sections, code blocks and a few very long sections), unpacked
from a git copy of that repository (`--book-git`: its git directory, e.g. what the `fetch`
tool gives for github:rust-lang/book) into bench/work/index_memory/book/ with `git archive`;
never committed. `--docs` indexes any folder of Markdown instead (the results then record its
file count and a digest of its content, not its path).

1. **Batch shapes** (`--no-shapes` skips): the bare model run (`Embedder.runtime.run` on
   `pad_batch` rows of real text from the book, cut to the width) for n inputs of L tokens,
   each shape in a fresh process (rows of the book's tokens, `<s>` and `</s>` around them):
   that process's peak RSS (wait4) and the model's time per
   padded token (median of the timed runs after one warm-up). This is what the budget
   (`BATCH_BUDGET`, groove_cli/models/runtime.py) rests on: memory grows with n × L and
   n × L², time per token does not shrink with bigger batches.
2. **Index runs**: `groove index` from scratch, a child process timed from start to exit,
   peak RSS from wait4, every stderr line with its time (not a terminal: the progress lines
   of cli.md §4). Interleaved with **bare embedder** processes on the same inputs (the
   chunks' embedding inputs as the index stored them, read from its `chunks` table, and the
   extra pieces of the chunks longer than the window, as the index embeds them:
   `Embedder.embed_passages` + `piece_rows` + `embed_rows`, model load excluded from its
   embedding time): index, bare, variant (3.), bare, index, bare, …; each index run is
   compared with the mean of the bare runs next to it (the shared machine's speed drifts),
   the verdict on the mean over the chosen budget's runs. Throughput ratio = bare
   embedding seconds ÷ index wall seconds (the index's whole run, process start, phase 1 and
   model load included) — target ≥ 0.9; peak RSS target ≤ 1 GB (10⁹ bytes).
3. **Budget variants** (`--no-variants` skips): the same index run with the checked-out code
   copied to a temporary folder and only `BATCH_BUDGET` changed — the budget before issue 46
   (16,384 padded tokens, no attention cap) and one twice as wide as the chosen one — for
   their peak RSS and time.
4. **Progress honesty**, from the index runs' lines: each `embedded …, ~T left` line's ETA
   against the time the run actually still took (until its `Done` line), and beside it the
   ETA the former rule (chunks left at chunks per second since `Embedding N chunks...`)
   would have printed at the same moment; and how many lines repeated the line before them.

Writes bench/results/index_memory.json and index_memory.md.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import (
    DEFAULT_MODEL,
    GROOVE,
    ROOT,
    WORK,
    empty_config,
    load_average,
    machine,
    machine_line,
    median,
    package_versions,
    verdict,
    write_results,
)
from bench_index import duration_seconds, parse_done

BOOK_REPO = "rust-lang/book"
BOOK_COMMIT = "917544888a55e4da7109bdba8c88c893c0da70f4"
BOOK_FOLDER = "src"
HERE = WORK / "index_memory"
RSS_TARGET_BYTES = 1_000_000_000
THROUGHPUT_TARGET = 0.9
SHAPES = ((1, 512), (4, 512), (8, 512), (16, 512), (32, 512), (8, 256), (16, 256), (32, 256),
          (32, 64), (64, 64), (256, 64), (128, 128))
"""(inputs, tokens each) of the bare model runs: the chosen budget's largest at 512, 256 and
64 tokens, and what wider budgets allowed (the one before issue 46: 32 × 512, 256 × 64)."""
SHAPE_TOKENS = 32_768
"""Padded tokens timed per shape (at least two runs)."""
VARIANTS = {"before issue 46: 16,384 tokens, no attention cap": (16_384, 1 << 62),
            "4,096 tokens, 8 × 512² cells": (4_096, 8 * 512 * 512)}
BUDGET_LINE = re.compile(r"^BATCH_BUDGET = BatchBudget\(.*\)$", re.MULTILINE)
LAUNCH = ("from groove_cli import cli; import sys; "
          "entry = getattr(cli, 'main', None) or cli.app; sys.exit(entry())")
EMBEDDED = re.compile(r"embedded ([\d,]+) chunks, ([\d,]+)/([\d,]+) tokens"
                      r"(?:, ([\d.,]+) tokens/s)?(?:, ~(.+) left)?")
EMBEDDING = re.compile(r"Embedding ([\d,]+) chunks\.\.\.")

SHAPE_SCRIPT = r"""
import json, resource, statistics, sys, time
from pathlib import Path
from groove_cli.engine import Embedder, default_models_dir, pad_batch, resolve_model
n, width, timed_tokens, docs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
embedder = Embedder.load(resolve_model(sys.argv[5], default_models_dir(), offline=True))
loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
text = " ".join(p.read_text(encoding="utf-8") for p in sorted(Path(docs).rglob("*.md")))
stream, first = [], None
for at in range(0, len(text), 100_000):  # a piece_rows call gives at most 255 rows
    more, _ = embedder.piece_rows("", text[at : at + 100_000])
    first = first or more[0]
    stream += [token for row in more for token in row[1:-1]]  # without <s> and </s>
    if len(stream) >= n * width:
        break
inner = width - 2
rows = [first[:1] + stream[k * inner : (k + 1) * inner] + first[-1:] for k in range(n)]
assert all(len(row) == width for row in rows), (n, width)
ids, mask = pad_batch(rows, embedder.runtime.pad_id)
feeds = {"input_ids": ids, "attention_mask": mask}
if "token_type_ids" in embedder.runtime.input_names:
    feeds["token_type_ids"] = 0 * ids
out = [embedder.settings.output]
embedder.runtime.run(out, feeds)
times = []
for _ in range(max(2, timed_tokens // (n * width))):
    start = time.perf_counter()
    embedder.runtime.run(out, feeds)
    times.append(time.perf_counter() - start)
print(json.dumps({"loaded_rss_bytes": loaded,
                  "ms_per_token": 1000 * statistics.median(times) / (n * width),
                  "runs": len(times)}))
"""

BARE_SCRIPT = r"""
import json, resource, sys, time
from groove_cli.engine import Embedder, default_models_dir, resolve_model
items = json.loads(open(sys.argv[1], encoding="utf-8").read())
start = time.perf_counter()
embedder = Embedder.load(resolve_model(sys.argv[2], default_models_dir(), offline=True))
loaded = time.perf_counter()
loaded_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
texts = [text for text, _ in items]
embedder.embed_passages(texts)
lengths = embedder.input_lengths(texts, "passage")
extra = []
for (text, content), n in zip(items, lengths):
    if n > embedder.max_length and content:
        extra += embedder.piece_rows(embedder.settings.passage_prefix, content)[0]
embedder.embed_rows(extra)
done = time.perf_counter()
tokens = sum(min(n, embedder.max_length) for n in lengths) + sum(map(len, extra))
print(json.dumps({"load_s": loaded - start, "embed_s": done - loaded, "tokens": tokens,
                  "extra_pieces": len(extra), "loaded_rss_bytes": loaded_rss}))
"""


# --------------------------------------------------------------------------- the corpus


def book_docs(git_dir: Path) -> Path:
    """`src/` of the book at BOOK_COMMIT, unpacked under bench/work (once)."""
    target = HERE / "book"
    stamp = target / ".commit"
    if not (stamp.is_file() and stamp.read_text(encoding="utf-8") == BOOK_COMMIT):
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", BOOK_COMMIT,
                                  BOOK_FOLDER], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        stamp.write_text(BOOK_COMMIT, encoding="utf-8")
    return target / BOOK_FOLDER


def corpus_record(docs: Path, book: bool) -> dict[str, Any]:
    """What was indexed, without a machine path: the book's commit, or a digest of a folder."""
    files = sorted(docs.rglob("*.md"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(docs).as_posix().encode() + b"\0" + path.read_bytes())
    record: dict[str, Any] = {"files": len(files), "bytes": sum(p.stat().st_size for p in files),
                              "sha256": digest.hexdigest(),
                              "h4_sections": sum(line.startswith("#### ")
                                                 for p in files for line in
                                                 p.read_text(encoding="utf-8").splitlines())}
    if book:
        record.update({"repo": BOOK_REPO, "commit": BOOK_COMMIT, "folder": BOOK_FOLDER})
    else:
        record["folder"] = docs.name
    return record


# --------------------------------------------------------------------------- processes


def timed_child(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `cmd` to its end: wall s, CPU s, peak RSS bytes (wait4), stdout, and every stderr
    line with the seconds since the start at which it came."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tempfile.gettempdir())
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[tuple[float, str]] = []
    out: list[str] = []

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.perf_counter() - start, line.rstrip("\n")))

    def read_out() -> None:
        assert proc.stdout is not None
        out.append(proc.stdout.read())

    readers = [threading.Thread(target=read_err), threading.Thread(target=read_out)]
    for reader in readers:
        reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    for reader in readers:
        reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                           + "\n".join(line for _, line in lines[-30:]))
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_bytes": usage.ru_maxrss * 1024, "stdout": "".join(out), "lines": lines}


def shape(n: int, width: int, docs: Path) -> dict[str, Any]:
    run = timed_child([sys.executable, "-c", SHAPE_SCRIPT, str(n), str(width),
                       str(SHAPE_TOKENS), str(docs), DEFAULT_MODEL])
    return {"n": n, "width": width, "padded_tokens": n * width,
            "attention_cells": n * width * width, "peak_rss_bytes": run["peak_rss_bytes"],
            **json.loads(run["stdout"])}


def remove_index(db: Path) -> None:
    for path in db.parent.glob(db.name + "*"):
        path.unlink()


def index_run(kb: Path, db: Path, source: Path | None = None) -> dict[str, Any]:
    """`groove index` from scratch: the installed command, or the code in `source`."""
    remove_index(db)
    args = ["--config", str(empty_config(HERE)), "--db", str(db), "index", "--kb-path", str(kb)]
    if source is None:
        cmd, env = [str(GROOVE), *args], None
    else:
        cmd = [sys.executable, "-c", LAUNCH, *args]
        env = dict(os.environ, PYTHONPATH=str(source))
    load = load_average()
    run = timed_child(cmd, env)
    stderr = "\n".join(line for _, line in run["lines"])
    _, docs, chunks = parse_done(stderr)
    return {"wall_s": run["wall_s"], "cpu_s": run["cpu_s"],
            "peak_rss_bytes": run["peak_rss_bytes"], "documents": docs, "chunks": chunks,
            "load_average_before": load, "progress": progress_honesty(run["lines"]),
            "stderr_tail": [line for _, line in run["lines"][-3:]]}


def bare_run(inputs: Path) -> dict[str, Any]:
    load = load_average()
    run = timed_child([sys.executable, "-c", BARE_SCRIPT, str(inputs), DEFAULT_MODEL])
    return {"process_wall_s": run["wall_s"], "cpu_s": run["cpu_s"],
            "peak_rss_bytes": run["peak_rss_bytes"], "load_average_before": load,
            **json.loads(run["stdout"])}


def stored_inputs(db: Path, target: Path) -> None:
    """The chunks' embedding inputs as the index stored them (off context mode: the content,
    or the heading when the content is empty), with their content, written to `target`."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT heading, content FROM chunks ORDER BY id").fetchall()
    finally:
        con.close()
    items = [[content or heading or "", content] for heading, content in rows]
    target.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")


def budget_variant(folder: Path, tokens: int, attention: int) -> Path:
    """The checked-out groove_cli copied into `folder` with only BATCH_BUDGET changed."""
    shutil.copytree(ROOT / "groove_cli", folder / "groove_cli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    runtime = folder / "groove_cli" / "models" / "runtime.py"
    text = runtime.read_text(encoding="utf-8")
    changed, count = BUDGET_LINE.subn(
        f"BATCH_BUDGET = BatchBudget(tokens={tokens}, attention={attention})", text)
    if count != 1:
        raise RuntimeError(f"no single BATCH_BUDGET line in {runtime}")
    runtime.write_text(changed, encoding="utf-8")
    return folder


# --------------------------------------------------------------------------- progress


def progress_honesty(lines: list[tuple[float, str]]) -> dict[str, Any]:
    """Each phase-2 progress line's ETA against the seconds the run still took (to its `Done`
    line), beside the ETA the chunk-counting rule would have printed then; and repeats."""
    done_at = next(t for t, line in lines if line.startswith("Done in "))
    began = next((t for t, line in lines if EMBEDDING.fullmatch(line)), None)
    total_chunks = next((int(m.group(1).replace(",", "")) for _, line in lines
                         if (m := EMBEDDING.fullmatch(line))), 0)
    points: list[dict[str, Any]] = []
    for t, line in lines:
        match = EMBEDDED.fullmatch(line)
        if match is None or match.group(5) is None or began is None:
            continue
        chunks = int(match.group(1).replace(",", ""))
        tokens, total = (int(match.group(i).replace(",", "")) for i in (2, 3))
        actual = done_at - t
        chunk_eta = ((total_chunks - chunks) * (t - began) / chunks) if chunks else None
        points.append({"at_s": round(t, 2), "tokens_done_share": round(tokens / total, 4),
                       "chunks_done_share": round(chunks / total_chunks, 4),
                       "actual_left_s": round(actual, 2),
                       "eta_s": duration_seconds(match.group(5)),
                       "chunk_rule_eta_s": None if chunk_eta is None else round(chunk_eta, 2)})
    repeats = sum(a[1] == b[1] for a, b in itertools.pairwise(lines))

    def ratios(key: str) -> list[float]:
        return [p[key] / p["actual_left_s"] for p in points
                if p[key] is not None and p["actual_left_s"] > 0]

    return {"lines": len(lines), "repeated_lines": repeats, "points": points,
            "eta_over_actual": ratios("eta_s"),
            "chunk_rule_eta_over_actual": ratios("chunk_rule_eta_s")}


# --------------------------------------------------------------------------- report


def mb(value: float) -> str:
    return f"{value / 1e6:,.0f} MB"


def markdown(data: dict[str, Any]) -> str:
    corpus = data["corpus"]
    what = (f"`{corpus['repo']}` `{corpus['folder']}/` at `{corpus['commit'][:12]}`"
            if "repo" in corpus else f"a folder `{corpus['folder']}`")
    summary = data["summary"]
    lines = [
        "# Index memory and honest progress (issue 46 item 2)",
        "",
        f"Generated by `bench/bench_index_memory.py`. {machine_line(data['machine'])} "
        f"Corpus: {what} ({corpus['files']} Markdown files, {corpus['bytes']:,} bytes, "
        f"{corpus['h4_sections']} `####` headings), default model `{DEFAULT_MODEL}`, "
        f"built-in settings. Budget: {data['budget']['tokens']:,} padded tokens and "
        f"{data['budget']['attention']:,} attention cells (n × L²) per model run "
        "(`BATCH_BUDGET`, groove_cli/models/runtime.py).",
        "",
        f"- **Peak RSS of `groove index`: {mb(summary['peak_rss_bytes_max'])}** (largest of "
        f"{summary['index_runs']} runs) — target ≤ {mb(RSS_TARGET_BYTES)}, "
        f"{verdict(summary['rss_met'])}. The bare embedder process on the same inputs: "
        f"{mb(summary['bare_peak_rss_bytes_max'])}.",
        f"- **Throughput: {summary['throughput_ratio']:.3f}× the bare embedder** (mean over "
        f"the runs; range {summary['throughput_ratio_range'][0]:.3f}–"
        f"{summary['throughput_ratio_range'][1]:.3f}): bare embedding seconds ÷ the index "
        "run's whole wall time, process start, phase 1 and model load included — target ≥ "
        f"{THROUGHPUT_TARGET}, {verdict(summary['throughput_met'])}. Against the bare "
        "embedder's whole process (start, load, embedding, exit): "
        f"{summary['process_ratio']:.3f}×.",
        f"- **ETA**: the printed ETA ÷ the time the run still took, over "
        f"{summary['eta_points']} progress lines: median {summary['eta_ratio_median']:.2f} "
        f"(range {summary['eta_ratio_range'][0]:.2f}–{summary['eta_ratio_range'][1]:.2f}); "
        "the former rule (chunks left at chunks per second) at the same moments: median "
        f"{summary['chunk_eta_ratio_median']:.2f} (range "
        f"{summary['chunk_eta_ratio_range'][0]:.2f}–{summary['chunk_eta_ratio_range'][1]:.2f}"
        f"). Lines that repeated the line before them: {summary['repeated_lines']}.",
        "",
    ]
    if data.get("shapes"):
        lines += ["## 1. Bare model runs by batch shape", "",
                  "One process per shape: its peak RSS (model loaded: "
                  f"{mb(data['shapes'][0]['loaded_rss_bytes'])}) and the model's time per "
                  "padded token. ✓ = within the budget.", "",
                  "| n × L | padded tokens | n × L² | peak RSS | ms / token | budget |",
                  "|---|---:|---:|---:|---:|:-:|"]
        for row in data["shapes"]:
            fits = row["padded_tokens"] <= data["budget"]["tokens"] and (
                row["attention_cells"] <= data["budget"]["attention"])
            lines.append(f"| {row['n']} × {row['width']} | {row['padded_tokens']:,} | "
                         f"{row['attention_cells']:,} | {mb(row['peak_rss_bytes'])} | "
                         f"{row['ms_per_token']:.3f} | {'✓' if fits else ''} |")
        lines.append("")
    lines += ["## 2. Index runs against the bare embedder", "",
              "| run | budget | wall s | CPU s | peak RSS | chunks | ratio to bare |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for run in data["runs"]:
        if run["kind"] == "bare":
            lines.append(f"| bare embedder | — | {run['embed_s']:.1f} (+{run['load_s']:.1f} "
                         f"load; process {run['process_wall_s']:.1f}) | {run['cpu_s']:.1f} | "
                         f"{mb(run['peak_rss_bytes'])} | {data['inputs']} "
                         f"(+{run['extra_pieces']} pieces, {run['tokens']:,} tokens) | — |")
        else:
            ratio = "" if run.get("ratio") is None else f"{run['ratio']:.3f}"
            lines.append(f"| index | {run['budget_label']} | {run['wall_s']:.1f} | "
                         f"{run['cpu_s']:.1f} | {mb(run['peak_rss_bytes'])} | "
                         f"{run['chunks']} | {ratio} |")
    lines += ["", "## 3. Progress lines", "",
              "Per line of the chosen budget's runs: share of tokens done, the ETA printed, "
              "the ETA the chunk rule would have printed, the seconds actually left.", "",
              "| run | tokens done | chunks done | ETA printed s | chunk-rule ETA s | "
              "actually left s |", "|---|---:|---:|---:|---:|---:|"]
    for i, run in enumerate(r for r in data["runs"] if r["kind"] == "index" and r["chosen"]):
        for p in run["progress"]["points"]:
            chunk_eta = "" if p["chunk_rule_eta_s"] is None else f"{p['chunk_rule_eta_s']:.0f}"
            lines.append(f"| {i + 1} | {p['tokens_done_share']:.0%} | "
                         f"{p['chunks_done_share']:.0%} | {p['eta_s']:.0f} | {chunk_eta} | "
                         f"{p['actual_left_s']:.0f} |")
    lines += ["", f"Command: `.venv/bin/python bench/bench_index_memory.py --book-git DIR "
              f"--repeats {data['repeats']}`.", ""]
    return "\n".join(lines)


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    chosen = [r for r in runs if r["kind"] == "index" and r["chosen"]]
    bare = [r for r in runs if r["kind"] == "bare"]
    ratios = [r["ratio"] for r in chosen if r.get("ratio") is not None]
    eta = [x for r in chosen for x in r["progress"]["eta_over_actual"]]
    chunk_eta = [x for r in chosen for x in r["progress"]["chunk_rule_eta_over_actual"]]
    peak = max(r["peak_rss_bytes"] for r in chosen)
    mean_ratio = sum(ratios) / len(ratios)
    return {
        "index_runs": len(chosen), "peak_rss_bytes_max": peak,
        "rss_met": peak <= RSS_TARGET_BYTES,
        "bare_peak_rss_bytes_max": max(r["peak_rss_bytes"] for r in bare),
        "throughput_ratio": mean_ratio,
        "throughput_ratio_range": [min(ratios), max(ratios)],
        "throughput_met": mean_ratio >= THROUGHPUT_TARGET,
        "process_ratio": sum(r["process_ratio"] for r in chosen if "process_ratio" in r)
        / max(1, sum("process_ratio" in r for r in chosen)),
        "eta_points": len(eta), "eta_ratio_median": median(eta),
        "eta_ratio_range": [min(eta, default=float("nan")), max(eta, default=float("nan"))],
        "chunk_eta_ratio_median": median(chunk_eta),
        "chunk_eta_ratio_range": [min(chunk_eta, default=float("nan")),
                                  max(chunk_eta, default=float("nan"))],
        "repeated_lines": sum(r["progress"]["repeated_lines"] for r in runs
                              if r["kind"] == "index"),
    }


def compare_to_bare(runs: list[dict[str, Any]]) -> None:
    """Each index run against the mean of the bare runs next to it (before and after)."""
    for i, run in enumerate(runs):
        if run["kind"] != "index":
            continue
        around = [r for r in (runs[i - 1] if i else None,
                              runs[i + 1] if i + 1 < len(runs) else None)
                  if r is not None and r["kind"] == "bare"]
        if not around:
            continue
        bare_s = sum(r["embed_s"] for r in around) / len(around)
        process_s = sum(r["process_wall_s"] for r in around) / len(around)
        run["bare_embed_s"] = bare_s
        run["ratio"] = bare_s / run["wall_s"]
        run["process_ratio"] = process_s / run["wall_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--book-git", type=Path, default=os.environ.get("GROOVE_BOOK_GIT"),
                        help="git directory of a copy of rust-lang/book (env GROOVE_BOOK_GIT)")
    parser.add_argument("--docs", type=Path, default=os.environ.get("GROOVE_DOCS"),
                        help="a folder of Markdown to index instead (env GROOVE_DOCS)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-shapes", action="store_true")
    parser.add_argument("--no-variants", action="store_true")
    args = parser.parse_args()
    if args.docs is None and args.book_git is None:
        parser.error("pass --book-git (a git copy of rust-lang/book) or --docs (a Markdown folder)")
    HERE.mkdir(parents=True, exist_ok=True)
    docs = args.docs.resolve() if args.docs else book_docs(args.book_git)
    from groove_cli.engine import BATCH_BUDGET

    info = machine()
    shapes = [] if args.no_shapes else [shape(n, width, docs) for n, width in SHAPES]
    db = HERE / "index.db"
    inputs = HERE / "inputs.json"
    inputs.unlink(missing_ok=True)
    runs: list[dict[str, Any]] = []

    variants = list(({} if args.no_variants else VARIANTS).items())
    # chosen, bare, variant, bare, chosen, bare, variant, bare, …: every index run has a bare
    # run beside it, and the variants come between the chosen budget's runs
    plan: list[tuple[str, tuple[int, int] | None]] = []
    for repeat in range(max(args.repeats, 1)):
        plan += [("chosen", None), ("bare", None)]
        if repeat < len(variants):
            plan += [variants[repeat], ("bare", None)]
    for variant in variants[max(args.repeats, 1):]:
        plan += [variant, ("bare", None)]
    for label, budget in plan:
        if label == "bare":
            if not runs or runs[-1]["kind"] != "bare":
                runs.append({"kind": "bare", **bare_run(inputs)})
        elif budget is None:
            runs.append({"kind": "index", "chosen": True, "budget_label": "chosen",
                         **index_run(docs, db)})
            if not inputs.exists():
                stored_inputs(db, inputs)
        else:
            with tempfile.TemporaryDirectory(prefix="groove-budget-") as folder:
                source = budget_variant(Path(folder), *budget)
                runs.append({"kind": "index", "chosen": False, "budget_label": label,
                             **index_run(docs, db, source)})
    compare_to_bare(runs)
    data = {
        "machine": info, "packages": package_versions(),
        "corpus": corpus_record(docs, args.docs is None), "model": DEFAULT_MODEL,
        "budget": {"tokens": BATCH_BUDGET.tokens, "attention": BATCH_BUDGET.attention},
        "targets": {"peak_rss_bytes": RSS_TARGET_BYTES, "throughput_ratio": THROUGHPUT_TARGET},
        "repeats": args.repeats,
        "inputs": len(json.loads(inputs.read_text(encoding="utf-8"))),
        "shapes": shapes, "runs": runs,
        "summary": summarise(runs), "load_average_after": load_average(),
    }
    json_path, md_path = write_results("index_memory", data, markdown(data))
    print(f"wrote {json_path} and {md_path}")


if __name__ == "__main__":
    main()
