"""Phase 2's batches (vector_fill.batches): cut where the model's own batching cuts a sorted list,
so each batch of ordinary chunks is one model run, the run the bare embedder makes."""

from __future__ import annotations

import random

from groove_cli.models.runtime import length_batches
from groove_cli.vector_fill import batches


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
