"""Fit and measure the `relevance` calibration (retrieve/relevance.py) on CISI and JSQuAD.

For each collection the baseline's index (bench/work/{name} of the baseline worktree, copied and
upgraded, never modified) answers every golden query with the built-in hybrid settings, top 10.
Each hit's features (cosine, full-text found / strength, vector strength) and its label
(relevant = it matches an expected entry, eval.md §3) are collected. Queries are split in two
halves by a hash of their id; the logistic model is fitted on the fit halves of both collections
together and measured on the held-out halves: expected calibration error (ECE, 10 equal-width
bins) over the top-10 hits, and a reliability diagram (PNG drawn with numpy + zlib).

Then the nonsense check: 100 queries of random real words (50 English, 50 Japanese) with no
topical link to either collection, each run against both indexes: `low_confidence` (best hit's
relevance below the threshold) should be true for >= 90 %, and for <= 10 % of the held-out real
queries whose top hit is relevant.

Usage: .venv/bin/python bench/relevance.py [--source DIR] [--reuse]
Writes bench/results/relevance.md, relevance.json and relevance.png.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from groove_cli.config import load_settings  # noqa: E402
from groove_cli.evaluate.calibrate import (  # noqa: E402
    expected_calibration_error,
    fit_logistic,
    split_half,
)
from groove_cli.evaluate.golden import load_golden  # noqa: E402
from groove_cli.evaluate.metrics import entry_matches  # noqa: E402
from groove_cli.retrieve.filters import FilterSpec  # noqa: E402
from groove_cli.retrieve.params import build_params  # noqa: E402
from groove_cli.retrieve.query import compile_query  # noqa: E402
from groove_cli.retrieve.relevance import FEATURES, Calibration, relevance  # noqa: E402
from groove_cli.retrieve.searcher import Searcher  # noqa: E402
from groove_cli.store import Store  # noqa: E402

RESULTS = ROOT / "bench" / "results"
SCRATCH = Path("/tmp/groove-relevance")
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
    settings = load_settings(None, {})
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
            rows.append({"query": qid, "rank": rank, "features": list(hit.features),
                         "label": label})
    return rows


def collect(source: Path) -> dict[str, Any]:
    data: dict[str, Any] = {}
    rng = random.Random(16)
    nonsense = ([" ".join(rng.sample(EN_WORDS, 3)) for _ in range(50)]
                + ["の".join(rng.sample(JA_WORDS, 2)) + "と" + rng.choice(JA_WORDS)
                   for _ in range(50)])
    for name in COLLECTIONS:
        db = prepare_index(source, name)
        golden = load_golden(source / name / "golden.yml", check_query=compile_query)
        queries = [(q.id, q.query) for q in golden.queries]
        expected = {q.id: [(e.path, e.heading) for e in q.expected] for q in golden.queries}
        print(f"{name}: {len(queries)} queries", file=sys.stderr)
        data[name] = run_queries(db, queries, expected)
        data[f"{name}-nonsense"] = run_queries(
            db, [(f"n{i}", text) for i, text in enumerate(nonsense)], {})
    data["nonsense_queries"] = nonsense
    return data


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=ROOT / "bench" / "work",
                        help="where eval_datasets.py left the indexes and golden files")
    parser.add_argument("--reuse", action="store_true", help="reuse the collected features")
    parser.add_argument("--threshold", type=float, default=None)
    args = parser.parse_args()
    cache = SCRATCH / "features.json"
    if args.reuse and cache.exists():
        data = json.loads(cache.read_text())
    else:
        data = collect(args.source)
        SCRATCH.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(data))

    fit_x, fit_y = zip(*(rows_xy(data[n], "fit") for n in COLLECTIONS), strict=True)
    cal = fit_logistic(np.vstack(fit_x), np.concatenate(fit_y))
    report: dict[str, Any] = {"calibration": cal.as_list(), "features": list(FEATURES)}
    curves = {}
    lines = []
    for name in COLLECTIONS:
        x, y = rows_xy(data[name], "test")
        p = np.array([relevance(cal, row) for row in x])
        error, bins = expected_calibration_error(list(p), list(y))
        curves[name] = bins
        report[name] = {"ece_test_top10": error, "hits": len(y), "relevant_rate": float(y.mean()),
                        "mean_relevance": float(p.mean()), "bins": bins}
        lines.append(f"| {name} | {len(y)} | {y.mean():.3f} | {p.mean():.3f} | {error:.4f} |")
    all_x, all_y = zip(*(rows_xy(data[n], "test") for n in COLLECTIONS), strict=True)
    p_all = np.array([relevance(cal, row) for row in np.vstack(all_x)])
    total_error, curves["both"] = expected_calibration_error(list(p_all),
                                                            list(np.concatenate(all_y)))
    report["ece_test_top10_both"] = total_error

    # the threshold: the lowest that flags >= 90 % of nonsense queries, unless given
    nonsense = {}
    for name in COLLECTIONS:
        for qid, (best, _) in best_relevance(data[f"{name}-nonsense"], cal).items():
            nonsense[f"{name}:{qid}"] = best
    real_top_ok = []
    for name in COLLECTIONS:
        rows = [r for r in data[name] if split_half(r["query"]) == "test"]
        real_top_ok += [best for best, top in best_relevance(rows, cal).values() if top]
    values = np.array(sorted(nonsense.values()))
    threshold = (args.threshold if args.threshold is not None
                 else float(np.quantile(values, 0.9)) + 1e-4)
    flagged_nonsense = float(np.mean(values < threshold))
    flagged_good = float(np.mean(np.array(real_top_ok) < threshold))
    report["threshold"] = threshold
    report["nonsense_low_confidence"] = flagged_nonsense
    report["relevant_top_low_confidence"] = flagged_good
    report["nonsense_queries"] = data["nonsense_queries"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "relevance.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    reliability_png(RESULTS / "relevance.png", curves)
    print(json.dumps({k: v for k, v in report.items() if k != "nonsense_queries"}, indent=1,
                     default=str)[:3000])
    print("| collection | test hits | relevant rate | mean relevance | ECE |")
    print("\n".join(lines))
    print(f"both: ECE {total_error:.4f}; threshold {threshold:.4f}: nonsense flagged "
          f"{flagged_nonsense:.1%}, relevant-top flagged {flagged_good:.1%}")


if __name__ == "__main__":
    main()
