"""Vector pseudo-relevance feedback (search.md §5.1): Rocchio on the query vector.

The first fusion's top hits are taken as relevant; the query vector moves towards the mean of
their vectors, `q' = q/|q| + beta · mean(d/|d|)`, and the vector leg runs again with `q'`. A
hit's stored vector is its first piece (the chunk's opening window), the one vector every
chunk has. Relevance keeps reading cosines to the query's own vector: the calibration was
fitted on those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from groove_cli.store import IndexReader

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from groove_cli.retrieve.legs import VectorRows


def feedback_vector(store: IndexReader, vector: npt.NDArray[np.float32], ids: Sequence[int],
                    beta: float, dim: int | None, vectors: VectorRows | None = None
                    ) -> npt.NDArray[np.float32] | None:
    """The Rocchio query vector from the hits `ids` (their first pieces, `vectors` from memory
    or read from the store), unit length; None when no hit has a usable vector or beta is 0,
    so the first pass stands."""
    if beta <= 0 or not ids or not dim:
        return None
    import numpy as np

    stored = (vectors.rows_by_id(list(ids)) if vectors is not None
              else store.piece_vectors_by_id(list(ids), dim))
    firsts = [np.asarray(stored[cid], dtype=np.float64).reshape(-1, dim)[0]
              for cid in ids if cid in stored]
    unit = [v / norm for v in firsts if (norm := float(np.linalg.norm(v))) > 0]
    q = np.asarray(vector, dtype=np.float64)
    q_norm = float(np.linalg.norm(q))
    if not unit or q_norm == 0:
        return None
    moved = q / q_norm + beta * np.mean(unit, axis=0)
    norm = float(np.linalg.norm(moved))
    if norm == 0:
        return None
    result: npt.NDArray[np.float32] = (moved / norm).astype(np.float32)
    return result
