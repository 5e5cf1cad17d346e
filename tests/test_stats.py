"""Bootstrap confidence intervals follow the spec loop exactly (eval.md §5)."""

from __future__ import annotations

import random

import pytest

from groove_cli.evaluate import stats
from groove_cli.evaluate.stats import bootstrap_ci, spec_draws


def spec_loop(per_query: dict[str, list[float]]) -> dict[str, tuple[float, float]]:
    """The loop of eval.md §5, written out plainly."""
    n = len(next(iter(per_query.values())))
    rng = random.Random(0)
    boot: dict[str, list[float]] = {m: [] for m in per_query}
    for _ in range(1000):
        idx = [rng.randrange(n) for _ in range(n)]
        for m, values in per_query.items():
            boot[m].append(sum(values[i] for i in idx) / n)
    return {m: (sorted(boot[m])[24], sorted(boot[m])[974]) for m in per_query}


def test_no_queries_gives_null() -> None:
    assert bootstrap_ci({"mrr": [], "recall@1": []}) == {"mrr": None, "recall@1": None}


def test_one_query_gives_its_value_twice() -> None:
    assert bootstrap_ci({"mrr": [0.25], "recall@5": [1.0]}) == {
        "mrr": (0.25, 0.25),
        "recall@5": (1.0, 1.0),
    }


def test_matches_the_spec_loop_exactly() -> None:
    per_query = {
        "recall@1": [1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 1 / 3],
        "mrr": [1.0, 0.2, 0.5, 1.0, 0.0, 1 / 3, 0.25],
        "ndcg@10": [0.9, 0.1, 0.63, 1.0, 0.0, 0.77, 0.4],
    }
    assert bootstrap_ci(per_query) == spec_loop(per_query)


def test_one_draw_is_shared_by_all_metrics() -> None:
    # With shared draws, metric b = 1 - a has the mirrored interval of a; independent draws per
    # metric would give unrelated intervals.
    a = [0.0, 0.1, 0.35, 0.6, 0.95, 1.0]
    ci = bootstrap_ci({"a": a, "b": [1.0 - v for v in a]})
    lo_a, hi_a = ci["a"] or (0.0, 0.0)
    lo_b, hi_b = ci["b"] or (0.0, 0.0)
    assert lo_b == pytest.approx(1.0 - hi_a)
    assert hi_b == pytest.approx(1.0 - lo_a)
    assert lo_a < hi_a


def test_two_queries_interval() -> None:
    # Each resample's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4, so about 250 of the
    # 1000 sorted means are 0.0 and about 250 are 1.0: indices 24 and 974 land on 0.0 and 1.0.
    per_query = {"recall@1": [0.0, 1.0]}
    assert bootstrap_ci(per_query) == spec_loop(per_query) == {"recall@1": (0.0, 1.0)}


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci({"a": [1.0, 0.0], "b": [1.0]})


def test_a_large_golden_file_draws_without_a_python_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps 200 queries x 7 metrics fast: the spec's 200,000 `randrange` draws come from
    numpy's generator (spec_draws), not a Python loop, and one draw serves every metric."""
    rng = random.Random(7)
    per_query = {f"m{j}": [rng.random() for _ in range(200)] for j in range(7)}
    draws: list[int] = []
    randrange = random.Random.randrange

    def counted(self: random.Random, *args: int) -> int:
        draws.append(1)
        return randrange(self, *args)

    made: list[int] = []
    make = stats._draws
    monkeypatch.setattr(random.Random, "randrange", counted)
    monkeypatch.setattr(stats, "_draws", lambda *args: made.append(1) or make(*args))
    spec_draws.cache_clear()
    try:
        result = bootstrap_ci(per_query)
    finally:
        spec_draws.cache_clear()
    assert (len(draws), len(made)) == (0, 1)
    assert all(ci is not None and 0.0 <= ci[0] < ci[1] <= 1.0 for ci in result.values())


@pytest.mark.parametrize("n", [2, 3, 7, 76, 1000, 2304, 65537])
def test_spec_draws_reproduce_randrange(n: int) -> None:
    rng = random.Random(0)
    expected = [rng.randrange(n) for _ in range(3000)]
    assert spec_draws(0, n, 3000).tolist() == expected
