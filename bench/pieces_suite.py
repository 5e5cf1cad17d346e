#!/usr/bin/env python3
"""Several vectors per long chunk (`vector_pieces`) on the benchmark suite's collections that
have chunks longer than the model's window: one index evaluated with the setting on and off,
paired per query (issue 26).

    python bench/pieces_suite.py [--collections cisi,med,jsquad,livedoor,vuedocs]

Copies each suite index (bench/work/suite/<name>/, built by `make suite`) to
bench/work/pieces_suite/<name>/ and runs `groove index` on the copy with `vector_pieces = true`,
which embeds only the long chunks' extra pieces; off = each chunk's first piece, exactly the
truncated vector (search.md §4). Writes bench/results/pieces_suite.json and .md.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tomllib
from pathlib import Path
from typing import Any

from _common import (
    DEFAULT_MODEL,
    WORK,
    machine,
    machine_line,
    package_versions,
    run_groove,
    write_results,
)

MODES = ("vector", "hybrid")
RESAMPLES = 10_000
TAIL_QUERIES = 200


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


def per_query(work: Path, mode: str, pieces: bool, golden: str = "golden.yml"
              ) -> dict[str, float]:
    """nDCG@10 per query id from `groove eval` on the collection's index."""
    config = work / f"pieces-{'on' if pieces else 'off'}.toml"
    config.write_text(f"vector_pieces = {'true' if pieces else 'false'}\n", encoding="utf-8")
    run = run_groove(["eval", "--kb-path", str(work / "kb"), "--golden", str(work / golden),
                      "--format", "json", "--no-history", "--mode", mode],
                     config=config, db=work / "index.db")
    return {q["id"]: q["metrics"]["ndcg_at_k"]["10"] for q in run.json()["per_query"]
            if q["expected"]}


def window_end(text: str, tokenizer: Any, model: dict[str, Any]) -> int:
    """The character offset where the model's first window over `text` ends (its max_length
    less the passage prefix and two special tokens; `model`: its groove-model.toml)."""
    prefix = len(tokenizer.encode(model["passage_prefix"], add_special_tokens=False).ids)
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    room = int(model["max_length"]) - 2 - prefix
    return int(offsets[room - 1][1]) if len(offsets) >= room else len(text)


def tail_golden(work: Path, count: int = TAIL_QUERIES) -> str:
    """A constructed check, not a test collection: for `count` articles (seeded choice), one of
    their sentences (20–80 characters) that starts after the first piece's window ends, as the
    query, the article as its answer: only the extra pieces (or full text) can find it. Returns
    the golden file's name."""
    import yaml
    from tokenizers import Tokenizer

    resolved = run_groove(["models", "resolve", DEFAULT_MODEL], config=work / "pieces-on.toml")
    folder = Path(resolved.stdout.strip())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = tomllib.loads((folder / "groove-model.toml").read_text(encoding="utf-8"))
    rng = random.Random(0)
    articles = []
    for path in sorted((work / "kb").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        end = window_end(text, tokenizer, model)
        tail = [t.strip() + "。" for t in text[end:].split("。")[1:]]
        tail = [t for t in tail if 20 <= len(t) <= 80 and "\n" not in t]
        if tail:
            articles.append((path.name, tail))
    queries = [{"id": f"tail-{name}", "query": rng.choice(tail),
                "expected": [{"path": name, "grade": 1}]}
               for name, tail in rng.sample(articles, min(count, len(articles)))]
    (work / "tail.yml").write_text(yaml.safe_dump({"queries": queries}, allow_unicode=True),
                                   encoding="utf-8")
    return "tail.yml"


def paired(on: dict[str, float], off: dict[str, float]) -> dict[str, Any]:
    """Means, the mean delta (on − off) and a two-sided randomization test (sign flips)."""
    ids = sorted(set(on) & set(off))
    deltas = [on[i] - off[i] for i in ids]
    mean = sum(deltas) / len(deltas)
    rng = random.Random(0)
    extreme = sum(abs(sum(d if rng.random() < 0.5 else -d for d in deltas)) / len(deltas)
                  >= abs(mean) - 1e-12 for _ in range(RESAMPLES))
    return {"queries": len(ids), "off": sum(off[i] for i in ids) / len(ids),
            "on": sum(on[i] for i in ids) / len(ids), "delta": mean, "p": extreme / RESAMPLES,
            "up": sum(d > 0 for d in deltas), "down": sum(d < 0 for d in deltas)}


def markdown(data: dict[str, Any]) -> str:
    lines = ["# `vector_pieces` on the suite's long-text collections (issue 26)", "",
             "nDCG@10 of the same index (pieces stored) evaluated with `vector_pieces` off "
             "(first pieces = truncated vectors) and on (a chunk at its first piece, or at its "
             "best later piece less σ · e(n) when that is higher, search.md §4); delta = on − off "
             f"per query, two-sided randomization test ({RESAMPLES:,} sign flips); up / down = "
             "queries whose nDCG@10 rose / fell.", "",
             "| collection | extra pieces / chunks | mode | queries | off | on | delta | p | "
             "up / down |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for name, modes in data["collections"].items():
        size = data["sizes"][name]
        for mode, r in modes.items():
            lines.append(f"| {name} | {size['pieces']} / {size['chunks']} | {mode} | "
                         f"{r['queries']} | {r['off']:.4f} | {r['on']:.4f} | {r['delta']:+.4f} | "
                         f"{r['p']:.4f} | {r['up']} / {r['down']} |")
    if "tail" in data:
        lines += ["", "## A constructed check: queries from past the first window (livedoor)", "",
                  f"{data['tail']['vector']['queries']} livedoor articles (seeded choice), each "
                  "queried by one of its own sentences (20–80 characters) that starts after the "
                  "default model's first window ends (`tail_golden`): text a truncated vector "
                  "never saw. Not a test collection (verbatim sentences favour full text); it "
                  "shows what the extra pieces are for.", "",
                  "| mode | queries | off | on | delta | p | up / down |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for mode, r in data["tail"].items():
            lines.append(f"| {mode} | {r['queries']} | {r['off']:.4f} | {r['on']:.4f} | "
                         f"{r['delta']:+.4f} | {r['p']:.4f} | {r['up']} / {r['down']} |")
    lines += ["", machine_line(data["machine"]), "",
              "Packages: " + ", ".join(f"{k} {v}" for k, v in data["packages"].items() if v), "",
              "Command: `python bench/pieces_suite.py` (after `make suite`)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default="cisi,med,jsquad,livedoor,vuedocs")
    args = parser.parse_args()
    data: dict[str, Any] = {"benchmark": "pieces_suite", "machine": machine(),
                            "packages": package_versions(), "collections": {}, "sizes": {}}
    for name in (n.strip() for n in args.collections.split(",") if n.strip()):
        work = prepare(name)
        status = run_groove(["status", "--kb-path", str(work / "kb"), "--format", "json"],
                            config=work / "pieces-on.toml", db=work / "index.db").json()
        data["sizes"][name] = {"chunks": status["chunks"], "pieces": status["piece_vectors"]}
        data["collections"][name] = {
            mode: paired(per_query(work, mode, True), per_query(work, mode, False))
            for mode in MODES}
        print(name, data["collections"][name], flush=True)
        if name == "livedoor":
            golden = tail_golden(work)
            data["tail"] = {mode: paired(per_query(work, mode, True, golden),
                                         per_query(work, mode, False, golden))
                            for mode in MODES}
            print("livedoor tail", data["tail"], flush=True)
    write_results("pieces_suite", data, markdown(data))


if __name__ == "__main__":
    main()
