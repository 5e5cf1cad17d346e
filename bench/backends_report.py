"""bench/results/backends.md from backends.json: the sections of bench_backends.py (quality,
at scale) and of bench_backends_targets.py (HNSW recall, full-KB index), rendered in one place
so either script can rewrite the whole file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from _common import RESULTS, machine_line, verdict
from backends_common import (
    COLD_RUNS,
    QUALITY_THRESHOLD,
    QUANTILES,
    RERUNS,
    SEARCH_LIMIT,
    TARGETS,
    server_package,
)
from bench_search import RECALL_K, STAGES
from eval_datasets import MODES


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


def context_lines(entry: dict[str, Any]) -> list[str]:
    """The measured line, and the versions a section's numbers depend on."""
    pk = entry["machine"]["packages"] | entry.get("pg_packages", {})
    pg = entry.get("postgres") or {}
    argv = (entry.get("measured") or {}).get("argv", "")
    return [_measured_line(entry["measured"]) + f" {entry['machine']['cpu_count']} cores, "
            "shared.", "",
            f"Versions: PostgreSQL {pg.get('server_version')}, pgvector "
            f"{pg.get('vector_available')} ({entry.get('pgvector_build')}), psycopg "
            f"{pk.get('psycopg')}, {server_package(pk)}, onnxruntime "
            f"{pk.get('onnxruntime')}, numpy {pk.get('numpy')}, SQLite "
            f"{(entry.get('sqlite_versions') or {}).get('sqlite')}, sqlite-vec "
            f"{pk.get('sqlite-vec')}. Server: shared_buffers {pg.get('shared_buffers')}, "
            f"maintenance_work_mem {pg.get('maintenance_work_mem')} (the store's HNSW build "
            "raises it to 512MB).", "",
            f"Command: `.venv/bin/python bench/bench_backends_targets.py {argv}`.", ""]


def recall_lines(rec: dict[str, Any]) -> list[str]:
    """backends.md's section on the HNSW leg's recall over structured vectors."""
    nb = rec["neighbours"]

    def dist(entry: dict[str, Any], rank: int) -> str:
        q = entry[f"rank{rank}"]
        return " / ".join(f"{q[f'p{p}']:.3f}" for p in QUANTILES)

    lines = [f"## Recall@50 of the Postgres HNSW leg at {rec['chunks']:,} structured vectors "
             "(real embeddings, real queries)", "",
             f"The {rec['chunks']:,} vectors are the {rec['base_vectors']:,} real "
             "multilingual-e5-small embeddings of the CISI and JSQuAD chunks, each repeated "
             f"{rec['chunks'] // rec['base_vectors']}–{-(-rec['chunks'] // rec['base_vectors'])}"
             " times with isotropic Gaussian noise of a per-vector scale drawn log-uniformly "
             f"from [{rec['sigma'][0]}, {rec['sigma'][1]}] per dimension, renormalised; "
             "written through the Postgres store's writer, HNSW index built by the store "
             "(`build_vector_index`). Queries: "
             f"{rec['queries']} real queries ({rec['query_sources']['cisi']} CISI, "
             f"{rec['query_sources']['jsquad']} JSQuAD) embedded by groove's embedder. Recall "
             "through `Searcher.knn` (the leg a search runs) on a `PgTarget` with each "
             "ef_search, against exact float64 top-50 over the store's own vectors.", "",
             "How realistic the set is — cosine to the k-th nearest other vector, quantiles "
             "p5 / p25 / p50 / p75 / p95:", "",
             "| set | 1st neighbour | 10th | 50th |", "|---|---|---|---|"]
    for label, key in ((f"real chunks ({nb['real']['vectors']:,})", "real"),
                       (f"synthetic ({nb['synthetic']['vectors']:,}; "
                        f"{nb['synthetic']['rows_sampled']:,} rows sampled)", "synthetic")):
        lines.append(f"| {label} | {dist(nb[key], 1)} | {dist(nb[key], 10)} | "
                     f"{dist(nb[key], 50)} |")
    lines += ["", "Queries' cosine to their 1st / 50th nearest vector (p5 / p25 / p50 / p75 / "
              f"p95): real set {dist(nb['query_to_real'], 1)} / "
              f"{dist(nb['query_to_real'], RECALL_K)}; synthetic set "
              f"{dist(nb['query_to_synthetic'], 1)} / "
              f"{dist(nb['query_to_synthetic'], RECALL_K)}.", "",
              f"Write through the store: {rec['write']['write_s']:.0f} s for "
              f"{rec['write']['chunks']:,} chunks; Postgres ran the leg's query as: "
              f"{rec['knn_plan']}.", ""]
    lines += context_lines(rec) + summary_lines(rec)
    for build in rec["builds"]:
        commit = build.get("commit") or rec["measured"]["code"]["commit"]
        origin = (f"the store's DDL at `{commit}`" if build["store_ddl"]
                  else f"the store's DDL at `{commit}` with a WITH clause")
        insert = (f"; then {build['insert']['chunks']} new chunks through the store's writer "
                  f"at {build['insert']['ms_per_chunk']:.1f} ms each" if build.get("insert")
                  else "")
        lines += [f"### m = {build['m']}, ef_construction = {build['ef_construction']} "
                  f"({origin}; build {build['build_s']:.0f} s at load "
                  f"{build['load_average'][0]}{insert})", "",
                  "| ef_search | recall@50 mean | min | p5 | queries < 0.99 | p50 ms | p95 ms "
                  "| target (mean ≥ 0.99) |",
                  "|---:|---:|---:|---:|---:|---:|---:|---|"]
        for row in build["sweep"]:
            ef = str(row["ef_search"])
            if row["effective_ef_search"] != row["ef_search"]:
                ef += f" (runs as {row['effective_ef_search']}: raised to k)"
            if row["ef_search"] == rec["groove_ef_search"]:
                ef += " — groove's default"
            lines.append(f"| {ef} | {row['mean']:.4f} | {row['min']:.2f} | {row['p5']:.2f} | "
                         f"{row['queries_below_0.99']} | {row['p50_ms']:.1f} | "
                         f"{row['p95_ms']:.1f} | {verdict(row['met'])} |")
        lines.append("")
    repeats = rec.get("repeat_builds")
    if repeats:
        lines += ["### Earlier builds of the same set (pgvector draws graph levels at random: "
                  "every build differs)", "",
                  "Recall@50 mean (worst query) and p50 ms per ef_search, from the logs of two "
                  f"earlier runs at commit `{repeats[0]['commit']}`:", "",
                  "| build | " + " | ".join(f"ef {row['ef_search']}"
                                           for row in repeats[-1]["sweep"]) + " |",
                  "|---|" + "---|" * len(repeats[-1]["sweep"])]
        for build in repeats:
            cells = {row["ef_search"]: f"{row['mean']:.4f} ({row['min']:.2f}), "
                     f"{row['p50_ms']:.1f} ms" for row in build["sweep"]}
            lines.append(f"| m {build['m']}, ef_construction {build['ef_construction']} | "
                         + " | ".join(cells.get(row["ef_search"], "–")
                                      for row in repeats[-1]["sweep"]) + " |")
        lines.append("")
    return lines


def summary_lines(rec: dict[str, Any]) -> list[str]:
    """Every build of the section (and the earlier ones) grouped by m and ef_construction: the
    range of mean recall@50 at groove's ef_search and how many builds left a query at 0."""
    groups: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for build in [*rec["builds"], *rec.get("repeat_builds", [])]:
        row = next((r for r in build["sweep"] if r["ef_search"] == rec["groove_ef_search"]), None)
        if row is not None:
            groups.setdefault((build["m"], build["ef_construction"]), []).append(row)
    from groove_cli.engine import HNSW_EF_CONSTRUCTION

    lines = [f"Summary at groove's ef_search {rec['groove_ef_search']}, every build below "
             "(later builds were added by runs with `--add-builds`; each names its commit). "
             f"The store now builds m = 16, ef_construction = {HNSW_EF_CONSTRUCTION}.", "",
             "| m | ef_construction | builds | recall@50 mean | builds with a query at 0 | "
             "target (mean ≥ 0.99) |", "|---:|---:|---:|---|---:|---|"]
    for (m, efc), rows in sorted(groups.items()):
        means = [r["mean"] for r in rows]
        lines.append(f"| {m} | {efc} | {len(rows)} | {min(means):.4f}–{max(means):.4f} | "
                     f"{sum(1 for r in rows if r['min'] == 0)} | "
                     f"{verdict(min(means) >= TARGETS['recall'])} |")
    return [*lines, ""]


def index_lines(full: dict[str, Any]) -> list[str]:
    """backends.md's section on index throughput from scratch on both stores."""
    bare = full["bare"]
    lines = [f"## Index throughput from scratch: {full['documents']:,} real documents on both "
             "stores", "",
             f"The first {full['cisi_docs']:,} CISI and {full['jsquad_docs']:,} JSQuAD documents "
             f"({full['inputs']:,} chunks), `groove index` into a fresh SQLite file and a fresh "
             "Postgres database (subprocess wall, model load included) against the bare "
             "`Embedder.embed_passages` on the same inputs (model load excluded): "
             "bench_index.py's ratio, with the bare embedder run before, between and after "
             "the stores' runs, and the whole sequence repeated. \"By CPU s/chunk\" counts the "
             "groove process only; the last column adds the Postgres server's CPU (the "
             "postmaster and its backends) to it: the measure the machine's drift moves least.",
             ""]
    lines += context_lines(full)
    if full.get("runs"):
        lines += _repeated_lines(full)
    else:  # a results file from before the runs were repeated
        lines += ["| store | chunks | index wall s | chunks/s | bare chunks/s around it "
                  "| ÷ bare embedder | by `Done` line | by CPU s/chunk | target |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for store, row in full["stores"].items():
            lines.append(f"| {store} | {row['chunks']:,} | {row['wall_s']:.1f} | "
                         f"{row['chunks_per_s']:.2f} | "
                         f"{row.get('bare_chunks_per_s', bare['chunks_per_s']):.2f} | "
                         f"{row['throughput_ratio']:.3f} | "
                         f"{row['throughput_ratio_done_line']:.3f} | {row['cpu_ratio']:.3f} | "
                         f"≥ {TARGETS['index_ratio']}: {verdict(row['met'])} |")
    if full.get("bare_runs"):
        lines += ["", "Bare embedder before, between and after the stores' runs (each store "
                  "run against the mean of the two around it): " + ", ".join(
                      f"{r['embed_s']:.1f} s" for r in full["bare_runs"])
                  + f" ({full['inputs']:,} chunks); model load {bare['model_load_s']:.1f} s "
                  "(median), excluded.", ""]
    else:
        lines += ["", f"Bare embedder: {bare['embed_s']:.1f} s = {bare['chunks_per_s']:.2f} "
                  f"chunks/s (model load {bare['model_load_s']:.1f} s).", ""]
    inc = full.get("incremental")
    if inc:
        lines += [f"Incremental: {inc['new_documents']} new documents ({inc['new_chunks']} "
                  "chunks) into that index. Fixed cost = a no-change run (median of "
                  f"{RERUNS}: start-up, reading and hashing every file) + the model load "
                  f"({inc['bare']['model_load_s']:.1f} s); the rest of the run's wall time per "
                  "new chunk against the bare embedder's "
                  f"{inc['bare']['s_per_chunk'] * 1000:.0f} ms per chunk.", "",
                  "| store | no-change run s | fixed s | run wall s | per new chunk ms | "
                  "÷ bare (per chunk) | ÷ bare (whole run) |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for store, row in inc["stores"].items():
            lines.append(f"| {store} | {row['no_change_median_s']:.2f} | {row['fixed_s']:.2f} "
                         f"| {row['added']['wall_s']:.1f} | {row['s_per_chunk'] * 1000:.0f} | "
                         f"{row['per_chunk_ratio']:.3f} | {row['whole_run_ratio']:.3f} |")
        lines.append("")
    return lines


def _repeated_lines(full: dict[str, Any]) -> list[str]:
    """One row per store run, then each store's mean over the repeats (the verdict)."""
    lines = ["| run | store | index wall s | bare chunks/s around it | ÷ bare embedder "
             "| by `Done` line | by CPU s/chunk | by CPU incl. the server's |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for row in full["runs"]:
        with_server = row.get("cpu_ratio_with_server")
        lines.append(f"| {row['repeat']} | {row['store']} | {row['wall_s']:.1f} | "
                     f"{row['bare_chunks_per_s']:.2f} | {row['throughput_ratio']:.3f} | "
                     f"{row['throughput_ratio_done_line']:.3f} | {row['cpu_ratio']:.3f} | "
                     f"{'' if with_server is None else f'{with_server:.3f}'} |")
    lines += ["", "| store | runs | ÷ bare embedder, mean (min–max) | target |",
              "|---|---:|---|---|"]
    for store, entry in full["stores"].items():
        lines.append(f"| {store} | {entry['runs']} | {entry['throughput_ratio']:.3f} "
                     f"({entry['min']:.3f}–{entry['max']:.3f}) | ≥ {TARGETS['index_ratio']} "
                     f"(mean): {verdict(entry['met'])} |")
    return lines


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
