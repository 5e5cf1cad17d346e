"""Phase 2's batches (vector_fill.batches): cut where the model's own batching cuts a sorted list,
so each batch of ordinary chunks is one model run, the run the bare embedder makes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from groove_cli.index import IndexOptions, index_kb
from groove_cli.models import Embedder, resolve_model
from groove_cli.models.runtime import BATCH_BUDGET, BatchBudget, Runtime, length_batches
from groove_cli.vector_fill import batches
from tests.onnx_builders import VOCAB, model_dir
from tests.test_index import MAX_LENGTH, TINY_MODEL_TOML, rows, tiny_embedder_onnx


def test_batches_cut_at_the_vector_count_and_at_the_padded_token_budget() -> None:
    widths = {1: 10, 2: 10, 3: 20, 4: 20, 5: 30, 6: 40}
    ones = dict.fromkeys(widths, 1)
    tokens = BatchBudget(tokens=60, attention=10**9)
    # 3 x 20 = 60 fits the budget, a fourth at width 20 (80) does not; 2 x 30 fits, 3 x 40 not
    assert batches(list(widths), ones, widths, 4, tokens) == [[1, 2, 3], [4, 5], [6]]
    # the attention cells: 3 x 20² = 1,200 fits 1,250, a fourth (1,600) does not; 1 x 30² =
    # 900 fits, 2 x 30² = 1,800 not; 1 x 40² = 1,600 is over, but one chunk always fits
    cells = BatchBudget(tokens=10**9, attention=1_250)
    assert batches(list(widths), ones, widths, 8, cells) == [[1, 2, 3], [4], [5], [6]]
    # the vector count: at most 2 per batch
    wide = BatchBudget(tokens=10**9, attention=10**9)
    assert batches(list(widths), ones, widths, 2, wide) == [[1, 2], [3, 4], [5, 6]]
    # a long chunk's pieces count against the size; a chunk with more pieces than the size is
    # a batch alone, never split
    pieces = {1: 1, 2: 3, 3: 1, 4: 5, 5: 1, 6: 1}
    assert batches(list(widths), pieces, widths, 4, wide) == [[1, 2], [3], [4], [5, 6]]


def test_the_default_budget_holds_few_window_long_inputs_and_many_short_ones() -> None:
    """BATCH_BUDGET by hand (runtime.py): 2,048 padded tokens and 4 x 512² attention cells
    per model run. 512-token inputs: 4 (tokens 2,048, cells 1,048,576, both at the cap);
    256: 8 (tokens); 64: 32; 16: 128; 8: 256, the model's batch_size then caps it; 1,024 (a
    longer window): 1 (cells: 2 x 1,024² = 2,097,152 is over), where the tokens allow 2."""
    assert (BATCH_BUDGET.tokens, BATCH_BUDGET.attention) == (2_048, 1_048_576)
    for width, most in ((512, 4), (256, 8), (64, 32), (16, 128), (8, 256), (1_024, 1),
                        (8_192, 1)):
        runs = length_batches([width] * 300, 256)
        assert max(map(len, runs)) == most, width
        assert all(BATCH_BUDGET.fits(len(run), width) or len(run) == 1 for run in runs)


def test_batches_equal_the_model_runs_of_the_same_sorted_inputs() -> None:
    rng = random.Random(26)
    for _ in range(300):
        lengths = sorted(rng.randint(3, 512) for _ in range(rng.randint(1, 400)))
        size = rng.choice([4, 32, 256])
        budget = BatchBudget(rng.choice([512, 4096, 16_384]),
                             rng.choice([2**16, 2**21, 2**30]))
        widths = dict(enumerate(lengths))
        runs = length_batches(lengths, size, budget)
        assert batches(list(widths), dict.fromkeys(widths, 1), widths, size, budget) == runs


def test_the_index_runs_the_model_within_the_token_budget(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny model of test_index.py (one token per word, [CLS] and [SEP] added) with a
    512-token window and batch_size 256: 20 notes of 30 words (32 tokens each) and 50 of 62
    (64 each). Narrowest first, the first run takes the 20 short ones and 12 long ones: 32
    inputs padded to 64 = 2,048 tokens, the budget's cap; then 32 long ones (2,048 again) and
    the 6 left. With the cap of 16,384 padded tokens before issue 46 all 70 made one run."""
    model = model_dir(tmp_path / "model", tiny_embedder_onnx(),
                      TINY_MODEL_TOML.replace(f"max_length = {MAX_LENGTH}", "max_length = 512")
                      .replace("batch_size = 4", "batch_size = 256"))
    kb = tmp_path / "kb"
    kb.mkdir()
    vocab = [word for word in VOCAB if not word.startswith("[")]
    for n, words in enumerate([30] * 20 + [62] * 50):
        text = " ".join(vocab[(n + i) % len(vocab)] for i in range(words))
        (kb / f"note-{n:03}.md").write_text(text + "\n", encoding="utf-8")
    shapes: list[tuple[int, int]] = []
    real = Runtime.run

    def run(self: Runtime, outputs: list[str], feeds: dict[str, Any]) -> list[Any]:
        shapes.append(tuple(feeds["input_ids"].shape))
        return real(self, outputs, feeds)

    monkeypatch.setattr(Runtime, "run", run)
    report = index_kb(IndexOptions(kb=kb, db=tmp_path / "index.db", model=str(model),
                                   max_length=None, models_dir=tmp_path / "models", quiet=True))
    assert (report.chunks, report.embedded) == (70, 70)
    assert shapes == [(32, 64), (32, 64), (6, 64)]


WORDS = ["retry", "budget", "index", "vector", "chunk", "query", "cache", "model", "token",
         "batch", "search", "note", "heading", "section", "window", "piece", "fusion", "leg"]


def test_the_index_embeds_each_chunk_as_the_bare_embedder_does(real_models_dir: Path,
                                                               tmp_path: Path) -> None:
    """The default int8 model quantises per batch, so a vector depends on its batch (README):
    with phase 2 cut as the model cuts, the index's vectors are the bare embedder's, bit for
    bit. 270 notes of ~60 tokens make several model runs, cut by the padded-token budget,
    where a cut at `batch_size` chunks would make other batches. The bare embedder gets the
    inputs the index stored (one chunk per note; off context mode embeds the content)."""
    rng = random.Random(27)
    kb = tmp_path / "kb"
    kb.mkdir()
    for n in range(270):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 55)))
        (kb / f"note-{n:03}.md").write_text(f"# Note {n}\n\n{words}.\n", encoding="utf-8")
    db = tmp_path / "index.db"
    index_kb(IndexOptions(kb=kb, db=db, model=None, max_length=None,
                          models_dir=real_models_dir, quiet=True))
    chunks = rows(db, "SELECT d.path, c.content FROM chunks c "
                      "JOIN documents d ON d.id = c.document_id ORDER BY d.path")
    keys = [str(path) for path, _ in chunks]
    inputs = [str(content) for _, content in chunks]
    assert len(set(keys)) == 270 and all(inputs)
    model = resolve_model("multilingual-e5-small", real_models_dir, offline=True)
    bare = Embedder.load(model).embed_passages(inputs)
    stored = {str(path): np.frombuffer(blob, dtype=np.float32)  # type: ignore[call-overload]
              for path, blob in rows(db, "SELECT d.path, v.embedding FROM vec_chunks v "
                                         "JOIN chunks c ON c.id = v.chunk_id "
                                         "JOIN documents d ON d.id = c.document_id")}
    assert np.array_equal(np.stack([stored[key] for key in keys]), bare)
