#!/usr/bin/env python3
"""Indexing benchmark: a 10,000-note synthetic KB and JSQuAD (2,304 documents), default model.

    .venv/bin/python bench/bench_index.py [--reuse] [--notes 10000] [--collections synthetic,jsquad]
        [--repeats 2] [--time-full 10000] [--fts-notes 10000]
    .venv/bin/python bench/bench_index.py --only shared [--pairs 2] [--spin-pairs 2] [--stops 5,3]

1. `groove index` from scratch into `bench/work/<name>/index.db` (JSQuAD: KB = a symlink to
   $GROOVE_DATASETS/jsquad/docs; synthetic: `make_synthetic_kb.py --chunks N
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

4. `--only shared` (issue 37; measured alone, merged into index.json beside the other parts,
   each keeping the commit it was measured at): CISI's 1,460 abstracts indexed from scratch
   alone and beside two busy processes, alternated, with onnxruntime's intra-op spinning off
   (shipped) and on (`SPINNING_SCRIPT`): chunks/s, the process's CPU s per chunk and peak RSS
   (wait4), loaded ÷ quiet (targets ≥ 0.4 and ≤ 1.5); then SIGTERM during phase 2, seconds to
   exit (target ≤ 2 s), exit code and a `groove doctor` after it.

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
import shlex
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
    ROOT,
    WORK,
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
DONE_RE = re.compile(r"Done in ([^:]+): (\d+) docs .*?, (\d+) chunks")
DURATION_PART = re.compile(r"([\d.]+) (ms|s|min|h)")
UNIT_S = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}
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
        parsed = parse_document(path.read_text(encoding="utf-8"), path.relative_to(kb).as_posix())
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


def duration_seconds(text: str) -> float:
    """Seconds of a duration as groove writes it (`850 ms`, `3.2 s`, `14 min 38 s`, `2 h 5 min`):
    exact to the precision shown, which is all a line keeps."""
    parts = DURATION_PART.findall(text)
    if not parts or DURATION_PART.sub("", text).strip():
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(value) * UNIT_S[unit] for value, unit in parts)


def parse_done(stderr: str) -> tuple[int, int, int]:
    """(ms, docs, chunks) from the index `Done` line (its duration is exact to the unit it
    shows: milliseconds under 1 s, a tenth of a second under 10 s, else a second or a
    minute; a run measured to the millisecond is timed by the caller)."""
    match = DONE_RE.search(stderr)
    if match is None:
        raise RuntimeError(f"no Done line in:\n{stderr}")
    return (round(duration_seconds(match.group(1)) * 1000), int(match.group(2)),
            int(match.group(3)))


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


# ------------------------------------------------------------------ sharing the machine (`--only shared`)

BUSY_PROCESSES = 2
BUSY_COMMAND = ("python3", "-c", "while 1: pass")
SHARE_TARGET = 0.4
"""Loaded ÷ quiet throughput, at least (two busy processes beside 2 threads: a fair share is
0.5)."""
CPU_TARGET = 1.5
"""Loaded ÷ quiet CPU-seconds per chunk, at most."""
STOP_TARGET_S = 2.0
"""Seconds from SIGTERM in phase 2 to the process's exit, at most."""
STOP_DELAYS_S = (0.0, 0.3, 0.6, 0.9, 1.2)
"""Waits after the first committed vectors before the signal, cycled: the signal lands at
different points of the batch in flight."""
STOP_AFTER_VECTORS = 1
DISTURBED_CORES = 0.3
"""CPU the rest of the machine used during a run (cores, mean over the run) above which the
run counts as disturbed by other work."""
SETTLE_MAX_S = 90.0

SPINNING_SCRIPT = """
import sys
import groove_cli.models.runtime as runtime
shipped = runtime._session_options
def spinning(optimise, threads=None):
    options = shipped(optimise, threads)
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    return options
runtime._session_options = spinning
from groove_cli.cli import main
main()
"""
"""`groove` with onnxruntime's intra-op threads spinning again (the setting before c2b4e1b),
for this benchmark only: the console script's entry point with `_session_options` patched."""


@dataclass(frozen=True, slots=True)
class Scratch(Collection):
    """A dataset indexed into a work folder of its own, so these runs never touch the index
    that other benchmarks reuse under `bench/work/<name>`."""

    folder: str = ""

    @property
    def work(self) -> Path:
        return WORK / self.folder


SHARED = Scratch("cisi", "shared-cisi")


def cpu_model() -> str:
    """The CPU's model name and the vector instructions that matter to int8 kernels."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    name = re.search(r"^model name\s*:\s*(.+)$", info, re.MULTILINE)
    flags = set((re.search(r"^flags\s*:\s*(.+)$", info, re.MULTILINE) or [""])[0].split())
    kinds = [f for f in ("avx2", "avx512f", "avx512_vnni", "amx_int8") if f in flags]
    return f"{name.group(1).strip() if name else 'unknown'} ({', '.join(kinds) or 'no AVX2'})"


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy since boot (user, nice, system, irq,
    softirq of /proc/stat; idle, iowait and steal left out)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def settle(max_wait_s: float = SETTLE_MAX_S) -> tuple[float, float]:
    """Wait (at most `max_wait_s`) until the machine's other work uses ≤ DISTURBED_CORES
    over a 2 s sample. (seconds waited, cores in use at the last sample)."""
    start = time.perf_counter()
    while True:
        before = machine_busy_s()
        time.sleep(2.0)
        cores = (machine_busy_s() - before) / 2.0
        waited = time.perf_counter() - start
        if cores <= DISTURBED_CORES or waited >= max_wait_s:
            return waited, cores
        time.sleep(3.0)


def reap(proc: subprocess.Popen[bytes], block: bool = True) -> tuple[int, float, int] | None:
    """(exit code, user + system CPU s, peak RSS KiB) of `proc` from wait4, or None when it is
    still running and not `block`."""
    pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


class Busy:
    """`count` CPU-bound processes (BUSY_COMMAND), started before a run and killed after it."""

    def __init__(self, count: int) -> None:
        self.procs = [subprocess.Popen(BUSY_COMMAND) for _ in range(count)]
        if self.procs:
            time.sleep(1.0)  # running before the measured process starts

    def cpu_s(self) -> float:
        """Their user + system CPU seconds so far (/proc/<pid>/stat)."""
        total = 0
        for proc in self.procs:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """Kill them, each by its own pid."""
        for proc in self.procs:
            proc.kill()
            reap(proc)


def vector_count(db: Path) -> int:
    """Vectors committed so far (read-only connection with sqlite-vec; 0 while the table does
    not exist)."""
    import apsw
    import sqlite_vec

    try:
        con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return 0
    try:
        con.enable_load_extension(True)
        con.load_extension(sqlite_vec.loadable_path())
        return int(str(con.execute("SELECT count(*) FROM vec_chunks").fetchall()[0][0]))
    except apsw.Error:
        return 0
    finally:
        con.close()


def index_command(coll: Collection, spinning: bool, *extra: str) -> list[str]:
    head = [sys.executable, "-c", SPINNING_SCRIPT] if spinning else [str(GROOVE)]
    return [*head, "--config", str(coll.config), "--db", str(coll.db), "index", "--kb-path",
            str(coll.kb), *extra]


def shared_run(coll: Collection, *, spinning: bool, loaded: bool, cap_s: float
               ) -> dict[str, Any]:
    """`groove index` from scratch, alone or beside BUSY_PROCESSES busy processes: wall, chunks/s,
    the groove process's CPU per chunk and peak RSS (wait4), and the CPU the rest of the
    machine used meanwhile. Past `cap_s` the run is stopped (SIGTERM) and measured on the
    vectors it committed."""
    coll.remove_index()
    waited, idle_cores = settle()
    load_before = load_average()
    busy = Busy(BUSY_PROCESSES if loaded else 0)
    log = coll.work / "index.stderr"
    busy_before = busy.cpu_s()
    machine_before = machine_busy_s()
    start = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(index_command(coll, spinning), stdout=subprocess.DEVNULL,
                                stderr=err, cwd=ROOT)
    capped = False
    while (reaped := reap(proc, block=False)) is None:
        if time.perf_counter() - start > cap_s and not capped:
            capped = True
            proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)
    wall = time.perf_counter() - start
    machine_s = machine_busy_s() - machine_before
    busy_cpu = busy.cpu_s() - busy_before
    busy.stop()
    code, cpu, rss_kib = reaped
    stderr = log.read_text(encoding="utf-8", errors="replace")
    if capped:
        chunks, done_ms = vector_count(coll.db), None
    else:
        if code != 0:
            raise RuntimeError(f"groove index exited {code}:\n{stderr}")
        done_ms, _, chunks = parse_done(stderr)
    others = (machine_s - cpu - busy_cpu) / wall
    return {"spinning": spinning, "loaded": loaded, "wall_s": wall, "chunks": chunks,
            "chunks_per_s": chunks / wall, "done_ms": done_ms, "cpu_s": cpu,
            "cpu_s_per_chunk": cpu / chunks if chunks else float("inf"),
            "peak_rss_mb": rss_kib / 1024, "exit_code": code, "capped_at_s": cap_s if capped
            else None, "busy_cores": busy_cpu / wall, "others_cores": others,
            "disturbed": others > DISTURBED_CORES, "settle_wait_s": waited,
            "cores_busy_before": idle_cores, "load_average_before": load_before,
            "load_average_after": load_average(),
            "stderr_tail": stderr.strip().splitlines()[-2:]}


def stop_run(coll: Collection, *, loaded: bool, delay_s: float) -> dict[str, Any]:
    """`groove index --force`; once phase 2 has committed vectors (and `delay_s` more), SIGTERM:
    seconds from the signal to the exit, the exit code, and a `groove doctor` after it."""
    settle()
    load_before = load_average()
    busy = Busy(BUSY_PROCESSES if loaded else 0)
    log = coll.work / "stop.stderr"
    start = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(index_command(coll, False, "--force"),
                                stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
    reaped: tuple[int, float, int] | None = None
    # --force resets the old index in place: wait for phase 2's line, then for its vectors
    while (reaped := reap(proc, block=False)) is None:
        if ("Embedding " in log.read_text(encoding="utf-8", errors="replace")
                and vector_count(coll.db) >= STOP_AFTER_VECTORS):
            break
        if time.perf_counter() - start > 600:
            proc.kill()
            reap(proc)
            raise RuntimeError("phase 2 committed no vector within 600 s")
        time.sleep(0.05)
    if reaped is not None:
        busy.stop()
        raise RuntimeError(f"groove index ended before the signal:\n{log.read_text()}")
    time.sleep(delay_s)
    at_signal = vector_count(coll.db)
    signalled = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    code, cpu, rss_kib = reap(proc) or (-1, 0.0, 0)
    exit_s = time.perf_counter() - signalled
    busy.stop()
    stderr = log.read_text(encoding="utf-8", errors="replace")
    doctor = run_groove(["doctor", "--kb-path", str(coll.kb)], config=coll.config, db=coll.db,
                        check=False)
    return {"loaded": loaded, "delay_s": delay_s, "signal_at_s": signalled - start,
            "vectors_at_signal": at_signal, "vectors_after": vector_count(coll.db),
            "exit_s": exit_s, "exit_code": code, "cpu_s": cpu, "peak_rss_mb": rss_kib / 1024,
            "doctor_exit": doctor.returncode, "doctor_tail": doctor.stdout.strip().splitlines()[-1:],
            "load_average_before": load_before, "load_average_after": load_average(),
            "stderr_tail": stderr.strip().splitlines()[-1:]}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def share_summary(pairs: list[dict[str, Any]], spinning: bool) -> dict[str, Any]:
    """Means over the undisturbed pairs of one setting (over all of them when none is)."""
    mine = [p for p in pairs if p["spinning"] == spinning]
    clean = [p for p in mine if not p["disturbed"]] or mine
    quiet = [p["quiet"] for p in clean]
    loaded = [p["loaded"] for p in clean]
    throughput = _mean([p["throughput_ratio"] for p in clean])
    cpu = _mean([p["cpu_ratio"] for p in clean])
    return {"spinning": spinning, "pairs": len(clean), "pairs_run": len(mine),
            "quiet_chunks_per_s": _mean([r["chunks_per_s"] for r in quiet]),
            "loaded_chunks_per_s": _mean([r["chunks_per_s"] for r in loaded]),
            "quiet_cpu_s_per_chunk": _mean([r["cpu_s_per_chunk"] for r in quiet]),
            "loaded_cpu_s_per_chunk": _mean([r["cpu_s_per_chunk"] for r in loaded]),
            "quiet_wall_s": _mean([r["wall_s"] for r in quiet]),
            "loaded_wall_s": _mean([r["wall_s"] for r in loaded]),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in quiet + loaded),
            "throughput_ratio": throughput, "cpu_ratio": cpu,
            "throughput_met": throughput >= SHARE_TARGET, "cpu_met": cpu <= CPU_TARGET}


def shared_machine(coll: Collection, *, pairs: int, spin_pairs: int, stops: int,
                   loaded_stops: int, retries: int, budget_min: float) -> dict[str, Any]:
    """Issue 37's indexer on a shared machine: quiet and loaded runs alternated (spinning off,
    as shipped, and on, through SPINNING_SCRIPT), each pair's loaded run against its own quiet
    run; a disturbed pair is run again (at most `retries` times in all); then SIGTERM during
    phase 2, quiet and loaded. A pair is run again only while it fits in `budget_min` with
    the signal runs (about 3 min) after it."""
    coll.prepare_kb()
    started = time.perf_counter()
    info = {**machine(), "cpu": cpu_model()}
    rounds = [s for n in range(max(pairs, spin_pairs))
              for s in ((False,) if n < pairs else ()) + ((True,) if n < spin_pairs else ())]
    done: list[dict[str, Any]] = []
    while rounds:
        spinning = rounds.pop(0)
        quiet = shared_run(coll, spinning=spinning, loaded=False, cap_s=1800)
        print(json.dumps(quiet), flush=True)
        loaded = shared_run(coll, spinning=spinning, loaded=True,
                            cap_s=max(180.0, 3 * quiet["wall_s"]))
        print(json.dumps(loaded), flush=True)
        disturbed = quiet["disturbed"] or loaded["disturbed"]
        done.append({"spinning": spinning, "quiet": quiet, "loaded": loaded,
                     "disturbed": disturbed,
                     "throughput_ratio": ratio(loaded["chunks_per_s"], quiet["chunks_per_s"]),
                     "cpu_ratio": ratio(loaded["cpu_s_per_chunk"], quiet["cpu_s_per_chunk"])})
        pair_min = (quiet["wall_s"] + loaded["wall_s"]) / 60
        spent = (time.perf_counter() - started) / 60
        if (disturbed and retries > 0
                and spent + pair_min * (len(rounds) + 1) + 3 <= budget_min):
            retries -= 1
            rounds.insert(0, spinning)
    signal_runs = [stop_run(coll, loaded=False, delay_s=STOP_DELAYS_S[n % len(STOP_DELAYS_S)])
                   for n in range(stops)]
    signal_runs += [stop_run(coll, loaded=True, delay_s=STOP_DELAYS_S[n % len(STOP_DELAYS_S)])
                    for n in range(loaded_stops)]
    exits = [r["exit_s"] for r in signal_runs]
    return {
        "collection": coll.name, "documents": coll.doc_count(), "model": DEFAULT_MODEL,
        "machine": info, "args": " ".join(sys.argv[1:]), "busy_processes": BUSY_PROCESSES,
        "busy_command": shlex.join(BUSY_COMMAND), "disturbed_above_cores": DISTURBED_CORES,
        "share_target": SHARE_TARGET, "cpu_target": CPU_TARGET, "pairs": done,
        "spinning_off": share_summary(done, False),
        "spinning_on": share_summary(done, True) if spin_pairs else None,
        "signal_runs": signal_runs, "stop_target_s": STOP_TARGET_S,
        "stop_median_s": median(exits), "stop_max_s": max(exits),
        "stop_met": (max(exits) <= STOP_TARGET_S
                     and all(r["exit_code"] == 130 and r["doctor_exit"] == 0
                             for r in signal_runs)),
        "minutes": (time.perf_counter() - started) / 60,
        "load_average_after": load_average(),
    }


def _shared_lines(shared: dict[str, Any]) -> list[str]:
    info = shared["machine"]
    code = info.get("code") or {}
    dirty = " (uncommitted changes in groove_cli/)" if code.get("groove_cli_dirty") else ""
    packages = ", ".join(f"{k} {v}" for k, v in (info.get("packages") or {}).items() if v)
    lines = [
        f"### Sharing the machine ({shared['collection']}, issue 37)", "",
        f"Measured at commit `{code.get('commit', '?')}`{dirty} on {info['cpu_count']} cores of "
        f"an {info.get('cpu', '?')}, shared with other work; {packages}. "
        f"`groove index` from scratch over {shared['documents']:,} CISI abstracts, alone "
        f"(quiet) or beside {shared['busy_processes']} busy processes (`{shared['busy_command']}`, "
        "started before, killed after); quiet and loaded runs alternate, each loaded run "
        "against the quiet run just before it. CPU s and peak RSS are the groove process's "
        "own (wait4). Spinning on = the same `groove` with "
        "`session.intra_op.allow_spinning` set to 1 (the setting before c2b4e1b). "
        f"Command: `.venv/bin/python bench/bench_index.py {shared['args']}` "
        f"({shared['minutes']:.0f} min).", "",
        "| intra-op threads | pairs | quiet chunks/s | loaded chunks/s | loaded ÷ quiet "
        f"(≥ {shared['share_target']}) | quiet CPU s/chunk | loaded CPU s/chunk | loaded ÷ "
        f"quiet (≤ {shared['cpu_target']}) | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    settings = [s for s in (shared["spinning_off"], shared.get("spinning_on")) if s]
    for s in settings:
        lines.append(
            f"| spinning {'on' if s['spinning'] else 'off (shipped)'} | {s['pairs']} | "
            f"{s['quiet_chunks_per_s']:.2f} | {s['loaded_chunks_per_s']:.2f} | "
            f"**{s['throughput_ratio']:.3f}** {verdict(s['throughput_met'])} | "
            f"{s['quiet_cpu_s_per_chunk']:.4f} | {s['loaded_cpu_s_per_chunk']:.4f} | "
            f"**{s['cpu_ratio']:.3f}** {verdict(s['cpu_met'])} | {s['peak_rss_mb']:.0f} |")
    off = shared["spinning_off"]
    lines += ["", f"- **Shipped setting (spinning off): loaded throughput "
              f"{off['throughput_ratio']:.3f}× the quiet one** (target ≥ {shared['share_target']}, "
              f"{verdict(off['throughput_met'])}; fair share 0.5), **CPU per chunk "
              f"{off['cpu_ratio']:.3f}×** (target ≤ {shared['cpu_target']}, "
              f"{verdict(off['cpu_met'])}); peak RSS {off['peak_rss_mb']:.0f} MB."]
    on = shared.get("spinning_on")
    if on:
        quiet, loaded = (ratio(on[k], off[k]) for k in ("quiet_chunks_per_s",
                                                         "loaded_chunks_per_s"))
        cpu_q, cpu_l = (ratio(on[k], off[k]) for k in ("quiet_cpu_s_per_chunk",
                                                        "loaded_cpu_s_per_chunk"))
        better = quiet >= 1.05 and loaded >= 0.98
        lines.append(
            f"- Spinning on against off: quiet throughput {quiet:.3f}×, loaded {loaded:.3f}×; "
            f"CPU per chunk quiet {cpu_q:.3f}×, loaded {cpu_l:.3f}×. "
            + ("**Spinning on is clearly better quiet and not worse loaded** (the code owner "
               "decides)." if better else
               "Spinning on does not pay clearly enough (≥ 5 % quiet, not worse loaded) to "
               "justify it: off stays."))
    stops = shared["signal_runs"]
    quiet_stops = [r for r in stops if not r["loaded"]]
    loaded_stops = [r for r in stops if r["loaded"]]
    codes = sorted({r["exit_code"] for r in stops})
    doctors = sorted({r["doctor_exit"] for r in stops})
    delays = [r["delay_s"] for r in stops]
    lines += [
        f"- **SIGTERM in phase 2 → exit: median {shared['stop_median_s']:.2f} s, max "
        f"{shared['stop_max_s']:.2f} s** over {len(stops)} runs (target ≤ "
        f"{shared['stop_target_s']:.0f} s, {verdict(shared['stop_met'])}): quiet "
        + ", ".join(f"{r['exit_s']:.2f}" for r in quiet_stops) + " s; loaded "
        + ", ".join(f"{r['exit_s']:.2f}" for r in loaded_stops) + " s. `groove index --force`, "
        f"signalled {min(delays):.1f}–{max(delays):.1f} s after phase 2 committed its first "
        f"vectors; exit codes "
        f"{codes}, `groove doctor` after each exited {doctors}.",
        "", "| # | threads | run | wall s | chunks/s | CPU s/chunk | peak RSS MB | load avg "
        "before → after | others' cores |", "|---:|---|---|---:|---:|---:|---:|---|---:|"]
    for n, pair in enumerate(shared["pairs"], 1):
        for kind in ("quiet", "loaded"):
            r = pair[kind]
            capped = f" (stopped at {r['capped_at_s']:.0f} s)" if r["capped_at_s"] else ""
            lines.append(
                f"| {n} | {'on' if r['spinning'] else 'off'} | {kind}{capped}"
                f"{' — disturbed' if r['disturbed'] else ''} | {r['wall_s']:.1f} | "
                f"{r['chunks_per_s']:.2f} | {r['cpu_s_per_chunk']:.4f} | "
                f"{r['peak_rss_mb']:.0f} | {r['load_average_before'][:1]} → "
                f"{r['load_average_after'][:1]} | {r['others_cores']:.2f} |")
    lines += ["", "\"Others' cores\": CPU the rest of the machine used during the run (/proc/stat "
              "less the groove process and the busy processes), mean cores; above "
              f"{shared['disturbed_above_cores']} a run counts as disturbed and its pair is left "
              "out of the means (and run again).", ""]
    return lines


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
    if "args" in data:
        lines += [
            f"Command: `.venv/bin/python bench/bench_index.py {data['args']}`.", "",
        ]
    if data.get("shared_machine"):
        lines += _shared_lines(data["shared_machine"])
    return "\n".join(lines).rstrip("\n")


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
    parser.add_argument("--only", choices=["shared"],
                        help="measure only this part and merge it into index.json, keeping the "
                             "other parts (each with the commit it was measured at): shared = "
                             "CISI alone and beside busy processes, spinning off and on, and "
                             "SIGTERM to exit (issue 37)")
    parser.add_argument("--pairs", type=int, default=2,
                        help="shared: quiet/loaded pairs with spinning off (shipped)")
    parser.add_argument("--spin-pairs", type=int, default=2,
                        help="shared: quiet/loaded pairs with spinning on (0: none)")
    parser.add_argument("--stops", default="5,3",
                        help="shared: SIGTERM runs, quiet,loaded")
    parser.add_argument("--retries", type=int, default=1,
                        help="shared: pairs run again when disturbed by other work, in all")
    parser.add_argument("--budget-min", type=float, default=25,
                        help="shared: no pair is run again past this many minutes in all")
    args = parser.parse_args()
    saved_path = RESULTS / "index.json"
    saved = json.loads(saved_path.read_text(encoding="utf-8")) if saved_path.is_file() else {}
    if args.markdown_only:
        (RESULTS / "index.md").write_text(markdown(saved) + "\n", encoding="utf-8")
        return
    if args.only == "shared":
        stops, _, loaded_stops = args.stops.partition(",")
        saved = saved or {"benchmark": "index", "model": DEFAULT_MODEL, "machine": machine()}
        saved["shared_machine"] = shared_machine(
            SHARED, pairs=args.pairs, spin_pairs=args.spin_pairs, stops=int(stops),
            loaded_stops=int(loaded_stops or 0), retries=args.retries,
            budget_min=args.budget_min)
        write_results("index", saved, markdown(saved))
        print(markdown(saved))
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
    if saved.get("shared_machine"):  # measured by `--only shared`, at its own commit
        data["shared_machine"] = saved["shared_machine"]
    write_results("index", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
