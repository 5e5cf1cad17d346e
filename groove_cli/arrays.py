"""numpy array aliases for the vectorised fusion, metrics and tune (import under TYPE_CHECKING
where numpy must not load at start-up)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
