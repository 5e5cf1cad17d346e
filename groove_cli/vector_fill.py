"""Phase 2 of `groove index` (index.md §6.1): embed stored chunks that have no vector yet.

The pending chunks' tokens are counted first (the counts order the batches and are stored);
then each batch is embedded and its vectors committed in one transaction.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from groove_cli.models.runtime import BATCH_BUDGET, BatchBudget, cut_sorted
from groove_cli.store.pieces import PIECES_KEY
from groove_cli.types import ChunkVectors, EmbeddingRow

if TYPE_CHECKING:
    from groove_cli.models import Embedder, ResolvedModel
    from groove_cli.store import Store
    from groove_cli.store.postgres import PgStore


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one committed batch did."""

    embedded: int
    """Chunks whose vectors this batch completed."""
    pieces: int
    """Extra-piece vectors it embedded (index.md §4)."""
    long: int
    """Chunks whose input was longer than `max_length`."""
    truncated: int
    """Of those, the chunks whose text some vector still leaves out: all of them with
    `vector_pieces` off, else those past MAX_PIECES."""
    dropped: tuple[str, ...]
    """Paths of documents dropped for a degenerate embedding (index.md §4)."""


def embedding_text(heading: str | None, context: str | None, content: str, static: bool) -> str:
    """The text embedded for a chunk (index.md §4), before the model's passage prefix."""
    if static and context and context.strip():
        return f"{context}\n\n{content}"
    if not content and heading:
        return heading
    return content


class SessionLoad:
    """The embedding model's onnxruntime session, created on a background thread while phase 1
    runs (index.md §6.1 step 11): onnxruntime releases the GIL while it loads the graph, so
    this runs on the core phase 1 leaves idle. The tokenizer is left to `Embedder.load` on the
    indexer's thread: its load holds the GIL (bench/results/code-notes.md#tokenizer-load), so
    in the background it would only stall phase 1.

    Only a model that needs no download and no conversion (`cached_model`) is prepared here, and
    any failure is kept quiet: `session` is then None and `Embedder.load` creates the session
    itself as it would have without this, so an error reads and exits the same, at the same
    point. The thread is not a daemon: a run stopped in phase 1 returns at once, and the
    process waits for the session before it exits (onnxruntime aborts a process that exits
    while it loads).
    """

    def __init__(self, model: ResolvedModel | None, name: str, models_dir: Path,
                 threads: int | None = None) -> None:
        self._done: Future[tuple[ResolvedModel, Any] | None] = Future()
        context = contextvars.copy_context()  # messages.capture() and the sink reach it too
        threading.Thread(target=context.run, args=(self._load, model, name, models_dir, threads),
                         name="groove-session-load").start()

    def _load(self, model: ResolvedModel | None, name: str, models_dir: Path,
              threads: int | None) -> None:
        try:
            from groove_cli.models import cached_model
            from groove_cli.models.embedder import Embedder  # noqa: F401  (its imports, here)
            from groove_cli.models.runtime import create_session

            resolved = model or cached_model(name, models_dir)
            self._done.set_result(None if resolved is None
                                  else (resolved, create_session(resolved, threads=threads)))
        except BaseException:  # `Embedder.load` reports it (see above)
            self._done.set_result(None)

    def session(self, model: ResolvedModel) -> Any:
        """The session (waiting for it) when it was made for `model`, else None."""
        done = self._done.result()
        return done[1] if done is not None and done[0] == model else None


COUNT_PAGE = 2_048
"""Chunks read and tokenised at a time while phase 2 counts tokens: memory stays bounded."""


@dataclass(frozen=True, slots=True)
class PendingCounts:
    """What phase 2 knows of the pending chunks before embedding any (`count_pending`)."""

    tokens: dict[int, int]
    """Each chunk's `token_count` (index.md §4)."""
    widths: dict[int, int]
    """Each chunk's model input length, capped at the window: what `length_batches` sorts
    and pads by, so `batches` can cut where the bare embedder's runs are cut."""
    embedded: frozenset[int] = frozenset()
    """The chunks that already have their first piece's vector (`EmbeddingRow.has_vector`)."""

    def model_tokens(self, pieces: dict[int, int], max_length: int) -> dict[int, int]:
        """About how many tokens the model runs for each chunk: its first piece's width
        (unless it has that vector) and a window per extra piece (`pieces`, as
        `piece_estimate` gives them). Phase 2's progress and ETA count these, since the
        model's time follows its tokens, not the chunks (index.md §6.1 step 11)."""
        return {cid: (0 if cid in self.embedded else width) + (pieces[cid] - 1) * max_length
                for cid, width in self.widths.items()}


def count_pending(store: Store | PgStore, embedder: Embedder, ids: list[int], static: bool,
                  should_stop: Callable[[], bool]) -> PendingCounts | None:
    """Token counts and input widths of the pending chunks, before any is embedded: the
    exact counts order the batches (similar lengths, little padding) and are stored with
    the vectors, so each chunk is tokenised for counting once. A chunk's input is the passage
    prefix and its content, whose tokens add up (the prefix ends at a space), plus the special
    tokens; only in static context mode, where a breadcrumb comes first, are the inputs
    themselves tokenised for their length. (Should a model's tokens not add up so, a batch
    may take two model runs: slower, never wrong.) None when a stop was requested."""
    base = embedder.input_lengths(["x"], "passage")[0] - embedder.count_tokens(["x"])[0]
    tokens: dict[int, int] = {}
    widths: dict[int, int] = {}
    embedded: set[int] = set()
    for first in range(0, len(ids), COUNT_PAGE):
        if should_stop():
            return None
        rows = store.embedding_rows(ids[first : first + COUNT_PAGE])
        found = embedder.count_tokens([row.content for row in rows])
        lengths = (embedder.input_lengths([embedding_text(r.heading, r.context_text,
                                                          r.content, True) for r in rows],
                                          "passage")
                   if static else [n + base for n in found])
        for row, n, width in zip(rows, found, lengths, strict=True):
            tokens[row.chunk_id] = n
            widths[row.chunk_id] = min(width, embedder.max_length)
            if row.has_vector:
                embedded.add(row.chunk_id)
    return PendingCounts(tokens, widths, frozenset(embedded))


def lead_text(row: EmbeddingRow, prefix: str, static: bool) -> str:
    """What each piece of a chunk's input starts with: the passage prefix, and the breadcrumb
    in static context mode (index.md §4)."""
    if static and row.context_text and row.context_text.strip():
        return f"{prefix}{row.context_text}\n\n"
    return prefix


def batches(order: list[int], pieces: dict[int, int], widths: dict[int, int], size: int,
            budget: BatchBudget = BATCH_BUDGET) -> list[list[int]]:
    """`order` (ascending input width) cut as `length_batches` cuts a sorted list: at most
    `size` vectors (a chunk's pieces counted, so a batch of long chunks commits as soon as one
    of short ones) and first pieces within the model's `budget` per batch. Each
    batch of chunks without extra pieces is then one model run, the same run the bare
    embedder makes over the same inputs (bench/results/code-notes.md#phase-2-batches); a
    chunk is never split."""
    return cut_sorted(order, widths.__getitem__, pieces.__getitem__, size, budget)


def piece_estimate(tokens: int, max_length: int) -> int:
    """About how many vectors a chunk of `tokens` content tokens gets (for batching only)."""
    window = max(max_length - 16, 1)
    if tokens <= window:
        return 1
    step = max(window - window // 8, 1)
    return 1 + -(-(tokens - window) // step)


def apply_pieces_mode(store: Store | PgStore, meta: dict[str, str], on: bool,
                      max_length: int, static: bool) -> None:
    """Follow a change of `vector_pieces` (call inside a transaction): switched on, the chunks
    that may be longer than the window become pending for their extra pieces; switched off,
    the extra pieces are deleted. An index that records nothing has its pieces (schema 5)."""
    want = "1" if on else "0"
    if meta.get(PIECES_KEY, "1") == want:
        return
    store.set_pieces_mode(on, max_length, static)
    store.set_meta({PIECES_KEY: want})


@dataclass(frozen=True, slots=True)
class BatchVectors:
    """One batch's vectors, computed and not yet written (`embed_vectors`)."""

    items: list[ChunkVectors]
    dropped: dict[int, str]
    """Document id -> path of the documents a degenerate vector drops."""
    long: int
    truncated: int


def embed_vectors(embedder: Embedder, batch: list[EmbeddingRow], counts: list[int],
                  static: bool, pieces: bool = True) -> BatchVectors:
    """The model's half of a batch — each chunk's first piece unless it has it, and a long
    chunk's extra pieces; touches no store, so it can run on a worker thread
    (`CancellableRuns`) while the indexer's thread stays free to notice a stop."""
    inputs = [embedding_text(row.heading, row.context_text, row.content, static)
              for row in batch]
    room = embedder.max_length
    prefix = embedder.settings.passage_prefix
    # exact input lengths only where the content's count plus a generous bound for the
    # breadcrumb, prefix and special tokens (two per character) could pass the window
    extra = 2 * len(prefix) + 8
    maybe_long = [i for i, row in enumerate(batch)
                  if counts[i] + 2 * (len(inputs[i]) - len(row.content)) + extra > room]
    long = truncated = 0
    rows: dict[int, list[list[int]]] = {}
    if maybe_long:
        lengths = embedder.input_lengths([inputs[i] for i in maybe_long], "passage")
        for i, n in zip(maybe_long, lengths, strict=True):
            if n <= room:
                continue
            long += 1
            if not pieces or not batch[i].content:
                truncated += 1
                continue
            rows[i], whole = embedder.piece_rows(lead_text(batch[i], prefix, static),
                                                 batch[i].content)
            truncated += not whole
    need = [i for i, row in enumerate(batch) if not row.has_vector]
    first = embedder.embed_passages([inputs[i] for i in need])
    flat = [r for i in sorted(rows) for r in rows[i]]
    extras = embedder.embed_rows(flat)
    firsts = dict(zip(need, first, strict=True))
    by_chunk: dict[int, npt.NDArray[np.float32]] = {}
    at = 0
    for i in sorted(rows):
        by_chunk[i] = extras[at : at + len(rows[i])]
        at += len(rows[i])
    dim = embedder.dim
    dropped: dict[int, str] = {}
    for i, row in enumerate(batch):
        mine = [firsts[i][None, :]] if i in firsts else []
        mine += [by_chunk[i]] if i in by_chunk else []
        if mine and not _sound(np.vstack(mine)):
            dropped[row.document_id] = row.path
    items = [ChunkVectors(row.chunk_id, firsts.get(i),
                          by_chunk.get(i, np.zeros((0, dim), dtype=np.float32)), counts[i])
             for i, row in enumerate(batch) if row.document_id not in dropped]
    return BatchVectors(items, dropped, long, truncated)


def write_vectors(store: Store | PgStore, done: BatchVectors) -> BatchResult:
    """Commit a batch's vectors and token counts in one transaction; a degenerate vector
    drops its document (index.md §4)."""
    with store.transaction():
        store.write_chunk_vectors(done.items)
        for document_id in done.dropped:
            store.delete_document(document_id)
    return BatchResult(len(done.items), sum(item.pieces - 1 for item in done.items), done.long,
                       done.truncated, tuple(sorted(done.dropped.values())))


STOP_POLL_SECONDS = 0.05
"""How often the indexer's thread looks at the stop request while a batch runs."""


class CancellableRuns:
    """Model work on one worker thread while the calling thread polls `should_stop`.

    A signal handler runs only on the main thread and only between Python bytecodes, so with
    the model running there a stop waited for the whole batch. Here the main thread waits in
    short, interruptible sleeps; once a stop is requested it cancels the run in flight
    (`Runtime.cancel`) and the batch is left for the next run, uncommitted.
    """

    def __init__(self, embedder: Embedder, should_stop: Callable[[], bool]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._embedder = embedder
        self._should_stop = should_stop
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groove-embed")

    def __enter__(self) -> CancellableRuns:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True)
        self._embedder.runtime.resume()

    def run(self, work: Callable[[], BatchVectors]) -> BatchVectors | None:
        """`work()`'s result, or None when a stop cancelled it."""
        from concurrent.futures import TimeoutError as WaitTimeout

        from groove_cli.models.runtime import Cancelled

        future = self._pool.submit(contextvars.copy_context().run, work)
        try:
            while True:
                try:
                    return future.result(timeout=STOP_POLL_SECONDS)
                except WaitTimeout:
                    if self._should_stop():
                        self._embedder.runtime.cancel()
        except Cancelled:
            return None
        except BaseException:  # a second Ctrl-C: end the run in flight before leaving
            self._embedder.runtime.cancel()
            future.cancel()
            self._pool.shutdown(wait=True)
            raise


def _sound(vectors: npt.NDArray[np.float32]) -> bool:
    """Every vector finite with an L2 norm of at least 1e-6 (index.md §4)."""
    norms = np.linalg.norm(vectors, axis=1)
    return bool(np.isfinite(vectors).all() and (norms >= 1e-6).all())
