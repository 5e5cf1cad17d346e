"""Measure the `relevance` calibration (retrieve/relevance.py) on CISI, JSQuAD and golden/.

Each collection's index (bench/work/{name}, built by eval_datasets.py; copied and upgraded,
never modified) answers every golden query with the built-in hybrid settings, top 10; each hit's
features and label (relevant = it matches an expected entry, eval.md §3) are collected. Queries
are split in two halves by a hash of their id. Reported:

- the shipped calibration (fitted on the fit halves of CISI and JSQuAD, pooled) on the held-out
  halves: expected calibration error (ECE, 10 equal-width bins) on the top-10 hits, with a
  reliability diagram (PNG drawn with numpy + zlib), and the same fit redone from this run's data;
- the shipped calibration by rank position (issue 28): ECE of the top hit and of ranks 2–10
  apart, on the held-out halves and golden/ (never fitted on), and the relevance the two
  `make demo` searches print;
- per collection, what `groove tune --space calibration` does on a KB: the model refitted on one
  half scores the other, cross-fitted (both halves), with random half-splits for context;
- the nonsense check: 100 queries of random real words (50 English, 50 Japanese) with no
  topical link to either collection, two sets (seed 16, on which the default threshold was
  chosen, and a fresh seed 17), each run against both indexes: `low_confidence` should be true
  for >= 90 % of them, and for <= 10 % of the held-out real queries whose top hit is relevant.

Usage: .venv/bin/python bench/relevance.py [--source DIR] [--reuse]
Writes bench/results/relevance.md, relevance.json and relevance.png.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import RESULTS, WORK, machine, machine_line, write_results  # noqa: E402

import groove_cli  # noqa: E402
from groove_cli.engine import (  # noqa: E402
    FEATURES,
    Calibration,
    FilterSpec,
    LabelledHit,
    Searcher,
    Store,
    build_params,
    cjk,
    compile_query,
    cross_fitted,
    default_calibration,
    default_settings,
    entry_matches,
    expected_calibration_error,
    fit_logistic,
    load_golden,
    relevance,
    split_half,
)

SCRATCH = WORK / "relevance"
"""Private copies of the indexes and the collected features (git-ignored)."""
COLLECTIONS = ("cisi", "jsquad")
TOP = 10

EN_TEXT = (
    "zebra banana quantum violin pancake volcano giraffe umbrella saxophone cactus dolphin "
    "trampoline lasagna kangaroo marshmallow avalanche flamingo harmonica origami pineapple "
    "skateboard tornado walrus yodel igloo jellyfish ketchup lighthouse mango nectarine octopus "
    "pelican quokka raspberry sombrero tambourine unicorn vanilla waffle xylophone yacht zucchini "
    "bagpipe croissant dinosaur eggplant firework gondola hammock iceberg")
JA_TEXT = (
    "バナナ キリン 傘 火山 パンケーキ イルカ 天ぷら 風鈴 たこ焼き 自転車 ペンギン 花火 "
    "こけし 招き猫 おにぎり 金魚 ラーメン 雪だるま 盆栽 かき氷 竹とんぼ 忍者 すき焼き 提灯 "
    "カスタネット 綿あめ 鯉のぼり 折り紙 ハーモニカ 恐竜 ソフトクリーム 扇風機 ひまわり 蛸 "
    "トランポリン マシュマロ サボテン 象 水族館 観覧車")
EN_WORDS = EN_TEXT.split()
JA_WORDS = JA_TEXT.split()


def prepare_index(source: Path, name: str) -> Path:
    """A private copy of the baseline's index, upgraded to this groove's schema."""
    folder = SCRATCH / name
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "index.db"
    for suffix in ("", "-wal", ".vectors.npy", ".vectors-ids.npy", ".vectors.json"):
        src = source / name / f"index.db{suffix}"
        if src.exists():
            shutil.copy2(src, folder / f"index.db{suffix}")
    Store.open_for_index(db).close()  # apply the migrations (lines stay NULL: not needed)
    return db


def run_queries(db: Path, queries: list[tuple[str, str]], expected: dict[str, Any]
                ) -> list[dict[str, Any]]:
    """Each query's top-10 hits as feature rows with labels (None for nonsense queries)."""
    settings = default_settings()
    params = build_params(settings, limit=TOP, rerank=False, filters=FilterSpec(),
                          spans=False)
    searcher = Searcher.from_settings(settings, db, None)
    try:
        compiled = [compile_query(text) for _, text in queries]
        results = searcher.search_many(compiled, params)
    finally:
        searcher.close()
    rows = []
    for (qid, _), result in zip(queries, results, strict=True):
        entries = expected.get(qid)
        for rank, hit in enumerate(result.hits, 1):
            label = None
            if entries is not None:
                label = any(entry_matches(e, (hit.chunk.path, hit.chunk.heading))
                            for e in entries)
            e = hit.explain
            rows.append({"query": qid, "rank": rank, "features": list(hit.features),
                         "cosine": hit.features[0],
                         "ranks": [e.rank("fts"), e.rank("words"), e.rank("cjk"), e.vec_rank],
                         "label": label})
    return rows


def nonsense_queries(seed: int) -> list[str]:
    """50 English and 50 Japanese queries of random real words with no topical link."""
    rng = random.Random(seed)
    return ([" ".join(rng.sample(EN_WORDS, 3)) for _ in range(50)]
            + ["の".join(rng.sample(JA_WORDS, 2)) + "と" + rng.choice(JA_WORDS)
               for _ in range(50)])


NONSENSE_SEEDS = {"nonsense": 16, "nonsense-check": 17}
"""Seed 16: the set the default threshold was chosen on; seed 17: a fresh set that checks it."""


def collect(source: Path) -> dict[str, Any]:
    data: dict[str, Any] = {}
    sets = {kind: nonsense_queries(seed) for kind, seed in NONSENSE_SEEDS.items()}
    for name in COLLECTIONS:
        db = prepare_index(source, name)
        golden = load_golden(source / name / "golden.yml", check_query=compile_query)
        queries = [(q.id, q.query) for q in golden.queries]
        expected = {q.id: [(e.path, e.heading) for e in q.expected] for q in golden.queries}
        print(f"{name}: {len(queries)} queries", file=sys.stderr)
        data[name] = run_queries(db, queries, expected)
        for kind, texts in sets.items():
            data[f"{name}-{kind}"] = run_queries(
                db, [(f"n{i}", text) for i, text in enumerate(texts)], {})
    data["nonsense_queries"] = sets
    data["golden"] = collect_golden()
    return data


def collect_golden() -> list[dict[str, Any]]:
    """The sample KB's golden queries (seconds to run; always collected anew, the file is part
    of the repository and changes with it)."""
    golden_kb = ROOT / "golden"
    golden = load_golden(golden_kb / ".groove-eval.yml", check_query=compile_query)
    return run_queries(ensure_golden_index(golden_kb), [(q.id, q.query) for q in golden.queries],
                       {q.id: [(e.path, e.heading) for e in q.expected] for q in golden.queries})


def ensure_golden_index(kb: Path) -> Path:
    """The sample KB's index (in its state folder), built by `groove index` when missing."""
    location = groove_cli.open(kb).location
    assert isinstance(location, Path), "the sample KB's index is a file"
    if not location.exists():
        subprocess.run([str(ROOT / ".venv" / "bin" / "groove"), "index", "--kb-path", str(kb),
                        "--quiet"], check=True)
    return location


def labelled(rows: list[dict[str, Any]]) -> list[LabelledHit]:
    return [LabelledHit(r["query"], tuple(r["features"]), bool(r["label"])) for r in rows]


def refit_check(rows: list[dict[str, Any]], splits: int = 200) -> dict[str, Any]:
    """What `tune --space calibration` measures on a KB: the model refitted on one half of the
    queries (by the id hash), scored on the other — both directions and cross-fitted (the
    figure tune prints) — and, for context, the cross-fitted and one-direction ECE over
    `splits` random half splits (median and 5-95 % range)."""
    hits = labelled(rows)
    first = [h for h in hits if split_half(h.query) == "fit"]
    second = [h for h in hits if split_half(h.query) == "test"]
    estimates, truth = cross_fitted(first, second)
    cross, _ = expected_calibration_error(estimates, truth)
    n = len(first)
    forward, _ = expected_calibration_error(estimates[n:], truth[n:])
    backward, _ = expected_calibration_error(estimates[:n], truth[:n])
    queries = sorted({h.query for h in hits})
    rng = random.Random(3)
    crossed, one_way = [], []
    for _ in range(splits):
        shuffled = queries[:]
        rng.shuffle(shuffled)
        half = set(shuffled[: len(shuffled) // 2])
        a = [h for h in hits if h.query in half]
        b = [h for h in hits if h.query not in half]
        est, tru = cross_fitted(a, b)
        crossed.append(expected_calibration_error(est, tru)[0])
        one_way.append(expected_calibration_error(est[len(a):], tru[len(a):])[0])

    def spread(values: list[float]) -> list[float]:
        return [float(np.median(values)), float(np.quantile(values, 0.05)),
                float(np.quantile(values, 0.95))]

    rate = [float(np.mean([h.relevant for h in part])) for part in (first, second)]
    return {"hits": len(hits), "relevant_rate_halves": rate, "ece_cross_fitted": cross,
            "ece_fit_to_test": forward, "ece_test_to_fit": backward,
            "random_splits": splits, "cross_fitted_spread": spread(crossed),
            "one_direction_spread": spread(one_way)}


def rows_xy(rows: list[dict[str, Any]], half: str | None) -> tuple[np.ndarray, np.ndarray]:
    kept = [r for r in rows if half is None or split_half(r["query"]) == half]
    x = np.array([r["features"] for r in kept], dtype=np.float64)
    y = np.array([1.0 if r["label"] else 0.0 for r in kept])
    return x, y


def best_relevance(rows: list[dict[str, Any]], cal: Calibration) -> dict[str, tuple[float, bool]]:
    """Per query: the best hit's relevance and whether its top hit is relevant."""
    out: dict[str, tuple[float, bool]] = {}
    for r in rows:
        p = relevance(cal, r["features"])
        best, top = out.get(r["query"], (0.0, False))
        out[r["query"]] = (max(best, p), top or (r["rank"] == 1 and bool(r["label"])))
    return out


def png(path: Path, width: int, height: int, pixels: np.ndarray) -> None:
    """An RGB PNG from a (height, width, 3) uint8 array, with the stdlib only."""
    raw = b"".join(b"\x00" + pixels[row].tobytes() for row in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                     + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def reliability_png(path: Path, curves: dict[str, list[tuple[float, float, int]]]) -> None:
    """Reliability diagram: x = mean predicted relevance, y = observed rate, per bin; the
    diagonal in grey, one colour per collection, square size by bin count."""
    size, margin = 400, 30
    img = np.full((size, size, 3), 255, dtype=np.uint8)
    plot = size - 2 * margin

    def xy(px: float, py: float) -> tuple[int, int]:
        return margin + round(px * plot), size - margin - round(py * plot)

    img[size - margin, margin: size - margin] = 0  # axes
    img[margin: size - margin, margin] = 0
    for t in np.linspace(0, 1, plot):
        x, y = xy(float(t), float(t))
        img[y, x] = (160, 160, 160)
    colours = [(214, 39, 40), (31, 119, 180), (44, 160, 44)]
    for colour, points in zip(colours, curves.values(), strict=False):
        previous = None
        for mean_p, rate, n in points:
            x, y = xy(mean_p, rate)
            r = 2 + min(6, int(np.log10(n + 1) * 2))
            img[max(0, y - r): y + r + 1, max(0, x - r): x + r + 1] = colour
            if previous is not None:
                for t in np.linspace(0, 1, 200):
                    img[round(previous[1] + t * (y - previous[1])),
                        round(previous[0] + t * (x - previous[0]))] = colour
            previous = (x, y)
    png(path, size, size, img)


def low_confidence_check(data: dict[str, Any], cal: Calibration, threshold: float
                         ) -> dict[str, dict[str, float]]:
    """Per collection and pooled: the share of nonsense runs (each set) flagged
    low_confidence, and of held-out real queries whose top hit is relevant."""
    out: dict[str, dict[str, float]] = {}
    pooled: dict[str, list[bool]] = {kind: [] for kind in (*NONSENSE_SEEDS, "relevant_top")}
    for name in COLLECTIONS:
        row: dict[str, float] = {}
        for kind in NONSENSE_SEEDS:
            flags = [best < threshold for best, _ in best_relevance(data[f"{name}-{kind}"],
                                                                    cal).values()]
            pooled[kind] += flags
            row[kind] = float(np.mean(flags))
        held_out = [r for r in data[name] if split_half(r["query"]) == "test"]
        flags = [best < threshold for best, top in best_relevance(held_out, cal).values() if top]
        pooled["relevant_top"] += flags
        row["relevant_top"] = float(np.mean(flags))
        row["relevant_top_queries"] = len(flags)
        out[name] = row
    out["pooled"] = {kind: float(np.mean(flags)) for kind, flags in pooled.items()}
    out["pooled"]["relevant_top_queries"] = len(pooled["relevant_top"])
    return out


def markdown(report: dict[str, Any]) -> str:
    """bench/results/relevance.md from the report."""
    cal = report["calibration"]
    lines = [
        "# `relevance`: calibration and the nonsense check",
        "",
        "Produced by `bench/relevance.py` (issue 16). Model: `multilingual-e5-small`, built-in "
        "hybrid settings, top-10 hits per query; indexes from `bench/eval_datasets.py` "
        f"(bench/work) and golden/. {machine_line(report['machine'])}",
        "",
        "## Model",
        "",
        "`relevance = 1 / (1 + exp(-(b0 + b·x)))` over evidence the legs already have "
        "(`groove_cli/retrieve/relevance.py`):",
        "",
        "| feature | meaning |",
        "|---|---|",
        "| `cosine` | cosine similarity of the query vector and the chunk's stored vector |",
        "| `text_found` | 1 when the trigram or word-level leg returned the chunk |",
        "| `text_strength` | 1 / the better of those two ranks (0 when absent) |",
        "| `cjk_found` | 1 when the CJK leg returned the chunk |",
        "| `cjk_strength` | 1 / its CJK-leg rank (0 when absent) |",
        "| `cosine_gap` | its cosine minus the query's best cosine (the vector leg's first hit), ≤ 0 |",
        "",
        "`cosine_gap` replaced `vec_strength` (1 / vector rank) in issue 28: fitted on JSQuAD, "
        "where one passage answers each query, 1 / rank taught the model that only the top hit "
        "is relevant, so on a KB where several notes answer (golden/, above all in Japanese) "
        "relevant hits below the top one scored 0.01–0.12; the gap to the best cosine does not "
        "depend on how many notes are as close. With `vec_strength` (the default up to commit "
        "50c6499) ranks 2–10 scored ECE 0.117 on golden/ and 0.004 on JSQuAD's held-out half, "
        "the top hit 0.167 on golden/ (the same hits, the same labels).",
        "",
        "The CJK leg is a feature of its own: its unigrams and bigrams match some chunk for "
        "almost any Japanese text, so a CJK match is weak evidence (the fitted `cjk_found` "
        "weight is negative). With one merged full-text feature (the previous model) Japanese "
        "nonsense on JSQuAD was flagged for only 14 % of queries.",
        "",
        "The shipped calibration (`DEFAULT_CALIBRATIONS`) is the IRLS logistic fit (ridge 1e-3) on "
        "the **fit half** of the CISI and JSQuAD queries (split by a hash of the query id), "
        f"pooled: `{cal}` = [b0, " + ", ".join(report["features"]) + "]. Refitted from this "
        f"run's data: `{report['refit_from_this_run']}` (equal when the engine's hits are those "
        "it was fitted on). It was fitted on the hits of weighted RRF, the default fusion then; "
        "the same fit on the hits of score fusion (the default since) would replace it only if "
        "it did better on the figures that decide (issue 28's ranks 2–10 check, the nonsense "
        "check):",
        "",
        "| calibration | ranks 2–10 ECE jsquad / golden | golden ECE, all hits | nonsense "
        "flagged (seed 16 / 17) | relevant top flagged |",
        "|---|---|---:|---|---:|",
        *(f"| {who} | {c['jsquad']:.4f} / {c['golden']:.4f} | {c['golden_all']:.4f} | "
          f"{c['nonsense']:.1%} / {c['nonsense-check']:.1%} | {c['relevant_top']:.1%} |"
          for who, c in report["choice"].items()),
        "",
        "## Calibration (top-10 hits, ECE over 10 equal-width bins)",
        "",
        "**Per collection, as `groove tune --space calibration` refits it on a KB**: the model "
        "fitted on one half of the collection's queries scores the other half; cross-fitted = "
        "both halves scored that way (what tune reports). The two one-direction figures show "
        "why a single direction is a poor estimate on a few dozen queries: the halves' share of "
        "relevant hits differs by chance (see the halves column), and that "
        f"gap alone reads as miscalibration. For context, {report['random_splits']} random "
        "half-splits: median [5 %, 95 %].",
        "",
        "| collection | hits | relevant rate (halves) | **ECE cross-fitted** | fit→test / "
        "test→fit | cross-fitted, random splits | one direction, random splits | ≤ 0.05 |",
        "|---|---:|---|---:|---|---|---|---|",
    ]
    for name in (*COLLECTIONS, "golden"):
        c = report[f"{name}_refit"]
        lo, hi = c["relevant_rate_halves"]
        med, q5, q95 = c["cross_fitted_spread"]
        one = c["one_direction_spread"]
        lines.append(
            f"| {name} | {c['hits']} | {lo:.3f} / {hi:.3f} | **{c['ece_cross_fitted']:.4f}** | "
            f"{c['ece_fit_to_test']:.4f} / {c['ece_test_to_fit']:.4f} | {med:.4f} [{q5:.3f}, "
            f"{q95:.3f}] | {one[0]:.4f} [{one[1]:.3f}, {one[2]:.3f}] | "
            f"{'met' if c['ece_cross_fitted'] <= 0.05 else 'NOT met'} |")
    golden = report["golden_refit"]
    shipped_golden = report["shipped"]["golden"]["ece"]
    queries = report["golden_queries"]
    verdict = ("recommends the refit (`--write` applies it)"
               if golden["ece_cross_fitted"] < shipped_golden else
               "recommends keeping the shipped one (and `--write` refuses without `--force`)")
    lines += [
        "",
        f"On golden/ ({queries} queries) the refit's cross-fitted ECE is "
        f"{golden['ece_cross_fitted']:.3f} against {shipped_golden:.3f} for the shipped "
        f"calibration over the same hits, so `groove tune --space calibration` {verdict}. The "
        f"random splits show how firm a figure on {queries} queries is: the same refit scores "
        f"{golden['cross_fitted_spread'][0]:.3f} at the median split and anywhere in "
        f"[{golden['cross_fitted_spread'][1]:.3f}, {golden['cross_fitted_spread'][2]:.3f}].",
    ]
    lines += by_rank_lines(report)
    lines += [
        "",
        "**The shipped calibration, without a refit** (held-out halves; golden/ all queries, "
        "never fitted on):",
        "",
        "| collection | hits | relevant rate | mean relevance | ECE |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in (*COLLECTIONS, "both", "golden"):
        c = report["shipped"][name]
        lines.append(f"| {name} | {c['hits']} | {c['relevant_rate']:.3f} | "
                     f"{c['mean_relevance']:.3f} | {c['ece']:.4f} |")
    lines += [
        "",
        "One model over these features cannot be calibrated on both collections at once: on "
        "CISI ~40 % of the top-10 hits are judged relevant (~40 judged documents per query), on "
        "JSQuAD ~10 % (one answer passage), with nearly the same evidence. The pooled fit is "
        "dominated by JSQuAD's 500 fit queries, so on CISI-like KBs the shipped estimate is "
        "under-confident; `groove tune --space calibration --write` is the remedy, and the "
        "table above is what it achieves.",
        "",
        "![reliability diagram](relevance.png)",
        "",
        "`relevance.png`: the shipped calibration on the held-out halves; x = mean predicted "
        "relevance per bin, y = observed rate of relevant hits; grey diagonal = perfect; red "
        "CISI, blue JSQuAD, green pooled; square size ∝ log(bin count). Drawn with numpy + zlib.",
        "",
        "## Nonsense queries and `low_confidence`",
        "",
        "100 queries of random real words with no topical link (50 English, e.g. three of zebra, "
        "violin, pancake; 50 Japanese, e.g. `キリンの花火と傘`), each run against both indexes "
        "(200 runs per set). `low_confidence` = the best hit's relevance < `[search.relevance] "
        f"low_confidence_below` (default **{report['threshold']}**). The default was chosen on "
        "the seed-16 set (the lowest round value that flags ≥ 90 % of it pooled while flagging "
        "≤ 10 % of CISI's relevant-top queries); the seed-17 set is fresh and checks it.",
        "",
        "| runs | nonsense flagged (seed 16) | nonsense flagged (seed 17, fresh) | held-out "
        "queries whose top hit is relevant, flagged |",
        "|---|---:|---:|---:|",
    ]
    for name in (*COLLECTIONS, "pooled"):
        c = report["low_confidence"][name]
        label = "both (the check: ≥ 90 % / ≤ 10 %)" if name == "pooled" else name
        lines.append(f"| {label} | {c['nonsense']:.1%} | {c['nonsense-check']:.1%} | "
                     f"{c['relevant_top']:.1%} of {c['relevant_top_queries']} |")
    lines += [
        "",
        f"golden/: {report['golden_flagged']} of {report['golden_queries']} queries flagged.",
        "",
        "Reproduce: `.venv/bin/python bench/relevance.py [--reuse]` after "
        "`bench/eval_datasets.py`.",
        "",
    ]
    return "\n".join(lines)


RANK_GROUPS = (("top-1", 1, 1), ("ranks 2–10", 2, TOP))


def by_rank(data: dict[str, Any], cal: Calibration) -> dict[str, Any]:
    """ECE of the shipped calibration for the top hit and for ranks 2–10 apart, on the held-out
    halves (golden/: every query, never fitted on)."""
    out: dict[str, Any] = {}
    golden = load_golden(ROOT / "golden" / ".groove-eval.yml", check_query=compile_query)
    japanese = {q.id for q in golden.queries if cjk.has_cjk(q.query)}
    parts = {name: [r for r in data[name] if split_half(r["query"]) == "test"]
             for name in COLLECTIONS}
    parts["golden"] = data["golden"]
    parts["golden-ja"] = [r for r in data["golden"] if r["query"] in japanese]
    parts["golden-en"] = [r for r in data["golden"] if r["query"] not in japanese]
    for name, rows in parts.items():
        for group, lo, hi in RANK_GROUPS:
            part = [r for r in rows if lo <= r["rank"] <= hi]
            p = [relevance(cal, r["features"]) for r in part]
            y = [1.0 if r["label"] else 0.0 for r in part]
            error, _ = expected_calibration_error(p, y)
            relevant = [pi for pi, yi in zip(p, y, strict=True) if yi]
            out[f"{name} {group}"] = {
                "hits": len(part), "relevant_rate": float(np.mean(y)),
                "mean_relevance": float(np.mean(p)), "ece": error,
                "relevant_hits_median_relevance": float(np.median(relevant)) if relevant else None}
    return out


def by_rank_lines(report: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Calibration by rank position",
        "",
        "The shipped calibration (fitted on the CISI and JSQuAD fit halves only) on the held-out "
        "halves and on golden/ (every query; never fitted on), the top hit and ranks 2–10 apart. "
        "The check (issue 28): ECE ≤ 0.05 for ranks 2–10 on JSQuAD's held-out half and golden/. "
        "golden-ja / golden-en split golden/ by the query's script: on its Japanese queries the "
        "hits below the top one stay under-confident — JSQuAD, the only Japanese data fitted "
        "on, has one answer passage per query (0.7 % of its ranks 2–10 are relevant, 11 % on "
        "golden/), and no feature the legs have tells the two apart; a per-KB refit (`groove "
        "tune --space calibration`) is the remedy there.",
        "",
        "| collection | ranks | hits | relevant rate | mean relevance | median relevance of "
        "the relevant hits | ECE | ≤ 0.05 |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for key, c in report["by_rank"].items():
        name, group = key.split(" ", 1)
        median = c["relevant_hits_median_relevance"]
        check = ("met" if c["ece"] <= 0.05 else "NOT met") if group != "top-1" and \
            name in ("jsquad", "golden") else "-"
        lines.append(f"| {name} | {group} | {c['hits']} | {c['relevant_rate']:.3f} | "
                     f"{c['mean_relevance']:.3f} | {'-' if median is None else f'{median:.2f}'} "
                     f"| {c['ece']:.4f} | {check} |")
    lines += ["", "`make demo`'s two searches (top 3, text format) print these relevances:", ""]
    for query, hits in report["demo"].items():
        shown = ", ".join(f"`{path}` {rel:.2f}" for path, rel in hits)
        lines.append(f"- `{query}`: {shown}")
    return lines


DEMO_QUERIES = ("how do retry budgets stop retry storms?", "障害が起きたときの連絡手順")
"""The two searches of `make demo` (Makefile)."""


def demo_relevance() -> dict[str, list[tuple[str, float]]]:
    """Each demo search's top 3 hits: path and relevance, as `make demo` prints them."""
    kb = ROOT / "golden"
    with groove_cli.open(kb, db=ensure_golden_index(kb)) as index:
        return {q: [(h.path, float(h.relevance or 0.0)) for h in index.search(q, limit=3).hits]
                for q in DEMO_QUERIES}


def shipped_check(data: dict[str, Any], cal: Calibration
                  ) -> tuple[dict[str, Any], dict[str, list[tuple[float, float, int]]]]:
    """ECE of the shipped calibration on the held-out halves (golden/: every query)."""
    out: dict[str, Any] = {}
    curves = {}
    parts = {name: rows_xy(data[name], "test") for name in COLLECTIONS}
    parts["both"] = (np.vstack([parts[n][0] for n in COLLECTIONS]),
                     np.concatenate([parts[n][1] for n in COLLECTIONS]))
    parts["golden"] = rows_xy(data["golden"], None)
    for name, (x, y) in parts.items():
        p = [relevance(cal, row) for row in x]
        error, bins = expected_calibration_error(p, list(y))
        if name != "golden":
            curves[name] = bins
        out[name] = {"ece": error, "hits": len(y), "relevant_rate": float(y.mean()),
                     "mean_relevance": float(np.mean(p)), "bins": bins}
    return out, curves


def candidate(data: dict[str, Any], cal: Calibration, threshold: float) -> dict[str, float]:
    """The figures that decide which calibration ships: ranks 2–10 ECE (JSQuAD held out,
    golden/), golden/'s ECE over all hits, and the pooled low_confidence shares."""
    ranks = by_rank(data, cal)
    pooled = low_confidence_check(data, cal, threshold)["pooled"]
    return {"jsquad": ranks["jsquad ranks 2–10"]["ece"], "golden": ranks["golden ranks 2–10"]["ece"],
            "golden_all": shipped_check(data, cal)[0]["golden"]["ece"], **pooled}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=ROOT / "bench" / "work",
                        help="where eval_datasets.py left the indexes and golden files")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the features collected on CISI and JSQuAD (golden/'s are "
                             "collected anew)")
    args = parser.parse_args()
    cache = SCRATCH / "features.json"
    if args.reuse and cache.exists():
        data = json.loads(cache.read_text())
        data["golden"] = collect_golden()
        cache.write_text(json.dumps(data))
    else:
        data = collect(args.source)
        SCRATCH.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(data))

    cal = default_calibration("multilingual-e5-small")
    threshold = float(default_settings().float_("search.relevance.low_confidence_below"))
    fit_x, fit_y = zip(*(rows_xy(data[n], "fit") for n in COLLECTIONS), strict=True)
    refit = fit_logistic(np.vstack(fit_x), np.concatenate(fit_y))
    shipped, curves = shipped_check(data, cal)
    report: dict[str, Any] = {
        "machine": machine(), "calibration": cal.as_list(), "features": list(FEATURES),
        "refit_from_this_run": refit.as_list(), "shipped": shipped, "threshold": threshold,
        "random_splits": 200,
    }
    for name in (*COLLECTIONS, "golden"):
        report[f"{name}_refit"] = refit_check(data[name], report["random_splits"])
    report["by_rank"] = by_rank(data, cal)
    report["demo"] = demo_relevance()
    report["low_confidence"] = low_confidence_check(data, cal, threshold)
    report["golden_flagged"] = sum(best < threshold for best, _ in
                                   best_relevance(data["golden"], cal).values())
    report["golden_queries"] = len({row["query"] for row in data["golden"]})
    report["choice"] = {"shipped": candidate(data, cal, threshold),
                        "refit": candidate(data, refit, threshold)}
    report["nonsense_queries"] = data["nonsense_queries"]
    text = markdown(report)
    write_results("relevance", report, text)
    reliability_png(RESULTS / "relevance.png", curves)
    print(text)


if __name__ == "__main__":
    main()
