"""`Searcher`: an index opened once for reading, and every search run through it.

`groove search`, `eval` and `tune` open a Searcher on the index: it checks the model identity
before loading anything, keeps the read connection (and, for eval's batches, readers pinned to
one committed state), takes query vectors from the query-embedding cache before loading the
model (search.md §4, never for a search that needs no vector), picks the KNN source (the numpy
snapshot when current, else vec0) and loads the reranker once. `search` runs one query through
the pipeline; `search_many` runs a batch with one embedding batch and one batched KNN.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import itertools
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli import config, messages
from groove_cli.config import MAX_LIMIT, Settings
from groove_cli.dburl import IndexLocation
from groove_cli.errors import ModelError
from groove_cli.retrieve.legs import (
    Knn,
    Legs,
    VectorRows,
    has_exclusions,
    legs_to_run,
    listed_knn,
    vector_k,
)
from groove_cli.retrieve.params import (
    SearchParams,
)
from groove_cli.retrieve.pipeline import SearchResult, pool_sizes, search
from groove_cli.retrieve.query import CompiledQuery
from groove_cli.retrieve.rerank import Reranker
from groove_cli.runtime_model import RuntimeModel, recorded_model, runtime_model, warn_digest
from groove_cli.store import Store, incomplete_rebuild, open_reader, put_cache
from groove_cli.store.pieces import pieces_switch_note

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from groove_cli.models import CrossEncoder, Embedder
    from groove_cli.store.cache import DeferredCache
    from groove_cli.store.postgres import PgStore
    from groove_cli.vectors import VectorSnapshot

NOTHING_TO_SEARCH = ("the query has no full-text phrase of 3 or more characters nor a Latin word "
                     "of 2 or more letters, and the vector leg is off; nothing to search")

# Below this many queries a second reader is not worth opening.
PARALLEL_MIN_QUERIES = 64


def cache_key(sha256: str, max_length: int, query_prefix: str, positive_text: str) -> str:
    """SHA-256 of `onnx_sha256 \\0 max_length \\0 query_prefix \\0 positive text` (§4)."""
    text = f"{sha256}\0{max_length}\0{query_prefix}\0{positive_text}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Searcher:
    """An open read-only index plus the runtime model, resolved lazily (see the module doc).

    Safe to share between threads: the models and the vector snapshot are loaded once under a
    lock, and each search borrows a read connection from a pool (opened on demand), so
    concurrent searches never share a connection or per-call state.
    """

    store: Store | PgStore
    db: IndexLocation
    meta: dict[str, str]
    runtime: RuntimeModel
    models_dir: Path
    offline: bool
    _embedder: Embedder | None = field(default=None, repr=False)
    _snapshot: VectorSnapshot | None = field(default=None, repr=False)
    loaded_model: bool = False
    reranker_name: str | None = None
    _reranker: CrossEncoder | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _idle: list[Store | PgStore] = field(default_factory=list, repr=False)
    _opened: list[Store | PgStore] = field(default_factory=list, repr=False)
    kb_hint: str = "<path>"
    deferred: DeferredCache | None = field(default=None, repr=False)
    """Set by a long-lived reader (the server): query vectors reach the cache in batches from
    a background thread instead of on each search's path."""
    vector_pieces: bool = config.DEFAULT_VECTOR_PIECES
    """Rank a chunk by its first piece or a clearly better later one (search.md §4); off, by
    its first piece alone."""
    threads: int | None = None
    """The model's intra-op threads for batches of queries (None: the cores this process
    may use); a single query runs on one."""

    @classmethod
    def open(cls, db: IndexLocation, kb: Path | None, *, model: str | None, max_length: int | None,
             models_dir: Path, offline: bool, reranker: str | None = None,
             embeds: bool = True, vector_pieces: bool = config.DEFAULT_VECTOR_PIECES,
             threads: int | None = None) -> Searcher:
        """Open the index read-only and check model identity before loading anything.

        `embeds=False` (a full-text-only search): a model that cannot be found is no error, the
        index's recorded identity stands in; one that is found is still checked.
        """
        kb_hint = str(kb) if kb else "<path>"
        store = open_reader(db, kb_hint)
        try:
            meta = store.meta()
            recorded_kb = meta.get("kb_path")
            if kb is not None and recorded_kb and recorded_kb != str(kb.resolve()):
                messages.warning(f"the index at {db} was built from {recorded_kb}, "
                                 f"not {kb.resolve()}")
            unfinished = incomplete_rebuild(meta, db, recorded_kb or kb_hint)
            if unfinished is not None:
                messages.warning(unfinished)
            declared = store.vec_dim()
            try:
                runtime = runtime_model(meta, model, max_length, models_dir)
            except ModelError:
                if embeds or "embedding_model" not in meta:
                    raise
                runtime = recorded_model(meta, declared)
            if declared is not None and declared != runtime.dim:
                from groove_cli.errors import IndexMismatch

                raise IndexMismatch(
                    f"vec_chunks declared float[{declared}] but runtime dim is {runtime.dim}. "
                    "Run index with --force to rebuild."
                )
        except BaseException:
            store.close()
            raise
        return cls(store, db, meta, runtime, models_dir, offline,
                   reranker_name=None if reranker == "none" else reranker, kb_hint=kb_hint,
                   vector_pieces=vector_pieces, threads=threads)

    @classmethod
    def from_settings(cls, settings: Settings, db: IndexLocation, kb: Path | None, *,
                      reranker: str | None = None, embeds: bool = True) -> Searcher:
        """`open` with the model, max_length and models folder of resolved settings."""
        return cls.open(db, kb, model=settings.str_("model"),
                        max_length=settings.int_("max_length"),
                        models_dir=config.models_dir(settings), offline=config.offline_mode(),
                        reranker=reranker, embeds=embeds,
                        vector_pieces=settings.bool_("vector_pieces"),
                        threads=config.model_threads(settings))

    def __post_init__(self) -> None:
        self._idle.append(self.store)

    @property
    def dim(self) -> int:
        return self.runtime.dim

    def require_vectors(self, command: str) -> None:
        """Refuse to measure quality on a half-embedded index (eval.md §2): the vector leg
        would rank with the vectors that exist, and the figure would describe no real state.

        Raises:
            GrooveError: naming the coverage, with `groove index` as the way out.
        """
        switched = pieces_switch_note(self.meta, self.vector_pieces)
        if switched is not None:  # a real state (truncated long chunks), not the configured one
            messages.warning(f"{command} measures the index as it is: {switched}")
        coverage = vector_coverage_note(self.store)
        if coverage is not None:
            from groove_cli.errors import GrooveError

            raise GrooveError(
                f"{command} needs every chunk's vector, but the index has {coverage} "
                "(`groove index` has not finished embedding)",
                hint="run `groove index` to embed the rest (it resumes where it stopped), or "
                     "measure the full-text leg alone with --mode fts")

    @property
    def context_mode(self) -> str:
        return self.meta.get("context_mode", "off")

    @contextmanager
    def reader(self) -> Iterator[Store | PgStore]:
        """A read connection for one call: the Searcher's own when free, else another from
        the pool, opened on first need and kept for the next call."""
        with self._lock:
            store = self._idle.pop() if self._idle else None
        if store is None:
            store = open_reader(self.db, self.kb_hint)
            with self._lock:
                self._opened.append(store)
        try:
            yield store
        finally:
            with self._lock:
                self._idle.append(store)

    def _load_embedder(self, texts: Sequence[str] = ()) -> Embedder:
        """The embedder, loaded on first use; `texts` are what it is loaded for (a few short
        queries let it skip building the full tokenizer)."""
        with self._lock:
            if self._embedder is None:
                from groove_cli.models import Embedder, resolve_model
                from groove_cli.models.embedder import fits_piece_table

                model = resolve_model(self.runtime.name, self.models_dir, offline=self.offline)
                warn_digest(self.meta, model.name, model.sha256)
                self.runtime = RuntimeModel(model.name, self.runtime.dim,
                                            self.runtime.max_length, model.sha256,
                                            self.runtime.query_prefix)
                # one query at a time (a search, a server): one intra-op thread, which waits
                # less for a core and gives the same vector (bench/results/serve.md)
                self._embedder = Embedder.load(model, max_length=self.runtime.max_length,
                                               few_queries=bool(texts) and fits_piece_table(texts),
                                               threads=1 if len(texts) == 1 else self.threads)
                self.loaded_model = True
            return self._embedder

    def query_vectors(self, texts: Sequence[str], store: Store | PgStore | None = None
                      ) -> list[npt.NDArray[np.float32]]:
        """Vectors for positive query texts: cache first (read through `store`, default the
        Searcher's own), then one embedding batch for the misses."""
        if not texts:
            return []
        if self.runtime.sha256 is None:
            self._load_embedder()
        runtime = self.runtime
        assert runtime.sha256 is not None
        keys = [cache_key(runtime.sha256, runtime.max_length, runtime.query_prefix, text)
                for text in texts]
        deferred = self.deferred
        cached = deferred.get(keys) if deferred is not None else {}
        if len(cached) < len(keys):
            cached.update((store or self.store).cache_get([k for k in keys if k not in cached]))
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in cached}
        if missing:
            misses = list(missing.values())
            vectors = self._load_embedder(misses).embed_queries(misses)
            fresh = dict(zip(missing, vectors, strict=True))
            if deferred is not None:
                deferred.put(list(fresh.items()))
            else:
                put_cache(store or self.store, list(fresh.items()))
            cached.update(fresh)
        return [cached[key] for key in keys]

    def knn(self, *, batch: bool = False, store: Store | PgStore | None = None) -> Knn:
        """The vector leg's KNN: the numpy snapshot when current, else vec0 through `store`
        (default the Searcher's own), or an in-memory snapshot for batch commands, which
        amortise the one scan."""
        from groove_cli.vectors import SnapshotStamp, VectorSnapshot, vec0_knn

        reader = store or self.store
        pieces = self.vector_pieces
        with self._lock:
            if not isinstance(reader, Store):
                assert not isinstance(self.store, Store)
                if not self.store.exact_vectors():
                    return vec0_knn(reader, pieces=pieces)  # Postgres: the KB's HNSW index
                if self._snapshot is None:  # Postgres, vector_index = exact: all vectors, once
                    self._snapshot = VectorSnapshot.from_store(reader, self.dim, pieces=pieces)
                return self._snapshot.knn
            if self._snapshot is None and isinstance(self.db, Path):
                loaded = VectorSnapshot.load(self.db, SnapshotStamp.of(reader), self.dim)
                self._snapshot = loaded if loaded is None or pieces else loaded.first_pieces()
                if self._snapshot is None and batch:
                    self._snapshot = VectorSnapshot.from_store(reader, self.dim, pieces=pieces)
            if self._snapshot is not None:
                return self._snapshot.knn
        return vec0_knn(reader, pieces=pieces)

    def vector_rows(self, store: Store | PgStore | None = None) -> VectorRows | None:
        """The loaded snapshot's vectors by id (each chunk's pieces), for the hits' cosines;
        None: the pipeline reads every piece from the store. With `vector_pieces` off and no
        snapshot, only first pieces, read through `store` (default the Searcher's own)."""
        if self._snapshot is not None:
            return self._snapshot
        if self.vector_pieces:
            return None
        return FirstPieces(store or self.store, self.dim)

    def snapshot(self) -> VectorSnapshot:
        """The snapshot for batch KNN (eval, tune), building it in memory when stale."""
        self.knn(batch=True)
        assert self._snapshot is not None
        return self._snapshot

    @property
    def reranker(self) -> CrossEncoder | None:
        """The reranker the Searcher was opened with, loaded on first use (None: no reranker)."""
        if self.reranker_name is None:
            return None
        with self._lock:
            if self._reranker is None:
                from groove_cli.models import CrossEncoder, resolve_model

                model = resolve_model(self.reranker_name, self.models_dir, kind="reranker",
                                      offline=self.offline)
                self._reranker = CrossEncoder.load(model)
            return self._reranker

    def batch_neighbours(self, queries: Sequence[CompiledQuery],
                         vectors: Sequence[npt.NDArray[np.float32]], count: int
                         ) -> list[list[tuple[int, float]]]:
        """Every query's vector-leg neighbours from one matrix product per block of queries.

        Each query gets the k its vector leg asks for (×10 with exclusions); a prefix of a
        longer list ordered by (distance, id) is exactly the shorter list, so one k serves all.
        """
        if not vectors:
            return []
        import numpy as np

        k = vector_k(count, any(has_exclusions(q) for q in queries))
        if not isinstance(self.store, Store) and not self.store.exact_vectors():
            knn = self.knn()
            return [knn(vector, k) for vector in vectors]
        return self.snapshot().knn_batch(np.vstack(list(vectors)), k)

    def calibrated(self, params: SearchParams) -> SearchParams:
        """`params` with the relevance calibration of the index's embedding model when the
        settings name none."""
        if params.calibration is not None:
            return params
        from groove_cli.retrieve.relevance import default_calibration

        return dataclasses.replace(params, calibration=default_calibration(self.runtime.name))

    def search(self, query: CompiledQuery, params: SearchParams, legs: Legs | None = None
               ) -> SearchResult:
        """One query through the pipeline on a pooled connection: its vector (cache first) only
        when the vector leg runs, the KNN source, the reranker when `params.rerank`. `legs`:
        which legs run, when the caller has decided it (decided once per query)."""
        params = self.calibrated(params)
        legs = legs if legs is not None else legs_to_run(query, params)
        reranker = self.reranker if params.rerank else None
        with self.reader() as store:
            vector, knn, embed_ms = None, None, None
            if legs.vector:
                start = time.perf_counter()
                vector = self.query_vectors([query.positive_text], store)[0]
                embed_ms = (time.perf_counter() - start) * 1000
                knn = self.knn(store=store)
            return search(store, query, params, vector=vector, knn=knn, reranker=reranker,
                          dim=self.dim, embed_ms=embed_ms, vectors=self.vector_rows(store),
                          legs=legs)

    def prepare(self, queries: Sequence[CompiledQuery], params: SearchParams) -> Batch:
        """A batch's query vectors (cache first, one embedding batch for the misses), the
        reranker, and every query's neighbours from one batched KNN (eval.md §2: before the
        searches' consistent read state begins)."""
        params = self.calibrated(params)
        legs = tuple(legs_to_run(q, params) for q in queries)
        need = [i for i, q in enumerate(legs) if q.vector]
        vectors = dict(zip(need, self.query_vectors([queries[i].positive_text for i in need]),
                           strict=True))
        reranker = self.reranker if params.rerank else None
        found = self.batch_neighbours([queries[i] for i in need], list(vectors.values()),
                                      pool_sizes(params).vec)
        return Batch(tuple(queries), params, vectors, dict(zip(need, found, strict=True)),
                     reranker, legs)

    @contextmanager
    def pinned(self, extra_readers: int = 0) -> Iterator[tuple[Store | PgStore, ...]]:
        """One consistent state for a batch: a read transaction on a pooled connection plus
        `extra_readers` connections pinned to the same committed state. Yields them all, the
        first for reads that must see that state; `run_batch` spreads the queries over them."""
        with self.reader() as store, store.pinned_readers(extra_readers) as stores:
            yield tuple(stores)

    def run_batch(self, batch: Batch, readers: Sequence[Store | PgStore] = ()
                  ) -> list[SearchResult]:
        """The prepared batch through the pipeline, on `readers` (from `pinned`; default the
        Searcher's connection), results in query order."""
        others = self.knn(batch=True) if batch.params.feedback_beta > 0 else None
        return search_all(readers or (self.store,), batch, self.dim, self.vector_rows(), others)

    def search_prepared(self, batch: Batch, index: int, store: Store | PgStore | None = None
                        ) -> SearchResult:
        """One query of a prepared batch on `store` (default the Searcher's connection), with
        its vector from the batch and the KNN source a single search uses (eval --ablate times
        these searches without the embedding)."""
        vector = batch.vectors.get(index)
        reader = store or self.store
        knn = self.knn(batch=True, store=reader) if vector is not None else None
        return search(reader, batch.queries[index], batch.params, vector=vector, knn=knn,
                      reranker=batch.reranker, dim=self.dim, vectors=self.vector_rows(reader),
                      legs=batch.legs[index] if batch.legs else None)

    def search_many(self, queries: Sequence[CompiledQuery], params: SearchParams
                    ) -> list[SearchResult]:
        """Every query through the pipeline over one consistent state of the index."""
        batch = self.prepare(queries, params)
        with self.pinned(extra_readers(len(queries), batch.reranker is not None)) as readers:
            return self.run_batch(batch, readers)

    def close(self) -> None:
        """Write the deferred cache entries; close the Searcher's connection and every pooled
        one."""
        if self.deferred is not None:
            self.deferred.close()
        with self._lock:
            for store in self._opened:
                store.close()
            self._opened.clear()
            self._idle.clear()
        self.store.close()


@dataclass(frozen=True, slots=True)
class FirstPieces:
    """Each chunk's first piece read from the store (`vector_pieces` off, no snapshot): one
    piece per chunk, so no correction and no σ."""

    store: Store | PgStore
    dim: int

    def rows_by_id(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        return {cid: v[None, :] for cid, v in self.store.vectors_by_id(ids, self.dim).items()}

    def piece_spread(self, query: npt.NDArray[np.float32]) -> float:
        return 0.0


@dataclass(frozen=True, slots=True)
class Batch:
    """Queries ready for the pipeline: vectors and neighbours by query index (vector leg only)."""

    queries: tuple[CompiledQuery, ...]
    params: SearchParams
    vectors: dict[int, npt.NDArray[np.float32]]
    neighbours: dict[int, list[tuple[int, float]]]
    reranker: Reranker | None
    legs: tuple[Legs, ...] = ()
    """Which legs each query runs (decided once, in `prepare`); empty: decided per search."""


def extra_readers(queries: int, rerank: bool) -> int:
    """Connections beyond the Searcher's own for a batch: one more on a multi-core machine for
    a large batch. The full-text legs run inside SQLite, which releases the GIL, so two readers
    keep two cores busy. Not with a reranker: its inference already uses every core."""
    if rerank or queries < PARALLEL_MIN_QUERIES or (os.cpu_count() or 1) < 2:
        return 0
    return 1


def search_all(stores: Sequence[Store | PgStore], batch: Batch, dim: int,
               vectors: VectorRows | None = None, others: Knn | None = None
               ) -> list[SearchResult]:
    """Every query's result, in batch order; with several stores (one consistent state, see
    `Store.pinned_readers`) each thread takes the next query off a shared counter. Each query's
    vector leg answers from the batch's neighbours; `others` answers any other vector (vector
    feedback's second pass)."""
    queries = batch.queries
    results: list[SearchResult | None] = [None] * len(queries)
    counter = itertools.count()
    errors: list[BaseException] = []

    def work(store: Store | PgStore) -> None:
        try:
            for i in counter:
                if i >= len(queries) or errors:
                    return
                vector = batch.vectors.get(i)
                knn: Knn = listed_knn(batch.neighbours.get(i, []), own=vector, others=others)
                results[i] = search(store, queries[i], batch.params, vector=vector,
                                    knn=knn, reranker=batch.reranker, dim=dim, vectors=vectors,
                                    legs=batch.legs[i] if batch.legs else None)
        except BaseException as exc:  # Ctrl-C included: the other threads stop, then re-raised
            errors.append(exc)

    # each thread runs in a copy of the caller's context, so warnings reach its capture list
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(work, store),
                                name="groove-eval", daemon=True)
               for store in stores[1:]]
    for thread in threads:
        thread.start()
    try:
        work(stores[0])
    finally:
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


def fill_files(searcher: Searcher, query: CompiledQuery, params: SearchParams,
               legs: Legs | None = None) -> tuple[SearchResult, str | None]:
    """`--format files`: hits collapse to files, so fetch more hits (×4 each round, up to the
    1000-hit cap) until `params.limit` files are found or the search has no more; keep the
    hits of the first `params.limit` files. The second value says why there are fewer files
    than asked, else None."""
    wanted, fetch = params.limit, params.limit
    while True:
        result = searcher.search(query, dataclasses.replace(params, limit=fetch), legs)
        files = list(dict.fromkeys(hit.chunk.path for hit in result.hits))
        if len(files) >= wanted or len(result.hits) < fetch or fetch >= MAX_LIMIT:
            break
        fetch = min(MAX_LIMIT, fetch * 4)
    kept = set(files[:wanted])
    result = dataclasses.replace(result, hits=tuple(h for h in result.hits if h.chunk.path in kept))
    if not result.hits or len(files) >= wanted:
        return result, None
    return result, (f"{len(files)} files, not {wanted}: the {len(result.hits)} hits found "
                    f"are all in these files (hits collapse to files)")


def vector_coverage_note(store: Store | PgStore) -> str | None:
    """`vectors for N of M chunks; full-text covers all` while phase 2 of `index` has not
    embedded every chunk yet (index.md §6.1); None when every chunk has its vector."""
    chunks, vectors = store.chunk_count(), store.vector_count()
    if vectors >= chunks:
        return None
    return f"vectors for {vectors:,} of {chunks:,} chunks; full-text covers all"
