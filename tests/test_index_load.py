"""When `groove index` loads the embedding model (index.md §6.1 step 11): its session on a
background thread while phase 1 runs, and only when phase 2 will have chunks to embed.

Uses the tiny model of `test_index.py`. `create_session` is wrapped to record the thread of each
call: the background load runs on `groove-session-load`, `Embedder.load`'s on the main thread
or its own worker (`groove-session`).
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest

from groove_cli.index import Indexer
from groove_cli.models import runtime
from tests.test_index import ALPHA_MD, CATS, Groove, done, groove, tiny_model, write

__all__ = ["groove", "tiny_model"]  # the fixtures of test_index.py, shared

BACKGROUND = "groove-session-load"


def record_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread of every `create_session` call from now on."""
    calls: list[str] = []
    real = runtime.create_session

    def create_session(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(runtime, "create_session", create_session)
    return calls


def test_a_new_index_loads_the_model_once_in_the_background_and_shows_the_step(
        groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = record_loads(monkeypatch)
    result = groove.index_ok()
    assert calls == [BACKGROUND]  # the background session is the one phase 2 uses
    lines = result.stderr.splitlines()
    steps = [i for i, line in enumerate(lines)
             if line.startswith(("Full text ready in ", "Loading embedding model: ",
                                 "Embedding 4 chunks..."))]
    assert [lines[i].split(" ")[0] for i in steps] == ["Full", "Loading", "Embedding"]
    assert lines[steps[1]] == f"Loading embedding model: {groove.model} (8 dim)..."
    assert done(result).chunks == 4


def test_an_unchanged_re_run_and_a_frontmatter_edit_never_start_the_load(
        groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    groove.index_ok()
    calls = record_loads(monkeypatch)
    unchanged = Indexer(groove.options())
    assert unchanged.run().embedded == 0
    # the load is not even started: a background start would be missed by `calls` alone
    assert unchanged.loading is None and calls == []

    write(groove.kb, "alpha.md", ALPHA_MD.replace("title: Alpha", "title: Alpha 2"))
    edited = Indexer(groove.options())
    report = edited.run()
    assert (report.updated, report.embedded) == (1, 0)  # the fast path: same chunks
    assert edited.loading is None and calls == []


def test_text_only_never_loads_and_the_next_run_loads_in_the_background(
        groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = record_loads(monkeypatch)
    text_only = Indexer(groove.options(text_only=True))
    assert text_only.run().pending_vectors == 4
    assert text_only.loading is None and calls == []

    # nothing changed on disk, but 4 chunks are pending: the load starts before phase 1
    rest = Indexer(groove.options())
    report = rest.run()
    assert (report.updated, report.embedded, report.pending_vectors) == (0, 4, 0)
    assert calls == [BACKGROUND]


def test_a_new_file_starts_the_load_and_an_empty_one_does_not(
        groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    groove.index_ok()
    calls = record_loads(monkeypatch)
    write(groove.kb, "empty.md", "---\ntitle: Empty\n---\n")
    empty = Indexer(groove.options())
    assert empty.run().skipped == 1  # no chunks: nothing for phase 2
    assert empty.loading is None and calls == []

    write(groove.kb, "new.md", f"{CATS}\n")
    added = Indexer(groove.options())
    assert added.run().embedded == 1
    assert calls == [BACKGROUND]


def test_a_model_that_fails_to_load_gives_its_error_after_phase_1(
        groove: Groove, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "broken-model"
    for name in ("model.onnx", "tokenizer.json", "groove-model.toml"):
        broken.mkdir(exist_ok=True)
        (broken / name).write_bytes((groove.model / name).read_bytes())
    groove = dataclasses.replace(groove, model=broken)
    groove.configure()
    groove.index_ok("--text-only")
    onnx = broken / "model.onnx"
    onnx.write_bytes(b"\0" * onnx.stat().st_size)  # same size: only loading it finds out
    calls = record_loads(monkeypatch)
    result = groove.index()
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("groove: error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"groove: error: cannot load {onnx}: ")
    assert lines[-1] == errors[0]  # the last line, after phase 1's and the load's lines
    assert [line.split(" ")[0] for line in lines[-3:-1]] == ["Full", "Loading"]
    # tried in the background first; that failure is quiet and the indexer's own load reports
    assert calls == [BACKGROUND, "groove-session"]
