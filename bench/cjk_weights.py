#!/usr/bin/env python3
"""The CJK leg's fusion weight (issue #13): default hybrid nDCG@10 per `cjk_weight`.

    .venv/bin/python bench/cjk_weights.py [--weights 1,2,3,4,6,10]

On the JSQuAD work index of `eval_datasets.py` (1,000 queries; it must exist) and on the
sample KB `golden/` (indexed into bench/work/golden), `groove eval --mode hybrid` in-process
with `search.retrieval.cjk_weight` set to each weight, everything else built in; the fts and
vector rows are the single legs the hybrid must not fall below. CISI has no CJK text: the weight
never applies there. Writes bench/results/cjk_weights.json and .md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from _common import JSQUAD, WORK, machine, machine_line, run_groove, write_results
from fts_variants import eval_v1

from groove_cli.engine import DEFAULT_CJK_WEIGHT, compile_query

GOLDEN_KB = Path(__file__).resolve().parent.parent / "golden"


def _ndcg(report: dict[str, Any]) -> tuple[float, tuple[float, float]]:
    agg = report["aggregate"]
    return agg["ndcg_at_k"]["10"], tuple(agg["ci95"]["ndcg_at_k"]["10"])  # type: ignore[return-value]


def sweep(name: str, kb: Path, db: Path, golden: Path, work: Path,
          weights: list[float]) -> dict[str, Any]:
    """Each weight's hybrid nDCG@10 and the two single legs, on one index."""
    rows: dict[str, Any] = {}
    for label, mode, weight in [("fts", "fts", None), ("vector", "vector", None),
                                *((f"hybrid, cjk_weight {w:g}", "hybrid", w) for w in weights)]:
        config = work / f"cjk-weight-{weight if weight is not None else 'default'}.toml"
        text = "# bench/cjk_weights.py\n"
        if weight is not None:
            text += f"[search.retrieval]\ncjk_weight = {float(weight)!r}\n"
        config.write_text(text, encoding="utf-8")
        value, ci = _ndcg(eval_v1(kb, db, golden, config, mode, compiler=compile_query))
        rows[label] = {"ndcg@10": value, "ci95": list(ci), "weight": weight}
    return {"collection": name, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", default="1,2,3,4,6,10")
    args = parser.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    if not JSQUAD.db.is_file():
        raise SystemExit("index JSQuAD first: .venv/bin/python bench/eval_datasets.py")
    golden_work = WORK / "golden"
    golden_work.mkdir(parents=True, exist_ok=True)
    golden_db = golden_work / "index.db"
    empty = golden_work / "groove.toml"
    empty.write_text("# benchmark runs: built-in defaults only\n", encoding="utf-8")
    run_groove(["index", "--kb-path", str(GOLDEN_KB), "--quiet"], config=empty, db=golden_db)
    results = [
        sweep("jsquad (1,000 queries)", JSQUAD.kb, JSQUAD.db, JSQUAD.work / "golden.yml",
              JSQUAD.work, weights),
        sweep("golden/ sample KB (33 queries, English and Japanese)", GOLDEN_KB, golden_db,
              GOLDEN_KB / ".groove-eval.yml", golden_work, weights),
    ]
    data = {"weights": weights, "default": DEFAULT_CJK_WEIGHT, "results": results,
            "machine": machine()}
    lines = ["# The CJK leg's fusion weight (issue #13)", "",
             "Default hybrid nDCG@10 [95% CI] per `search.retrieval.cjk_weight` (vector and "
             "other full-text legs at 1.0, rrf_k 60), next to the single legs; built-in default: "
             f"{DEFAULT_CJK_WEIGHT:g}. CISI has no CJK text, so the weight never applies there.",
             ""]
    for result in results:
        lines += [f"## {result['collection']}", "", "| run | nDCG@10 [95% CI] |", "|---|---|"]
        for label, row in result["rows"].items():
            lo, hi = row["ci95"]
            lines.append(f"| {label} | {row['ndcg@10']:.4f} [{lo:.3f}, {hi:.3f}] |")
        rows = result["rows"]
        best_leg = max(rows["fts"]["ndcg@10"], rows["vector"]["ndcg@10"])
        keep = [f"{row['weight']:g}" for label, row in rows.items()
                if row["weight"] is not None and row["ndcg@10"] >= best_leg]
        lines += ["", "Weights at which the hybrid is not below its better single leg: "
                  + (", ".join(keep) if keep else "none") + ".", ""]
    lines += [machine_line(data["machine"]), "",
              "Command: `.venv/bin/python bench/cjk_weights.py`."]
    write_results("cjk_weights", data, "\n".join(lines))


if __name__ == "__main__":
    main()
