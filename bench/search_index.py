"""The synthetic benchmark KBs and their indexes, written directly through the store.

Indexing 100k chunks with the real model is far too slow on 2 cores, so a benchmark index is
written through `groove_cli.store.Store` with the real schema: documents, chunks and FTS rows
from the generated notes (`bench/make_synthetic_kb.py`, parsed with
`groove_cli.chunk.parse_document`, token counts from the model's tokenizer), random unit
float32 vectors of dimension 384 in `vec_chunks`, `index_meta` as the indexer writes it, then
the vector snapshot. bench_search.py measures searches on them; bench_backends.py and
bench_backends_targets.py write the same rows into Postgres through `write_index` /
`begin_index` / `finish_index`.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _common import BENCH, DEFAULT_MODEL, WORK

import groove_cli
from groove_cli.engine import (
    SCHEMA_VERSION,
    ChunkRow,
    DocumentRow,
    Store,
    chunker_fingerprint,
    default_models_dir,
    parse_document,
    refresh_snapshot,
    resolve_model,
    utc_now,
)

DIM = 384
QUERY_COUNT = 100
SEARCH_WORK = WORK / "search"


def generate(size: int) -> Path:
    """The synthetic KB of `size` chunks (generated once; the generator is deterministic)."""
    kb = SEARCH_WORK / f"kb{size}"
    stamp = SEARCH_WORK / f"kb{size}.done"
    if stamp.is_file():
        return kb
    if kb.exists():
        import shutil

        shutil.rmtree(kb)
    subprocess.run([sys.executable, str(BENCH / "make_synthetic_kb.py"), "--chunks", str(size),
                    "--out", str(kb)], check=True, capture_output=True)
    stamp.write_text("ok\n")
    return kb


def queries_file() -> Path:
    path = SEARCH_WORK / f"queries{QUERY_COUNT}.txt"
    if not path.is_file():
        subprocess.run([sys.executable, str(BENCH / "make_synthetic_kb.py"), "--queries",
                        str(QUERY_COUNT), "--queries-out", str(path)], check=True,
                       capture_output=True)
    return path


def unit_vectors(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    """`n` random float32 vectors of length 1 (what the registry models produce)."""
    raw = rng.standard_normal((n, DIM)).astype(np.float32)
    unit: npt.NDArray[np.float32] = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(
        np.float32)
    return unit


def build_index(kb: Path, db: Path, *, seed: int = 0) -> dict[str, Any]:
    """Write the benchmark index for `kb` through Store with the real schema (see module doc)."""
    for path in db.parent.glob(db.name + "*"):
        path.unlink()
    started = time.perf_counter()
    store = Store.open_for_index(db)
    try:
        files, chunk_total = write_index(store, kb, seed=seed)
        refresh_snapshot(store, db)
    finally:
        store.close()
    return {"files": files, "chunks": chunk_total,
            "build_s": time.perf_counter() - started}


def write_index(store: Any, kb: Path, *, seed: int = 0,
                files_per_transaction: int = 500) -> tuple[int, int]:
    """Write every file of `kb` into an open index-writing store (SQLite's `Store` or another
    store with the same writer methods): meta, documents, chunks, FTS rows and seeded random
    vectors, `files_per_transaction` files per transaction. Returns (files, chunks); the same
    `seed` gives every store the same vectors."""
    from tokenizers import Tokenizer

    model = begin_index(store, kb)
    tokenizer = Tokenizer.from_file(str(model.dir / "tokenizer.json"))
    rng = np.random.default_rng(seed)
    files = sorted(p for p in kb.rglob("*.md") if p.is_file())
    chunk_total = 0
    for start in range(0, len(files), files_per_transaction):
        with store.transaction():
            for path in files[start : start + files_per_transaction]:
                chunk_total += _write_file(store, kb, path, tokenizer, rng)
    finish_index(store)
    return len(files), chunk_total


def begin_index(store: Any, kb: Path) -> Any:
    """Create the vector table and write the meta `groove index` records for the default model
    (what a Searcher checks before it searches); returns the resolved model."""
    model = resolve_model(DEFAULT_MODEL, default_models_dir(), offline=True)
    with store.transaction():
        store.create_vec_table(DIM)
        store.set_meta({
            "embedding_model": model.name,
            "embedding_dim": str(DIM),
            "embedding_max_length": "512",
            "embedding_model_sha256": model.sha256,
            "kb_path": str(kb.resolve()),
            "context_mode": "off",
            "groove_version": groove_cli.__version__,
        })
    return model


def finish_index(store: Any) -> None:
    """The meta a finished `groove index` run writes last."""
    with store.transaction():
        store.set_meta({"chunker_fingerprint": chunker_fingerprint(()),
                        "last_indexed": utc_now()})


def _write_file(store: Any, kb: Path, path: Path, tokenizer: Any,
                rng: np.random.Generator) -> int:
    raw = path.read_bytes()
    rel = path.relative_to(kb).as_posix()
    parsed = parse_document(raw.decode("utf-8"), rel)
    contents = [c.content for c in parsed.chunks]
    counts = [len(e.ids) for e in tokenizer.encode_batch(contents, add_special_tokens=False)]
    rows = [ChunkRow(c.chunk_index, c.heading, c.level, c.ancestry, c.content, None, n,
                     c.quality_score) for c, n in zip(parsed.chunks, counts, strict=True)]
    doc = DocumentRow(rel, parsed.title, parsed.topic, parsed.category, parsed.depth,
                      parsed.tags, parsed.date, hashlib.sha256(raw).hexdigest(), len(raw),
                      utc_now())
    store.write_document(doc, rows, unit_vectors(rng, len(rows)), None)
    return len(rows)


def ensure_index(size: int, rebuild: bool) -> tuple[Path, Path, dict[str, Any]]:
    """(kb, db, build info) for one size; reuses a finished build unless `rebuild`."""
    kb = generate(size)
    db = SEARCH_WORK / f"index{size}.db"
    stamp = SEARCH_WORK / f"index{size}.json"
    if not rebuild and stamp.is_file() and db.is_file():
        info: dict[str, Any] = json.loads(stamp.read_text())
        if info.get("schema_version") == SCHEMA_VERSION:
            info["reused"] = True
            return kb, db, info
    info = build_index(kb, db)
    info["schema_version"] = SCHEMA_VERSION
    stamp.write_text(json.dumps(info))
    info["reused"] = False
    return kb, db, info
