#!/usr/bin/env python3
"""groove's full-text result (`--mode fts`) on the benchmark suite, leg by leg (issue 25).

    python bench/suite_fts.py [--collections cisi,livedoor]

On each collection of the suite (its index must exist: bench/suite.py builds it; only read
here), from the legs' lists fused in memory as search.md §5 does (suite_fusion.rrf):

1. **Routing of a query with CJK text**, query compiler version 4 against 5 (search.md §2.9):
   version 4 also sent its Latin words (from 2 on) to the word-level leg and its numbers and
   identifiers to the trigram leg; version 5 leaves them to the CJK leg, except identifiers
   the CJK tokens split (`BK-1107`). Version 4's expressions are rebuilt here from the same
   compiled query; fts and hybrid (built-in weights), and the CJK leg alone.
2. **bm25 column weights** (heading, context, content) of every full-text table, fts mode:
   the setting chosen on the other collections, scored on the held-out one.
3. **The word-level table's tokens**, on the English collections: FTS5's `porter` (shipped)
   against stopwords left out of the rows, the Snowball stemmer (PyStemmer: groove's own
   tokens, as for the CJK table) and no stemming. Each variant is a table built beside the
   chunks in a scratch copy (bench/work/suite_fts/); its list replaces the word-level leg's.
   A CJK query no longer runs that leg, so a variant changes nothing on the Japanese queries.
   Also: the shipped table without the trigram leg (which runs for English queries with a
   number).
4. **Cold start**: fresh `groove search --mode fts` processes on a Japanese and an English
   index (median of 5; groove's bytecode compiled, as bench_search.py does; target ≤ 0.2 s).

Writes bench/results/suite_fts.json and suite_fts.md.
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from _common import (
    WORK,
    machine,
    machine_line,
    median,
    package_versions,
    run_groove,
    with_kept_part,
    write_results,
)
from bench_search import compile_bytecode
from suite import load_queries, with_grades
from suite_fusion import loco, ndcg10, rrf
from suite_index import SuiteCollection, suite_collections
from suite_lists import load_or_fetch

import groove_cli
from groove_cli.engine import (
    DEFAULT_BM25_WEIGHTS,
    ENGLISH_STOPWORDS,
    CompiledQuery,
    ListFetcher,
    bootstrap_ci,
    candidate_pool,
    cjk,
    compile_query,
    is_latin_text,
    latin_words,
    or_expr,
    randomization_p,
    registered,
    searcher_of,
    select_terms,
)

FTS = {"vector": 0.0, "fts_chunks": 1.0, "fts_words": 1.0, "fts_cjk": 6.0}
HYBRID = {**FTS, "vector": 1.0}
RRF_K = 60.0
WEIGHTS = {"heading 2 (built-in)": (2.0, 1.0, 1.0), "all 1": (1.0, 1.0, 1.0),
           "heading 0": (0.0, 1.0, 1.0), "heading 4": (4.0, 1.0, 1.0),
           "content only": (0.0, 0.0, 1.0)}
V4_MIN_MIXED_WORD_TERMS = 2
SCRATCH = WORK / "suite_fts"
COLD_RUNS = 5
COLD_ON = ("jsquad", "cisi")
COLD_TARGET_S = 0.2
NOTES = "<!-- findings written by hand from here on: suite_fts.py keeps this part -->"


def quoted_segments(text: str) -> list[str]:
    """The closed quoted regions of `text` (search.md §2.1 without `""` escapes, which no suite
    query holds)."""
    parts = text.split('"')
    return [parts[i] for i in range(1, len(parts) - 1, 2)]


def v4_exprs(query: CompiledQuery) -> tuple[str | None, str | None]:
    """Version 4's trigram and word-level expressions of a query with CJK text: its quoted
    phrases and every phrase without CJK holding a digit; its Latin words from 2 on."""
    quoted = quoted_segments(query.positive_text)
    codes = [p for p in query.phrases if not cjk.has_cjk(p) and any(c.isdigit() for c in p)]
    trigram = list(dict.fromkeys([*(q for q in quoted if len(q) >= 3), *codes]))
    plain = re.sub(r'"[^"]*"', " ", query.positive_text)
    candidates = [(q, True) for q in quoted if is_latin_text(q)]
    candidates += [(w, False) for w in latin_words(plain)]
    words, _ = select_terms(candidates)
    word_expr = or_expr(words) if len(words) >= V4_MIN_MIXED_WORD_TERMS else None
    return (or_expr(trigram) if trigram else None), word_expr


def summary(values: Sequence[float], base: Sequence[float] | None = None) -> dict[str, Any]:
    """Mean with its bootstrap CI, and (against `base`) the paired delta, its CI and p."""
    out: dict[str, Any] = {"ndcg@10": sum(values) / len(values),
                           "ci95": bootstrap_ci({"v": values})["v"]}
    if base is not None:
        deltas = [a - b for a, b in zip(values, base, strict=True)]
        out |= {"delta": sum(deltas) / len(deltas), "delta_ci95": bootstrap_ci({"d": deltas})["d"],
                "p": randomization_p(deltas)}
    return out


def routing(store: Any, lists: Sequence[Mapping[str, Any]], pool: int,
            score: Callable[[Sequence[list[int]]], list[float]]) -> dict[str, Any]:
    """Study 1 on one collection: v4 and v5 routing, fts and hybrid, and the CJK leg alone."""
    v4 = []
    changed = 0
    for q in lists:
        ids = dict(q["ids"])
        if q["cjk_terms"]:
            trigram, words = v4_exprs(compile_query(q["query"]))
            old = {"fts_chunks": trigram, "fts_words": words}
            for table, expr in old.items():
                ids[table] = (list(store.fts_search_ids(expr, DEFAULT_BM25_WEIGHTS, pool, table))
                              if expr else [])
            changed += ids != q["ids"]
        v4.append(ids)
    now = [dict(q["ids"]) for q in lists]
    runs = {"fts, version 4 (before)": [rrf({"ids": i}, FTS, RRF_K) for i in v4],
            "fts, version 5": [rrf({"ids": i}, FTS, RRF_K) for i in now],
            "CJK leg alone": [rrf({"ids": i}, {"fts_cjk": 1.0}, RRF_K) for i in now],
            "hybrid, version 4 (before)": [rrf({"ids": i}, HYBRID, RRF_K) for i in v4],
            "hybrid, version 5": [rrf({"ids": i}, HYBRID, RRF_K) for i in now]}
    values = {label: score(r) for label, r in runs.items()}
    bases = {"fts, version 5": "fts, version 4 (before)", "CJK leg alone": "fts, version 5",
             "hybrid, version 5": "hybrid, version 4 (before)"}
    rows = {label: summary(v, values[bases[label]] if label in bases else None)
            for label, v in values.items()}
    return {"rows": rows, "routing_changed": changed,
            "cjk_queries": sum(1 for q in lists if q["cjk_terms"])}


def column_weights(store: Any, lists: Sequence[Mapping[str, Any]], pool: int,
                   score: Callable[[Sequence[list[int]]], list[float]]) -> dict[str, list[float]]:
    """Study 2 on one collection: fts mode with each column weighting on every table."""
    out = {}
    compiled = [compile_query(q["query"]) for q in lists]
    for label, weights in WEIGHTS.items():
        runs = []
        for query in compiled:
            fetcher = ListFetcher(store, query, pool)
            ids = {leg.table: (list(fetcher.fetch(leg, weights)) if leg.expr(query) else [])
                   for leg in registered()}
            runs.append(rrf({"ids": ids}, FTS, RRF_K))
        out[label] = score(runs)
    return out


def _fold(text: str) -> str:
    """Case folding and diacritics removal (unicode61 `remove_diacritics`)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def word_variants() -> dict[str, tuple[str, Callable[[str], str] | None, bool]]:
    """Name → (FTS5 tokenize, row text transform or None, query words Snowball-stemmed)."""
    import Stemmer

    stem = Stemmer.Stemmer("english").stemWord

    def words(text: str, drop: bool, stemmed: bool) -> str:
        kept = [w for w in re.findall(r"\w+", _fold(text)) if not drop or w not in ENGLISH_STOPWORDS]
        return " ".join(stem(w) if stemmed else w for w in kept)

    return {"porter (shipped)": ("porter unicode61 remove_diacritics 2", None, False),
            "porter, stopwords left out of the rows": (
                "porter unicode61 remove_diacritics 2", lambda t: words(t, True, False), False),
            "Snowball, stopwords left out of the rows": (
                "unicode61 remove_diacritics 0", lambda t: words(t, True, True), True),
            "Snowball, stopwords kept in the rows": (
                "unicode61 remove_diacritics 0", lambda t: words(t, False, True), True),
            "no stemming": ("unicode61 remove_diacritics 2", None, False)}


def word_tables(coll: SuiteCollection, lists: Sequence[Mapping[str, Any]], pool: int,
                score: Callable[[Sequence[list[int]]], list[float]]) -> dict[str, list[float]]:
    """Study 3 on one collection: each word-table variant's list in place of the shipped one."""
    import apsw
    import Stemmer

    stem = Stemmer.Stemmer("english").stemWord
    SCRATCH.mkdir(parents=True, exist_ok=True)
    copy = SCRATCH / f"{coll.name}.db"
    copy.unlink(missing_ok=True)
    con = apsw.Connection(str(copy))
    src = apsw.Connection(str(coll.db), flags=apsw.SQLITE_OPEN_READONLY)
    rows = src.execute("SELECT id, coalesce(heading, ''), coalesce(context_text, ''), content "
                       "FROM chunks").fetchall()
    src.close()
    out = {}
    for n, (label, (tokenize, transform, stemmed)) in enumerate(word_variants().items()):
        table = f"w{n}"
        con.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(heading, context, content, "
                    f"content = '', tokenize = '{tokenize}')")
        cut = transform or (lambda t: t)
        with con:
            con.executemany(f"INSERT INTO {table}(rowid, heading, context, content) "
                            "VALUES (?, ?, ?, ?)",
                            [(cid, cut(h), cut(c), cut(x)) for cid, h, c, x in rows])
        runs = []
        for q in lists:
            terms = list(compile_query(q["query"]).word_terms)
            if stemmed:
                terms = [stem(w) for t in terms for w in re.findall(r"\w+", _fold(t))]
            found = [r[0] for r in con.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY "
                f"bm25({table}, ?, ?, ?), rowid LIMIT ?",
                (or_expr(terms), *DEFAULT_BM25_WEIGHTS, pool))] if terms else []
            runs.append(rrf({"ids": {**q["ids"], "fts_words": found}}, FTS, RRF_K))
        out[label] = score(runs)
        if n == 0:
            out[f"{label}, without the trigram leg"] = score(
                [rrf({"ids": {**q["ids"], "fts_chunks": []}}, FTS, RRF_K) for q in lists])
    con.close()
    copy.unlink()
    return out


def cold(coll: SuiteCollection, queries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Fresh `groove search --mode fts` processes on the collection's first queries."""
    walls, cpus = [], []
    for q in queries[:COLD_RUNS]:
        run = run_groove(["search", q["query"], "--mode", "fts"], config=coll.config, db=coll.db)
        walls.append(run.wall_s)
        cpus.append(run.cpu_s)
    return {"wall_s": walls, "cpu_s": cpus, "median_wall_s": median(walls),
            "median_cpu_s": median(cpus), "target_s": COLD_TARGET_S,
            "met": median(walls) <= COLD_TARGET_S}


def measure(coll: SuiteCollection) -> dict[str, Any]:
    queries = with_grades(load_queries(coll))
    data = load_or_fetch(coll, queries)
    lists = data["queries"]
    grades = [{f"{d}.md": int(g) for d, g in q["grades"].items()} for q in queries]
    pool = candidate_pool(10)
    searcher = searcher_of(groove_cli.open(coll.kb, db=coll.db, config=coll.config))
    try:
        store = searcher.store
        with store.read_transaction():
            chunk_path = {c.chunk_id: (path, None) for path, doc in store.documents().items()
                          for c in store.document_chunks(doc.id, store.chunk_count())}

            def score(runs: Sequence[list[int]]) -> list[float]:
                return [ndcg10(r, chunk_path, g) for r, g in zip(runs, grades, strict=True)]

            out: dict[str, Any] = {"queries": len(queries), "language": coll.language}
            if any(q["cjk_terms"] for q in lists):
                out["routing"] = routing(store, lists, pool, score)
            out["weights"] = column_weights(store, lists, pool, score)
    finally:
        searcher.close()
    if coll.language == "en":
        out["words"] = word_tables(coll, lists, pool, score)
    if coll.name in COLD_ON:
        out["cold_fts"] = cold(coll, queries)
    return out


def family_table(per: Mapping[str, Mapping[str, Any]], key: str) -> dict[str, Any]:
    """Means per collection and setting, leave-one-collection-out, and each setting's paired
    delta against the shipped one (the first) per collection."""
    colls = [c for c in per if key in per[c]]
    labels = list(per[colls[0]][key])
    means = {c: {lab: sum(v) / len(v) for lab, v in per[c][key].items()} for c in colls}
    paired = {c: {lab: summary(per[c][key][lab], per[c][key][labels[0]]) for lab in labels[1:]}
              for c in colls}
    return {"labels": labels, "means": means, "loco": loco(means, labels), "paired": paired}


def _ci(row: Mapping[str, Any]) -> str:
    lo, hi = row["ci95"]
    return f"{row['ndcg@10']:.3f} [{lo:.3f}, {hi:.3f}]"


def _delta(row: Mapping[str, Any]) -> str:
    lo, hi = row["delta_ci95"]
    star = " *" if row["p"] < 0.05 else ""
    return f"{row['delta']:+.3f} [{lo:+.3f}, {hi:+.3f}] p={row['p']:.3f}{star}"


def _family_md(title: str, fam: Mapping[str, Any]) -> list[str]:
    labels, colls = fam["labels"], list(fam["means"])
    lines = [f"## {title}", "", "| setting | " + " | ".join(colls) + " | mean |",
             "|---|" + "---:|" * (len(colls) + 1)]
    for lab in labels:
        vals = [fam["means"][c][lab] for c in colls]
        lines.append(f"| {lab} | " + " | ".join(f"{v:.3f}" for v in vals)
                     + f" | {sum(vals) / len(vals):.3f} |")
    lines += ["", "Leave-one-collection-out (the setting with the best mean on the others):", "",
              "| held out | chosen on the others | held-out nDCG@10 | − shipped |", "|---|---|---:|---:|"]
    for c, r in fam["loco"].items():
        shipped = fam["means"][c][labels[0]]
        lines.append(f"| {c} | {r['chosen']} | {r['held_out']:.3f} | "
                     f"{r['held_out'] - shipped:+.3f} |")
    lines += ["", f"Paired against `{labels[0]}`: mean delta [95 % CI], randomization p "
              "(* < 0.05).", "", "| collection | " + " | ".join(labels[1:]) + " |",
              "|---|" + "---|" * (len(labels) - 1)]
    for c in colls:
        lines.append(f"| {c} | " + " | ".join(_delta(fam["paired"][c][lab]) for lab in labels[1:])
                     + " |")
    return [*lines, ""]


def markdown(data: Mapping[str, Any]) -> str:
    per = data["collections"]
    lines = ["# groove fts on the suite, leg by leg (issue 25)", "",
             "nDCG@10 [95 % bootstrap CI over queries] from the legs' lists fused in memory "
             "(search.md §5: trigram and word-level 1, CJK 6, rrf_k 60; hybrid adds the vector "
             "leg at 1), scored by groove's metric code. bench/suite_fts.py.", "",
             "## 1. Routing of a query with CJK text (query compiler version 4 → 5)", "",
             "| collection | CJK queries | routing changed | fts v4 (before) | fts v5 | "
             "fts v5 − v4 | CJK leg alone | fts v5 − CJK alone | hybrid v4 | hybrid v5 | "
             "hybrid v5 − v4 |", "|---|---:|---:|---|---|---|---|---|---|---|---|"]
    for c, r in per.items():
        if "routing" not in r:
            continue
        rows = r["routing"]["rows"]
        fts4, fts5 = rows["fts, version 4 (before)"], rows["fts, version 5"]
        alone, h4, h5 = rows["CJK leg alone"], rows["hybrid, version 4 (before)"], rows[
            "hybrid, version 5"]
        minus = {**alone, "delta": -alone["delta"], "delta_ci95": tuple(
            -x for x in reversed(alone["delta_ci95"]))}
        lines.append(f"| {c} | {r['routing']['cjk_queries']} | {r['routing']['routing_changed']} | "
                     f"{_ci(fts4)} | {_ci(fts5)} | {_delta(fts5)} | {_ci(alone)} | "
                     f"{_delta(minus)} | {_ci(h4)} | {_ci(h5)} | {_delta(h5)} |")
    lines.append("")
    lines += _family_md("2. bm25 column weights (heading, context, content), fts mode",
                        data["weights"])
    if data.get("words"):
        lines += _family_md("3. Word-level table tokens (English collections), fts mode",
                            data["words"])
    colds = {c: r["cold_fts"] for c, r in per.items() if "cold_fts" in r}
    if colds:
        lines += ["## 4. Cold `groove search --mode fts`", "",
                  "| index | median wall s | median CPU s | target ≤ 0.2 s |", "|---|---:|---:|---|"]
        lines += [f"| {c} | {r['median_wall_s']:.3f} | {r['median_cpu_s']:.3f} | "
                  f"{'met' if r['met'] else 'NOT met'} |" for c, r in colds.items()]
        lines.append("")
    versions = ", ".join(f"{k} {v}" for k, v in data["machine"]["packages"].items())
    stemmer = data.get("stemmer", {}).get("PyStemmer")
    lines += [machine_line(data["machine"]), "", f"Packages: {versions}, PyStemmer {stemmer}.", "",
              "Command: `python bench/suite_fts.py` (after `make suite` built the indexes)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--collections", default=None, help="comma-separated (default: all)")
    args = parser.parse_args()
    info = machine()
    compile_bytecode()
    per = {c.name: measure(c) for c in suite_collections(args.collections)}
    data: dict[str, Any] = {"benchmark": "suite_fts", "machine": info, "collections": {
        c: {k: v for k, v in r.items() if k not in ("weights", "words")} for c, r in per.items()}}
    data["stemmer"] = package_versions(("PyStemmer",))
    data["weights"] = family_table(per, "weights")
    if any("words" in r for r in per.values()):
        data["words"] = family_table(per, "words")
    text = with_kept_part("suite_fts", NOTES, markdown(data))
    write_results("suite_fts", data, text)
    print(text)


if __name__ == "__main__":
    main()
