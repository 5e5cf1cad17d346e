#!/usr/bin/env python3
"""How the chunker's token estimate (`groove_cli.engine.estimate_tokens`) compares with the
default model's tokenizer: per text, real tokens / estimated tokens on CISI and JSQuAD notes,
groove's own Python source and design docs. Above 1 the estimate under-counts; the chunk budget
(`chunk.max_tokens`) leaves room for the worst case. Writes bench/results/chunk_estimate.*.

    GROOVE_DATASETS=... python bench/chunk_estimate.py [--per-set 400]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import datasets_root, machine, machine_line, write_results

from groove_cli.engine import DEFAULT_MAX_TOKENS, default_models_dir, estimate_tokens

ROOT = Path(__file__).resolve().parent.parent
MODEL = "multilingual-e5-small"
WINDOW_BUDGET = 460
"""The budget that keeps every text measured inside the default model's window."""


def ratios(tokenizer: Any, files: list[Path]) -> dict[str, Any]:
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")[:6000]
        real = len(tokenizer.encode(text, add_special_tokens=False).ids)
        if real > 20:
            found.append(real / estimate_tokens(text))
    found.sort()
    return {"texts": len(found), "max": max(found), "p99": found[int(len(found) * 0.99)],
            "median": found[len(found) // 2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-set", type=int, default=400)
    parser.add_argument("--datasets", default=None)
    args = parser.parse_args()
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(default_models_dir() / MODEL / "tokenizer.json"))
    data_root = datasets_root(args.datasets)
    sets = {
        "CISI": sorted((data_root / "cisi" / "docs").glob("*.md"))[: args.per_set],
        "JSQuAD": sorted((data_root / "jsquad" / "docs").glob("*.md"))[: args.per_set],
        "groove Python source": sorted((ROOT / "groove_cli").rglob("*.py"))[: args.per_set],
        "groove design docs": sorted((ROOT / "docs" / "design").glob("*.md")),
    }
    data: dict[str, Any] = {"machine": machine(), "model": MODEL,
                            "budget": DEFAULT_MAX_TOKENS,
                            "sets": {name: ratios(tokenizer, files) for name, files in sets.items()}}
    worst = max(s["max"] for s in data["sets"].values())
    prose = data["sets"]["CISI"]["median"]
    code = data["sets"]["groove Python source"]["median"]
    data["worst_case_tokens"] = DEFAULT_MAX_TOKENS * worst
    lines = ["# Chunk token estimate vs the default tokenizer", "", machine_line(data["machine"]),
             "", f"real / estimated tokens per text ({MODEL} tokenizer, first 6,000 characters)",
             "", "| set | texts | median | p99 | max |", "|---|---|---|---|---|"]
    for name, row in data["sets"].items():
        lines.append(f"| {name} | {row['texts']} | {row['median']:.3f} | {row['p99']:.3f} | "
                     f"{row['max']:.3f} |")
    lines += ["", f"At a budget of {WINDOW_BUDGET} estimated tokens the worst text seen would be "
              f"{WINDOW_BUDGET * worst:.0f} real tokens: with the passage prefix and special "
              "tokens, inside the 512-token window. At the default budget of "
              f"{DEFAULT_MAX_TOKENS} a median prose text (CISI) is {DEFAULT_MAX_TOKENS * prose:.0f} "
              f"real tokens, code about {DEFAULT_MAX_TOKENS * code:.0f}, the worst "
              f"{data['worst_case_tokens']:.0f} (its tail past the window "
              "keeps piece vectors). The median says how much of the window a full chunk "
              "uses.", ""]
    write_results("chunk_estimate", data, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
