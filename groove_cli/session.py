"""A read session over an index: identity checks, query vectors (cached) and the KNN source.

Shared by `search`, `eval` and `tune`. The embedding model is loaded only when a query vector is
not in the query-embedding cache (search.md §4), and never for a search that needs no vector.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli import messages
from groove_cli.errors import ModelError
from groove_cli.identity import RuntimeModel, runtime_model, warn_digest
from groove_cli.retrieve.pipeline import Knn
from groove_cli.store import Store, cache_put

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from groove_cli.models import CrossEncoder, Embedder
    from groove_cli.vectors import VectorSnapshot


def cache_key(sha256: str, max_length: int, query_prefix: str, positive_text: str) -> str:
    """SHA-256 of `onnx_sha256 \\0 max_length \\0 query_prefix \\0 positive text` (§4)."""
    text = f"{sha256}\0{max_length}\0{query_prefix}\0{positive_text}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class ReadSession:
    """An open read-only index plus the runtime model, resolved lazily."""

    store: Store
    db: Path
    meta: dict[str, str]
    runtime: RuntimeModel
    models_dir: Path
    offline: bool
    embed_ms: float = 0.0
    _embedder: Embedder | None = field(default=None, repr=False)
    _snapshot: VectorSnapshot | None = field(default=None, repr=False)
    loaded_model: bool = False

    @property
    def dim(self) -> int:
        return self.runtime.dim

    @property
    def context_mode(self) -> str:
        return self.meta.get("context_mode", "off")

    def _load_embedder(self, texts: Sequence[str] = ()) -> Embedder:
        """The embedder, loaded on first use; `texts` are what it is loaded for (a few short
        queries let it skip building the full tokenizer)."""
        if self._embedder is None:
            from groove_cli.models import Embedder, resolve_model
            from groove_cli.models.embedder import fits_piece_table

            model = resolve_model(self.runtime.name, self.models_dir, offline=self.offline)
            warn_digest(self.meta, model.name, model.sha256)
            self.runtime = RuntimeModel(model.name, self.runtime.dim, self.runtime.max_length,
                                        model.sha256, self.runtime.query_prefix)
            self._embedder = Embedder.load(model, max_length=self.runtime.max_length,
                                           few_queries=bool(texts) and fits_piece_table(texts))
            self.loaded_model = True
        return self._embedder

    def query_vectors(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        """Vectors for positive query texts: cache first, then one embedding batch for misses."""
        if not texts:
            return []
        start = time.perf_counter()
        if self.runtime.sha256 is None:
            self._load_embedder()
        assert self.runtime.sha256 is not None
        keys = [cache_key(self.runtime.sha256, self.runtime.max_length, self.runtime.query_prefix,
                          text) for text in texts]
        cached = self.store.cache_get(keys)
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in cached}
        if missing:
            misses = list(missing.values())
            vectors = self._load_embedder(misses).embed_queries(misses)
            fresh = dict(zip(missing, vectors, strict=True))
            cache_put(self.db, list(fresh.items()))
            cached.update(fresh)
        self.embed_ms = (time.perf_counter() - start) * 1000
        return [cached[key] for key in keys]

    def knn(self, *, batch: bool = False) -> Knn:
        """The vector leg's KNN: the numpy snapshot when current, else vec0 (or an in-memory
        snapshot for batch commands, which amortise the one scan)."""
        from groove_cli.vectors import SnapshotStamp, VectorSnapshot, vec0_knn

        if self._snapshot is None:
            self._snapshot = VectorSnapshot.load(self.db, SnapshotStamp.of(self.store), self.dim)
            if self._snapshot is None and batch:
                self._snapshot = VectorSnapshot.from_store(self.store, self.dim)
        if self._snapshot is not None:
            return self._snapshot.knn
        return vec0_knn(self.store)

    def snapshot(self) -> VectorSnapshot:
        """The snapshot for batch KNN (eval, tune), building it in memory when stale."""
        self.knn(batch=True)
        assert self._snapshot is not None
        return self._snapshot

    def reranker(self, value: str | None) -> CrossEncoder | None:
        if not value or value == "none":
            return None
        from groove_cli.models import CrossEncoder, resolve_model

        model = resolve_model(value, self.models_dir, kind="reranker", offline=self.offline)
        return CrossEncoder.load(model)

    def close(self) -> None:
        self.store.close()


def recorded_model(meta: dict[str, str], declared_dim: int | None) -> RuntimeModel:
    """The model the index records, taken on trust: enough for a search that embeds nothing."""
    dim = meta.get("embedding_dim")
    return RuntimeModel(meta.get("embedding_model", ""), int(dim) if dim else declared_dim or 0,
                        int(meta.get("embedding_max_length", "0")),
                        meta.get("embedding_model_sha256") or None, "")


def open_session(db: Path, kb: Path | None, *, model: str | None, max_length: int | None,
                 models_dir: Path, offline: bool, embeds: bool = True) -> ReadSession:
    """Open the index read-only and check model identity before loading anything.

    `embeds=False` (a full-text-only search): a model that cannot be found is no error, the
    index's recorded identity stands in; one that is found is still checked.
    """
    kb_hint = str(kb) if kb else "<path>"
    store = Store.open_readonly(db, kb_hint)
    try:
        meta = store.meta()
        recorded_kb = meta.get("kb_path")
        if kb is not None and recorded_kb and recorded_kb != str(kb.resolve()):
            messages.warning(f"the index at {db} was built from {recorded_kb}, not {kb.resolve()}")
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
    return ReadSession(store, db, meta, runtime, models_dir, offline)
