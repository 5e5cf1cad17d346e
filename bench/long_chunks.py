#!/usr/bin/env python3
"""Long chunks embedded in pieces versus truncated at the model's window (index.md §4).

    .venv/bin/python bench/long_chunks.py [--collections cisi]

Per collection: index it with groove, make two copies of the index and, in each, replace only
the vectors of the chunks whose input is longer than `max_length`: in one with the vector of
the input truncated at `max_length` (what `index` stores), in the other with the
length-weighted mean of the vectors of overlapping window-sized pieces that cover the whole
text (pieces of `max_length − special tokens − prefix/heading tokens` token ids, overlapping
by 1/8, each run with the passage prefix and the chunk's heading in front; `pieces_vector`).
`groove eval` (vector and hybrid modes, all judged queries, no history) runs on both copies;
the difference is the effect of embedding in pieces. That design was to be kept only if quality
did not drop.

Writes bench/results/long_chunks.json and long_chunks.md.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _common import CISI, DEFAULT_MODEL, JSQUAD, Collection, machine, machine_line, write_results
from eval_datasets import summarise, write_golden

from groove_cli.store import Store
from groove_cli.store.rows import f32_blob
from groove_cli.vector_fill import embedding_text

MODES = ("vector", "hybrid")


PIECE_OVERLAP = 8
PIECE_GROUP = 1_024


def pieces_vector(embedder: Any, text: str, header: str) -> npt.NDArray[np.float32]:
    """The length-weighted mean of the vectors of `text`'s overlapping window-sized pieces."""
    from groove_cli.models.embedder import l2_normalise, windows
    from groove_cli.models.runtime import length_batches

    tok = embedder._full_tokenizer()
    enc = tok.encode("a", add_special_tokens=False)
    full = list(tok.post_process(enc).ids)
    head, tail = full[:full.index(enc.ids[0])], full[full.index(enc.ids[0]) + 1:]
    lead_text = embedder.settings.passage_prefix + (f"{header}\n\n" if header else "")
    lead = list(tok.encode(lead_text, add_special_tokens=False).ids) if lead_text else []
    span = embedder.max_length - len(head) - len(tail) - len(lead)
    ids = [i for w in windows(text) for i in tok.encode(w, add_special_tokens=False).ids]
    step, pieces, start = span - span // PIECE_OVERLAP, [], 0
    while start < len(ids):
        stop = min(start + span, len(ids))
        pieces.append((start, stop))
        if stop == len(ids):
            break
        start += step
    total = np.zeros(embedder.dim, dtype=np.float64)
    rows = [head + lead + ids[a:b] + tail for a, b in pieces]
    weights = np.asarray([b - a for a, b in pieces], dtype=np.float64)
    for batch in length_batches([len(r) for r in rows], embedder.settings.batch_size):
        total += weights[batch] @ embedder._run([rows[i] for i in batch]).astype(np.float64)
    mean = (total / weights.sum()).astype(np.float32)[None, :]
    return np.asarray(l2_normalise(mean)[0], dtype=np.float32)


def variant_copy(db: Path, copy: Path, how: str) -> tuple[int, int]:
    """Copy the index to `copy` (no snapshot) and re-embed its long chunks `how` ("truncated"
    or "pieces"); returns (long chunks, chunks)."""
    from groove_cli.models import Embedder, default_models_dir, resolve_model

    for old in copy.parent.glob(copy.name + "*"):
        old.unlink()
    for suffix in ("", "-wal", "-shm"):
        if db.with_name(db.name + suffix).exists():
            shutil.copy(db.with_name(db.name + suffix), copy.with_name(copy.name + suffix))
    embedder = Embedder.load(resolve_model(DEFAULT_MODEL, default_models_dir(), offline=True))
    store = Store.open_for_index(copy)
    try:
        rows = store.con.execute("SELECT id, heading, context_text, content FROM chunks "
                                 "ORDER BY id").fetchall()
        inputs = [embedding_text(h, c, str(t), False) for _, h, c, t in rows]
        lengths = embedder.input_lengths(inputs, "passage")
        long = [i for i, n in enumerate(lengths) if n > embedder.max_length]
        if how == "truncated":
            vectors = list(embedder.embed_passages([inputs[i] for i in long]))
        else:
            vectors = [pieces_vector(embedder, str(rows[i][3]), str(rows[i][1] or ""))
                       for i in long]
        with store.transaction():
            for i, vector in zip(long, vectors, strict=True):
                store.con.execute("UPDATE vec_chunks SET embedding = ? WHERE chunk_id = ?",
                                  (f32_blob(vector), int(rows[i][0])))
            store.bump_vectors_version()
        return len(long), len(rows)
    finally:
        store.close()


def evaluate(coll: Collection, db: Path, golden: Path) -> dict[str, Any]:
    from _common import run_groove

    out: dict[str, Any] = {}
    for mode in MODES:
        run = run_groove(["eval", "--kb-path", str(coll.kb), "--golden", str(golden), "--format",
                          "json", "--no-history", "--mode", mode], config=coll.config, db=db)
        out[mode] = summarise(run.json())
    return out


def measure(coll: Collection) -> dict[str, Any]:
    golden, doc = write_golden(coll)
    coll.ensure_index()
    out: dict[str, Any] = {"collection": coll.name, "queries": len(doc["queries"])}
    for how in ("truncated", "pieces"):
        copy = coll.work / f"{how}.db"
        out["long_chunks"], out["chunks"] = variant_copy(coll.db, copy, how)
        out[how] = evaluate(coll, copy, golden)
    return out


def markdown(data: dict[str, Any]) -> str:
    lines = ["# Long chunks: embedded in pieces vs truncated (multilingual-e5-small)", "",
             machine_line(data["machine"]), ""]
    for entry in data["runs"]:
        lines += [f"## {entry['collection']} — {entry['queries']} queries, {entry['chunks']} "
                  f"chunks, {entry['long_chunks']} longer than the model's window", "",
                  "| mode | metric | truncated | pieces | Δ |", "|---|---|---|---|---|"]
        worse = False
        for mode in MODES:
            for metric in ("ndcg@10", "recall@10", "MRR"):
                a = entry["truncated"][mode][metric]["value"]
                b = entry["pieces"][mode][metric]["value"]
                worse |= b < a - 5e-4
                lines.append(f"| {mode} | {metric} | {a:.4f} | {b:.4f} | {b - a:+.4f} |")
        verdict = ("quality dropped: `index` keeps truncating" if worse
                   else "no metric dropped: embedding in pieces could be kept")
        lines += ["", f"Verdict: {verdict}.", ""]
    lines.append("Command: `.venv/bin/python bench/long_chunks.py`.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default="cisi")
    args = parser.parse_args()
    chosen = {"cisi": CISI, "jsquad": JSQUAD}
    data: dict[str, Any] = {"benchmark": "long_chunks", "model": DEFAULT_MODEL,
                            "machine": machine(),
                            "runs": [measure(chosen[n.strip()])
                                     for n in args.collections.split(",") if n.strip()]}
    write_results("long_chunks", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
