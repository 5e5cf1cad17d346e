"""A stop during phase 2 cancels the model run in flight (index.md §6.2, models.md §9).

The model here is the tiny lookup embedder of `test_index.py` made slow: its lookup goes through
a chain of identity MatMuls, so every batch costs real work and the vectors stay exactly the
table's. How slow a batch is depends on the machine; nothing here depends on it: the tests count
what was committed and wait for events, with timeouts that only guard against a hang.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from groove_cli.config import model_threads, resolve
from groove_cli.errors import UsageError
from groove_cli.index import Indexer
from groove_cli.models import Embedder, resolve_model
from groove_cli.models.runtime import Cancelled
from groove_cli.vector_fill import BatchVectors, CancellableRuns
from tests.onnx_builders import model_dir
from tests.test_index import TABLE, TINY_MODEL_TOML, Groove, make_groove, write
from tests.test_index_interrupt import (
    assert_doctor_clean,
    embedding_count,
    vector_count,
    vector_ids,
    wait_until,
)

NOTES = 40
BATCH = 4  # TINY_MODEL_TOML's batch_size
WIDTH = 1024
LINKS = 300


def slow_embedder_onnx(table: np.ndarray = TABLE) -> bytes:
    """`table[input_ids]` widened to WIDTH, through LINKS identity MatMuls, and narrowed back."""
    dim = int(table.shape[1])
    up = np.zeros((dim, WIDTH), np.float32)
    up[:, :dim] = np.eye(dim, dtype=np.float32)
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["h0"]),
             helper.make_node("MatMul", ["h0", "up"], ["w0"])]
    for k in range(LINKS):
        nodes.append(helper.make_node("MatMul", [f"w{k}", "eye"], [f"w{k + 1}"]))
    nodes.append(helper.make_node("MatMul", [f"w{LINKS}", "down"], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes, "slow-index-embedder",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
         for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "seq", dim])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(up, "up"),
         numpy_helper.from_array(np.eye(WIDTH, dtype=np.float32), "eye"),
         numpy_helper.from_array(np.ascontiguousarray(up.T), "down")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


@pytest.fixture(scope="module")
def slow_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("slow-model") / "embedder"
    return model_dir(folder, slow_embedder_onnx(), TINY_MODEL_TOML).resolve()


@pytest.fixture
def slow_kb(slow_model: Path, workdir: Path, tmp_path: Path) -> Groove:
    groove = make_groove(workdir, tmp_path, slow_model)
    for i in range(NOTES):
        write(groove.kb, f"d{i % 4}/note-{i:03d}.md", f"note {i}: the cat sat on the mat\n")
    return groove


def test_sigterm_in_phase_2_stops_after_at_most_the_batch_in_flight_and_the_rerun_resumes(
        slow_kb: Groove) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "groove_cli", "--db", str(slow_kb.db), "index",
         "--kb-path", str(slow_kb.kb)],
        cwd=slow_kb.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(proc, lambda: vector_count(slow_kb.db) >= BATCH, "vectors")
    at_signal = vector_count(slow_kb.db)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)  # a hang guard, not a deadline

    assert proc.returncode == 130, err
    committed = vector_ids(slow_kb.db)
    # the batch in flight is cancelled or, had it just finished, committed: never more
    assert at_signal <= len(committed) <= at_signal + BATCH
    assert len(committed) < NOTES, "the signal landed after phase 2"
    assert err.splitlines()[-1] == (
        f"Interrupted after embedding {len(committed)} of {NOTES} chunks; the index is valid, "
        "full-text search covers every note and the next run continues from here.")
    assert "Traceback" not in err
    assert_doctor_clean(slow_kb, NOTES, pending=NOTES - len(committed))

    rerun = slow_kb.index()
    assert rerun.exit_code == 0, rerun.stderr
    assert embedding_count(rerun.stderr) == NOTES - len(committed)  # nothing embedded twice
    after = vector_ids(slow_kb.db)
    assert len(after) == NOTES
    assert {cid: after[cid] for cid in committed} == committed
    assert_doctor_clean(slow_kb, NOTES)


def test_a_cancelled_run_raises_and_a_resumed_one_gives_the_tables_vectors(
        slow_model: Path, tmp_path: Path) -> None:
    embedder = Embedder.load(resolve_model(str(slow_model), tmp_path / "cache"))
    embedder.runtime.cancel()
    with pytest.raises(Cancelled):
        embedder.embed_passages(["cat sat"])
    embedder.runtime.resume()
    vector = embedder.embed_passages(["cat sat"])[0]
    # mean of [CLS] cat sat [SEP] rows of the table, normalised (TINY_MODEL_TOML)
    from tests.onnx_builders import CLS_ID, SEP_ID, VOCAB

    mean = TABLE[[CLS_ID, VOCAB["cat"], VOCAB["sat"], SEP_ID]].mean(axis=0)
    np.testing.assert_allclose(vector, mean / np.linalg.norm(mean), atol=1e-6)


def test_a_stop_cancels_work_that_would_never_end(slow_model: Path, tmp_path: Path) -> None:
    """Work that only a cancel ends early: `run` returns None, and the embedder works again."""
    embedder = Embedder.load(resolve_model(str(slow_model), tmp_path / "cache"))
    polls: list[bool] = []

    def stop() -> bool:
        polls.append(True)
        return True

    def long_work() -> BatchVectors:
        for _ in range(100_000):  # bounded, so a broken cancel fails instead of hanging
            embedder.embed_passages(["the cat sat on the mat"] * BATCH)
        return BatchVectors([], {}, 0, 0)

    with CancellableRuns(embedder, stop) as runs:
        assert runs.run(long_work) is None
    assert polls  # the stop was asked while the work ran
    assert embedder.embed_passages(["cat"]).shape == (1, TABLE.shape[1])  # resumed on exit


def test_threads_come_from_groove_threads_then_the_setting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROOVE_THREADS", raising=False)
    assert model_threads(resolve({}, {})) is None  # 0, the default: the cores we may use
    assert model_threads(resolve({"threads": 3}, {})) == 3
    monkeypatch.setenv("GROOVE_THREADS", "1")
    assert model_threads(resolve({"threads": 3}, {})) == 1
    monkeypatch.setenv("GROOVE_THREADS", "0")
    assert model_threads(resolve({"threads": 3}, {})) is None
    for bad in ("two", "-1", "1025"):
        monkeypatch.setenv("GROOVE_THREADS", bad)
        with pytest.raises(UsageError, match=f"GROOVE_THREADS='{bad}' is not a thread count"):
            model_threads(resolve({}, {}))


def test_the_indexers_model_runs_on_the_threads_it_is_given_and_does_not_spin(
        slow_kb: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    for note in sorted(slow_kb.kb.rglob("*.md"))[1:]:
        note.unlink()
    indexer = Indexer(slow_kb.options(threads=1))
    assert indexer.run().embedded == 1
    assert indexer.embedder is not None
    options = indexer.embedder.runtime.session.get_session_options()
    assert options.intra_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"

    monkeypatch.setenv("GROOVE_THREADS", "two")
    result = slow_kb.index("--force")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "groove: error: GROOVE_THREADS='two' is not a thread count"
