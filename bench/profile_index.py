#!/usr/bin/env python3
"""Where an index run's CPU goes besides the model: a profiled `Index.index()` (issue 26).

    .venv/bin/python bench/profile_index.py [--notes 600]

Copies the first N JSQuAD notes into bench/work/profile_index/kb (links are refused by
`index`), indexes them from scratch through `groove_cli.open(...).index()` under cProfile with
a CPU clock (`time.process_time`: every thread of the process, so onnxruntime's own threads
count) and again with a wall clock, and sums the profile into the stages the throughput
ratio of bench_index.py pays for beyond the bare embedder: the model's inference, loading
the model, tokenizing, SQLite, the CJK tokens of the full-text rows, Markdown parsing, and
the rest. Writes
bench/results/index_profile.{json,md}.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import time
from typing import Any

from _common import WORK, datasets_root, empty_config, machine, machine_line, write_results

import groove_cli

STAGES = (
    ("model inference (onnxruntime run)", ("onnxruntime_pybind11_state.run",)),
    ("model load (tokenizer file, ONNX session)", ("from_file", "InferenceSession",
                                                   "onnxruntime/capi/onnxruntime_inference")),
    ("tokenizing (counts, inputs)", ("encode_batch", "'encode'", "post_process")),
    ("SQLite (apsw)", ("apsw.Connection", "apsw.Cursor")),
    ("CJK tokens of the full-text rows", ("text/cjk.py",)),
    ("Markdown parsing and chunking", ("groove_cli/chunk.py",)),
)
"""(stage, substrings of a profile entry's name): an entry's own time (tottime) goes to the
first stage it matches, the rest to "other" (imports, Python glue)."""


def stage_of(name: str) -> str:
    for stage, keys in STAGES:
        if any(key in name for key in keys):
            return stage
    return "other (imports, Python glue)"


def profile(notes: int, clock: str) -> dict[str, Any]:
    jsquad = datasets_root() / "jsquad" / "docs"
    work = WORK / "profile_index"
    if work.exists():
        shutil.rmtree(work)
    kb = work / "kb"
    kb.mkdir(parents=True)
    for path in sorted(jsquad.glob("*.md"))[:notes]:
        shutil.copy(path, kb / path.name)
    index = groove_cli.open(kb, db=work / "index.db", config=empty_config(work))
    prof = cProfile.Profile(time.process_time if clock == "cpu" else time.perf_counter)
    wall = time.perf_counter()
    prof.enable()
    report = index.index()
    prof.disable()
    wall = time.perf_counter() - wall
    index.close()
    stats = pstats.Stats(prof)
    totals: dict[str, float] = {}
    for (filename, _, func), row in stats.stats.items():  # type: ignore[attr-defined]
        own = float(row[2])
        key = stage_of(f"{filename}:{func}")
        totals[key] = totals.get(key, 0.0) + own
    cpu = sum(totals.values())
    return {"notes": notes, "clock": clock, "chunks": report.chunks, "wall_s": wall,
            "profiled_s": cpu,
            "text_ready_ms": report.text_ready_ms,
            "stages": {k: {"cpu_s": v, "share": v / cpu}
                       for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}}


def markdown(data: dict[str, Any]) -> str:
    lines = ["# Where `groove index` spends its time besides the model (multilingual-e5-small)",
             "", machine_line(data["machine"]), ""]
    for run in data["runs"]:
        what = ("CPU clock: every thread's CPU, the process's" if run["clock"] == "cpu"
                else "wall clock: waiting included")
        lines += [f"## {run['notes']} JSQuAD notes, {what}", "",
                  f"{run['chunks']} chunks indexed from scratch through "
                  f"`groove_cli.open(...).index()` under cProfile: {run['profiled_s']:.1f} s "
                  f"profiled, {run['wall_s']:.1f} s wall; phase 1 ended at "
                  f"{run['text_ready_ms'] / 1000:.1f} s.", "",
                  "| stage | s | share |", "|---|---:|---:|"]
        for stage, row in run["stages"].items():
            lines.append(f"| {stage} | {row['cpu_s']:.2f} | {row['share']:.1%} |")
        lines.append("")
    lines.append(f"Command: `.venv/bin/python bench/profile_index.py --notes "
                 f"{data['runs'][0]['notes']}`.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=600)
    args = parser.parse_args()
    data = {"benchmark": "index_profile", "machine": machine(),
            "runs": [profile(args.notes, clock) for clock in ("cpu", "wall")]}
    write_results("index_profile", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
