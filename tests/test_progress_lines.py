"""The progress lines off a terminal (render/progress.py, cli.md §4): the ETA from the
model's tokens, hand-computed on a fake clock, and no line written twice."""

from __future__ import annotations

from groove_cli.render.progress import LineProgress, progress_line


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_is_the_tokens_left_at_the_token_rate_so_far() -> None:
    # 45,000 of 410,000 tokens in 60 s: 750 tokens/s, 365,000 left -> 486.67 s = 8 min 7 s
    assert progress_line("tokens", "Embedding", 45_000, 410_000, 1_200, 60.0) == (
        "embedded 1,200 chunks, 45,000/410,000 tokens, 750 tokens/s, ~8 min 7 s left")
    # the same chunks done, the tokens they held decide: 1,200 long chunks of 400,000 tokens
    # in 60 s leave 10,000 tokens, 1.5 s at 6,667 tokens/s
    assert progress_line("tokens", "Embedding", 400_000, 410_000, 1_200, 60.0) == (
        "embedded 1,200 chunks, 400,000/410,000 tokens, 6,667 tokens/s, ~1.5 s left")
    # nothing done yet: no rate, no ETA
    assert progress_line("tokens", "Embedding", 0, 410_000, 0, 5.0) == (
        "embedded 0 chunks, 0/410,000 tokens")
    # files: 120 of 450 in 40 s = 3/s, 330 left -> 110 s = 1 min 50 s
    assert progress_line("files", "Reading notes", 120, 450, 0, 40.0) == (
        "read 120/450 files, 3.0/s, ~1 min 50 s left")
    assert progress_line("files", "Reading notes", 450, 450, 0, 40.0) == (
        "read 450/450 files, 11/s")  # nothing left: no ETA
    # a step without a count says what it waits for and for how long
    assert progress_line("", "Loading model", 0, None, 0, 3.2) == (
        "loading the embedding model, 3.2 s so far")
    assert progress_line("", "Counting tokens", 0, None, 0, 75.0) == (
        "counting tokens, 1 min 15 s so far")


def test_a_line_is_written_only_when_its_text_changed() -> None:
    clock = Clock()
    progress = LineProgress(clock=clock)
    progress.start(1_000, "Embedding", "tokens")
    assert progress.fresh_line() == "embedded 0 chunks, 0/1,000 tokens"
    clock.now += 10
    assert progress.fresh_line() is None  # nothing done, nothing changed: no repeat
    clock.now += 10
    assert progress.fresh_line() is None
    progress.advance(200, 8)  # 200 tokens in 20 s: 10/s, 800 left -> 80 s
    assert progress.fresh_line() == (
        "embedded 8 chunks, 200/1,000 tokens, 10 tokens/s, ~1 min 20 s left")
    assert progress.fresh_line() is None  # the clock did not move
    clock.now += 5  # 200 in 25 s: 8/s, 800 left -> 100 s: the ETA moved, so a line
    assert progress.fresh_line() == (
        "embedded 8 chunks, 200/1,000 tokens, 8.0 tokens/s, ~1 min 40 s left")
    progress.advance(1_000, 4)  # every token in 25 s: 40/s, nothing left
    assert progress.fresh_line() == "embedded 12 chunks, 1,000/1,000 tokens, 40 tokens/s"
    progress.advance(1_000, 0)  # a batch of nothing: the same text, not written again
    assert progress.fresh_line() is None
    progress.finish()
    assert progress.fresh_line() is None  # between steps
    # a new step starts its own count of chunks
    progress.start(None, "Loading model", "")
    assert progress.fresh_line() == "loading the embedding model, 0 ms so far"
