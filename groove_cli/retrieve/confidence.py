"""low_confidence: a flat score list suggests nothing stood out (search.md §12).

With fused scores, a best hit barely above the mean means the legs disagreed or nothing matched
well. With reranker logits the mean is often negative and the flag is then false. A hint for the
reader, not a measure of correctness.
"""

from __future__ import annotations

from collections.abc import Sequence


def low_confidence(scores: Sequence[float], ratio: float) -> bool:
    """True when `max / mean < ratio`; false for fewer than 2 hits, ratio 0, or mean ≤ 0."""
    if len(scores) < 2 or ratio == 0:
        return False
    mean = sum(scores) / len(scores)
    if mean <= 0:
        return False
    return max(scores) / mean < ratio
