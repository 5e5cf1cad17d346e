"""The two phases of `groove index` (index.md §6.1): full text first, vectors fill in.

Uses the tiny model of `test_index.py`: `--text-only` stops after phase 1, `status` counts the
chunks phase 2 has not embedded, `eval` and `tune` refuse a half-embedded index, and the
progress lines off a terminal come while one slow model batch runs, each only when it changed.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from groove_cli import messages
from groove_cli.index import index_kb
from groove_cli.models import Embedder
from groove_cli.render.progress import LineProgress
from groove_cli.status import index_status
from tests.test_index import (
    CATS,
    DURATION,
    Counts,
    Groove,
    done,
    groove,
    rows,
    tiny_model,
    write,
)
from tests.waiting import wait_until

__all__ = ["groove", "tiny_model"]  # the fixtures of test_index.py, shared

GOLDEN = "queries:\n  - query: cat\n    expected:\n      - path: alpha.md\n"


def vectors(db: Path) -> int:
    return int(str(rows(db, "SELECT count(*) FROM vec_chunks")[0][0]))


def test_text_only_stops_after_phase_1_and_the_next_run_embeds(groove: Groove) -> None:
    result = groove.index_ok("--text-only")
    lines = result.stderr.splitlines()
    assert not any(line.startswith("Loading embedding model") for line in lines)
    assert done(result) == Counts(docs=3, updated=3, renamed=0, deleted=0, skipped=0, chunks=4)
    assert lines[-2] == ("groove: note: 4 of 4 chunks have no vector yet; run `groove index` "
                         "without --text-only to embed them")
    assert vectors(groove.db) == 0
    # token counts come with the vectors (phase 2 tokenises anyway)
    assert rows(groove.db, "SELECT count(*) FROM chunks WHERE token_count IS NULL") == [(4,)]
    fts = groove.run("search", "fish", "--mode", "fts", "--format", "json")
    assert fts.exit_code == 0, fts.stderr
    # gamma's chunk is below the default quality threshold
    assert [Path(hit["path"]).name for hit in json.loads(fts.stdout)["results"]] == ["beta.md"]
    assert "notes" not in json.loads(fts.stdout)  # the vector leg did not run

    status = groove.run("status", "--format", "json")
    assert json.loads(status.stdout)["pending_vectors"] == 4
    text = groove.run("status")
    assert ("Pending vectors: 4 of 4 chunks (full-text search covers all; `groove index` "
            "embeds the rest)") in text.stdout.splitlines()

    (groove.work / "golden.yml").write_text(GOLDEN, encoding="utf-8")
    refused = groove.run("eval", "--kb-path", str(groove.kb), "--golden", "golden.yml")
    assert refused.exit_code == 1
    assert ("groove: error: eval needs every chunk's vector, but the index has vectors for 0 "
            "of 4 chunks; full-text covers all (`groove index` has not finished embedding)"
            ) in refused.stderr.splitlines()
    tune = groove.run("tune", "--kb-path", str(groove.kb), "--golden", "golden.yml")
    assert tune.exit_code == 1
    assert "groove: error: tune needs every chunk's vector" in tune.stderr
    fts_eval = groove.run("eval", "--kb-path", str(groove.kb), "--golden", "golden.yml",
                          "--mode", "fts", "--no-history")
    assert fts_eval.exit_code == 0, fts_eval.stderr  # the full-text leg alone is measurable

    rest = groove.index_ok()
    assert "Embedding 4 chunks..." in rest.stderr.splitlines()
    assert done(rest) == Counts(docs=3, updated=0, renamed=0, deleted=0, skipped=0, chunks=4)
    assert vectors(groove.db) == 4
    assert json.loads(groove.run("status", "--format", "json").stdout)["pending_vectors"] == 0
    again = groove.index_ok()  # nothing pending: the model is not even loaded
    assert not any(line.startswith("Loading embedding model")
                   for line in again.stderr.splitlines())


def test_status_reports_pending_vectors_while_phase_2_runs(groove: Groove) -> None:
    for i in range(10):
        write(groove.kb, f"more/n{i}.md", f"note {i}: {CATS}\n")
    seen: list[tuple[int, int]] = []

    def probe() -> bool:
        """Called between files and between model batches (batch_size 4)."""
        if groove.db.exists() and rows(groove.db, "SELECT count(*) FROM documents") == [(13,)]:
            report = index_status(groove.db, None, quality_threshold=0.0, exclude_dirs=(),
                                  parsers=("md",))
            seen.append((report.chunks, report.pending_vectors))
        return False

    report = index_kb(groove.options(), should_stop=probe)
    assert (report.embedded, report.to_embed, report.pending_vectors) == (14, 14, 0)
    # before phase 2 counts the tokens (one page), then before each of its four batches of
    # 4, 4, 4 and 2 chunks (phase 1's last check comes before its last file)
    assert seen == [(14, 14), (14, 14), (14, 10), (14, 6), (14, 2)]


def test_progress_lines_come_during_a_slow_model_batch_only_when_they_change(
        groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ticker looks every 0.1 s and writes a line only when its text changed. In the first
    batch nothing is done yet, so however many times it looks, one line comes; in a later
    batch the rate falls while the batch runs, so the ETA moves and new lines come. The
    batches wait for the ticker, never for a clock (a hang guard, no deadline)."""
    for i in range(8):
        write(groove.kb, f"more/n{i}.md", f"note {i}: {CATS}\n")
    real = Embedder.embed_passages
    lines: list[str] = []
    looks: list[int] = []
    during: list[int] = []

    def embedded_lines() -> int:
        return sum(line.startswith("embedded ") for line in lines)

    def slow(self: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        before, looked = embedded_lines(), len(looks)
        if not during:  # the first batch: the ticker looks thrice, one line comes
            wait_until(lambda: len(looks) >= looked + 3 and embedded_lines() >= 1,
                       what="the ticker's looks during the first batch")
        else:  # a later one: the ETA grows while it runs, so a new line comes
            wait_until(lambda: embedded_lines() > before, what="a line during a later batch")
        during.append(embedded_lines() - before)
        return real(self, texts)

    monkeypatch.setattr(Embedder, "embed_passages", slow)
    messages.set_sink(lines.append)
    try:
        with LineProgress(interval=0.1) as progress:
            fresh = progress.fresh_line

            def counted() -> str | None:
                looks.append(1)
                return fresh()

            monkeypatch.setattr(progress, "fresh_line", counted)
            report = index_kb(groove.options(quiet=False), progress)
    finally:
        messages.set_sink(None)
    assert report.embedded == 12
    embedded = [line for line in lines if line.startswith("embedded ")]
    pattern = re.compile(rf"embedded (\d+) chunks, (\d+)/(\d+) tokens"
                         rf"(, [\d.,]+ tokens/s, ~{DURATION} left)?")
    assert all(pattern.fullmatch(line) for line in embedded), embedded
    assert len(during) == 3 and during[0] == 1 and min(during[1:]) >= 1
    assert all(a != b for a, b in itertools.pairwise(lines))  # never a repeat
    found = [m for line in embedded if (m := pattern.fullmatch(line))]
    chunks, tokens = [int(m.group(1)) for m in found], [int(m.group(2)) for m in found]
    assert chunks == sorted(chunks) and tokens == sorted(tokens) and chunks[-1] >= 8
    # the total counts the model's tokens: each chunk's words and its [CLS] and [SEP]
    assert {int(m.group(3)) for m in found} == {
        rows(groove.db, "SELECT sum(token_count + 2) FROM chunks")[0][0]}
