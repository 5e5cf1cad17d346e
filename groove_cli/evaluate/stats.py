"""Bootstrap confidence intervals over queries (eval.md §5).

The draws follow the spec's loop exactly (`random.Random(seed)`, `randrange(n)` n times per
resample, one draw shared by every metric) so that any implementation reproduces the same
intervals; only the per-resample means are vectorised with numpy.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

RESAMPLES = 1000
SEED = 0


def _percentile_index(resamples: int, fraction: float) -> int:
    """Index into the sorted resample means: 24 and 974 for 2.5 % / 97.5 % of 1000."""
    return min(resamples - 1, max(0, math.floor(resamples * fraction + 0.5) - 1))


@functools.lru_cache(maxsize=4)
def spec_draws(seed: int, n: int, count: int) -> npt.NDArray[np.intp]:
    """`[random.Random(seed).randrange(n) for _ in range(count)]`, computed with numpy.

    CPython's `randrange(n)` takes 32-bit Mersenne Twister outputs `w`, uses `w >> (32 − k)`
    with `k = n.bit_length()` and rejects values ≥ n. numpy's MT19937, given the same state,
    yields the same outputs, so the same rejection over a vector of them reproduces the draws
    exactly, and far faster than the Python loop (bench/results/code-notes.md#bootstrap-draws).

    Cached (read-only result): eval computes the draws for its query count while its searches
    run, and the intervals reuse them.
    """
    draws = _draws(seed, n, count)
    draws.flags.writeable = False
    return draws


def warm_draws(n: int) -> None:
    """Compute the draws `bootstrap_ci` will need for `n` counted queries, ahead of time."""
    if n > 1:
        spec_draws(SEED, n, RESAMPLES * n)


def _draws(seed: int, n: int, count: int) -> npt.NDArray[np.intp]:
    if not 0 < n < 2**32:
        rng = random.Random(seed)
        return np.array([rng.randrange(n) for _ in range(count)], dtype=np.intp)
    _, state, _ = random.Random(seed).getstate()
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937",
                  "state": {"key": np.array(state[:-1], dtype=np.uint32), "pos": state[-1]}}
    shift = np.uint64(32 - n.bit_length())
    parts: list[npt.NDArray[np.uint64]] = []
    have = 0
    while have < count:
        values = bits.random_raw(max(2 * (count - have), 64)) >> shift
        kept = values[values < n][: count - have]
        parts.append(kept)
        have += kept.size
    return np.concatenate(parts).astype(np.intp) if parts else np.empty(0, dtype=np.intp)


def bootstrap_ci(
    per_query: Mapping[str, Sequence[float]], *, resamples: int = RESAMPLES, seed: int = SEED
) -> dict[str, tuple[float, float] | None]:
    """95 % percentile-bootstrap intervals of the mean of each metric.

    Args:
        per_query: metric name -> the per-query values; every sequence has the same length n
            (the queries with a non-empty expected list).
        resamples: number of bootstrap resamples (1000 in the spec).
        seed: seed of `random.Random` (0 in the spec).

    Returns:
        metric name -> (low, high): the sorted resample means at indices 24 and 974 for 1000
        resamples; (v, v) when n = 1; None when n = 0.

    Raises:
        ValueError: when the sequences differ in length.
    """
    lengths = {len(values) for values in per_query.values()}
    if len(lengths) > 1:
        raise ValueError(f"per-query metric lists differ in length: {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    if n == 0:
        return {name: None for name in per_query}
    if n == 1:
        return {name: (float(values[0]), float(values[0])) for name, values in per_query.items()}
    draws = spec_draws(seed, n, resamples * n).reshape(resamples, n)
    lo = _percentile_index(resamples, 0.025)
    hi = _percentile_index(resamples, 0.975)
    result: dict[str, tuple[float, float] | None] = {}
    for name, values in per_query.items():
        means = np.sort(_row_means(np.asarray(values, dtype=np.float64), draws))
        result[name] = (float(means[lo]), float(means[hi]))
    return result


def _row_means(
    values: npt.NDArray[np.float64], draws: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """sum(values[i] for i in row) / n for each row, added left to right like Python's sum."""
    picked = values[draws]
    total = np.zeros(draws.shape[0], dtype=np.float64)
    for column in range(draws.shape[1]):
        total += picked[:, column]
    means: npt.NDArray[np.float64] = total / draws.shape[1]
    return means
