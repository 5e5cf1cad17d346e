#!/usr/bin/env python3
"""Score fusion against the built-in weighted RRF through groove itself (search.md §5).

    .venv/bin/python bench/fusion_method.py [--work bench/work] [--collections cisi,jsquad]

For each collection already prepared by `bench/eval_datasets.py` (`<work>/<name>/` holding
groove.toml, index.db, golden.yml and the kb link; a copy serves as well), run `groove eval
--mode hybrid` with `--fusion rrf` and with `--fusion score` (its built-in alphas, which
follow the query, and score_cjk_weight), pair the per-query nDCG@10 (bootstrap CI,
randomization test), and run
`groove tune --space fusion-method` to see what the golden set itself would choose. Writes
bench/results/fusion_method.{json,md}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _common import BENCH, machine, machine_line, run_groove, write_results

from groove_cli.engine import bootstrap_ci, default_settings, randomization_p

METHODS = {"rrf": ["--fusion", "rrf"], "score": ["--fusion", "score"]}


def evaluate(work: Path, extra: list[str]) -> dict[str, Any]:
    run = run_groove(["eval", "--kb-path", str(work / "kb"), "--golden", str(work / "golden.yml"),
                      "--format", "json", "--no-history", "--mode", "hybrid", *extra],
                     config=work / "groove.toml", db=work / "index.db")
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def tune(work: Path) -> dict[str, Any]:
    run = run_groove(["tune", "--kb-path", str(work / "kb"), "--golden", str(work / "golden.yml"),
                      "--space", "fusion-method", "--format", "json"],
                     config=work / "groove.toml", db=work / "index.db")
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def ndcg10(report: dict[str, Any]) -> dict[str, float]:
    return {q["id"]: float(q["metrics"]["ndcg_at_k"]["10"]) for q in report["per_query"]}


def measure(work: Path) -> dict[str, Any]:
    per = {method: ndcg10(evaluate(work, extra)) for method, extra in METHODS.items()}
    ids = list(per["rrf"])
    deltas = [per["score"][q] - per["rrf"][q] for q in ids]
    rows = {m: {"ndcg@10": sum(v.values()) / len(v),
                "ci95": bootstrap_ci({"v": list(v.values())})["v"]} for m, v in per.items()}
    tuned = tune(work)
    return {"queries": len(ids), "methods": rows,
            "score_minus_rrf": {"delta": sum(deltas) / len(deltas),
                                "ci95": bootstrap_ci({"d": deltas})["d"],
                                "p": randomization_p(deltas)},
            "tune": {"refit": tuned["loo"]["refit"], "decision": tuned["verdict"]["decision"],
                     "mean_delta_ndcg5": tuned["loo"]["mean_delta"],
                     "paired_se": tuned["loo"]["paired_se"],
                     "stability": tuned["loo"]["selection_stability"],
                     "alpha_sweep": tuned["grid"]["alpha_sweep"]}}


def _ci(row: dict[str, Any], key: str = "ndcg@10") -> str:
    low, high = row["ci95"]
    return f"{row[key]:.3f} [{low:.3f}, {high:.3f}]"


def _alphas() -> str:
    """The built-in length rule in words, from the config schema (never a stale copy)."""
    settings = default_settings()
    d = {key: settings[f"search.fusion.{key}"] for key in (
        "score_alpha", "score_alpha_short", "short_query_words", "score_alpha_mid",
        "mid_query_words", "score_alpha_long", "score_cjk_weight")}
    return (f"score_alpha {d['score_alpha']} with CJK text, else score_alpha_short "
            f"{d['score_alpha_short']} up to {d['short_query_words']} word terms, score_alpha_mid "
            f"{d['score_alpha_mid']} up to {d['mid_query_words']} and score_alpha_long "
            f"{d['score_alpha_long']} above; score_cjk_weight {d['score_cjk_weight']}")


def markdown(data: dict[str, Any]) -> str:
    lines = ["# Score fusion vs weighted RRF through `groove eval` (issue 25)", "",
             "Hybrid mode, built-in settings; `--fusion score` at its built-in alphas, which "
             f"follow the query ({_alphas()}; search.md §5). "
             "nDCG@10 [95 % bootstrap CI over queries]; "
             "delta = score − rrf per query, paired bootstrap CI, two-sided randomization test.",
             "", "| collection | queries | rrf (built-in weights) | score (default) | score − rrf | p |",
             "|---|---:|---|---|---|---:|"]
    for name, c in data["collections"].items():
        d = c["score_minus_rrf"]
        lines.append(f"| {name} | {c['queries']} | {_ci(c['methods']['rrf'])} | "
                     f"{_ci(c['methods']['score'])} | {d['delta']:+.3f} [{d['ci95'][0]:+.3f}, "
                     f"{d['ci95'][1]:+.3f}] | {d['p']:.3f} |")
    lines += ["", "`groove tune --space fusion-method` on the same golden set (nested "
              "leave-one-query-out, nDCG@5):", "",
              "| collection | refit | held-out mean delta | paired SE | stability | verdict |",
              "|---|---|---:|---:|---:|---|"]
    for name, c in data["collections"].items():
        t = c["tune"]
        refit = " ".join(f"{k}={v}" for k, v in t["refit"].items())
        se = "inf" if t["paired_se"] is None else f"{t['paired_se']:.4f}"
        lines.append(f"| {name} | {refit} | {t['mean_delta_ndcg5']:+.4f} | {se} | "
                     f"{t['stability']:.2f} | {t['decision']} |")
    lines += ["", machine_line(data["machine"]),
              "", "Packages: " + ", ".join(f"{k} {v}" for k, v in data["machine"]["packages"].items()
                                          if v), "",
              "Command: `.venv/bin/python bench/fusion_method.py --work <dir>` "
              "(collections prepared by `bench/eval_datasets.py`, or the suite's work folder "
              "`bench/work/suite` with `--collections cisi,jsquad,dbpedia,msmarco`)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=BENCH / "work")
    parser.add_argument("--collections", default="cisi,jsquad")
    args = parser.parse_args()
    data = {"machine": machine(),
            "collections": {name: measure(args.work / name)
                            for name in args.collections.split(",")}}
    write_results("fusion_method", data, markdown(data))


if __name__ == "__main__":
    main()
