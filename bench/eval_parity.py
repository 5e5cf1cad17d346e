#!/usr/bin/env python3
"""No behaviour change: `groove eval --format json` by two commits on the same index files.

    .venv/bin/python bench/eval_parity.py --base COMMIT [--datasets DIR] [--name NAME]

Per collection (the sample KB golden/, CISI and JSQuAD's fixed 1,000-query sample under DIR, default
$GROOVE_DATASETS):
one index built by this checkout under bench/work/parity/, then `groove eval --no-history
--format json --k 1,5,10 --limit 10` run by this checkout and by COMMIT (a git worktree under
bench/work/parity/, imported ahead of the installed package). Compared: every aggregate and
each query's top-k. Writes bench/results/<NAME>.{json,md} (default eval_parity).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from _common import datasets_root

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work" / "parity"
PYTHON = ROOT / ".venv" / "bin" / "python"
PACKAGES = ("apsw", "sqlite-vec", "onnxruntime", "numpy", "typer")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()


def golden_of(queries: Path, target: Path) -> Path:
    """A golden file with one expected `<doc id>.md` per relevant document."""
    items = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    doc = {"queries": [{"id": str(q["id"]), "query": str(q["query"]),
                        "expected": [{"path": f"{d}.md"} for d in q["relevant"]]}
                       for q in items if q.get("relevant")]}
    target.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=10_000),
                      encoding="utf-8")
    return target


def dev_collections(datasets: Path, work: Path) -> dict[str, tuple[Path, Path]]:
    """The dev suite as (KB folder, golden file) by name: golden/, CISI and JSQuAD (its first
    1,000 queries), the collections defaults are chosen on (golden files written to `work`)."""
    return {
        "golden": (ROOT / "golden", ROOT / "golden" / ".groove-eval.yml"),
        "cisi": (datasets / "cisi" / "docs",
                 golden_of(datasets / "cisi" / "queries.jsonl", work / "cisi.yml")),
        "jsquad": (datasets / "jsquad" / "docs",
                   golden_of(datasets / "jsquad" / "queries-1000.jsonl", work / "jsquad.yml")),
    }


def groove(args: list[str], *, code: Path | None, config: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return subprocess.run([str(PYTHON), "-m", "groove_cli", "--config", str(config), *args],
                          env=env, check=False, capture_output=True, text=True, cwd=WORK)


def top_k(report: dict[str, Any]) -> dict[str, list[tuple[str, str | None, float]]]:
    """Each query's top k as (path, heading, score)."""
    return {str(q["id"]): [(h["path"], h.get("heading"), h["score"]) for h in q["top_k"]]
            for q in report["per_query"]}


def compare(name: str, kb: Path, golden: Path, base: Path, config: Path) -> dict[str, Any]:
    db = WORK / f"{name}.db"
    if not db.exists():
        built = groove(["--db", str(db), "index", "--kb-path", str(kb), "--quiet"], code=None,
                       config=config)
        if built.returncode != 0:
            sys.exit(f"bench: error: indexing {name} failed: {built.stderr.strip()}")
    args = ["--db", str(db), "eval", "--kb-path", str(kb), "--golden", str(golden),
            "--no-history", "--format", "json", "--k", "1,5,10", "--limit", "10"]
    reports = {}
    for side, code in (("before", base), ("after", None)):
        run = groove(args, code=code, config=config)
        if run.returncode not in (0, 1):
            sys.exit(f"bench: error: eval of {name} ({side}) failed: {run.stderr.strip()}")
        reports[side] = json.loads(run.stdout)
    before, after = reports["before"], reports["after"]
    lists_before, lists_after = top_k(before), top_k(after)
    differing = sorted(q for q in lists_before if lists_before[q] != lists_after.get(q))
    return {"queries": len(lists_before), "aggregate_identical":
            before["aggregate"] == after["aggregate"], "aggregate": after["aggregate"],
            "top_k_differs": differing, "top_k_compared": bool(lists_before)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit before the change")
    parser.add_argument("--datasets", type=Path,
                        help="folder holding cisi/ and jsquad/ (default $GROOVE_DATASETS)")
    parser.add_argument("--name", default="eval_parity")
    args = parser.parse_args()
    datasets = datasets_root(args.datasets)
    WORK.mkdir(parents=True, exist_ok=True)
    base_commit = git("rev-parse", args.base)
    base = WORK / f"base-{base_commit[:12]}"
    git("worktree", "prune")
    git("worktree", "add", "--detach", str(base), base_commit)
    config = WORK / "groove.toml"
    config.write_text("", encoding="utf-8")
    collections = dev_collections(datasets, WORK)
    try:
        results = {name: compare(name, kb, golden, base, config)
                   for name, (kb, golden) in collections.items()}
    finally:  # a checkout left under bench/ would be read as part of this one (test_layout)
        git("worktree", "remove", "--force", str(base))
    versions = {}
    for package in PACKAGES:
        shown = subprocess.run([str(PYTHON), "-m", "pip", "show", package], capture_output=True,
                               text=True, check=False).stdout
        versions[package] = next((line.split(": ", 1)[1] for line in shown.splitlines()
                                  if line.startswith("Version: ")), None)
    data = {"base": base_commit, "head": git("rev-parse", "HEAD"), "packages": versions,
            "collections": results}
    out = ROOT / "bench" / "results"
    (out / f"{args.name}.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    rows = [f"| {name} | {r['queries']} | {'yes' if r['aggregate_identical'] else 'NO'} | "
            f"{len(r['top_k_differs']) if r['top_k_compared'] else 'n/a'} |"
            for name, r in results.items()]
    (out / f"{args.name}.md").write_text("\n".join([
        f"# `groove eval` before and after: {base_commit[:7]} → {data['head'][:7]}", "",
        "One index per collection built by the later commit; `groove eval --no-history "
        "--format json --k 1,5,10 --limit 10` run by both commits on the same file "
        "(bench/eval_parity.py).", "",
        "Packages: " + ", ".join(f"{k} {v}" for k, v in versions.items()), "",
        "| collection | queries | aggregate identical | queries whose top-k differs |",
        "|---|---|---|---|", *rows, ""]), encoding="utf-8")
    print(f"wrote {out / args.name}.md")


if __name__ == "__main__":
    main()
