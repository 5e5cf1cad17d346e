"""Phase 2's batches (vector_fill.batches): cut where the model's own batching cuts a sorted list,
so each batch of ordinary chunks is one model run, the run the bare embedder makes."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from groove_cli.chunk import parse_document
from groove_cli.index import IndexOptions, embedding_input, index_kb
from groove_cli.models import Embedder, resolve_model
from groove_cli.models.runtime import length_batches
from groove_cli.vector_fill import batches
from tests.test_index import rows


def test_batches_cut_at_the_vector_count_and_at_the_padded_token_budget() -> None:
    widths = {1: 10, 2: 10, 3: 20, 4: 20, 5: 30, 6: 40}
    ones = dict.fromkeys(widths, 1)
    # 3 x 20 = 60 fits the budget, a fourth at width 20 (80) does not; 2 x 30 fits, 3 x 40 not
    assert batches(list(widths), ones, widths, 4, 60) == [[1, 2, 3], [4, 5], [6]]
    # the vector count: at most 2 per batch
    assert batches(list(widths), ones, widths, 2, 1000) == [[1, 2], [3, 4], [5, 6]]
    # a long chunk's pieces count against the size; a chunk with more pieces than the size is
    # a batch alone, never split
    pieces = {1: 1, 2: 3, 3: 1, 4: 5, 5: 1, 6: 1}
    assert batches(list(widths), pieces, widths, 4, 1000) == [[1, 2], [3], [4], [5, 6]]


def test_batches_equal_the_model_runs_of_the_same_sorted_inputs() -> None:
    rng = random.Random(26)
    for _ in range(300):
        lengths = sorted(rng.randint(3, 512) for _ in range(rng.randint(1, 400)))
        size, budget = rng.choice([4, 32, 256]), rng.choice([512, 4096, 16_384])
        widths = dict(enumerate(lengths))
        runs = length_batches(lengths, size, budget)
        assert batches(list(widths), dict.fromkeys(widths, 1), widths, size, budget) == runs


WORDS = ["retry", "budget", "index", "vector", "chunk", "query", "cache", "model", "token",
         "batch", "search", "note", "heading", "section", "window", "piece", "fusion", "leg"]


def test_the_index_embeds_each_chunk_as_the_bare_embedder_does(real_models_dir: Path,
                                                               tmp_path: Path) -> None:
    """The default int8 model quantises per batch, so a vector depends on its batch (README):
    with phase 2 cut as the model cuts, the index's vectors are the bare embedder's, bit for
    bit. 270 notes of ~60 tokens pass the padded-token budget, where a cut at `batch_size`
    chunks made other batches."""
    rng = random.Random(27)
    kb = tmp_path / "kb"
    kb.mkdir()
    for n in range(270):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 55)))
        (kb / f"note-{n:03}.md").write_text(f"# Note {n}\n\n{words}.\n", encoding="utf-8")
    db = tmp_path / "index.db"
    index_kb(IndexOptions(kb=kb, db=db, model=None, max_length=None,
                          models_dir=real_models_dir, quiet=True))
    inputs: list[str] = []
    keys: list[str] = []
    for path in sorted(kb.glob("*.md")):
        parsed = parse_document(path.read_text(encoding="utf-8"), path.name, exclude_headings=())
        (chunk,) = parsed.chunks
        inputs.append(embedding_input(chunk, False))
        keys.append(path.name)
    model = resolve_model("multilingual-e5-small", real_models_dir, offline=True)
    bare = Embedder.load(model).embed_passages(inputs)
    stored = {str(path): np.frombuffer(blob, dtype=np.float32)  # type: ignore[call-overload]
              for path, blob in rows(db, "SELECT d.path, v.embedding FROM vec_chunks v "
                                         "JOIN chunks c ON c.id = v.chunk_id "
                                         "JOIN documents d ON d.id = c.document_id")}
    assert np.array_equal(np.stack([stored[key] for key in keys]), bare)
