#!/usr/bin/env python3
"""Leave-one-collection-out of the signal fusion families (suite_adaptive.signal_families)
from the suite's cached lists, without indexing or running `groove eval` again.

    python bench/suite_signals.py [--work bench/work/suite]

Reads each collection's `lists.json`, `systems.json` and `golden.yml` that `bench/suite.py`
left in its work folder (read only), scores the built-in RRF, `qlen`, `qlen1` and the signal
families in memory, and writes bench/results/suite_signals.json and .md with suite.md's LOCO
and refit tables (suite.summarise, suite_report).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml
from _common import machine, machine_line, package_versions, with_kept_part, write_results
from suite import NOTES, SUITE_PACKAGES, summarise
from suite_adaptive import qlen1_family, qlen_family, signal_families, word_counts
from suite_fusion import Candidate, builtin, score_all
from suite_index import SUITE_WORK, suite_collections
from suite_report import _loco_table, _refit_table


def families() -> dict[str, list[Candidate]]:
    return {"builtin": [builtin()], "qlen": qlen_family(), "qlen1": qlen1_family(),
            **signal_families()}


def measure_cached(work: Path, name: str, language: str) -> dict[str, Any]:
    """One collection's per-query nDCG@10 of the systems and the families, from its cache."""
    lists = json.loads((work / "lists.json").read_text(encoding="utf-8"))
    systems = json.loads((work / "systems.json").read_text(encoding="utf-8"))["systems"]
    golden = yaml.safe_load((work / "golden.yml").read_text(encoding="utf-8"))["queries"]
    grades_by_id = {str(q["id"]): {e["path"]: int(e["grade"]) for e in q["expected"]}
                    for q in golden}
    word_counts(lists["queries"])
    meta = {int(k): (v[0], v[1]) for k, v in lists["meta"].items()}
    ids = [q["id"] for q in lists["queries"]]
    grades = [grades_by_id[i] for i in ids]
    return {"name": name, "language": language, "kind": None, "query_ids": ids,
            "documents": None, "chunks": None,
            "systems": {s: [per[i] for i in ids] for s, per in systems.items()},
            "candidates": {f: score_all(m, lists["queries"], meta, grades).values
                           for f, m in families().items()},
            "pseudo": {"chosen": "-"}}


def markdown(data: dict[str, Any]) -> str:
    lines = ["# Signal fusion families under leave-one-collection-out (issue 25)", "",
             "Score fusion (max) whose vector share alpha follows `qlen1`'s length rule, moved by "
             "signals the legs already have (suite_adaptive.py); KB references are medians or "
             "means over the KB's own query texts, never labels. Lists, systems and golden sets: "
             "the suite's cache (`bench/suite.py`); the tables as in suite.md.", ""]
    for family in data["loco"]:
        lines += _loco_table(data, family)
    lines += _refit_table(data)
    lines += [machine_line(data["machine"]), "",
              "Command: `python bench/suite_signals.py` after `make suite`."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=SUITE_WORK,
                        help="the suite's work folder (one sub-folder per collection)")
    args = parser.parse_args()
    per = {c.name: measure_cached(args.work / c.name, c.name, c.language)
           for c in suite_collections(None)}
    data = {"benchmark": "suite_signals", "machine": machine(),
            "suite_packages": package_versions(SUITE_PACKAGES), **summarise(per)}
    write_results("suite_signals", data, with_kept_part("suite_signals", NOTES, markdown(data)))
    print(markdown(data))


if __name__ == "__main__":
    main()
