"""A contiguous, memory-mapped copy of the index's vectors for fast exact KNN with numpy.

sqlite-vec's `vec0` stays the source of truth; its scan is far slower per row than one numpy
matrix product over the same float32 vectors (bench/results/search.md,
bench/results/code-notes.md#vec0-scan). `index` writes the snapshot next to the
database after each run, stamped with the index's identity (`index_id`, random, written when
the file is created) and its `vectors_version` counter, and a CRC-32 of its arrays; a reader
uses it only when both match and the arrays still have that checksum (a snapshot damaged on disk
with its stamp intact is never used), and otherwise falls back to an in-memory copy (batches) or
plain vec0 KNN. CRC-32 (zlib) because the check runs on every cold load: it reads at memory
speed, far faster than a cryptographic hash, and it only has to catch damage, not forgery.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from groove_cli.config import MAX_TOP_K
from groove_cli.npyfiles import save_stamped

Neighbours = list[tuple[int, float]]


class VectorRows(Protocol):
    """What the snapshot reads from an index (both stores; Postgres's reader too). A protocol
    here rather than the store's classes, so the stores can use the snapshot without a circle."""

    def all_vectors(self) -> Iterator[tuple[int, bytes]]: ...

    def all_piece_vectors(self) -> Iterator[tuple[int, bytes]]: ...


class StampedVectors(VectorRows, Protocol):
    """An index whose vectors carry an identity and a version (the snapshot's stamp)."""

    def index_id(self) -> str: ...

    def vectors_version(self) -> str: ...

    def vec_dim(self) -> int | None: ...


class KnnSource(Protocol):
    """An index's own KNN (vec0 or Postgres's HNSW) and its row count."""

    def chunk_count(self) -> int: ...

    def vec_search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]: ...

    def piece_stats(self, query: npt.NDArray[np.float32]) -> list[PieceStat]: ...


PieceStat = tuple[int, float, int, float, float]
"""One long chunk's extra pieces against a query (the stores' `piece_stats`): chunk id, least
cosine distance, number of extra pieces, and the sum and sum of squares of their distances."""

MAX_PIECES = 256
"""The most vectors one chunk has (index.md §4)."""


@cache
def _expected_max_table() -> npt.NDArray[np.float64]:
    """e(n) for n = 0 … MAX_PIECES: the expected maximum of n independent standard normals,
    ∫ x · n φ(x) Φ(x)^(n−1) dx by the trapezoid rule on a fine grid (e(0) = e(1) = 0)."""
    x = np.linspace(-12.0, 12.0, 48_001)
    phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])
    table = np.zeros(MAX_PIECES + 1)
    for n in range(2, MAX_PIECES + 1):
        table[n] = float(np.trapezoid(x * n * phi * cdf ** (n - 1), x))
    return table


def expected_max(n: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """e(n) per element (n clipped to 0 … MAX_PIECES): what the best of n pieces' cosines
    gains by chance alone, in standard deviations (search.md §4)."""
    return _expected_max_table()[np.clip(n, 0, MAX_PIECES)]


def piece_spread(stats: Sequence[PieceStat]) -> float:
    """The query's σ: population standard deviation of its cosines over every extra piece of
    the index, from the per-chunk sums of `piece_stats` (0 with fewer than two pieces)."""
    count = sum(s[2] for s in stats)
    if count < 2:
        return 0.0
    mean = sum(s[3] for s in stats) / count
    return math.sqrt(max(sum(s[4] for s in stats) / count - mean * mean, 0.0))


BLOCK_FLOATS = 16_000_000
MAX_VEC_K = MAX_TOP_K


def _paths(db: Path) -> tuple[Path, Path, Path]:
    """The snapshot's files beside the index: matrix, ids, and the stamp written last."""
    name = db.name
    return (db.with_name(f"{name}.vectors.npy"), db.with_name(f"{name}.vectors-ids.npy"),
            db.with_name(f"{name}.vectors.json"))


@dataclass(frozen=True, slots=True)
class SnapshotStamp:
    """Which index, and which state of its vectors, a snapshot was written from."""

    index_id: str
    vectors_version: str

    @classmethod
    def of(cls, store: StampedVectors) -> SnapshotStamp:
        return cls(store.index_id(), store.vectors_version())


def _stamp_in(written: dict[str, object]) -> SnapshotStamp:
    """The SnapshotStamp of a parsed `.vectors.json` (KeyError/TypeError when it lacks one)."""
    return SnapshotStamp(str(written["index_id"]), str(written["vectors_version"]))


def has_checksum(db: Path) -> bool:
    """Whether the snapshot's stamp carries a checksum (one written before checksums were
    recorded is out of date, not damaged)."""
    try:
        return "crc32" in json.loads(_paths(db)[2].read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def read_stamp(db: Path) -> SnapshotStamp | None:
    """The stamp of the snapshot beside `db`; None when there is none or it cannot be read."""
    try:
        return _stamp_in(json.loads(_paths(db)[2].read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class VectorSnapshot:
    """Row-normalised float32 matrix + chunk ids; cosine distance = 1 − dot.

    A chunk longer than the model's window has several rows (index.md §4): its rows are
    adjacent, first piece first, and `ids` repeats its id. A chunk's distance is its nearest
    row's, so KNN returns each chunk once, however many pieces it has.

    Rows holding one and the same vector (duplicate notes) must tie exactly, so that the id
    tie-break decides between them. A float32 matrix product does not promise that: the last
    bits of a row's dot product depend on where the row falls in the BLAS kernel's blocks, on
    the batch size and on the CPU (seen with OpenBLAS on AVX2), so eval (a batch of queries)
    and search (one query) could order duplicates differently. The snapshot therefore records
    each duplicate row with the first row holding its vector and copies that row's distance.
    """

    def __init__(self, ids: npt.NDArray[np.int64], matrix: npt.NDArray[np.float32],
                 duplicates: npt.NDArray[np.int64] | None = None) -> None:
        self.ids = ids
        self.matrix = matrix
        self.duplicates = (np.zeros((0, 2), dtype=np.int64) if duplicates is None
                           else duplicates)
        """(row, first row with the same vector) pairs, row-ascending."""
        rows = int(ids.shape[0])
        self.starts: npt.NDArray[np.int64] = (
            np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]).astype(np.int64) if rows
            else np.zeros(0, dtype=np.int64))
        """The first row (first piece) of each chunk."""
        self.chunk_ids: npt.NDArray[np.int64] = ids[self.starts] if rows else ids
        self.pieces = self.starts.shape[0] < rows
        """Whether some chunk has more than one row."""
        self.counts = np.diff(np.r_[self.starts, rows]).astype(np.int64)
        """Each chunk's number of rows (its pieces), in `chunk_ids` order."""
        extra = np.ones(rows, dtype=bool)
        extra[self.starts] = False
        self.extra_rows: npt.NDArray[np.int64] = np.flatnonzero(extra).astype(np.int64)
        """The rows of extra pieces (every row but each chunk's first)."""

    @classmethod
    def from_store(cls, store: VectorRows, dim: int, *, pieces: bool = True) -> VectorSnapshot:
        """Read every vector (first pieces, then extra pieces unless `pieces` is off) and
        normalise; zero vectors are dropped, and so are the extra pieces of a chunk whose
        first piece is."""
        ids: list[int] = []
        blobs: list[bytes] = []
        for cid, blob in store.all_vectors():
            if len(blob) == dim * 4:
                ids.append(cid)
                blobs.append(blob)
        first = len(ids)
        for cid, blob in store.all_piece_vectors() if pieces else ():
            if len(blob) == dim * 4:
                ids.append(cid)
                blobs.append(blob)
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), dim).astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):  # a damaged vector's norm is
            norms = np.linalg.norm(matrix, axis=1)           # inf or nan: dropped below
        keep = np.isfinite(norms) & (norms > 0)
        chunk_ids = np.asarray(ids, dtype=np.int64)
        keep[first:] &= np.isin(chunk_ids[first:], chunk_ids[:first][keep[:first]])
        matrix = matrix[keep] / norms[keep, None]
        order = np.argsort(chunk_ids[keep], kind="stable")  # first pieces stay first
        matrix = np.ascontiguousarray(matrix[order], dtype=np.float32)
        return cls(chunk_ids[keep][order], matrix, duplicate_rows(matrix))

    def first_pieces(self) -> VectorSnapshot:
        """The snapshot of each chunk's first piece only (`vector_pieces = false`)."""
        if not self.pieces:
            return self
        matrix = np.ascontiguousarray(self.matrix[self.starts], dtype=np.float32)
        return VectorSnapshot(self.chunk_ids, matrix, duplicate_rows(matrix))

    def checksum(self) -> int:
        """CRC-32 of the matrix, the ids and the duplicate pairs, as they sit in memory."""
        crc = 0
        for array in (self.matrix, self.ids, self.duplicates):
            crc = zlib.crc32(np.ascontiguousarray(array).data, crc)
        return crc

    def save(self, db: Path, stamp: SnapshotStamp) -> None:
        """Write atomically: the stamp removed first, data files, the stamp last."""
        matrix_path, ids_path, stamp_path = _paths(db)
        save_stamped(((matrix_path, self.matrix), (ids_path, self.ids)), stamp_path,
                     {"index_id": stamp.index_id, "vectors_version": stamp.vectors_version,
                      "rows": int(self.ids.shape[0]),
                      "dim": int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0,
                      "duplicates": self.duplicates.tolist(), "crc32": self.checksum()})

    @classmethod
    def load(cls, db: Path, stamp: SnapshotStamp, dim: int) -> VectorSnapshot | None:
        """Memory-map the snapshot when its stamp matches the index and its arrays their
        checksum; else None (a snapshot without a checksum, from an older groove, included)."""
        matrix_path, ids_path, stamp_path = _paths(db)
        try:
            written = json.loads(stamp_path.read_text(encoding="utf-8"))
            if _stamp_in(written) != stamp or written.get("dim") != dim:
                return None
            matrix = np.load(matrix_path, mmap_mode="r")
            ids = np.load(ids_path)
            duplicates = np.asarray(written["duplicates"], dtype=np.int64).reshape(-1, 2)
            crc = written["crc32"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if matrix.shape != (ids.shape[0], dim) or (
                duplicates.size and not (duplicates.min() >= 0 and duplicates.max() < ids.shape[0])):
            return None
        loaded = cls(ids, matrix, duplicates)
        return loaded if type(crc) is int and loaded.checksum() == crc else None

    def distances(self, queries: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosine distances, shape (n_queries, rows); one matrix product for a whole batch."""
        q = np.asarray(queries, dtype=np.float32)
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        dist = np.asarray(1.0 - (q / norms) @ self.matrix.T, dtype=np.float32)
        if self.duplicates.size:
            dist[:, self.duplicates[:, 0]] = dist[:, self.duplicates[:, 1]]
        return dist

    def rows_by_id(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The unit-length vectors of each chunk of `ids` the snapshot holds, shape (pieces,
        dim), first piece first (ids are sorted, so two binary searches each: the pipeline's
        cosines without a store lookup per hit)."""
        wanted = np.asarray(list(ids), dtype=np.int64)
        if not wanted.size or not self.ids.size:
            return {}
        first = np.searchsorted(self.ids, wanted, side="left")
        last = np.searchsorted(self.ids, wanted, side="right")
        return {int(cid): self.matrix[a:b] for cid, a, b in zip(wanted, first, last, strict=True)
                if b > a}

    def piece_spreads(self, queries: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """Each query's σ (`piece_spread`): the standard deviation of its cosines over every
        extra piece, in float64 so that a query's σ does not depend on its batch."""
        q = np.asarray(queries, dtype=np.float64)
        count = int(self.extra_rows.shape[0])
        if count < 2:
            return np.zeros(q.shape[0])
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        q = q / norms
        total, squares = np.zeros(q.shape[0]), np.zeros(q.shape[0])
        step = max(1, BLOCK_FLOATS // max(q.shape[0], int(self.matrix.shape[1])))
        for first in range(0, count, step):  # memory bounded however many extra pieces
            rows = np.asarray(self.matrix[self.extra_rows[first : first + step]], dtype=np.float64)
            cos = q @ rows.T
            total += cos.sum(axis=1)
            squares += (cos * cos).sum(axis=1)
        mean = total / count
        return np.asarray(np.sqrt(np.maximum(squares / count - mean * mean, 0.0)))

    def piece_spread(self, query: npt.NDArray[np.float32]) -> float:
        return float(self.piece_spreads(np.asarray(query)[None, :])[0])

    def knn(self, query: npt.NDArray[np.float32], k: int) -> Neighbours:
        return self.knn_batch(query[None, :], k)[0]

    def knn_batch(self, queries: npt.NDArray[np.float32], k: int) -> list[Neighbours]:
        """Top-k (chunk id, distance) per query, ordered by distance then chunk id; a chunk's
        distance is its nearest piece's."""
        rows = self.ids.shape[0]
        if rows == 0:
            return [[] for _ in range(queries.shape[0])]
        k = min(k, int(self.chunk_ids.shape[0]))
        out: list[Neighbours] = []
        # bound the distance block to ~16M floats (64 MB) however many queries come at once
        block = max(1, BLOCK_FLOATS // rows)
        for first in range(0, queries.shape[0], block):
            part = queries[first : first + block]
            out.extend(self._top_k(self.distances(part), k, part))
        return out

    def _top_k(self, dist: npt.NDArray[np.float32], k: int,
               queries: npt.NDArray[np.float32]) -> list[Neighbours]:
        if self.pieces:  # each chunk at its first piece, or nearer by a later piece less what
            # n pieces gain by chance (search.md §4)
            first = dist[:, self.starts]
            best = np.minimum.reduceat(dist, self.starts, axis=1)
            penalty = self.piece_spreads(queries)[:, None] * expected_max(self.counts)[None, :]
            dist = np.asarray(np.minimum(first, best + penalty), dtype=np.float32)
        ids = self.chunk_ids
        rows = ids.shape[0]
        out: list[Neighbours] = []
        for row in dist:
            if k < rows:
                # include every row tied with the k-th distance so the id tie-break is exact
                part = np.argpartition(row, k - 1)[:k]
                cutoff = row[part].max()
                part = np.nonzero(row <= cutoff)[0]
            else:
                part = np.arange(rows)
            order = np.lexsort((ids[part], row[part]))[:k]
            chosen = part[order]
            out.append([(int(ids[i]), float(row[i])) for i in chosen])
        return out


def duplicate_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
    """(row, first row) for every row whose vector an earlier row holds bit for bit."""
    first: dict[bytes, int] = {}
    pairs = [(row, first.setdefault(vector.tobytes(), row)) for row, vector in enumerate(matrix)]
    return np.asarray([p for p in pairs if p[0] != p[1]], dtype=np.int64).reshape(-1, 2)


def corrected_pieces(first: Neighbours, stats: Sequence[PieceStat], bound: float
                     ) -> Neighbours:
    """The chunks whose distance (search.md §4: the first piece's, or the best later piece's
    + σ · e(n) when that is less) is known: every chunk of `first`, the first pieces' list, and
    those a later piece brings below `bound`, its last distance (a chunk nearer than it by first
    piece is in `first`); ordered by distance then id."""
    sigma = piece_spread(stats)
    found = dict(first)
    gains = expected_max(np.asarray([count + 1 for _, _, count, _, _ in stats], dtype=np.int64))
    for (cid, dist, *_), gain in zip(stats, gains, strict=True):
        corrected = dist + sigma * float(gain)
        if cid in found:
            found[cid] = min(found[cid], corrected)
        elif corrected < bound:
            found[cid] = corrected
    return sorted(found.items(), key=lambda item: (item[1], item[0]))


def vec0_knn(store: KnnSource, *, pieces: bool = True
             ) -> Callable[[npt.NDArray[np.float32], int], Neighbours]:
    """Plain vec0 KNN (or Postgres's HNSW) made to agree with the snapshot at the k-th distance,
    the extra pieces merged in unless `pieces` is off (each chunk once, at its corrected best
    piece, search.md §4).

    vec0 picks arbitrarily among rows tied with the k-th distance, and a NULL-distance row (a
    zero vector) can take one of its k slots. Asking for more rows until the row after the k-th
    is strictly farther (or every row was returned) gives ties to the lower chunk id, as the
    snapshot does, and never returns fewer than k usable rows. With pieces, more first pieces
    are asked for until the k-th corrected distance is below the last one returned: no chunk
    left out can then be nearer, since a correction only adds.
    """
    total = store.chunk_count()

    def knn(query: npt.NDArray[np.float32], k: int) -> Neighbours:
        k = min(k, MAX_VEC_K)
        if k <= 0:
            return []
        stats = store.piece_stats(query) if pieces else []
        fetch = min(k + 1, MAX_VEC_K)
        while True:
            found = store.vec_search(query, fetch)
            done = fetch >= min(total, MAX_VEC_K)
            if stats:
                bound = math.inf if done else (found[-1][1] if found else -math.inf)
                found = corrected_pieces(found, stats, bound)
                settled = len(found) >= k and found[k - 1][1] < bound
            else:
                settled = len(found) > k and found[k][1] > found[k - 1][1]
            if settled or done:
                return found[:k]
            fetch = min(fetch * 2, MAX_VEC_K)

    return knn


def refresh_snapshot(store: StampedVectors, db: Path) -> None:
    """Rebuild the snapshot when the index's vectors changed since it was written (`index`)."""
    dim = store.vec_dim()
    if dim is None:
        return
    stamp = SnapshotStamp.of(store)
    if VectorSnapshot.load(db, stamp, dim) is None:
        VectorSnapshot.from_store(store, dim).save(db, stamp)
