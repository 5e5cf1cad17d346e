"""The suite's collections as groove KBs: one index per collection, reused while valid.

An index under `bench/work/suite/<name>/` is reused when its stamp records the same collection
digest (bench/collections.json `built_sha256`) and the same digest of the groove code that
decides what an index holds (INDEX_CODE); otherwise it is deleted and built again. Embedding
is the slow part on a shared 2-core machine, so a rerun of the suite costs only the searches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, Collection, GrooveRun

sys.path.insert(0, str(ROOT / "bench"))
from suite_collections import collection_dir, load_manifest

SUITE_WORK = WORK / "suite"
INDEX_CODE = ("groove_cli/chunk.py", "groove_cli/index.py", "groove_cli/index_batches.py",
              "groove_cli/vector_fill.py", "groove_cli/scan.py", "groove_cli/vectors.py",
              "groove_cli/runtime_model.py", "groove_cli/text", "groove_cli/store",
              "groove_cli/migrations", "groove_cli/models")
"""Files and folders whose code decides the rows and vectors of an index."""


def code_digest() -> str:
    """sha256 over the INDEX_CODE files (sorted paths and contents)."""
    h = hashlib.sha256()
    for entry in INDEX_CODE:
        path = ROOT / entry
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            if file.is_file():
                h.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes())
    return h.hexdigest()


def defaults_digest() -> str:
    """sha256 of the built-in settings (config_schema.py): results measured "with built-in
    defaults" are stale once a default changes, even when the index itself is not."""
    return hashlib.sha256((ROOT / "groove_cli" / "config_schema.py").read_bytes()).hexdigest()


@dataclass(frozen=True, slots=True)
class SuiteCollection(Collection):
    """A manifest collection: its docs folder may live outside $GROOVE_DATASETS."""

    entry: dict[str, Any] | None = None

    @property
    def source(self) -> Path:
        assert self.entry is not None
        return collection_dir(self.entry)

    @property
    def work(self) -> Path:
        return SUITE_WORK / self.name

    @property
    def language(self) -> str:
        assert self.entry is not None
        return str(self.entry["language"])

    @property
    def queries_file(self) -> Path:
        assert self.entry is not None
        return self.source / self.entry.get("queries_file", "queries.jsonl")

    def stamp(self) -> dict[str, str]:
        assert self.entry is not None
        return {"collection": self.entry["built_sha256"], "code": code_digest()}

    def ensure_suite_index(self) -> GrooveRun | None:
        """Index unless a complete index with the same stamp is there (a stale one is
        removed first); returns the index run, None when reused."""
        stamp_file = self.work / "stamp.json"
        current = self.stamp()
        old = json.loads(stamp_file.read_text()) if stamp_file.is_file() else None
        if old != current:  # the stamp names what is being built: an interrupted run resumes
            self.remove_index()
            self.work.mkdir(parents=True, exist_ok=True)
            stamp_file.write_text(json.dumps(current) + "\n")
        return self.ensure_index()


def suite_collections(names: str | None = None) -> list[SuiteCollection]:
    """The manifest's collections in manifest order, or those named (comma-separated) in the
    order named."""
    found = {e["name"]: SuiteCollection(e["name"], e) for e in load_manifest()}
    return [found[n] for n in names.split(",")] if names else list(found.values())


def main() -> None:
    """Index every collection (or those named), printing each one's wall time."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collections", nargs="?", help="comma-separated names (default: all)")
    for coll in suite_collections(parser.parse_args().collections):
        run = coll.ensure_suite_index()
        took = f"{run.wall_s:.0f} s" if run else "reused"
        print(f"{coll.name}: {took}", flush=True)


if __name__ == "__main__":
    main()
