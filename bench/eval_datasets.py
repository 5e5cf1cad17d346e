#!/usr/bin/env python3
"""Retrieval quality on public collections: CISI (English) and JSQuAD (Japanese).

    .venv/bin/python bench/eval_datasets.py [--collections cisi,jsquad] [--cache-reps 3]

Per collection: convert the judged queries to a golden file in eval.md §1 format (expected
paths `<doc id>.md`) under `bench/work/<name>/`, index the documents (the KB is a symlink to the
read-only docs folder; an existing complete index is reused), then run
`groove eval --format json --no-history` in `fts`, `vector` and `hybrid` modes (defaults
otherwise: k 1,5,10, limit 10). CISI uses all 76 judged queries; JSQuAD the fixed 1,000-query
sample `queries-1000.jsonl`.

Also measured on JSQuAD: an eval whose query embeddings are all computed (query cache emptied
first) against the same eval right after, with every embedding cached (target ≥ 5× faster);
`--cache-reps` pairs, medians reported.

Issue #8 rows: the fts and hybrid runs with query compiler v1 (trigram table only, the "before"
rows, see fts_variants.py) next to v2, and the bm25s peer (English stopwords + Snowball
stemmer, `pip install -e '.[bench]'`), all with 95 % CIs.

Writes bench/results/quality.json and quality.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml
from _common import (
    CISI,
    JSQUAD,
    RESULTS,
    Collection,
    GrooveRun,
    clear_query_cache,
    load_average,
    machine,
    machine_line,
    median,
    ratio,
    run_groove,
    verdict,
    with_kept_part,
    write_results,
)
from fts_variants import char_bigrams, compile_v2, eval_v1, peer_bm25s

from groove_cli.engine import cjk

MODES = ("fts", "vector", "hybrid")
METRICS = (("ndcg@10", "ndcg_at_k", "10"), ("recall@10", "recall_at_k", "10"), ("MRR", "mrr", None))
QUERY_FILES = {"cisi": "queries.jsonl", "jsquad": "queries-1000.jsonl"}
CACHE_SPEEDUP_TARGET = 5.0
README_BASELINES = {
    "jsquad": "the dataset README's char-bigram BM25 baseline: recall@10 ≈ 0.97, MRR@10 ≈ 0.93",
}
"""Reference points quoted from $GROOVE_DATASETS/<name>/README.md."""
SAME = 5e-4
"""Aggregate differences below this are reported as equal (they round to 0.000)."""


def golden_document(queries_jsonl: Path) -> dict[str, Any]:
    """The golden structure for a dataset's queries: one expected path per relevant doc id."""
    queries = []
    with queries_jsonl.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            item = json.loads(line)
            if not item.get("relevant"):
                continue
            queries.append({
                "id": str(item["id"]),
                "query": str(item["query"]),
                "expected": [{"path": f"{doc}.md"} for doc in item["relevant"]],
            })
    return {"queries": queries}


def write_golden(coll: Collection) -> tuple[Path, dict[str, Any]]:
    """Write `bench/work/<name>/golden.yml`; returns its path and the golden structure."""
    doc = golden_document(coll.source / QUERY_FILES[coll.name])
    path = coll.work / "golden.yml"
    coll.work.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=10_000),
                    encoding="utf-8")
    return path, doc


def recall_ceiling(golden: dict[str, Any], k: int = 10) -> float:
    """The best possible mean recall@k: min(k, |E|) / |E| per query (CISI averages 41
    relevant documents per query, so recall@10 cannot approach 1)."""
    sizes = [len(q["expected"]) for q in golden["queries"] if q["expected"]]
    return sum(min(k, n) / n for n in sizes) / len(sizes) if sizes else 0.0


def query_shapes(golden: dict[str, Any]) -> dict[str, int]:
    """How the query compiler routes the queries: to the trigram table (numbers, identifiers,
    quoted CJK phrases), the word-level table (Latin words), the CJK table (CJK text), none;
    and how many hit a term cap."""
    from groove_cli.engine import compile_query

    compiled = [compile_query(q["query"]) for q in golden["queries"]]
    return {"trigram": sum(1 for c in compiled if c.match_expr is not None),
            "word_level": sum(1 for c in compiled if c.word_expr is not None),
            "cjk": sum(1 for c in compiled if c.cjk_expr is not None),
            "no_fts_expression": sum(1 for c in compiled if c.match_expr is None
                                     and c.word_expr is None and c.cjk_expr is None),
            "term_cap_hit": sum(1 for c in compiled if c.phrases_capped)}


def run_eval(coll: Collection, golden: Path, mode: str) -> GrooveRun:
    return run_groove(["eval", "--kb-path", str(coll.kb), "--golden", str(golden), "--format",
                       "json", "--no-history", "--mode", mode], config=coll.config, db=coll.db)


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    """nDCG@10, recall@10 and MRR with their 95 % CIs from an eval JSON report."""
    agg = report["aggregate"]
    out: dict[str, Any] = {"query_count": agg["query_count"]}
    for label, key, k in METRICS:
        value = agg[key][k] if k else agg[key]
        ci = agg["ci95"][key][k] if k else agg["ci95"][key]
        out[label] = {"value": value, "ci95": ci}
    return out


def per_query(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {q["id"]: {"rr": q["metrics"]["reciprocal_rank"],
                      "recall@10": q["metrics"]["recall_at_k"]["10"],
                      "ndcg@10": q["metrics"]["ndcg_at_k"]["10"]}
            for q in report["per_query"] if q["expected"]}


def hybrid_vs_legs(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Where hybrid falls short of the better single leg, aggregate and per query."""
    legs = {mode: per_query(reports[mode]) for mode in MODES}
    ids = list(legs["hybrid"])
    worse_than_best = 0
    lost_hits = 0
    for qid in ids:
        best_rr = max(legs["fts"][qid]["rr"], legs["vector"][qid]["rr"])
        if legs["hybrid"][qid]["rr"] < best_rr - 1e-12:
            worse_than_best += 1
        leg_found = max(legs["fts"][qid]["recall@10"], legs["vector"][qid]["recall@10"]) > 0
        if leg_found and legs["hybrid"][qid]["recall@10"] == 0:
            lost_hits += 1
    aggregate = {}
    for label, _, _ in METRICS:
        values = {mode: summarise(reports[mode])[label]["value"] for mode in MODES}
        best = max(("fts", "vector"), key=lambda m: values[m])
        aggregate[label] = {"best_leg": best, "best_leg_value": values[best],
                            "hybrid": values["hybrid"],
                            "delta": values["hybrid"] - values[best]}
    return {"aggregate": aggregate, "queries": len(ids),
            "hybrid_rr_below_best_leg": worse_than_best,
            "hybrid_misses_found_by_a_leg": lost_hits}


def cache_speed(coll: Collection, golden: Path, reps: int) -> dict[str, Any]:
    """Uncached vs cached hybrid eval wall times, `reps` pairs."""
    first: list[float] = []
    second: list[float] = []
    loaded_second: list[bool] = []
    for _ in range(reps):
        clear_query_cache(coll.db)
        first.append(run_eval(coll, golden, "hybrid").wall_s)
        run = run_eval(coll, golden, "hybrid")
        second.append(run.wall_s)
        loaded_second.append("Loading embedding model" in run.stderr)
    speedup = ratio(median(first), median(second))
    return {"pairs": reps, "uncached_wall_s": first, "cached_wall_s": second,
            "median_uncached_s": median(first), "median_cached_s": median(second),
            "speedup": speedup, "target": CACHE_SPEEDUP_TARGET,
            "met": speedup >= CACHE_SPEEDUP_TARGET}


def evaluate(coll: Collection, cache_reps: int) -> dict[str, Any]:
    index_run = coll.ensure_index()
    golden, doc = write_golden(coll)
    entry: dict[str, Any] = {
        "queries_file": QUERY_FILES[coll.name],
        "golden_queries": len(doc["queries"]),
        "query_shapes": query_shapes(doc),
        "recall_at_10_ceiling": recall_ceiling(doc),
        "indexed_now_s": index_run.wall_s if index_run else None,
        "status": {k: v for k, v in coll.status().items()
                   if k in ("documents", "chunks", "model", "context_mode")},
        "load_average_before": load_average(),
    }
    if coll.name == "jsquad" and cache_reps > 0:
        entry["query_cache_speed"] = cache_speed(coll, golden, cache_reps)
    run_eval(coll, golden, "hybrid")  # every query embedding cached: mode walls compare
    reports: dict[str, dict[str, Any]] = {}
    walls: dict[str, float] = {}
    for mode in MODES:
        run = run_eval(coll, golden, mode)
        reports[mode] = run.json()
        walls[mode] = run.wall_s
    entry["modes"] = {mode: summarise(reports[mode]) | {"wall_s": walls[mode]} for mode in MODES}
    entry["fingerprint"] = reports["hybrid"]["fingerprint"]
    entry["corpus"] = reports["hybrid"]["corpus"]
    entry["hybrid_vs_legs"] = hybrid_vs_legs(reports)
    entry["cjk_leg"] = cjk_variants(coll, golden, doc, entry["modes"])
    # issue #8's "after" is compiler v2: where v3 routes CJK text elsewhere, its own rows
    v2_rows = {**entry["modes"], **entry["cjk_leg"].get("before", {})}
    entry["full_text"] = full_text_variants(coll, golden, doc, v2_rows)
    return entry


CJK_TARGETS = {"jsquad": {"fts": 0.925, "hybrid": 0.945}, "cisi": {"fts": 0.380, "hybrid": 0.431}}
"""Issue #13's Done-when nDCG@10 floors per collection."""


def cjk_variants(coll: Collection, golden: Path, doc: dict[str, Any],
                 modes: dict[str, Any]) -> dict[str, Any]:
    """Issue #13: compiler v2 (CJK text on the trigram table) against v3 (the CJK leg) where a
    query has CJK text, bm25s over character n-grams as peers, and the Done-when checks."""
    ndcg = {mode: modes[mode]["ndcg@10"]["value"] for mode in MODES}
    targets = CJK_TARGETS[coll.name]
    checks = {
        "fts_target": ndcg["fts"] >= targets["fts"],
        "hybrid_target": ndcg["hybrid"] >= targets["hybrid"],
        "hybrid_not_below_a_leg": ndcg["hybrid"] >= max(ndcg["fts"], ndcg["vector"]),
    }
    out: dict[str, Any] = {"targets": targets, "ndcg@10": ndcg, "checks": checks}
    if any(cjk.has_cjk(q["query"]) for q in doc["queries"]):
        out["before"] = {mode: summarise(eval_v1(coll.kb, coll.db, golden, coll.config, mode,
                                                 compiler=compile_v2))
                         for mode in ("fts", "hybrid")}
        out["peers"] = {
            name: summarise({"aggregate": peer_bm25s(coll.kb, doc["queries"],
                                                     tokeniser=tokeniser)})
            for name, tokeniser in (("character bigrams", char_bigrams),
                                    ("character unigrams + bigrams", cjk.tokens))}
    return out


def _cjk_lines(name: str, variants: dict[str, Any], modes: dict[str, Any]) -> list[str]:
    lines = ["### CJK full-text leg and fusion weights (issue #13)", ""]
    if "before" in variants:
        rows = [("fts, before (CJK text on the trigram table, compiler v2)",
                 variants["before"]["fts"]),
                ("fts, after (CJK table, compiler v4)", modes["fts"]),
                ("hybrid, before (built-in fusion)", variants["before"]["hybrid"]),
                ("hybrid, after (built-in fusion)", modes["hybrid"]),
                ("vector", modes["vector"])]
        rows += [(f"peer: bm25s, {peer} (groove's CJK tokeniser)", row)
                 for peer, row in variants["peers"].items()]
        lines += ["| run | nDCG@10 [95% CI] | recall@10 [95% CI] | MRR [95% CI] |",
                  "|---|---|---|---|"]
        lines += [f"| {label} | {_cell(r['ndcg@10'])} | {_cell(r['recall@10'])} | "
                  f"{_cell(r['MRR'])} |" for label, r in rows]
        lines += ["", "The CJK leg's weight, swept: [`cjk_weights.md`](cjk_weights.md) (on the "
                  "golden/ sample KB as well).", ""]
    else:
        lines += ["No query has CJK text: the CJK leg never runs and compiler v4 routes every "
                  "query as v2 did, so every row above is unchanged by issue #13 on this index.",
                  ""]
    t, c = variants["targets"], variants["checks"]
    lines += [f"nDCG@10 checks — fts ≥ {t['fts']:.3f}: {verdict(c['fts_target'])}; hybrid ≥ "
              f"{t['hybrid']:.3f}: {verdict(c['hybrid_target'])}; hybrid ≥ each single leg: "
              f"{verdict(c['hybrid_not_below_a_leg'])}.", ""]
    if not c["hybrid_target"]:
        lines += _no_regression_lines(name, variants["ndcg@10"]["hybrid"], t["hybrid"])
    return lines


def _no_regression_lines(name: str, hybrid: float, target: float) -> list[str]:
    """The hybrid floor is "no regression" against a figure measured on another machine: say
    what the code before the change measures on this one (bench/baseline_commit.py)."""
    lines = [f"The {target:.3f} floor is written as \"no regression\" and was measured where "
             "issue 13 was filed; a hybrid figure moves with the CPU's int8 rounding (the float32 "
             "graph and a closer int8 graph side by side: [`quantisation.md`](quantisation.md))."]
    found = RESULTS / "baseline.json"
    base = json.loads(found.read_text(encoding="utf-8")) if found.is_file() else None
    if base is None or base["collection"] != name:
        return [*lines, "", f"No same-machine baseline of {name} is recorded: run "
                "`bench/baseline_commit.py`.", ""]
    before = base["runs"]["baseline"]["modes"]["hybrid"]["ndcg@10"]
    lines[0] += (f" On this machine the code before issue 13 (commit `{base['baseline_commit']}`, "
                 f"indexed from scratch) measures hybrid {before:.4f} against {hybrid:.4f} "
                 f"here: no regression — {verdict(hybrid >= before)} "
                 "([`baseline.md`](baseline.md)).")
    return [*lines, ""]


def full_text_variants(coll: Collection, golden: Path, doc: dict[str, Any],
                       modes: dict[str, Any]) -> dict[str, Any]:
    """Issue #8: compiler v1 (trigram only) vs v2 in fts and hybrid mode, and the bm25s peer."""
    before = {mode: summarise(eval_v1(coll.kb, coll.db, golden, coll.config, mode))
              for mode in ("fts", "hybrid")}
    peer = summarise({"aggregate": peer_bm25s(coll.kb, doc["queries"])})
    after = {mode: modes[mode] for mode in ("fts", "hybrid")}
    ndcg = {key: row["ndcg@10"]["value"] for key, row in
            (("fts_before", before["fts"]), ("fts_after", after["fts"]),
             ("hybrid_before", before["hybrid"]), ("hybrid_after", after["hybrid"]),
             ("peer", peer), ("vector", modes["vector"]))}
    checks = {
        "fts_within_0.01_of_peer": abs(ndcg["fts_after"] - ndcg["peer"]) <= 0.01,
        "hybrid_beats_peer_by_0.02": ndcg["hybrid_after"] - ndcg["peer"] >= 0.02,
        "hybrid_beats_vector_by_0.02": ndcg["hybrid_after"] - ndcg["vector"] >= 0.02,
        "fts_drop_at_most_0.005": ndcg["fts_before"] - ndcg["fts_after"] <= 0.005,
        "hybrid_drop_at_most_0.005": ndcg["hybrid_before"] - ndcg["hybrid_after"] <= 0.005,
    }
    return {"before": before, "after": after, "peer_bm25s": peer, "ndcg@10": ndcg,
            "checks": checks}


FULL_TEXT_CHECKS = {
    "cisi": (("fts_within_0.01_of_peer", "fts within 0.01 of the bm25s peer"),
             ("hybrid_beats_peer_by_0.02", "hybrid ≥ peer + 0.02"),
             ("hybrid_beats_vector_by_0.02", "hybrid ≥ vector + 0.02")),
    "jsquad": (("fts_drop_at_most_0.005", "fts drops ≤ 0.005"),
               ("hybrid_drop_at_most_0.005", "hybrid drops ≤ 0.005")),
}
"""The Done-when checks of issue #8, per collection."""


def _full_text_lines(name: str, variants: dict[str, Any], vector: dict[str, Any]) -> list[str]:
    rows = (("fts, before (trigram table only, compiler v1)", variants["before"]["fts"]),
            ("fts, after (trigram + word-level, compiler v2)", variants["after"]["fts"]),
            ("hybrid, before (built-in fusion)", variants["before"]["hybrid"]),
            ("hybrid, after (built-in fusion)", variants["after"]["hybrid"]),
            ("vector", vector),
            ("peer: bm25s, English stopwords + Snowball stemmer", variants["peer_bm25s"]))
    lines = ["### Full-text legs before/after the word-level table (issue #8)", "",
             "| run | nDCG@10 [95% CI] | recall@10 [95% CI] | MRR [95% CI] |",
             "|---|---|---|---|"]
    lines += [f"| {label} | {_cell(r['ndcg@10'])} | {_cell(r['recall@10'])} | "
              f"{_cell(r['MRR'])} |" for label, r in rows]
    checks = variants["checks"]
    done = "; ".join(f"{text}: {verdict(checks[key])}" for key, text in FULL_TEXT_CHECKS[name])
    lines += ["", f"nDCG@10 checks — {done}.", ""]
    if name in PEER_NOTES:
        lines += [PEER_NOTES[name], ""]
    return lines


PEER_NOTES = {
    "jsquad": ("The bm25s peer uses its English tokenizer (runs of word characters), which "
               "turns a Japanese sentence into a few long tokens: it is a peer for English "
               "only, shown here for completeness."),
}


def _cell(metric: dict[str, Any]) -> str:
    lo, hi = metric["ci95"]
    return f"{metric['value']:.3f} [{lo:.3f}, {hi:.3f}]"


def _shortfall_words(name: str, cmp: dict[str, Any]) -> str:
    short = []
    ties = []
    for label, row in cmp["aggregate"].items():
        if row["delta"] < -SAME:
            short.append(f"{label} {row['hybrid']:.3f} vs {row['best_leg']} "
                         f"{row['best_leg_value']:.3f} ({row['delta']:+.3f})")
        elif row["delta"] < SAME:
            ties.append(f"{label} ({row['hybrid']:.3f}, {row['best_leg']} alone as well)")
    head = (f"On {name}, hybrid falls short of the better single leg on " + "; ".join(short)
            if short else f"On {name}, hybrid is never below the better single leg in aggregate")
    if ties:
        head += "; it only ties it on " + ", ".join(ties)
    return (f"{head}. Per query, hybrid's reciprocal rank is below the better leg's for "
            f"{cmp['hybrid_rr_below_best_leg']} of {cmp['queries']} queries, and "
            f"{cmp['hybrid_misses_found_by_a_leg']} queries have no relevant document in "
            "hybrid's top 10 although one leg had one.")


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Retrieval quality on CISI and JSQuAD",
        "",
        "`groove eval --format json --no-history` with built-in defaults (multilingual-e5-small, "
        "k 1,5,10, limit 10, no reranker, score fusion with the query-length rule: search.md §5) "
        "in each mode; 95 % bootstrap CIs over queries (1000 resamples, seed 0). The 'before' "
        "rows change the query compiler only and run the built-in fusion of the commit below.",
        "",
    ]
    for name, entry in data["collections"].items():
        status = entry["status"]
        lines += [
            f"## {name} — {entry['golden_queries']} queries (`{entry['queries_file']}`), "
            f"{status['documents']} docs / {status['chunks']} chunks",
            "",
            "| mode | nDCG@10 [95% CI] | recall@10 [95% CI] | MRR [95% CI] | eval wall s * |",
            "|---|---|---|---|---:|",
        ]
        for mode in MODES:
            row = entry["modes"][mode]
            lines.append(f"| {mode} | {_cell(row['ndcg@10'])} | {_cell(row['recall@10'])} | "
                         f"{_cell(row['MRR'])} | {row['wall_s']:.1f} |")
        shapes = entry["query_shapes"]
        lines += ["", "\\* one `groove eval` subprocess, query embeddings already cached.", "",
                  _shortfall_words(name, entry["hybrid_vs_legs"]), "",
                  f"Query compilation: {shapes['trigram']} of {entry['golden_queries']} queries "
                  f"search the trigram table, {shapes['word_level']} the word-level table, "
                  f"{shapes['cjk']} the CJK table, {shapes['no_fts_expression']} none; "
                  f"{shapes['term_cap_hit']} exceed a term cap (only their first terms are "
                  "searched).", ""]
        if "recall_at_10_ceiling" in entry:
            lines += [f"Best possible recall@10 with these judgments: "
                      f"{entry['recall_at_10_ceiling']:.3f} (mean of min(10, relevant) / "
                      "relevant).", ""]
        if "full_text" in entry:
            lines += _full_text_lines(name, entry["full_text"], entry["modes"]["vector"])
        if "cjk_leg" in entry:
            lines += _cjk_lines(name, entry["cjk_leg"], entry["modes"])
        if name in README_BASELINES:
            lines += [f"For comparison, {README_BASELINES[name]}.", ""]
        speed = entry.get("query_cache_speed")
        if speed:
            lines += [
                f"Query-embedding cache: hybrid eval over the {entry['golden_queries']} queries "
                f"takes {speed['median_uncached_s']:.1f} s with every embedding computed (cache "
                f"emptied) and {speed['median_cached_s']:.1f} s right after, all cached — "
                f"**{speed['speedup']:.1f}× faster** (target ≥ {speed['target']:.0f}×, "
                f"{verdict(speed['met'])}; median of {speed['pairs']} pairs, subprocess wall "
                "time).",
                "",
            ]
    lines += [
        machine_line(data["machine"]),
        "",
        "Command: `.venv/bin/python bench/eval_datasets.py`.",
    ]
    return "\n".join(lines)


HAND_MEASURED = "<!-- measured by hand from here on: eval_datasets.py keeps this part -->"


def with_hand_measured(text: str) -> str:
    """`text` followed by the part of the current quality.md from the HAND_MEASURED marker on
    (results measured by hand, which a run of this script must not drop)."""
    return with_kept_part("quality", HAND_MEASURED, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default="cisi,jsquad")
    parser.add_argument("--cache-reps", type=int, default=3,
                        help="uncached/cached eval pairs on JSQuAD (0 skips)")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite quality.md from quality.json without measuring")
    args = parser.parse_args()
    if args.render_only:
        recorded = json.loads((RESULTS / "quality.json").read_text(encoding="utf-8"))
        (RESULTS / "quality.md").write_text(with_hand_measured(markdown(recorded)) + "\n",
                                            encoding="utf-8")
        return
    known = {c.name: c for c in (CISI, JSQUAD)}
    data: dict[str, Any] = {"benchmark": "quality", "machine": machine(), "collections": {}}
    previous = RESULTS / "quality.json"
    if previous.is_file():  # a run over a subset keeps the other collections' results
        data["collections"] = json.loads(previous.read_text(encoding="utf-8"))["collections"]
    for name in args.collections.split(","):
        data["collections"][name] = evaluate(known[name], args.cache_reps)
    write_results("quality", data, with_hand_measured(markdown(data)))
    print(markdown(data))


if __name__ == "__main__":
    main()
