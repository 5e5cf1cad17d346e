#!/usr/bin/env python3
"""Several vectors per long chunk (`vector_pieces`) on the benchmark suite's Japanese long-text
collections: one index evaluated with the setting on and off, paired per query (issue 26).

    python bench/pieces_suite.py [--collections livedoor,vuedocs]

Copies each suite index (bench/work/suite/<name>/, built by `make suite`) to
bench/work/pieces_suite/<name>/ and runs `groove index` on the copy with `vector_pieces = true`,
which embeds only the long chunks' extra pieces; off = each chunk's first piece, exactly the
truncated vector (search.md §4). Writes bench/results/pieces_suite.json and .md.
"""

from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path
from typing import Any

from _common import WORK, machine, machine_line, package_versions, run_groove, write_results

MODES = ("vector", "hybrid")
RESAMPLES = 10_000


def prepare(name: str) -> Path:
    """A copy of the suite's index for `name` with its extra pieces embedded."""
    source, work = WORK / "suite" / name, WORK / "pieces_suite" / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for path in source.glob("index.db*"):
        if not path.name.endswith(".lock"):
            shutil.copy2(path, work / path.name)
    shutil.copy2(source / "golden.yml", work / "golden.yml")
    (work / "kb").symlink_to((source / "kb").resolve())
    config = work / "pieces-on.toml"
    config.write_text("vector_pieces = true\n", encoding="utf-8")
    run_groove(["index", "--kb-path", str(work / "kb")], config=config, db=work / "index.db")
    return work


def per_query(work: Path, mode: str, pieces: bool) -> dict[str, float]:
    """nDCG@10 per query id from `groove eval` on the collection's index."""
    config = work / f"pieces-{'on' if pieces else 'off'}.toml"
    config.write_text(f"vector_pieces = {'true' if pieces else 'false'}\n", encoding="utf-8")
    run = run_groove(["eval", "--kb-path", str(work / "kb"), "--golden", str(work / "golden.yml"),
                      "--format", "json", "--no-history", "--mode", mode],
                     config=config, db=work / "index.db")
    return {q["id"]: q["metrics"]["ndcg_at_k"]["10"] for q in run.json()["per_query"]
            if q["expected"]}


def paired(on: dict[str, float], off: dict[str, float]) -> dict[str, Any]:
    """Means, the mean delta (on − off) and a two-sided randomization test (sign flips)."""
    ids = sorted(set(on) & set(off))
    deltas = [on[i] - off[i] for i in ids]
    mean = sum(deltas) / len(deltas)
    rng = random.Random(0)
    extreme = sum(abs(sum(d if rng.random() < 0.5 else -d for d in deltas)) / len(deltas)
                  >= abs(mean) - 1e-12 for _ in range(RESAMPLES))
    return {"queries": len(ids), "off": sum(off[i] for i in ids) / len(ids),
            "on": sum(on[i] for i in ids) / len(ids), "delta": mean, "p": extreme / RESAMPLES}


def markdown(data: dict[str, Any]) -> str:
    lines = ["# `vector_pieces` on the suite's long-text collections (issue 26)", "",
             "nDCG@10 of the same index (pieces stored) evaluated with `vector_pieces` off "
             "(first pieces = truncated vectors) and on (best piece less σ · e(n), search.md §4); "
             "delta = on − off per query, two-sided randomization test "
             f"({RESAMPLES:,} sign flips).", "",
             "| collection | mode | queries | off | on | delta | p |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name, modes in data["collections"].items():
        for mode, r in modes.items():
            lines.append(f"| {name} | {mode} | {r['queries']} | {r['off']:.4f} | {r['on']:.4f} | "
                         f"{r['delta']:+.4f} | {r['p']:.4f} |")
    lines += ["", machine_line(data["machine"]), "",
              "Packages: " + ", ".join(f"{k} {v}" for k, v in data["packages"].items() if v), "",
              "Command: `python bench/pieces_suite.py` (after `make suite`)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default="livedoor,vuedocs")
    args = parser.parse_args()
    data: dict[str, Any] = {"benchmark": "pieces_suite", "machine": machine(),
                            "packages": package_versions(), "collections": {}}
    for name in (n.strip() for n in args.collections.split(",") if n.strip()):
        work = prepare(name)
        data["collections"][name] = {
            mode: paired(per_query(work, mode, True), per_query(work, mode, False))
            for mode in MODES}
        print(name, data["collections"][name], flush=True)
    write_results("pieces_suite", data, markdown(data))


if __name__ == "__main__":
    main()
