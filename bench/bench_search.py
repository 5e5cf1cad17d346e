#!/usr/bin/env python3
"""Search benchmark on synthetic KBs of 10k and 100k chunks.

    .venv/bin/python bench/bench_search.py [--sizes 10000,100000] [--reps 5] [--rebuild]

Each benchmark index is written directly through the store (search_index.py: the generated
notes' real rows, random unit float32 vectors of dimension 384). Rankings of the vector leg are
meaningless on random vectors; only its cost and exactness are measured.

Measured per size, in process and warm, over 100 generated queries × `--reps` repetitions
(each repetition runs the pipeline, then the two references, so drift hits all three alike):

- per-stage latency p50/p95 from `pipeline.search`'s trace timings, with the default `search`
  settings (limit 5, hybrid, quality threshold 0.3, spans on) and the query embedded by the real
  model each time (the `embed` stage);
- the FTS stage (the trigram, word-level and CJK legs the query runs) ÷ the bare
  `SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}, 2, 1, 1) LIMIT ?` on
  each table the query searches, at the legs' own LIMIT (target ≤ 1.3);
- the vector leg ÷ numpy brute force (one matrix product + top-k) over the same float32
  vectors held in memory, at the leg's own k (target ≤ 2), and the leg's recall@50 against
  exact float64 search (target ≥ 0.99);

and, in fresh subprocesses (median of 5, groove's modules compiled to bytecode first, as an
installed package has them): `groove search --mode fts` (target ≤ 0.3 s) and hybrid search
with the default model on a query whose embedding is not cached (the `query_cache` rows are
deleted before each run; target ≤ 1.0 s), and the same hybrid search with issue 44's stages
on (vector feedback, the per-note cap), interleaved with it: the ratio of the medians (target
≤ 1.15).

Writes bench/results/search.json and search.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _common import (
    DEFAULT_MODEL,
    RESULTS,
    clear_query_cache,
    empty_config,
    load_average,
    machine,
    machine_line,
    median,
    percentile,
    ratio,
    run_groove,
    verdict,
    write_results,
)
from search_index import DIM, SEARCH_WORK, ensure_index, queries_file

import groove_cli
from groove_cli.engine import (
    FTS_TABLES,
    CompiledQuery,
    Embedder,
    FilterSpec,
    Searcher,
    SearchParams,
    Store,
    build_params,
    compile_filters,
    compile_query,
    default_models_dir,
    default_settings,
    fetch_size,
    fts_exprs,
    pool_sizes,
    resolve_model,
    search,
    vector_k,
    vector_leg,
)

RECALL_K = 50
COLD_RUNS = 5
DEFAULT = "default"
VARIANTS = {DEFAULT: 0.3, "no_quality_filter": 0.0}
"""Quality thresholds measured: `search`'s default (a filter, so each leg over-fetches ×10) and
none (what `eval` and `tune` use)."""
STAGES = ("embed", "vec", "fts", "fuse", "rerank", "mmr", "parent", "spans", "total")
TARGETS = {"fts_ratio": 1.3, "vec_ratio": 2.0, "recall": 0.99, "cold_fts_s": 0.3,
           "cold_hybrid_s": 1.0, "stages_growth": 1.15}
COLD_MODES: dict[str, list[str]] = {
    "fts": ["--mode", "fts"],
    "hybrid": ["--mode", "hybrid"],
    # issue 44's stages on: vector feedback (a second KNN) and the per-note cap
    "hybrid_stages": ["--mode", "hybrid", "--feedback-beta", "0.2", "--per-note", "1"],
}
"""The cold runs: each a fresh `groove search` process with these arguments."""
TIMINGS_RE = re.compile(r"explain: timings ms: (.*)")


# --------------------------------------------------------------------------- references


BARE_FTS_SQL = {
    table: (f"SELECT rowid FROM {table} WHERE {table} MATCH ? "
            f"ORDER BY bm25({table}, 2.0, 1.0, 1.0) LIMIT ?")
    for table in FTS_TABLES
}


def bare_fts_ids(store: Store, query: CompiledQuery, n: int) -> int:
    """The reference for the FTS stage: the bare ranked-rowid query on each table it searches
    (no join, no row decoding); returns the number of ids."""
    count = 0
    for table, expr in fts_exprs(query).items():
        if expr is None:
            continue
        count += len(store.con.execute(BARE_FTS_SQL[table], (expr, n)).fetchall())
    return count


@dataclass(frozen=True, slots=True)
class Matrix:
    """The index's vectors as one in-memory float32 array (the numpy reference)."""

    ids: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]

    def brute_force(self, query: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.int64]:
        """Top-k ids by cosine similarity: one matrix product, argpartition, sort."""
        scores = self.vectors @ query
        k = min(k, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return self.ids[top]

    def exact(self, query: npt.NDArray[np.float32], k: int) -> list[int]:
        """Ground truth: float64 similarities, ties by chunk id."""
        scores = self.vectors.astype(np.float64) @ query.astype(np.float64)
        order = np.lexsort((self.ids, -scores))[:k]
        return [int(self.ids[i]) for i in order]


def load_matrix(store: Store) -> Matrix:
    ids: list[int] = []
    blobs: list[bytes] = []
    for cid, blob in store.all_vectors():
        ids.append(cid)
        blobs.append(blob)
    vectors = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), DIM)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return Matrix(np.asarray(ids, dtype=np.int64), np.ascontiguousarray(vectors, dtype=np.float32))


# --------------------------------------------------------------------------- in-process


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


@dataclass
class LegSamples:
    """Every repetition's leg and reference timings (ms) for one query and one setting."""

    fts_leg: list[float] = field(default_factory=list)
    fts_bare: list[float] = field(default_factory=list)
    vec_leg: list[float] = field(default_factory=list)
    knn_only: list[float] = field(default_factory=list)
    vec_bare: list[float] = field(default_factory=list)


@dataclass
class QuerySamples:
    """One query's samples: stage timings of the default setting, legs per setting."""

    stages: dict[str, list[float]]
    legs: dict[str, LegSamples]
    recall: float | None = None


def leg_sizes(params: SearchParams) -> tuple[int, int]:
    """(FTS LIMIT, vector k) the legs fetch: the pool, ×10 when a filter is active."""
    pools = pool_sizes(params)
    filtered = compile_filters(params.filters).active
    return fetch_size(pools.fts, filtered), vector_k(pools.vec, filtered)


def measure_query(session: Searcher, embedder: Embedder, matrix: Matrix,
                  query: CompiledQuery, variants: dict[str, SearchParams],
                  reps: int) -> QuerySamples:
    """Run the pipeline under each setting and both references `reps` times, interleaved."""
    store = session.store
    knn = session.knn()
    out = QuerySamples({s: [] for s in STAGES}, {name: LegSamples() for name in variants})
    vector: npt.NDArray[np.float32] | None = None
    for _ in range(reps):
        start = time.perf_counter()
        vector = embedder.embed_queries([query.positive_text])[0]
        embed_ms = _ms(start)
        for name, params in variants.items():
            fts_n, vec_k = leg_sizes(params)
            legs = out.legs[name]
            result = search(store, query, params, vector=vector, knn=knn, dim=DIM,
                            embed_ms=embed_ms)
            if name == DEFAULT:
                for stage in STAGES:
                    value = result.trace.timings_ms.get(stage)
                    if value is not None:
                        out.stages[stage].append(value)
            if any(fts_exprs(query).values()):
                legs.fts_leg.append(result.trace.timings_ms["fts"] or 0.0)
                start = time.perf_counter()
                bare_fts_ids(store, query, fts_n)
                legs.fts_bare.append(_ms(start))
            legs.vec_leg.append(result.trace.timings_ms["vec"] or 0.0)
            start = time.perf_counter()
            knn(vector, vec_k)
            legs.knn_only.append(_ms(start))
            start = time.perf_counter()
            matrix.brute_force(vector, vec_k)
            legs.vec_bare.append(_ms(start))
    assert vector is not None
    params = variants[DEFAULT]
    leg = vector_leg(knn, store, vector, pool_sizes(params).vec, compile_filters(params.filters),
                     None)
    got = list(leg[:RECALL_K])
    truth = matrix.exact(vector, RECALL_K)
    out.recall = len(set(got) & set(truth)) / len(truth)
    return out


def stage_table(samples: Sequence[QuerySamples]) -> dict[str, dict[str, float]]:
    """p50/p95 (ms) per stage over every (query, repetition) sample."""
    table: dict[str, dict[str, float]] = {}
    for stage in STAGES:
        values = [v for s in samples for v in s.stages[stage]]
        if values:
            table[stage] = {"p50_ms": percentile(values, 50), "p95_ms": percentile(values, 95),
                            "samples": len(values)}
    return table


def leg_ratio(leg: Sequence[Sequence[float]], bare: Sequence[Sequence[float]]) -> dict[str, float]:
    """Per query the medians of the repetitions; then Σ leg ÷ Σ bare (the headline, weighted
    by cost like a user's total wait), the median and p95 of the per-query ratios."""
    leg_med = [median(x) for x, y in zip(leg, bare, strict=True) if x and y]
    bare_med = [median(y) for x, y in zip(leg, bare, strict=True) if x and y]
    per_query = [ratio(a, b) for a, b in zip(leg_med, bare_med, strict=True)]
    return {
        "ratio_of_sums": ratio(sum(leg_med), sum(bare_med)),
        "median_ratio": median(per_query),
        "p95_ratio": percentile(per_query, 95),
        "leg_p50_ms": percentile(leg_med, 50),
        "bare_p50_ms": percentile(bare_med, 50),
        "leg_p95_ms": percentile(leg_med, 95),
        "bare_p95_ms": percentile(bare_med, 95),
        "queries": len(per_query),
    }


def in_process(db: Path, kb: Path, queries: Sequence[str], embedder: Embedder,
               reps: int) -> dict[str, Any]:
    """Warm in-process measurements on one index (see module doc)."""
    settings = default_settings()
    variants = {name: build_params(settings, limit=5, rerank=False,
                                   filters=FilterSpec(quality_threshold=threshold))
                for name, threshold in VARIANTS.items()}
    session = Searcher.open(db, kb, model=None, max_length=None,
                            models_dir=default_models_dir(), offline=True)
    try:
        matrix = load_matrix(session.store)
        compiled = [compile_query(q) for q in queries]
        for query in compiled:  # warm-up pass, not recorded
            measure_query(session, embedder, matrix, query, variants, 1)
        samples = [measure_query(session, embedder, matrix, query, variants, reps)
                   for query in compiled]
    finally:
        session.close()
    recalls = [s.recall for s in samples if s.recall is not None]
    settings_out: dict[str, Any] = {}
    for name, params in variants.items():
        fts_n, vec_k = leg_sizes(params)
        legs = [s.legs[name] for s in samples]
        fts = leg_ratio([x.fts_leg for x in legs], [x.fts_bare for x in legs])
        vec = leg_ratio([x.vec_leg for x in legs], [x.vec_bare for x in legs])
        settings_out[name] = {
            "quality_threshold": VARIANTS[name],
            "fts_limit": fts_n,
            "vector_k": vec_k,
            "fts_leg_vs_bare_sql": fts,
            "fts_met": fts["ratio_of_sums"] <= TARGETS["fts_ratio"],
            "vector_leg_vs_numpy": vec,
            "vec_met": vec["ratio_of_sums"] <= TARGETS["vec_ratio"],
            "snapshot_knn_vs_numpy": leg_ratio([x.knn_only for x in legs],
                                               [x.vec_bare for x in legs]),
        }
    return {
        "queries": len(queries),
        "reps": reps,
        "limit": 5,
        "mode": "hybrid",
        "stages": stage_table(samples),
        "settings": settings_out,
        "recall_at_50": {"mean": float(np.mean(recalls)), "min": float(np.min(recalls))},
        "recall_met": float(np.min(recalls)) >= TARGETS["recall"],
        "fts_queries": sum(1 for q in compiled if any(fts_exprs(q).values())),
        "trigram_queries": sum(1 for q in compiled if q.match_expr is not None),
        "word_queries": sum(1 for q in compiled if q.word_expr is not None),
    }


def blas_probe(size: int) -> dict[str, float]:
    """Median ms of the numpy reference (random {size}×384 float32, k = 500) in fresh processes
    with OpenBLAS's default threads and with one thread: on a busy 2-core machine the second
    BLAS thread may wait for a core, so the threaded product can be the slower one."""
    code = (
        "import time, numpy as np\n"
        f"m = np.random.default_rng(0).standard_normal(({size}, {DIM})).astype(np.float32)\n"
        f"q = np.random.default_rng(1).standard_normal({DIM}).astype(np.float32)\n"
        "t = []\n"
        "for _ in range(60):\n"
        "    a = time.perf_counter(); s = m @ q; top = np.argpartition(-s, 499)[:500]\n"
        "    top[np.argsort(-s[top])]; t.append(time.perf_counter() - a)\n"
        "print(sorted(t)[30] * 1000)\n"
    )
    out: dict[str, float] = {}
    for label, env in (("default_threads_ms", {}), ("one_thread_ms", {"OPENBLAS_NUM_THREADS": "1"})):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={**os.environ, **env})
        out[label] = float(proc.stdout.strip())
    return out


# --------------------------------------------------------------------------- cold


def parse_timings(stderr: str) -> dict[str, float | None]:
    match = TIMINGS_RE.search(stderr)
    if match is None:
        return {}
    out: dict[str, float | None] = {}
    for part in match.group(1).split():
        key, _, value = part.partition("=")
        out[key] = None if value == "-" else float(value)
    return out


def compile_bytecode() -> None:
    """Compile groove's modules to bytecode, as `pip install` does for an installed package.

    This machine sets PYTHONDONTWRITEBYTECODE=1, so an editable checkout would otherwise
    compile ~30 modules from source in every process (~0.25 s of a cold start) — a cost no
    installed groove pays."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(groove_cli.__file__).parent)],
                   check=True, capture_output=True)


def cold(db: Path, queries: Sequence[str]) -> dict[str, Any]:
    """Fresh `groove search` processes: FTS-only and hybrid with an uncached query, with
    groove's bytecode compiled (compile_bytecode)."""
    compile_bytecode()
    cfg = empty_config(SEARCH_WORK)
    result: dict[str, Any] = {"bytecode": "compiled (python -m compileall, as pip install does)"}
    runs: dict[str, list[Any]] = {mode: [] for mode in COLD_MODES}
    for i in range(COLD_RUNS):  # the modes interleaved, so drift hits them alike
        for mode, args in COLD_MODES.items():
            if mode != "fts":
                clear_query_cache(db)
            runs[mode].append(run_groove(["search", queries[i], *args, "--explain"], config=cfg,
                                         db=db))
    for mode, done in runs.items():
        walls = [run.wall_s for run in done]
        cpus = [run.cpu_s for run in done]
        timings = [parse_timings(run.stderr) for run in done]
        target = TARGETS["cold_fts_s" if mode == "fts" else "cold_hybrid_s"]
        result[mode] = {
            "wall_s": walls,
            "median_wall_s": median(walls),
            "cpu_s": cpus,
            "median_cpu_s": median(cpus),
            "target_s": target,
            "met": median(walls) <= target,
            "median_in_process_total_ms": median([t.get("total") or 0.0 for t in timings]),
            "median_embed_ms": median([t.get("embed") or 0.0 for t in timings]),
        }
    growth = result["hybrid_stages"]["median_wall_s"] / result["hybrid"]["median_wall_s"]
    result["stages_growth"] = {"ratio": growth, "target": TARGETS["stages_growth"],
                               "met": growth <= TARGETS["stages_growth"]}
    return result


# --------------------------------------------------------------------------- report


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Search benchmark (synthetic KBs, random unit vectors)",
        "",
        machine_line(data["machine"]) + " In-process numbers are warm: one "
        f"unrecorded pass, then {data['reps']} interleaved repetitions per query of the pipeline "
        "and both references; ratios use the per-query medians. Cold numbers are fresh "
        f"`groove search` subprocesses, median of {COLD_RUNS}.",
        "",
    ]
    for size, entry in data["sizes"].items():
        ip = entry["in_process"]
        build = entry["build"]
        default = ip["settings"][DEFAULT]
        lines += [
            f"## {int(size):,} chunks ({build['files']:,} files)",
            "",
            f"Default `search` settings: limit {ip['limit']}, {ip['mode']}, quality threshold "
            f"0.3 (a filter, so each leg over-fetches ×10: FTS LIMIT {default['fts_limit']}, "
            f"vector k {default['vector_k']}); {ip['queries']} queries: {ip['trigram_queries']} "
            f"search the trigram table, {ip['word_queries']} the word-level table, "
            f"{ip['fts_queries']} at least one.",
            "",
            "| stage | p50 ms | p95 ms |",
            "|---|---:|---:|",
        ]
        for stage, row in ip["stages"].items():
            lines.append(f"| {stage} | {row['p50_ms']:.2f} | {row['p95_ms']:.2f} |")
        lines.append("")
        for name, setting in ip["settings"].items():
            fts = setting["fts_leg_vs_bare_sql"]
            vec = setting["vector_leg_vs_numpy"]
            knn = setting["snapshot_knn_vs_numpy"]
            head = ("default settings" if name == DEFAULT else
                    f"quality threshold {setting['quality_threshold']} (no filter, as eval/tune; "
                    f"FTS LIMIT {setting['fts_limit']}, vector k {setting['vector_k']})")
            lines += [
                f"- {head}: **FTS stage ÷ bare SQL {fts['ratio_of_sums']:.2f}** (target ≤ "
                f"{TARGETS['fts_ratio']}, {verdict(setting['fts_met'])}; per-query median "
                f"{fts['median_ratio']:.2f}, p95 {fts['p95_ratio']:.2f}; p50 {fts['leg_p50_ms']:.2f}"
                f" vs {fts['bare_p50_ms']:.2f} ms); **vector leg ÷ numpy "
                f"{vec['ratio_of_sums']:.2f}** (target ≤ {TARGETS['vec_ratio']}, "
                f"{verdict(setting['vec_met'])}; p50 {vec['leg_p50_ms']:.2f} vs "
                f"{vec['bare_p50_ms']:.2f} ms; the snapshot KNN alone {knn['ratio_of_sums']:.2f}).",
            ]
        lines.append(
            f"- **Recall@50 vs exact search: mean {ip['recall_at_50']['mean']:.4f}, min "
            f"{ip['recall_at_50']['min']:.4f}** (target ≥ {TARGETS['recall']}, "
            f"{verdict(ip['recall_met'])}).")
        cold_runs = entry.get("cold")
        if cold_runs:
            if "bytecode" in cold_runs:
                lines.append(f"- Cold runs: groove's bytecode {cold_runs['bytecode']}.")
            if "remeasured" in cold_runs:
                lines.append("- Cold runs re-measured alone (`--cold-only`): "
                             + machine_line(cold_runs["remeasured"]))
            for mode, label in (("fts", "`--mode fts`"),
                                ("hybrid", "hybrid, query not cached"),
                                ("hybrid_stages", "hybrid with vector feedback and the "
                                                  "per-note cap on, query not cached")):
                if mode not in cold_runs:  # measured before issue 44's stages
                    continue
                c = cold_runs[mode]
                lines.append(
                    f"- **Cold {label}: {c['median_wall_s']:.3f} s** (target ≤ {c['target_s']} "
                    f"s, {verdict(c['met'])}), child CPU {c['median_cpu_s']:.3f} s; pipeline total "
                    f"{c['median_in_process_total_ms']:.1f} ms of which embed (model load + "
                    f"query) {c['median_embed_ms']:.1f} ms; the rest is process start and "
                    "imports.")
        growth = (cold_runs or {}).get("stages_growth")
        if growth:
            lines.append(f"- **Cold hybrid with issue 44's stages on ÷ without: "
                         f"{growth['ratio']:.3f}×** (target ≤ {growth['target']}, "
                         f"{verdict(growth['met'])}; same run, interleaved).")
        probe = entry.get("blas_probe")
        if probe:
            lines.append(
                f"- numpy top-500 over {int(size):,} random vectors in a fresh process: "
                f"{probe['default_threads_ms']:.2f} ms with OpenBLAS's default threads, "
                f"{probe['one_thread_ms']:.2f} ms with `OPENBLAS_NUM_THREADS=1` (a reference "
                "for the numpy figures above, which use the default threads like groove).")
        lines.append("")
    lines.append("Command: `.venv/bin/python bench/bench_search.py`.")
    return "\n".join(lines)


def remeasure_cold(queries: Sequence[str]) -> None:
    """The cold runs again on the existing indexes; the rest of search.json is kept, and the
    entry records the commit and load of this re-measurement."""
    path = RESULTS / "search.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for size, entry in data["sizes"].items():
        db = SEARCH_WORK / f"index{size}.db"
        if not db.is_file():  # that size keeps the cold runs it has (they name their commit)
            print(f"no index for {size} chunks: its cold runs are kept")
            continue
        entry["cold"] = {**cold(db, queries), "remeasured": machine()}
    write_results("search", data, markdown(data))
    print(markdown(data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per query (default 5)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the benchmark indexes")
    parser.add_argument("--cold-only", action="store_true",
                        help="re-measure only the cold subprocess runs (e.g. on a quiet machine) "
                             "into the existing bench/results/search.json")
    args = parser.parse_args()
    SEARCH_WORK.mkdir(parents=True, exist_ok=True)
    queries = queries_file().read_text(encoding="utf-8").splitlines()
    if args.cold_only:
        remeasure_cold(queries)
        return
    model = resolve_model(DEFAULT_MODEL, default_models_dir(), offline=True)
    embedder = Embedder.load(model)
    data: dict[str, Any] = {"benchmark": "search", "machine": machine(), "reps": args.reps,
                            "query_count": len(queries), "sizes": {}}
    for size in (int(s) for s in args.sizes.split(",")):
        kb, db, build = ensure_index(size, args.rebuild)
        entry: dict[str, Any] = {"build": build, "load_average_before": load_average()}
        entry["in_process"] = in_process(db, kb, queries, embedder, args.reps)
        entry["cold"] = cold(db, queries)
        entry["blas_probe"] = blas_probe(size)
        entry["load_average_after"] = load_average()
        data["sizes"][str(size)] = entry
        print(f"{size}: done", file=sys.stderr)
    write_results("search", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
