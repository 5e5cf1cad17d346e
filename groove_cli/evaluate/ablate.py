"""`groove eval --ablate`: what each part of the pipeline buys, and what it costs.

The effective configuration is scored against the same configuration with one part switched:
each full-text leg (retrieve/legs.py's registry), the vector leg, all full-text legs, MMR (toggled), the
`min_score` floor (when set) and the reranker (when one is selected). Per configuration: the
primary metric's mean, its paired delta against the default with the 95 % bootstrap CI, and
the p50/p95 latency of the searches (query embeddings come from the cache and are not timed;
on a golden set over 200 queries, 200 evenly spaced ones are timed, one at a time, while the
metrics come from every query searched as eval searches them).
The verdict names the cheapest configuration (lowest p50) that is not significantly worse
than the default (the CI of its delta does not lie below 0).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from groove_cli import messages
from groove_cli.evaluate.golden import judged_queries
from groove_cli.evaluate.golden_set import load_golden_set
from groove_cli.evaluate.history import is_judged
from groove_cli.evaluate.metrics import score_query
from groove_cli.evaluate.paired import (
    default_metric,
    paired_delta,
    query_value,
    significantly_worse,
)
from groove_cli.evaluate.report import build_run, utc_timestamp
from groove_cli.evaluate.runner import EvalRequest, compile_golden, eval_params, hit_records
from groove_cli.retrieve.legs import registered
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.searcher import Batch, Searcher, extra_readers

ONE_QUERY = ("--ablate over 1 judged query: each confidence interval is a single point (that "
             "query's change), so neither \"significantly worse\" nor \"not worse\" means "
             "anything; add judged queries to the golden file")


@dataclass(frozen=True, slots=True)
class Variant:
    """One configuration: a name, its search settings and whether the reranker runs."""

    name: str
    params: SearchParams
    rerank: bool = True


def variants(params: SearchParams, *, reranker: bool) -> list[Variant]:
    """The default configuration, then each part switched; parts that the default does not
    run are not switched off again (e.g. no vector leg under `--mode fts`)."""
    found = [Variant("default", params)]
    fts_on = params.mode != "vector" and (params.mode == "fts" or params.fts_weight > 0)
    vector_on = params.mode != "fts" and (params.mode == "vector" or params.vector_weight > 0)
    for leg in registered():  # each full-text leg these settings run, switched off alone
        if leg.enabled(params):
            found.append(Variant(f"no {leg.label} leg", dataclasses.replace(
                params, disabled_legs=params.disabled_legs | {leg.name})))
    if fts_on and vector_on:
        found.append(Variant("no vector leg", dataclasses.replace(params, mode="fts")))
        found.append(Variant("no full-text legs", dataclasses.replace(params, mode="vector")))
    found.append(Variant("MMR off" if params.mmr else "MMR on",
                         dataclasses.replace(params, mmr=not params.mmr)))
    if params.min_score > 0:
        found.append(Variant("min_score off", dataclasses.replace(params, min_score=0.0)))
    if reranker:
        found.append(Variant("reranker off", dataclasses.replace(params, rerank=False),
                             rerank=False))
    return found


LATENCY_SAMPLE = 200
"""Latency is measured on at most this many queries, spread evenly over the golden file."""


def latency_sample(n: int) -> list[int]:
    """Indices of the queries whose searches are timed: all of them up to LATENCY_SAMPLE,
    else LATENCY_SAMPLE evenly spaced ones (the metrics always use every query)."""
    if n <= LATENCY_SAMPLE:
        return list(range(n))
    return [i * n // LATENCY_SAMPLE for i in range(LATENCY_SAMPLE)]


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else 0.0


def run_ablation(req: EvalRequest) -> dict[str, Any]:
    """Score every variant on the golden set inside one consistent read state; JSON-ready
    report. Reads and writes no history, baseline or run file."""
    s = req.settings
    golden = load_golden_set(s, req.kb, req.golden, req.topics)
    if judged_queries(golden) == 1:
        messages.warning(ONE_QUERY)
    params = eval_params(req)
    metric = req.gate_metric or default_metric(req.k_values)
    searcher = Searcher.from_settings(s, req.db, req.kb, reranker=req.reranker)
    try:
        searcher.require_vectors("eval --ablate")
        compiled = compile_golden(golden)
        found = variants(params, reranker=req.reranker is not None)
        # the default's batch embeds every query before the consistent state begins (eval.md
        # §2); the variants' batches find the same query vectors in the cache
        first = searcher.prepare(compiled, params)
        sample = latency_sample(len(compiled))
        rows: list[dict[str, Any]] = []
        runs: list[dict[str, Any]] = []
        with searcher.pinned(extra_readers(len(compiled), first.reranker is not None)) as readers:

            def timed(batch: Batch) -> list[float]:
                """Search latency of the sampled queries, one at a time on one connection."""
                latency = []
                for i in sample:
                    start = time.perf_counter()
                    searcher.search_prepared(batch, i, readers[0])
                    latency.append((time.perf_counter() - start) * 1000)
                return latency

            timed(first)  # warm-up: page cache and lazy state must not bill the default
            for variant in found:
                batch = first if variant.name == "default" else searcher.prepare(
                    compiled, variant.params)
                # every query's hits the way eval searches them (batched KNN, all cores)
                hits = [hit_records(r) for r in searcher.run_batch(batch, readers)]
                latency = timed(batch)
                metrics = [score_query(q.expected, h, req.k_values)
                           for q, h in zip(golden.queries, hits, strict=True)]
                runs.append(build_run(timestamp=utc_timestamp(),
                                      fingerprint={"k_values": list(req.k_values)}, corpus={},
                                      queries=golden.queries, hits=hits, metrics=metrics,
                                      k_values=req.k_values, limit=req.limit))
                rows.append({"name": variant.name, "latency_ms": {
                    "p50": _percentile(latency, 50), "p95": _percentile(latency, 95),
                    "queries": len(sample)}})
    finally:
        searcher.close()
    return _report(rows, runs, metric, searcher.runtime.name, req.reranker)


def _report(rows: list[dict[str, Any]], runs: list[dict[str, Any]], metric: str, model: str,
            reranker: str | None) -> dict[str, Any]:
    default = runs[0]
    for row, run in zip(rows, runs, strict=True):
        delta = paired_delta(default, run, metric)
        row["value"] = sum(query_value(e, metric) or 0.0 for e in run["per_query"]
                           if is_judged(e)) / max(1, run["aggregate"]["query_count"])
        row["delta"] = delta.delta
        row["ci95"] = None if delta.ci95 is None else list(delta.ci95)
        row["p"] = delta.p
        row["significantly_worse"] = significantly_worse(delta)
    fine = [r for r in rows if not r["significantly_worse"]]
    cheapest = min(fine, key=lambda r: (r["latency_ms"]["p50"], r["latency_ms"]["p95"]))
    messages.detail(f"ablation: {len(rows)} configurations x {len(default['per_query'])} queries")
    return {"model": model, "reranker": reranker, "metric": metric,
            "query_count": default["aggregate"]["query_count"], "configurations": rows,
            "cheapest_not_worse": cheapest["name"]}
