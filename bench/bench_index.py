#!/usr/bin/env python3
"""Indexing benchmark: a 10,000-note synthetic KB and JSQuAD (2,304 documents), default model.

    .venv/bin/python bench/bench_index.py [--reuse] [--notes 10000] [--collections synthetic,jsquad]
        [--repeats 2] [--time-full 10000] [--fts-notes 10000]

1. `groove index` from scratch into `bench/work/<name>/index.db` (JSQuAD: KB = a symlink to
   /work/shared/datasets/jsquad/docs; synthetic: `make_synthetic_kb.py --chunks N
   --sections-per-file 1`, one chunk per note); documents and chunks from the `Done` line must
   equal `groove status --format json`. On runs of their own (`--fts-notes`), as soon as
   phase 1 reports `Full text ready`, a `--mode fts` search for a word of the last note runs:
   the time from the index start until that search answers (with the last note among its
   hits, and `status` counting every note) is the time to the first full-text search (target
   ≤ 30 s for 10,000 notes); each full run below notes when its phase 1 ended.
2. Throughput ratio: indexed chunks/s ÷ the bare embedder's chunks/s on the very same embedding
   inputs (`Embedder.embed_passages`, same model, in this process, model load excluded; each
   input cut at the window, where the index also embeds a long chunk's extra pieces: JSQuAD
   has one) — target ≥ 0.95. Bare, index, bare, index, bare (`--repeats`): each index run
   against the mean of the bare runs around it (the shared machine's speed drifts by ~10 %
   within minutes), the verdict on the mean over the runs; the load average around each
   phase is recorded. No search runs beside these index runs, as none runs beside the bare
   ones. The ratio's ceiling (`floor_seconds`) is measured before them. Beside it, the same
   index runs against a bare embedder *process* (`BARE_SCRIPT`: interpreter start, model
   load, embedding, exit), timed as the index is.
   `--time-full N` indexes an N-note synthetic KB once in full (no bare runs), timed next to
   its phase 1.
3. A no-change re-run: wall time (median of 5 subprocess runs, target ≤ 1 s) and the absence
   of `Loading embedding model` in its stderr.

`--reuse` keeps an existing complete index and skips 1–2 (the re-run part only); the index is
reused by eval_datasets.py and bench_tune.py.

Writes bench/results/index.json and index.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import (
    BENCH,
    DEFAULT_MODEL,
    GROOVE,
    JSQUAD,
    RESULTS,
    Collection,
    GrooveRun,
    load_average,
    machine,
    machine_line,
    median,
    ratio,
    run_groove,
    verdict,
    write_results,
)

from groove_cli.engine import embedding_input, parse_document

RERUNS = 5
DONE_RE = re.compile(r"Done in (\d+)ms: (\d+) docs .*?, (\d+) chunks")
LOADING = "Loading embedding model"
TEXT_READY = "Full text ready"
FTS_TARGET_S = 30.0
THROUGHPUT_TARGET = 0.95


@dataclass(frozen=True, slots=True)
class Synthetic(Collection):
    """`make_synthetic_kb.py` notes of one section each, written once under bench/work."""

    notes: int = 10_000

    @property
    def docs(self) -> Path:
        return self.work / "docs"

    def doc_count(self) -> int:
        return sum(1 for _ in self.docs.rglob("*.md"))

    def prepare_kb(self) -> Path:
        if not self.docs.is_dir():
            subprocess.run([sys.executable, str(BENCH / "make_synthetic_kb.py"), "--chunks",
                            str(self.notes), "--sections-per-file", "1", "--out",
                            str(self.docs)], check=True)
        return Collection.prepare_kb(self)


def last_note_query(kb: Path) -> tuple[str, str]:
    """(KB-relative path of the last note in path order, a distinctive word of its text)."""
    last = max(kb.rglob("*.md"), key=lambda p: p.relative_to(kb).as_posix())
    body = last.read_text(encoding="utf-8").split("---")[-1]
    words = re.findall(r"[A-Za-z]{6,}", body) or [run[:4] for run in re.findall(
        r"[\u3040-\u30ff\u4e00-\u9fff]{4,}", body)]  # Japanese: a 4-character run
    return last.relative_to(kb).as_posix(), max(words, key=len)


def index_with_fts_probe(coll: Collection, *, stop_after: bool = False, search: bool = True
                         ) -> tuple[GrooveRun, dict[str, Any]]:
    """`groove index` from scratch; when phase 1 ends, one `--mode fts` search and a status.
    `stop_after`: then Ctrl-C the run (phase 2 is measured on another collection).
    `search` False: only the time phase 1 ended is noted (a throughput run: see full_index)."""
    rel, word = last_note_query(coll.kb)
    full = [str(GROOVE), "--config", str(coll.config), "--db", str(coll.db), "index",
            "--kb-path", str(coll.kb)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(full, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    assert proc.stderr is not None
    probe: dict[str, Any] = {"query": word, "expected_path": rel}
    lines: list[str] = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith(TEXT_READY) and "text_ready_s" not in probe:
            probe["text_ready_s"] = time.perf_counter() - start
            if not search:
                continue
            found = run_groove(["search", word, "--mode", "fts", "--format", "json",
                                "--limit", "10"], config=coll.config, db=coll.db)
            probe["answered_s"] = time.perf_counter() - start
            probe["search_s"] = found.wall_s
            paths = [hit["path"] for hit in found.json()["results"]]
            probe["found_last_note"] = any(p.endswith(rel) for p in paths)
            probe["status_documents"] = run_groove(
                ["status", "--format", "json"], config=coll.config, db=coll.db).json()["documents"]
            if stop_after:
                proc.send_signal(signal.SIGINT)
    proc.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run = GrooveRun(tuple(full), wall, cpu, proc.returncode, "", "".join(lines))
    if proc.returncode != 0 and not (stop_after and proc.returncode == 130):
        raise RuntimeError(f"{' '.join(full)} exited {proc.returncode}:\n{run.stderr}")
    return run, probe


def chunk_inputs(kb: Path, under: Path | None = None) -> list[str]:
    """The embedding inputs `index` produces for the KB's Markdown files (all, or those in the
    folder `under` inside it), off context mode, no exclusions."""
    inputs: list[str] = []
    for path in sorted((under or kb).rglob("*.md")):
        parsed = parse_document(path.read_text(encoding="utf-8"), path.relative_to(kb).as_posix(),
                                exclude_headings=())
        inputs.extend(embedding_input(chunk, False) for chunk in parsed.chunks)
    return inputs


def bare_embedder_seconds(inputs: list[str]) -> tuple[float, float, float]:
    """(model load s, embed_passages wall s, embed_passages CPU s) for `inputs`, default model
    (each input cut at the window)."""
    from groove_cli.engine import Embedder, default_models_dir, resolve_model

    start = time.perf_counter()
    model = resolve_model(DEFAULT_MODEL, default_models_dir(), offline=True)
    embedder = Embedder.load(model)
    loaded = time.perf_counter()
    cpu = time.process_time()
    embedder.embed_passages(inputs)
    return loaded - start, time.perf_counter() - loaded, time.process_time() - cpu


FLOOR_RUNS = 3
"""Runs of each part of the floor (`floor_seconds`), their median kept."""


def floor_seconds(coll: Collection) -> tuple[float, float]:
    """(phase 1 alone s, tokenizer load s), medians of FLOOR_RUNS: what any `groove index`
    run in one process pays besides the bare embedder's own work. Phase 1 is a `--text-only`
    run into a new index (process start and exit included); the tokenizer's load holds the
    GIL (bench/results/code-notes.md#tokenizer-load), so it cannot overlap phase 1's Python
    work, and phase 2 cannot start before it."""
    from tokenizers import Tokenizer

    from groove_cli.engine import default_models_dir, resolve_model

    text_only: list[float] = []
    for _ in range(FLOOR_RUNS):
        coll.remove_index()
        text_only.append(run_groove(["index", "--kb-path", str(coll.kb), "--text-only",
                                     "--quiet"], config=coll.config, db=coll.db).wall_s)
    path = resolve_model(DEFAULT_MODEL, default_models_dir(), offline=True).tokenizer_path
    loads: list[float] = []
    for _ in range(FLOOR_RUNS):
        start = time.perf_counter()
        Tokenizer.from_file(str(path))
        loads.append(time.perf_counter() - start)
    return median(text_only), median(loads)


BARE_SCRIPT = """
import json, sys
from groove_cli.engine import Embedder, default_models_dir, resolve_model
inputs = json.loads(open(sys.argv[1], encoding="utf-8").read())
model = resolve_model(sys.argv[2], default_models_dir(), offline=True)
Embedder.load(model).embed_passages(inputs)
"""


def bare_process_seconds(inputs_file: Path) -> float:
    """Wall seconds of a bare embedder *process* on the inputs in `inputs_file` (a JSON list):
    interpreter start, model load, `embed_passages`, exit — what a script that only embeds
    costs from start to end, to set beside the index process timed the same way."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE_SCRIPT, str(inputs_file), DEFAULT_MODEL],
                   check=True)
    return time.perf_counter() - start


def parse_done(stderr: str) -> tuple[int, int, int]:
    """(ms, docs, chunks) from the index `Done` line."""
    match = DONE_RE.search(stderr)
    if match is None:
        raise RuntimeError(f"no Done line in:\n{stderr}")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def full_index(coll: Collection, repeats: int = 2) -> dict[str, Any]:
    """Index from scratch `repeats` times, each run bracketed by runs of the bare embedder on
    the same inputs (bare, index, bare, index, bare, …): the shared machine's speed drifts by
    10 % within minutes, so each index run is compared with the mean of the bare runs just
    before and after it, and the verdict is on the mean ratio over the repeats. These runs
    carry no concurrent search (the bare runs carry none either: a search's CPU is the
    search's, not the index's); the time to the first search is measured on runs of its own
    (`fts_only`), and each run here notes when phase 1 ended."""
    coll.prepare_kb()
    inputs = chunk_inputs(coll.docs)
    inputs_file = coll.work / "bare-inputs.json"
    inputs_file.write_text(json.dumps(inputs, ensure_ascii=False), encoding="utf-8")
    loads = [load_average()]
    phase1_s, tokenizer_s = floor_seconds(coll)
    bare = [bare_embedder_seconds(inputs)]
    bare_process = [bare_process_seconds(inputs_file)]
    runs: list[dict[str, Any]] = []
    probe: dict[str, Any] = {}
    for _ in range(repeats):
        coll.remove_index()
        loads.append(load_average())
        run, probe = index_with_fts_probe(coll, search=False)
        done_ms, docs, chunks = parse_done(run.stderr)
        loads.append(load_average())
        bare.append(bare_embedder_seconds(inputs))
        bare_process.append(bare_process_seconds(inputs_file))
        around_process = bare_process[-2:]
        around = [b[1] for b in bare[-2:]]
        around_cpu = [b[2] for b in bare[-2:]]
        bare_s = sum(around) / 2
        bare_cps = len(inputs) / bare_s
        runs.append({"index_wall_s": run.wall_s, "index_cpu_s": run.cpu_s,
                     "index_done_ms": done_ms, "text_ready_s": probe.get("text_ready_s"),
                     "bare_embed_s": around,
                     "bare_embed_cpu_s": around_cpu,
                     "ratio": ratio(chunks / run.wall_s, bare_cps),
                     "ratio_done_line": ratio(chunks / (done_ms / 1000), bare_cps),
                     "cpu_ratio": ratio(sum(around_cpu) / 2 / len(inputs), run.cpu_s / chunks),
                     "ceiling": ratio(bare_s, bare_s + phase1_s + tokenizer_s),
                     "bare_process_s": around_process,
                     "process_ratio": ratio(chunks / run.wall_s,
                                            len(inputs) / (sum(around_process) / 2)),
                     "stderr_tail": run.stderr.strip().splitlines()[-3:]})
    status = coll.status()
    loads.append(load_average())
    mean = lambda key: sum(r[key] for r in runs) / len(runs)  # noqa: E731
    throughput = mean("ratio")
    return {
        "collection": coll.name, "fts_target_s": FTS_TARGET_S,
        "text_ready_s": mean("text_ready_s"), "documents": docs, "chunks": chunks,
        "dataset_documents": coll.doc_count(), "status_documents": status["documents"],
        "status_chunks": status["chunks"],
        "status_matches": status["documents"] == docs and status["chunks"] == chunks,
        "status_pending": status["pending"], "bare_inputs": len(inputs),
        "bare_model_load_s": bare[0][0],
        "bare_embed_runs_s": [b[1] for b in bare], "repeats": runs,
        "index_wall_s": mean("index_wall_s"), "index_done_ms": mean("index_done_ms"),
        "throughput_ratio": throughput, "throughput_ratio_done_line": mean("ratio_done_line"),
        "cpu_ratio": mean("cpu_ratio"), "process_ratio": mean("process_ratio"),
        "floor_phase1_s": phase1_s, "floor_tokenizer_s": tokenizer_s,
        "ceiling": mean("ceiling"),
        "throughput_ratio_range": [min(r["ratio"] for r in runs), max(r["ratio"] for r in runs)],
        "throughput_target": THROUGHPUT_TARGET, "throughput_met": throughput >= THROUGHPUT_TARGET,
        "load_average": loads,
    }


def time_full(coll: Collection) -> dict[str, Any]:
    """One full index from scratch, timed, with the phase-1 probe (no bare runs: a collection
    too large to embed three times here)."""
    coll.remove_index()
    coll.prepare_kb()
    load = load_average()
    run, probe = index_with_fts_probe(coll)
    done_ms, docs, chunks = parse_done(run.stderr)
    return {"collection": coll.name, "documents": docs, "chunks": chunks, "fts_probe": probe,
            "index_wall_s": run.wall_s, "index_cpu_s": run.cpu_s, "index_done_ms": done_ms,
            "load_average_before": load, "load_average_after": load_average(),
            "stderr_tail": run.stderr.strip().splitlines()[-3:]}


def fts_only(coll: Collection) -> dict[str, Any]:
    """Time to the first full-text search on a collection too large to embed here: the index
    run is stopped (Ctrl-C) once the search has answered."""
    coll.remove_index()
    coll.prepare_kb()
    load = load_average()
    run, probe = index_with_fts_probe(coll, stop_after=True)
    met = (probe.get("answered_s", float("inf")) <= FTS_TARGET_S
           and probe.get("found_last_note", False)
           and probe.get("status_documents") == coll.doc_count())
    # the same phase 1 again as `--text-only` into a new index: the child's CPU seconds say
    # what phase 1 costs, whatever the other load on the shared machine did to the wall time
    coll.remove_index()
    text_only = run_groove(["index", "--kb-path", str(coll.kb), "--text-only", "--quiet"],
                           config=coll.config, db=coll.db)
    return {"collection": coll.name, "documents": coll.doc_count(), "fts_probe": probe,
            "fts_target_s": FTS_TARGET_S, "fts_met": met, "load_average_before": load,
            "index_wall_s_until_stopped": run.wall_s,
            "index_stderr_tail": run.stderr.strip().splitlines()[-3:],
            "text_only_wall_s": text_only.wall_s, "text_only_cpu_s": text_only.cpu_s,
            "load_average_after": load_average()}


def rerun(coll: Collection) -> dict[str, Any]:
    """No-change re-runs: median wall time and whether the model was loaded."""
    walls: list[float] = []
    cpus: list[float] = []
    loaded: list[bool] = []
    done: list[int] = []
    for _ in range(RERUNS):
        run = run_groove(["index", "--kb-path", str(coll.kb)], config=coll.config, db=coll.db)
        walls.append(run.wall_s)
        cpus.append(run.cpu_s)
        loaded.append(LOADING in run.stderr)
        done.append(parse_done(run.stderr)[0])
    wall = median(walls)
    return {
        "runs": RERUNS,
        "wall_s": walls,
        "median_wall_s": wall,
        "cpu_s": cpus,
        "median_cpu_s": median(cpus),
        "median_done_ms": median([float(d) for d in done]),
        "target_s": 1.0,
        "met": wall <= 1.0,
        "model_loaded_in_any_run": any(loaded),
    }


def previous_full_index() -> dict[str, Any] | None:
    """The from-scratch measurement of an earlier run, kept when `--reuse` skips it."""
    path = RESULTS / "index.json"
    if not path.is_file():
        return None
    found = json.loads(path.read_text(encoding="utf-8")).get("full_index")
    return found if isinstance(found, dict) else None


def _fts_lines(fts: dict[str, Any]) -> list[str]:
    probe = fts["fts_probe"]
    return [f"### {fts['collection']} — phase 1 only", "",
            f"- **Time to the first full-text search: {probe['answered_s']:.1f} s** over "
            f"{fts['documents']} notes (phase 1 reported `Full text ready` at "
            f"{probe['text_ready_s']:.1f} s; the `--mode fts` search for `{probe['query']}` took "
            f"{probe['search_s']:.2f} s and "
            f"{'found' if probe['found_last_note'] else 'did NOT find'} the last note; `status` "
            f"counted {probe['status_documents']} documents) — target ≤ "
            f"{fts['fts_target_s']:.0f} s, {verdict(fts['fts_met'])}. The run was then stopped "
            "(Ctrl-C in phase 2); a full index is timed below. Load average before: "
            f"{fts['load_average_before']}.",
            f"- Phase 1 alone (`index --text-only`, new index): {fts['text_only_wall_s']:.1f} s "
            f"wall, **{fts['text_only_cpu_s']:.1f} s CPU** (the child's user + system time, "
            "process start included: what phase 1 costs on an idle core); load average after: "
            f"{fts['load_average_after']}.", ""]


def _full_lines(full: dict[str, Any], cores: int) -> list[str]:
    probe = full.get("fts_probe") or {}
    lines = [f"### {full.get('collection', 'jsquad')}", ""]
    if "text_ready_s" in full:
        lines.append(
            f"- Phase 1 reported `Full text ready` {full['text_ready_s']:.1f} s after the index "
            "start (mean of the runs below; the time to the first search is measured on the "
            "phase-1 runs above). No search ran beside these runs, as none runs beside the "
            "bare embedder.")
    if "answered_s" in probe:
        lines.append(
            f"- **Time to the first full-text search: {probe['answered_s']:.1f} s** from the "
            f"index start (last run; phase 1 reported `Full text ready` at "
            f"{probe['text_ready_s']:.1f} s; the `--mode fts` search for `{probe['query']}` took "
            f"{probe['search_s']:.2f} s and {'found' if probe['found_last_note'] else 'did NOT find'} "
            f"the last note `{probe['expected_path']}`; `status` then counted "
            f"{probe['status_documents']} documents) — target ≤ {full['fts_target_s']:.0f} s, "
            f"{verdict(full['fts_met'])}.")
    lines += [
        f"- Indexed {full['documents']} documents / {full['chunks']} chunks "
        f"(dataset: {full['dataset_documents']} files); `groove status --format json` "
        f"reports {full['status_documents']} / {full['status_chunks']} — "
        f"{'same counts' if full['status_matches'] else 'DIFFERENT counts'}. The bare embedder "
        f"embeds the same {full['bare_inputs']} inputs (`embed_passages`); model load "
        f"{full['bare_model_load_s']:.1f} s excluded.",
        f"- Bare, index, bare, … ({len(full['repeats'])} index runs, each against the mean of "
        "the bare runs around it):", "",
        "| run | full text s | index wall s | `Done` s | bare s (before, after) | ratio | ceiling "
        "| by `Done` | by CPU | bare process s | vs process |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|",
    ]
    for n, r in enumerate(full["repeats"], 1):
        before, after = r["bare_embed_s"]
        process = ", ".join(f"{s:.1f}" for s in r.get("bare_process_s", [])) or "-"
        versus = f"{r['process_ratio']:.3f}" if "process_ratio" in r else "-"
        ceiling = f"{r['ceiling']:.3f}" if "ceiling" in r else "-"
        ready = f"{r['text_ready_s']:.1f}" if r.get("text_ready_s") is not None else "-"
        lines.append(f"| {n} | {ready} | {r['index_wall_s']:.1f} | {r['index_done_ms'] / 1000:.1f} | "
                     f"{before:.1f}, {after:.1f} | {r['ratio']:.3f} | {ceiling} | "
                     f"{r['ratio_done_line']:.3f} | {r['cpu_ratio']:.3f} | {process} | {versus} |")
    low, high = full["throughput_ratio_range"]
    lines += [
        "",
        f"- **Throughput ratio, mean {full['throughput_ratio']:.3f}** (range {low:.3f}–"
        f"{high:.3f}; index chunks/s ÷ bare chunks/s, wall clock, process start and model "
        f"load included in the index; target ≥ {full['throughput_target']}, "
        f"{verdict(full['throughput_met'])}); by the `Done` line "
        f"{full['throughput_ratio_done_line']:.3f}; by CPU seconds per chunk "
        f"{full['cpu_ratio']:.3f}."
        + (f" Against a bare embedder *process* timed the same way as the index (interpreter "
           f"start, model load, `embed_passages`, exit; `BARE_SCRIPT`): "
           f"{full['process_ratio']:.3f}." if "process_ratio" in full else ""),
        *([f"- **Ceiling of that ratio, mean {full['ceiling']:.3f}**: bare ÷ (bare + phase 1 "
           f"alone {full['floor_phase1_s']:.2f} s + tokenizer load "
           f"{full['floor_tokenizer_s']:.2f} s), medians of {FLOOR_RUNS} runs each, measured "
           "before the first index run. No index in one process that runs phase 1 before "
           "phase 2 can do better: it pays the bare embedder's work, a `--text-only` run's "
           "work (process start, phase 1, exit) and the tokenizer's load, which holds the GIL "
           "(code-notes.md#tokenizer-load) and so cannot overlap phase 1, while phase 2 cannot "
           "start before it. The distance from ratio to ceiling is what phase 2 adds beyond "
           "the bare embedder (and the noise of the shared machine)."]
          if "ceiling" in full else []),
        f"- Load average (1/5/15 min) before and after each phase: {full['load_average']} on "
        f"{cores} cores (shared machine).",
        "",
    ]
    return lines


def _timed_lines(timed: dict[str, Any]) -> list[str]:
    probe = timed["fts_probe"]
    return [f"### {timed['collection']} — full index, once", "",
            f"- **Full index: {timed['index_wall_s']:.1f} s** wall ({timed['index_cpu_s']:.1f} s "
            f"CPU; `Done` line {timed['index_done_ms'] / 1000:.1f} s) for {timed['documents']} "
            f"documents / {timed['chunks']} chunks; phase 1 reported `Full text ready` at "
            f"{probe.get('text_ready_s', float('nan')):.1f} s and the `--mode fts` search "
            f"answered at {probe.get('answered_s', float('nan')):.1f} s "
            f"({'found' if probe.get('found_last_note') else 'did NOT find'} the last note). "
            f"Load average before {timed['load_average_before']}, after "
            f"{timed['load_average_after']} (2 shared cores)."
            + (f" Kept from the run at commit `{timed['measured_at']['commit']}`."
               if isinstance(timed.get("measured_at"), dict) else ""), ""]


def markdown(data: dict[str, Any]) -> str:
    lines = ["# Indexing benchmark (multilingual-e5-small)", "",
             machine_line(data["machine"]), ""]
    if data.get("fts_only_runs"):
        lines += [
            "The time to the first full-text search is measured on the full collections, each "
            "run stopped once the search answered; the full index (phase 2 included) is timed "
            "separately and compared with the bare embedder (sections below). Wall times "
            "include waiting for the CPU on this shared 2-core machine (see the load "
            "averages): the CPU ratio is the steadier figure; the `--text-only` CPU seconds "
            "are what phase 1 itself costs. The index's fixed costs (process start, phase 1, "
            "model load) weigh more on a small collection than on a large one.", ""]
    for fts in data.get("fts_only_runs") or []:
        lines += _fts_lines(fts)
    for timed in data.get("timed_runs") or []:
        lines += _timed_lines(timed)
    for full in data.get("full_index_runs") or [data.get("full_index")]:
        if full and "repeats" in full:
            lines += _full_lines(full, data["machine"]["cpu_count"])
    re_run = data.get("rerun")
    if re_run:
        lines += [
        "### No-change re-run (jsquad)", "",
        f"- **No-change re-run: median {re_run['median_wall_s']:.3f} s** wall over "
        f"{re_run['runs']} runs (target ≤ 1 s, {verdict(re_run['met'])}; child CPU median "
        f"{re_run['median_cpu_s']:.3f} s; `Done` line median "
        f"{re_run['median_done_ms']:.0f} ms); `{LOADING}` "
        f"{'appeared' if re_run['model_loaded_in_any_run'] else 'absent in every run'}.",
        "",
        ]
    lines += [
        f"Command: `.venv/bin/python bench/bench_index.py {data.get('args', '')}`.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reuse", action="store_true",
                        help="keep an existing complete index; measure only the re-run")
    parser.add_argument("--fts-notes", type=int, default=0,
                        help="synthetic KB measured for time to full text only (e.g. 10000)")
    parser.add_argument("--notes", type=int, default=10_000, help="synthetic KB size (full)")
    parser.add_argument("--collections", default="synthetic,jsquad",
                        help="comma-separated, indexed in full: synthetic, jsquad; NAME:N "
                             "gives that collection N repeats instead of --repeats")
    parser.add_argument("--no-rerun", action="store_true", help="skip the no-change re-run")
    parser.add_argument("--repeats", type=int, default=2,
                        help="index runs per collection, each bracketed by bare runs")
    parser.add_argument("--markdown-only", action="store_true",
                        help="rewrite index.md from index.json, measuring nothing")
    parser.add_argument("--time-full", type=int, default=0,
                        help="synthetic KB indexed in full once, timed (e.g. 10000)")
    args = parser.parse_args()
    if args.markdown_only:
        saved = json.loads((RESULTS / "index.json").read_text(encoding="utf-8"))
        (RESULTS / "index.md").write_text(markdown(saved) + "\n", encoding="utf-8")
        return
    chosen = {"synthetic": Synthetic(f"synthetic-{args.notes}", args.notes), "jsquad": JSQUAD}
    repeats = {name.strip(): int(n or args.repeats) for name, _, n in
               (item.partition(":") for item in args.collections.split(",") if item.strip())}
    names = list(repeats)
    data: dict[str, Any] = {"benchmark": "index", "collections": names,
                            "model": DEFAULT_MODEL, "machine": machine(),
                            "args": " ".join(sys.argv[1:])}
    if args.fts_notes:
        data["fts_only_runs"] = []
        for coll in (Synthetic(f"synthetic-{args.fts_notes}", args.fts_notes), JSQUAD):
            data["fts_only_runs"].append(fts_only(coll))
            print(json.dumps(data["fts_only_runs"][-1], ensure_ascii=False), flush=True)
    if args.time_full:
        data["timed_runs"] = [time_full(Synthetic(f"synthetic-{args.time_full}",
                                                  args.time_full))]
        print(json.dumps(data["timed_runs"][-1], ensure_ascii=False), flush=True)
    if args.reuse and JSQUAD.index_is_current():
        data["full_index"] = previous_full_index()
    else:
        data["full_index_runs"] = []
        for name in names:
            data["full_index_runs"].append(full_index(chosen[name], repeats[name]))
            print(json.dumps(data["full_index_runs"][-1], ensure_ascii=False), flush=True)
    if not args.no_rerun:
        JSQUAD.ensure_index()
        data["rerun"] = rerun(JSQUAD)
    write_results("index", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
