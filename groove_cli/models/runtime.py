"""Shared loading for embedder and reranker: onnxruntime session + tokenizer, concurrently.

onnxruntime and tokenizers are imported here, inside functions, so that importing
`groove_cli.models` stays cheap (the query-embedding cache lets most searches skip them).

Session options follow models.md §9: CPUExecutionProvider, the cores this process may use (or
the `threads` setting), intra-op threads that sleep instead of spinning when they run out of
work (a machine shared with other work keeps its cores; bench/results/index.md), full graph
optimisation; the optimised graph is saved next to the model once (`SessionOptions.optimized_model_filepath`,
file name keyed by the model's ONNX digest and the onnxruntime version, so a changed
model.onnx or runtime never reuses a stale one) and later loads read it with optimisation
disabled.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groove_cli import messages
from groove_cli.errors import ModelError
from groove_cli.models.directory import ResolvedModel

# Above this ONNX size the optimised copy keeps its weights in an external file (protobuf
# cannot serialise a single message over 2 GB).
_EXTERNAL_DATA_ABOVE = 1_500_000_000


class Cancelled(Exception):
    """A model run ended early because its `Runtime.cancel` was called."""


@dataclass(frozen=True, slots=True)
class Runtime:
    """A loaded model: the onnxruntime session, its tokenizer and the tokenizer's pad id.

    `run_options` go with every run of the session: `cancel` sets their terminate flag, which
    onnxruntime checks between graph nodes, so a run in flight on another thread ends within
    a node's time rather than a batch's.
    """

    session: Any
    tokenizer: Any
    pad_id: int
    input_names: tuple[str, ...]
    run_options: Any

    def run(self, outputs: list[str], feeds: dict[str, Any]) -> list[Any]:
        """`session.run` with the cancellable run options; Cancelled once `cancel` was called."""
        try:
            result: list[Any] = self.session.run(outputs, feeds, self.run_options)
        except Exception:
            if self.run_options.terminate:
                raise Cancelled from None
            raise
        return result

    def cancel(self) -> None:
        """End the run in flight (any thread) and refuse new ones until `resume`."""
        self.run_options.terminate = True

    def resume(self) -> None:
        self.run_options.terminate = False


def default_threads() -> int:
    """The cores this process may run on (its CPU affinity, which a container or `taskset`
    narrows), else every core."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity call (macOS, Windows)
        return os.cpu_count() or 1


def optimized_path(model: ResolvedModel) -> Path:
    """Where the optimised graph of `model` is cached (next to its model.onnx)."""
    import onnxruntime as ort

    onnx = model.onnx_path
    return onnx.with_name(f"{onnx.stem}.opt-{model.sha256[:16]}-ort{ort.__version__}.onnx")


def _session_options(optimise: bool, threads: int | None = None) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or default_threads()
    so.inter_op_num_threads = 1
    # Idle intra-op threads sleep rather than spin: spinning threads hold cores that other
    # processes (or this one's other threads) need, for no gain here (bench/results/index.md).
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    so.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if optimise
        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    return so


def create_session(model: ResolvedModel, on_start: Callable[[], None] | None = None,
                   threads: int | None = None) -> Any:
    """An InferenceSession for `model`, reusing or writing the cached optimised graph.

    `on_start` is called just before onnxruntime takes over (it releases the GIL while it
    loads and optimises the graph); `threads` sets its intra-op threads (default:
    `default_threads`).
    """
    import onnxruntime as ort

    providers = ["CPUExecutionProvider"]
    cached = optimized_path(model)
    started = on_start or (lambda: None)
    if cached.is_file():
        started()
        try:
            return ort.InferenceSession(str(cached), _session_options(False, threads),
                                        providers=providers)
        except Exception as exc:  # a corrupt or foreign cache file: rebuild it
            messages.debug(f"ignoring optimised graph {cached}: {exc}")
            cached.unlink(missing_ok=True)
    so = _session_options(True, threads)
    tmp = cached.with_name(f"{cached.name}.tmp{os.getpid()}-{threading.get_ident()}")
    save = os.access(cached.parent, os.W_OK)
    if save:
        so.optimized_model_filepath = str(tmp)
        if model.onnx_size > _EXTERNAL_DATA_ABOVE:
            so.add_session_config_entry(
                "session.optimized_model_external_initializers_file_name", cached.name + ".data"
            )
            so.add_session_config_entry(
                "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
            )
    started()
    try:
        session = ort.InferenceSession(str(model.onnx_path), so, providers=providers)
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        raise ModelError(f"cannot load {model.onnx_path}: {exc}") from exc
    if save:
        try:
            os.replace(tmp, cached)
        except OSError:
            tmp.unlink(missing_ok=True)
    return session


def load_tokenizer(path: Path) -> tuple[Any, int]:
    """The tokenizer with truncation and padding switched off, and its pad id.

    Pad id: the file's own padding setting when present, else `<pad>` (XLM-R, id 1) or
    `[PAD]` (BERT, id 0), else 0.
    """
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:
        raise ModelError(f"cannot load {path}: {exc}") from exc
    pad_id: int | None = None
    if tok.padding:
        pad_id = int(tok.padding["pad_id"])
    else:
        for token in ("<pad>", "[PAD]"):
            found = tok.token_to_id(token)
            if found is not None:
                pad_id = int(found)
                break
    tok.no_padding()
    tok.no_truncation()
    return tok, pad_id if pad_id is not None else 0


def output_shape(model: ResolvedModel, runtime: Runtime) -> list[int | str | None]:
    """The declared shape of the graph output the model settings name; a missing output is
    refused with the list of the graph's outputs."""
    outputs = {o.name: o for o in runtime.session.get_outputs()}
    name = model.settings.output
    if name not in outputs:
        raise ModelError(
            f"{model.onnx_path}: the graph has no output {name!r} (outputs: {', '.join(outputs)})"
        )
    return list(outputs[name].shape or [])


def load_runtime(model: ResolvedModel, *, tokenizer: bool = True,
                 threads: int | None = None, session: Any = None) -> Runtime:
    """Create the session (in a thread) while the tokenizer loads — the two largest costs.

    `Tokenizer.from_file` holds the GIL for its whole load
    (bench/results/code-notes.md#tokenizer-load), while onnxruntime
    releases it during session creation. So the session goes to the worker thread and gets
    going first; the tokenizer then loads on this thread in parallel. The other way round
    the session would wait for the GIL and nothing would overlap.

    With `tokenizer=False` only the session is created (the caller tokenises another way);
    the Runtime then has no tokenizer and a pad id of -1. `threads`: see `create_session`.
    `session`: one `create_session` already made for `model` (the indexer makes it while its
    phase 1 runs), so only the tokenizer loads here.
    """
    if session is not None:
        tok, pad_id = load_tokenizer(model.tokenizer_path) if tokenizer else (None, -1)
        return _checked(model, session, tok, pad_id)
    if not tokenizer:
        return _checked(model, create_session(model, threads=threads), None, -1)
    result: dict[str, Any] = {}
    started = threading.Event()

    def _session() -> None:
        try:
            result["session"] = create_session(model, on_start=started.set, threads=threads)
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc
        finally:
            started.set()

    worker = threading.Thread(target=_session, name="groove-session", daemon=True)
    worker.start()
    started.wait()
    try:
        tok, pad_id = load_tokenizer(model.tokenizer_path)
    finally:
        worker.join()
    if "error" in result:
        raise result["error"]
    return _checked(model, result["session"], tok, pad_id)


def _checked(model: ResolvedModel, session: Any, tok: Any, pad_id: int) -> Runtime:
    """The Runtime, once the graph is known to take `input_ids` and `attention_mask`."""
    import onnxruntime as ort

    names = tuple(i.name for i in session.get_inputs())
    for required in ("input_ids", "attention_mask"):
        if required not in names:
            raise ModelError(
                f"{model.onnx_path}: the graph has no {required!r} input (inputs: {', '.join(names)})"
            )
    return Runtime(session=session, tokenizer=tok, pad_id=pad_id, input_names=names,
                   run_options=ort.RunOptions())


def pad_batch(
    rows: Sequence[Sequence[int]], pad_id: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Right-pad id rows to the longest: (input_ids, attention_mask), int64 [batch, seq]."""
    width = max((len(r) for r in rows), default=0)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask


@dataclass(frozen=True, slots=True)
class BatchBudget:
    """What one model run may hold, for n inputs padded to the longest, `width` tokens: at
    most `tokens` padded tokens (n × width: the hidden states and feed-forward activations
    of a layer grow with them) and at most `attention` attention cells per head (n × width²:
    the score matrices). Onnxruntime on a CPU takes about the same time per token whatever
    the batch, so a smaller batch costs memory nothing in speed
    (bench/results/index_memory.md)."""

    tokens: int
    attention: int

    def fits(self, n: int, width: int) -> bool:
        """Whether n inputs padded to `width` tokens stay within both caps."""
        return n * width <= self.tokens and n * width * width <= self.attention


BATCH_BUDGET = BatchBudget(tokens=2_048, attention=4 * 512 * 512)
"""The one budget of every model run (embedder and reranker, the index's phase 2 included).
Why these caps: bench/results/index_memory.md (peak memory and speed by batch shape)."""


def length_batches(
    lengths: Sequence[int], batch_size: int, budget: BatchBudget = BATCH_BUDGET
) -> list[list[int]]:
    """Input indices grouped by similar length (sorted, stable) so padding is small.

    A batch holds at most `batch_size` inputs and stays within `budget` (one input always
    fits, however long).
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return cut_sorted(order, lengths.__getitem__, lambda _: 1, batch_size, budget)


def cut_sorted(order: Sequence[int], width: Callable[[int], int], weight: Callable[[int], int],
               size: int, budget: BatchBudget) -> list[list[int]]:
    """`order` (ascending `width`) cut into batches of at most `size` total `weight` within
    `budget`; an item is never split, and one always fits. Shared by `length_batches` and
    the indexer's phase 2 (vector_fill.batches), so both cut alike."""
    batches: list[list[int]] = []
    current: list[int] = []
    held = 0
    for i in order:
        # Sorted ascending, so the newest item sets the batch's padded width.
        if current and (held + weight(i) > size or not budget.fits(len(current) + 1, width(i))):
            batches.append(current)
            current, held = [], 0
        current.append(i)
        held += weight(i)
    if current:
        batches.append(current)
    return batches
