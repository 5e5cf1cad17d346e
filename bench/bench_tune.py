#!/usr/bin/env python3
"""Tune benchmark: a full fusion-space sweep over 200 JSQuAD queries on the JSQuAD index.

    .venv/bin/python bench/bench_tune.py [--queries 200] [--reps 3]

The golden file holds the first 200 queries of `queries-1000.jsonl` (the same ids as the quality
benchmark, so their embeddings are usually cached already). Each run is
`groove_cli.evaluate.tune.run.run_tune` itself, with its `on_phase` hook timing each phase:

- embedding: every query vector from the query cache or the model (excluded from the total);
- fetching lists: the vector lists (one batched KNN), the golden paths checked against the
  index, the pre-flight lists and `count(*)` (built-in and the two probe bm25 weight sets,
  trigram and word-level tables), the pre-flight check, the other 61 weight sets' lists and the
  (path, heading) of every listed chunk;
- sweep: 384 conditions fused and scored in memory;
- LOO-CV: nested leave-one-query-out selection;
- verdict: the verdict and the report.

The phase run is repeated `--reps` times (medians reported, the machine is shared); its JSON must
equal the one an untimed `run_tune` returns, which is also timed as a whole, as is the
`groove tune --format json` subprocess. Target: total excluding query embedding ≤ 60 s.

Writes bench/results/tune.json and tune.md.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import yaml
from _common import (
    JSQUAD,
    Collection,
    load_average,
    machine,
    machine_line,
    median,
    run_groove,
    verdict,
    write_results,
)
from eval_datasets import golden_document

from groove_cli.engine import TUNE_PHASES, TuneRequest, default_settings, label_of, run_tune

TARGET_S = 60.0
K_VALUES = (1, 5, 10)
FETCH_PHASES = TUNE_PHASES[1:7]
PHASES = ("embedding", *FETCH_PHASES, "fetch_lists", "sweep", "loo_cv", "verdict",
          "total_excluding_embedding")


def write_golden(coll: Collection, n: int) -> Path:
    """The first `n` queries of the 1,000-query sample as a golden file."""
    doc = golden_document(coll.source / "queries-1000.jsonl")
    doc["queries"] = doc["queries"][:n]
    path = coll.work / f"golden-tune{n}.yml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=10_000),
                    encoding="utf-8")
    return path


def request(coll: Collection, golden_path: Path) -> TuneRequest:
    return TuneRequest(settings=default_settings(), db=coll.db, kb=coll.kb,
                       golden=golden_path, k_values=K_VALUES, limit=None, space="fusion")


def phased_tune(coll: Collection, golden_path: Path) -> tuple[dict[str, float], dict[str, Any]]:
    """`run_tune` with each phase timed through its `on_phase` hook; (seconds, tune JSON)."""
    seconds: dict[str, float] = {}

    def record(phase: str, elapsed: float) -> None:
        seconds[phase] = seconds.get(phase, 0.0) + elapsed

    report = run_tune(request(coll, golden_path), on_phase=record)
    start = time.perf_counter()
    document = report.to_json()
    record("verdict", time.perf_counter() - start)
    s = seconds
    s["fetch_lists"] = sum(s.get(p, 0.0) for p in FETCH_PHASES)
    s["total_excluding_embedding"] = s["fetch_lists"] + s["sweep"] + s["loo_cv"] + s["verdict"]
    return s, document


def whole_run_tune(coll: Collection, golden_path: Path) -> tuple[float, dict[str, Any]]:
    """`run_tune` itself, timed as one call (embeddings come from the cache by now)."""
    start = time.perf_counter()
    report = run_tune(request(coll, golden_path)).to_json()
    return time.perf_counter() - start, report


def comparable(report: dict[str, Any]) -> str:
    """A tune JSON as canonical text, without the two paths (spelled as each caller gave them)."""
    rest = {k: v for k, v in report.items() if k not in ("kb_path", "golden_path")}
    return json.dumps(rest, sort_keys=True)


def markdown(data: dict[str, Any]) -> str:
    med = data["median_s"]
    result = data["result"]
    rows = [("query embedding (excluded)", "embedding"),
            ("fetch: vector lists (one batched KNN)", "fetch_vector"),
            ("golden paths checked against the index", "golden_checks"),
            ("fetch: pre-flight lists (3 weight sets) + count(*)", "fetch_preflight"),
            ("pre-flight check", "preflight"),
            ("fetch: the other 61 weight sets' FTS lists", "fetch_grid"),
            ("fetch: chunk (path, heading)", "fetch_meta"),
            ("**fetching lists**", "fetch_lists"),
            ("**sweep** (384 conditions, in memory)", "sweep"),
            ("**LOO-CV**", "loo_cv"),
            ("verdict + JSON", "verdict"),
            ("**total excluding query embedding**", "total_excluding_embedding")]
    lines = [
        f"# Tune benchmark (fusion space, {data['queries']} JSQuAD queries)",
        "",
        f"Index: {data['chunks']} chunks (`bench/work/jsquad/index.db`). Phases timed by calling "
        "`run_tune`'s `on_phase` hook (groove_cli/evaluate/tune/run.py); median of "
        f"{data['reps']} runs. " + machine_line(data["machine"]),
        "",
        "| phase | median s | runs s |",
        "|---|---:|---|",
    ]
    for label, key in rows:
        runs = ", ".join(f"{r[key]:.2f}" for r in data["runs_s"])
        lines.append(f"| {label} | {med[key]:.2f} | {runs} |")
    lines += [
        "",
        f"- **Total excluding query embedding: {med['total_excluding_embedding']:.1f} s** "
        f"(target ≤ {TARGET_S:.0f} s, {verdict(data['met'])}).",
        f"- `run_tune` as one call: {data['run_tune_s']:.1f} s (embeddings cached); the "
        f"phase-by-phase JSON {'equals' if data['same_json'] else 'DIFFERS from'} its JSON.",
        f"- `groove tune --format json` subprocess: {data['cli_wall_s']:.1f} s wall "
        f"(process start and imports included, embeddings cached); its JSON "
        f"{'equals' if data['cli_same_json'] else 'DIFFERS from'} the phase run's.",
        f"- Outcome: {result['effective_query_count']} of {result['query_count']} queries "
        f"effective; verdict `{result['verdict']['decision']}`, refit "
        f"{label_of(result['loo']['refit'])}, held-out mean Δ nDCG@5 "
        f"{result['loo']['mean_delta']:.4f}, stability {result['loo']['selection_stability']:.2f}.",
        "",
        "Command: `.venv/bin/python bench/bench_tune.py`.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    os.environ["GROOVE_LOG"] = "warning"  # run_tune's 200 per-query progress lines
    coll = JSQUAD
    coll.ensure_index()
    golden = write_golden(coll, args.queries)
    data: dict[str, Any] = {"benchmark": "tune", "space": "fusion", "queries": args.queries,
                            "machine": machine(), "reps": args.reps}
    runs: list[dict[str, float]] = []
    report: dict[str, Any] = {}
    for _ in range(args.reps):
        seconds, report = phased_tune(coll, golden)
        runs.append(seconds)
    data["runs_s"] = runs
    data["median_s"] = {p: median([r.get(p, 0.0) for r in runs]) for p in PHASES}
    data["met"] = data["median_s"]["total_excluding_embedding"] <= TARGET_S
    data["run_tune_s"], whole = whole_run_tune(coll, golden)
    data["same_json"] = comparable(whole) == comparable(report)
    cli = run_groove(["tune", "--kb-path", str(coll.kb), "--golden", str(golden), "--format",
                      "json"], config=coll.config, db=coll.db)
    data["cli_wall_s"] = cli.wall_s
    data["cli_same_json"] = comparable(cli.json()) == comparable(report)
    data["chunks"] = report["chunk_total"]
    data["load_average_after"] = load_average()
    data["result"] = {k: report[k] for k in ("query_count", "effective_query_count", "loo",
                                              "verdict", "per_query_impact")}
    write_results("tune", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
