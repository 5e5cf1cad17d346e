"""`groove search` through the command line on the indexed sample KB (cli.md §3, §5).

`--mode fts` runs need no query vector and read `golden_index` as is. Hybrid runs use a private
copy whose query-embedding cache is filled once, in one batch, for every hybrid query below: the
real model is loaded once for this module, and every later search of those queries must be
served from the cache (search.md §4).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from typer.testing import CliRunner, Result

from groove_cli.cli import app
from groove_cli.index import IndexOptions, index_kb
from groove_cli.render.search import print_search
from groove_cli.results import Results
from groove_cli.retrieve.params import SearchParams
from groove_cli.retrieve.pipeline import SearchResult, search
from groove_cli.retrieve.query import compile_query
from groove_cli.retrieve.searcher import Searcher
from groove_cli.store import Store
from groove_cli.types import ChunkRow, DocumentRow

runner = CliRunner()

EN_QUERY = "how big should a pull request be"
JA_QUERY = "アラートが鳴ったら最初にやること"
HYBRID_QUERIES = ("retry budget", EN_QUERY, JA_QUERY, "backup restore steps")


def _copy_index(db: Path, folder: Path) -> Path:
    """Copy an index with its WAL (cache writes may still sit there) and vector snapshot."""
    new_db = folder / "index.db"
    shutil.copy2(db, new_db)
    for suffix in ("-wal", ".vectors.npy", ".vectors-ids.npy", ".vectors.json"):
        side = db.with_name(db.name + suffix)
        if side.exists():
            shutil.copy2(side, new_db.with_name(new_db.name + suffix))
    return new_db


def _cache_rows(db: Path) -> int:
    store = Store.open_readonly(db)
    try:
        count = store.con.execute("SELECT count(*) FROM query_cache").fetchall()[0][0]
        assert isinstance(count, int)
        return count
    finally:
        store.close()


@pytest.fixture(scope="module")
def config_file(real_models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A groove.toml that only points at the test models cache."""
    path = tmp_path_factory.mktemp("config") / "groove.toml"
    path.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class Warm:
    db: Path
    loaded_on_first_use: bool
    vectors: list[npt.NDArray[np.float32]]


@pytest.fixture(scope="module")
def warm(golden_index: tuple[Path, Path], real_models_dir: Path,
         tmp_path_factory: pytest.TempPathFactory) -> Warm:
    """A private copy of the sample index with every hybrid query's vector cached."""
    db = _copy_index(golden_index[1], tmp_path_factory.mktemp("warm"))
    assert _cache_rows(db) == 0
    session = Searcher.open(db, None, model=None, max_length=None, models_dir=real_models_dir,
                           offline=True)
    try:
        vectors = session.query_vectors(list(HYBRID_QUERIES))
        loaded = session.loaded_model
    finally:
        session.close()
    return Warm(db, loaded, vectors)


def groove(config: Path, db: Path, *args: str) -> Result:
    return runner.invoke(app, ["--config", str(config), "--db", str(db), "search", *args])


def ok_json(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def explain_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("explain:")]


HIT_KEYS = ["score", "relevance", "path", "abs_path", "line_start", "line_end", "title", "heading", "topic",
            "date", "tags", "content", "stale", "match_spans"]
EXPLAIN_KEYS = ["fts_rank", "fts_word_rank", "fts_cjk_rank", "vec_rank", "fused_rank", "fused_raw",
                "fused_score", "rerank_rank", "rerank_score", "mmr_rank", "fusion", "alpha",
                "leg_scores"]


# --------------------------------------------------------------------------- query cache


def test_a_cached_query_does_not_load_the_model(warm: Warm, real_models_dir: Path) -> None:
    assert warm.loaded_on_first_use is True
    assert _cache_rows(warm.db) == len(HYBRID_QUERIES)
    session = Searcher.open(warm.db, None, model=None, max_length=None,
                           models_dir=real_models_dir, offline=True)
    try:
        again = session.query_vectors(list(HYBRID_QUERIES))
        assert session.loaded_model is False
    finally:
        session.close()
    for first, second in zip(warm.vectors, again, strict=True):
        assert np.array_equal(first, second)
    assert _cache_rows(warm.db) == len(HYBRID_QUERIES)
    # keys per search.md §4: SHA-256 of onnx digest \0 max_length \0 query prefix \0 text
    runtime = session.runtime
    assert (runtime.max_length, runtime.query_prefix) == (512, "query: ")
    assert runtime.sha256 and runtime.sha256 == session.meta["embedding_model_sha256"]
    keys = [hashlib.sha256("\x00".join((runtime.sha256, "512", "query: ", text)).encode())
            .hexdigest() for text in HYBRID_QUERIES]
    store = Store.open_readonly(warm.db)
    try:
        assert sorted(store.cache_get(keys)) == sorted(keys)
    finally:
        store.close()


def test_same_hits_without_the_vector_snapshot(warm: Warm, config_file: Path, tmp_path: Path,
                                               workdir: Path) -> None:
    bare = tmp_path / "index.db"
    for suffix in ("", "-wal"):
        source = warm.db.with_name(warm.db.name + suffix)
        if source.exists():
            shutil.copy2(source, bare.with_name(bare.name + suffix))
    assert not bare.with_name(bare.name + ".vectors.json").exists()
    args = ("retry budget", "--limit", "30", "--explain")
    with_snapshot = ok_json(groove(config_file, warm.db, *args))["results"]
    with_vec0 = ok_json(groove(config_file, bare, *args))["results"]
    assert [(h["path"], h["heading"], h["explain"]["vec_rank"]) for h in with_vec0] == [
        (h["path"], h["heading"], h["explain"]["vec_rank"]) for h in with_snapshot]


def test_index_force_empties_the_cache(warm: Warm, real_models_dir: Path, tmp_path: Path) -> None:
    # An empty KB: `--force` resets the index (cache included) before reading any file, and
    # with no file to embed the model is never loaded.
    db = _copy_index(warm.db, tmp_path)
    assert _cache_rows(db) == len(HYBRID_QUERIES)
    kb = tmp_path / "empty-kb"
    kb.mkdir()
    report = index_kb(IndexOptions(kb=kb, db=db, model=None,
                                   max_length=None, models_dir=real_models_dir, force=True,
                                   quiet=True, offline=True))
    assert (report.documents, report.chunks) == (0, 0)
    assert _cache_rows(db) == 0


def test_fts_mode_import_set_stays_light(golden_index: tuple[Path, Path], config_file: Path,
                                            workdir: Path) -> None:
    _, db = golden_index
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "groove_cli", "--config", str(config_file),
         "--db", str(db), "search", "retry budget", "--mode", "fts"],
        capture_output=True, text=True, cwd=workdir, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"]
    modules = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
               if line.startswith("import time:") and "|" in line}
    assert "groove_cli.retrieve.searcher" in modules  # the trace is real
    roots = {name.split(".")[0] for name in modules}
    assert "onnxruntime" not in roots
    assert "tokenizers" not in roots
    # typer 0.29 pulled pydantic into start-up (+0.12 s cold); constraints.txt pins it out
    assert "pydantic" not in roots
    assert "pydantic_core" not in roots


# --------------------------------------------------------------------------- real model


def test_english_query_finds_its_note_first(warm: Warm, config_file: Path, workdir: Path) -> None:
    before = _cache_rows(warm.db)
    doc = ok_json(groove(config_file, warm.db, EN_QUERY))
    top = doc["results"][0]
    assert (top["path"], top["heading"]) == ("team/reviews/code-review-guidelines.md",
                                             "Size of a pull request")
    assert _cache_rows(warm.db) == before  # served from the cache


def test_japanese_query_finds_its_note_first(warm: Warm, config_file: Path, workdir: Path) -> None:
    doc = ok_json(groove(config_file, warm.db, JA_QUERY))
    top = doc["results"][0]
    # the CJK leg and the vector leg both rank the hand-over section first: it holds アラート
    # twice and 最初 once (issue #13; the trigram leg ranked the section on alerts first)
    assert (top["path"], top["heading"]) == ("operations/oncall/障害対応手順.md", "引き継ぎ")
    # the phrases are アラート, が鳴ったら, ったら, 最初にやること, にやること; only アラート occurs
    starts = [m.start() for m in re.finditer("アラート", top["content"])]
    assert len(starts) == 2
    assert top["match_spans"] == [{"start": s, "end": s + len("アラート")} for s in starts]
    assert list(top) == HIT_KEYS


def test_japanese_spans_are_code_points(golden_index: tuple[Path, Path], config_file: Path,
                                        workdir: Path) -> None:
    doc = ok_json(groove(config_file, golden_index[1], "保存期間", "--mode", "fts", "--limit", "1"))
    top = doc["results"][0]
    assert top["path"] == "operations/backups/バックアップ設定.md"
    content = top["content"]
    expected = [m.start() for m in re.finditer("保存期間", content)]
    assert expected  # the heading word also occurs in the body
    assert top["match_spans"] == [{"start": s, "end": s + 4} for s in expected]


def test_exclusion_through_the_cli(warm: Warm, config_file: Path, workdir: Path) -> None:
    before = _cache_rows(warm.db)
    result = groove(config_file, warm.db, "backup restore steps -pg_dump", "--limit", "20",
                    "--explain")
    doc = ok_json(result)
    assert doc["results"]
    assert all("pg_dump" not in hit["content"].casefold() for hit in doc["results"])
    # all Latin: the word-level table; `pg_dump` is one word (a phrase pg + dump for FTS5);
    # score fusion (the default) prints the query's alpha first
    assert explain_lines(result)[1:4] == [
        "explain: alpha=0.8 (3 word terms <= 4)",
        "explain: fts skipped (no phrase)",
        'explain: words MATCH ("backup" OR "restore" OR "steps") NOT ("pg_dump")']
    # the embedder saw the positive text: its cached vector served this search
    assert _cache_rows(warm.db) == before
    # without the exclusion a pg_dump chunk is found
    plain = ok_json(groove(config_file, warm.db, "backup restore steps", "--limit", "20"))
    assert any("pg_dump" in hit["content"] for hit in plain["results"])


# --------------------------------------------------------------------------- presets, warnings


def test_preset_balanced_sets_the_depth_only(warm: Warm, config_file: Path,
                                            workdir: Path) -> None:
    # config.md §5: the preset's top-k, no floor, no leg weights, under either fusion
    result = groove(config_file, warm.db, "retry budget", "--preset", "balanced", "--explain")
    lines = explain_lines(result)
    assert lines[0] == ("explain: mode=hybrid preset=balanced fusion=score score_alpha=0.5 "
                        "score_alpha_short=0.8 score_alpha_mid=0.7 score_alpha_long=0.5 "
                        "short_query_words=4 mid_query_words=8 score_cjk_weight=1.0 "
                        "min_score=0.0")
    assert "explain: pool vec=40 fts=40 fused=5 (dropped by min_score: 0)" in lines
    assert "warning" not in result.stderr
    rrf = groove(config_file, warm.db, "retry budget", "--preset", "balanced", "--explain",
                 "--fusion", "rrf")
    doc = ok_json(rrf)
    lines = explain_lines(rrf)
    assert lines[0] == ("explain: mode=hybrid preset=balanced fusion=rrf rrf_k=60.0 "
                        "vector_weight=1.0 fts_weight=1.0 cjk_weight=6.0 min_score=0.0")
    assert lines[4].startswith("explain: pool vec=40 fts=40 ")  # the preset's top-k, no reranker
    assert "warning" not in rrf.stderr
    assert doc["results"]
    for hit in doc["results"]:
        e = hit["explain"]
        assert e["fts_rank"] is None  # "retry budget" is all Latin: the word leg, not trigram
        raw = 0.0  # leg order: vector, trigram, words; equal weights
        if e["vec_rank"] is not None:
            raw += 1.0 / (60.0 + e["vec_rank"])
        if e["fts_word_rank"] is not None:
            raw += 1.0 / (60.0 + e["fts_word_rank"])
        assert e["fused_raw"] == raw


def test_a_file_value_beats_the_preset(warm: Warm, real_models_dir: Path, tmp_path: Path,
                                       workdir: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n"
                      "[search.retrieval]\npreset = \"balanced\"\ndense_top_k = 30\n",
                      encoding="utf-8")
    result = groove(config, warm.db, "retry budget", "--explain")
    assert result.exit_code == 0, result.output
    assert "explain: pool vec=30 fts=40 fused=5 (dropped by min_score: 0)" in explain_lines(result)
    flagged = groove(config, warm.db, "retry budget", "--explain", "--dense-top-k", "25")
    assert "explain: pool vec=25 fts=40 fused=5 (dropped by min_score: 0)" in explain_lines(flagged)


def test_cjk_weight_flag_weighs_the_cjk_leg(warm: Warm, config_file: Path, workdir: Path) -> None:
    """--cjk-weight sets the CJK leg's weight (explain line and fused sums); 0 turns it off;
    a negative value is refused naming the flag."""
    result = groove(config_file, warm.db, "バックアップ設定", "--explain", "--cjk-weight", "2.5",
                    "--limit", "10", "--fusion", "rrf")
    doc = ok_json(result)
    assert explain_lines(result)[0] == ("explain: mode=hybrid preset=- fusion=rrf rrf_k=60.0 "
                                        "vector_weight=1.0 fts_weight=1.0 cjk_weight=2.5 "
                                        "min_score=0.0")
    assert any(h["explain"]["fts_cjk_rank"] is not None for h in doc["results"])
    for hit in doc["results"]:
        e = hit["explain"]
        raw = 0.0  # leg order: vector, trigram, words, CJK
        if e["vec_rank"] is not None:
            raw += 1.0 / (60.0 + e["vec_rank"])
        if e["fts_cjk_rank"] is not None:
            raw += 2.5 / (60.0 + e["fts_cjk_rank"])
        assert e["fts_rank"] is None and e["fts_word_rank"] is None
        assert e["fused_raw"] == raw
    off = groove(config_file, warm.db, "バックアップ設定", "--explain", "--cjk-weight", "0")
    assert "explain: cjk skipped (cjk_weight 0)" in explain_lines(off)
    assert all(h["explain"]["fts_cjk_rank"] is None for h in ok_json(off)["results"])
    bad = groove(config_file, warm.db, "バックアップ設定", "--cjk-weight", "-1")
    assert bad.exit_code == 2 and "--cjk-weight" in bad.stderr


def test_min_score_warning_and_dropped_count(warm: Warm, config_file: Path, workdir: Path) -> None:
    # weighted RRF with equal weights: a one-leg candidate reaches 0.5 (score fusion's ceiling
    # is tested in test_fusion_length.py); every fused candidate is returned (no relevance cut)
    every = workdir / "every-hit.toml"
    every.write_text(config_file.read_text() + "[search.relevance]\nunsupported_below = 0\n",
                     encoding="utf-8")
    config_file = every
    everything = ok_json(groove(config_file, warm.db, "retry budget", "--limit", "1000",
                                "--fusion", "rrf"))
    below = [h for h in everything["results"] if h["score"] < 0.6]
    assert below  # a tail to drop
    result = groove(config_file, warm.db, "retry budget", "--limit", "1000", "--min-score",
                    "0.6", "--explain", "--fusion", "rrf")
    doc = ok_json(result)
    assert [h["path"] for h in doc["results"]] == [
        h["path"] for h in everything["results"] if h["score"] >= 0.6]
    # limit 1000: P = 5000 per leg; the fused list keeps everything at or above 0.6
    assert (f"explain: pool vec=5000 fts=5000 fused={len(doc['results'])} "
            f"(dropped by min_score: {len(below)})") in explain_lines(result)
    assert ("groove: warning: min_score 0.6 exceeds 0.5000, the highest score a candidate found "
            "by the lower-weighted leg alone can reach; in hybrid mode such candidates are "
            "always dropped") in result.stderr.splitlines()


def test_no_min_score_warning_at_the_ceiling_or_outside_hybrid(
        golden_index: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    fts = groove(config_file, golden_index[1], "retry budget", "--mode", "fts", "--min-score",
                 "0.9")
    assert fts.exit_code == 0 and "warning" not in fts.stderr


def test_mmr_override_warnings(golden_index: tuple[Path, Path], config_file: Path,
                               workdir: Path) -> None:
    db = golden_index[1]
    off = groove(config_file, db, "retry budget", "--mode", "fts", "--mmr-lambda", "0.5")
    assert off.exit_code == 0
    assert ("groove: warning: MMR override values were provided but effective MMR is off; "
            "values ignored") in off.stderr.splitlines()
    on = groove(config_file, db, "retry budget", "--mode", "fts", "--mmr", "true",
                "--mmr-lambda", "1.0", "--format", "files")
    assert on.exit_code == 0
    assert "effective MMR is off" not in on.stderr
    assert ("groove: warning: MMR lambda 1.0 with no same-doc penalty ranks by relevance only"
            in on.stderr.splitlines())


def test_phrase_cap_warning_once(golden_index: tuple[Path, Path], config_file: Path,
                                 workdir: Path) -> None:
    words = [f"word{i:02d}" for i in range(33)]
    result = groove(config_file, golden_index[1], " ".join(words), "--mode", "fts", "--explain")
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("groove: warning:")]
    assert warnings == ["groove: warning: the query has more than 32 distinct phrases; only the "
                        "first 32 are searched"]
    assert explain_lines(result)[1:4] == [
        "explain: alpha=0.5 (32 word terms > 8)",
        "explain: fts skipped (no phrase)",
        "explain: words MATCH " + " OR ".join(f'"{w}"' for w in words[:32])]


# --------------------------------------------------------------------------- output formats


def test_json_shape_exactly(golden_index: tuple[Path, Path], config_file: Path,
                            workdir: Path) -> None:
    result = groove(config_file, golden_index[1], "Blameless", "--mode", "fts", "--limit", "1")
    doc = ok_json(result)
    assert result.stdout == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    assert list(doc) == ["schema_version", "query", "results", "low_confidence", "filter_applied"]
    # "Blameless" is only in the heading: spans are computed, and empty
    assert doc == {
        "schema_version": 2,
        "query": "Blameless",
        "results": [{
            "score": 1.0,
            "relevance": None,  # fts mode: no cosine, no relevance
            "path": "incidents/incident-review-process.md",
            "abs_path": str(golden_index[0] / "incidents" / "incident-review-process.md"),
            "line_start": 1,
            "line_end": 3,
            "title": "Blameless by default",  # its first heading
            "heading": "Blameless by default",
            "topic": None,
            "date": None,
            "tags": [],
            "content": ("An incident review looks for the conditions that made a mistake easy, "
                        "not for the person who made it. People who were on call speak first, "
                        "and nobody is asked why they \"didn't just\" do something."),
            "stale": False,
            "match_spans": [],
        }],
        "low_confidence": False,
        "filter_applied": {},
    }
    assert list(doc["results"][0]) == HIT_KEYS


def test_json_tags_and_non_ascii_unescaped(golden_index: tuple[Path, Path], config_file: Path,
                                           workdir: Path) -> None:
    result = groove(config_file, golden_index[1], "再試行", "--mode", "fts", "--limit", "1")
    doc = ok_json(result)
    assert doc["results"][0]["tags"] == ["reliability", "タイムアウト"]
    assert "タイムアウト" in result.stdout and "\\u" not in result.stdout


def test_json_expanded_from_only_with_parent_retriever(golden_index: tuple[Path, Path],
                                                       config_file: Path, workdir: Path) -> None:
    db = golden_index[1]
    doc = ok_json(groove(config_file, db, "Blameless", "--mode", "fts", "--limit", "1",
                         "--parent-retriever", "true"))
    hit = doc["results"][0]
    assert list(hit) == [*HIT_KEYS, "expanded_from"]
    store = Store.open_readonly(db)
    try:
        rows = store.con.execute(
            "SELECT c.content FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE d.path = 'incidents/incident-review-process.md' ORDER BY c.chunk_index"
        ).fetchall()
    finally:
        store.close()
    assert hit["content"] == "\n\n".join(str(r[0]) for r in rows)
    assert hit["expanded_from"] == {"kind": "whole_document", "chunk_index": 0,
                                    "total_chunks": len(rows)}
    assert hit["score"] == 1.0 and hit["heading"] == "Blameless by default"


def test_json_explain_object(golden_index: tuple[Path, Path], config_file: Path,
                             workdir: Path) -> None:
    result = groove(config_file, golden_index[1], "retry budget", "--mode", "fts", "--explain",
                    "--parent-retriever", "true", "--fusion", "rrf")
    doc = ok_json(result)
    first = doc["results"][0]
    assert list(first) == [*HIT_KEYS, "expanded_from", "explain"]
    assert list(first["explain"]) == EXPLAIN_KEYS
    assert first["explain"] == {"fts_rank": None, "fts_word_rank": 1, "fts_cjk_rank": None,
                                "vec_rank": None, "fused_rank": 1, "fused_raw": 1.0 / 61.0,
                                "fused_score": 1.0, "rerank_rank": None, "rerank_score": None,
                                "mmr_rank": None, "fusion": "rrf", "alpha": None,
                                "leg_scores": None}
    assert [h["explain"]["fts_word_rank"] for h in doc["results"]] == [1, 2, 3, 4, 5]
    lines = explain_lines(result)
    assert len(lines) == 6
    assert lines[0] == ("explain: mode=fts preset=- fusion=rrf rrf_k=60.0 vector_weight=1.0 "
                        "fts_weight=1.0 cjk_weight=6.0 min_score=0.0")
    assert lines[1] == "explain: fts skipped (no phrase)"
    assert lines[2] == 'explain: words MATCH "retry" OR "budget"'
    assert lines[3] == "explain: cjk skipped (no CJK text)"
    assert lines[4] == "explain: pool vec=- fts=50 fused=5 (dropped by min_score: 0)"
    assert re.fullmatch(r"explain: timings ms: embed=- vec=- fts=\d+\.\d fuse=\d+\.\d "
                        r"feedback=- rerank=- mmr=- parent=\d+\.\d spans=\d+\.\d "
                        r"total=\d+\.\d", lines[5]), lines[5]


def test_explain_of_a_mixed_script_query(golden_index: tuple[Path, Path], config_file: Path,
                                         workdir: Path) -> None:
    # CJK text goes to the CJK table (issue #13), its Latin words too (issue #25: no word leg)
    result = groove(config_file, golden_index[1], "retry budget の設定", "--mode", "fts",
                    "--explain", "--limit", "10", "--fusion", "rrf")
    doc = ok_json(result)
    assert explain_lines(result)[1:5] == [
        "explain: fts skipped (no phrase)",
        "explain: words skipped (no Latin word, or CJK text)",
        'explain: cjk MATCH "retry" OR "budget" OR "の設" OR "設" OR "設定" OR "定"',
        "explain: pool vec=- fts=50 fused=10 (dropped by min_score: 0)"]
    assert doc["results"]
    for hit in doc["results"]:
        e = hit["explain"]
        raw = 6.0 / (60.0 + e["fts_cjk_rank"])  # the CJK leg alone, weight 6
        assert (e["vec_rank"], e["fts_rank"], e["fts_word_rank"]) == (None, None, None)
        assert e["fused_raw"] == raw and hit["score"] == raw / (6.0 / 61.0)


def test_explain_without_a_phrase(golden_index: tuple[Path, Path], config_file: Path,
                                  workdir: Path) -> None:
    # one letter: no trigram phrase, no word of 2+ letters (`ab` would now reach fts_words)
    result = groove(config_file, golden_index[1], "x", "--mode", "fts", "--explain")
    doc = ok_json(result)
    assert doc["results"] == []
    assert ("groove: note: the query has no full-text phrase of 3 or more characters nor a "
            "Latin word of 2 or more letters, and the vector leg is off; nothing to search"
            ) in result.stderr.splitlines()
    assert explain_lines(result)[1:4] == ["explain: alpha=0.8 (0 word terms <= 4)",
                                          "explain: fts skipped (no phrase)",
                                          "explain: words skipped (no Latin word, or CJK text)"]
    two = groove(config_file, golden_index[1], "ab", "--mode", "fts", "--explain")
    assert ok_json(two)["results"] == [] and "nothing to search" not in two.stderr
    assert explain_lines(two)[1:4] == ["explain: alpha=0.8 (1 word terms <= 4)",
                                       "explain: fts skipped (no phrase)",
                                       'explain: words MATCH "ab"']


def _first_h1(file: str) -> str | None:
    heads = [line[2:] for line in Path(file).read_text(encoding="utf-8").splitlines()
             if line.startswith("# ")]
    return heads[0] if heads else None


def _text_block(hit: dict[str, Any]) -> str:
    """One hit in the cli.md §5.2 layout with --full (the sample KB's headings are all h2)."""
    where = f"{os.path.relpath(hit['abs_path'])}:{hit['line_start']}"
    title = hit["title"] or _first_h1(hit["abs_path"]) or hit["path"].rsplit("/", 1)[-1]
    lines = [f"# {title}",
             f"{where}  § {hit['heading']}" if hit["heading"] else where,
             f"score: {hit['score']:.4f}"]
    if hit["tags"]:
        lines.append("tags: " + ", ".join(hit["tags"]))
    if hit["match_spans"]:
        texts = [hit["content"][s["start"]:s["end"]] for s in hit["match_spans"][:3]]
        lines.append("match_spans: " + ", ".join(f'"{t}"' for t in texts))
    return "\n".join([*lines, "", hit["content"]])


def test_text_format(golden_index: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    db = golden_index[1]
    args = ("retry budget", "--mode", "fts", "--limit", "3", "--min-confidence-ratio", "1.5")
    doc = ok_json(groove(config_file, db, *args))
    text = groove(config_file, db, *args, "--format", "text", "--full")
    assert text.exit_code == 0
    assert doc["low_confidence"] is True
    expected = ("[weak match: no hit stands out from the rest (max / mean score below 1.5)]\n\n"
                + "\n\n---\n\n".join(_text_block(h) for h in doc["results"]) + "\n")
    assert text.stdout == expected
    assert text.stdout.splitlines()[2:7] == [
        "# Retry budgets",
        f"{os.path.relpath(doc['results'][0]['abs_path'])}:10  § How a retry budget works",
        "score: 1.0000",
        "tags: reliability, retries",
        'match_spans: "retry", "budget"',
    ]


def test_text_format_without_low_confidence_and_with_explain(
        golden_index: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    result = groove(config_file, golden_index[1], "Blameless", "--mode", "fts", "--limit", "1",
                    "--format", "text", "--explain", "--min-confidence-ratio", "0")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[:5] == [
        "# Blameless by default",
        f"{os.path.relpath(golden_index[0])}/incidents/incident-review-process.md:1"
        "  § Blameless by default",
        "score: 1.0000",
        "explain: fts=- words=#1 cjk=- vec=- fused=#1 (1.0000) rerank=- mmr=- "
        "scores: words=1.0000",
        "",
    ]


def _thought_hits(db: Path, doc: DocumentRow,
                  rows: list[ChunkRow]) -> tuple[SearchResult, SearchParams]:
    """A hand-made one-document index (2-dim vectors) searched for "thought" in fts mode."""
    store = Store.open_for_index(db)
    store.create_vec_table(2)
    with store.transaction():
        vectors = np.eye(len(rows), 2, dtype=np.float32)
        store.write_document(doc, rows, vectors, None)
    store.close()
    reader = Store.open_readonly(db)
    try:
        params = SearchParams(mode="fts", min_confidence_ratio=0.0, fusion="rrf")  # RRF scores
        result = search(reader, compile_query("thought"), params, vector=None,
                        knn=reader.vec_search, dim=2)
    finally:
        reader.close()
    return result, params


def test_text_format_heading_less_hit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a hand-made index: no title, no heading, no tags; the text shows the bare path
    result, params = _thought_hits(
        tmp_path / "index.db", DocumentRow("loose.md", None, None, None, None, (), None, "h", 1, "t"),
        [ChunkRow(0, None, None, (), "a loose thought", None, 4, 1.0),
         ChunkRow(1, "Later", 2, (), "another thought", None, 4, 1.0)])
    print_search(Results("q", result, params), "text", explain=False, full=True)
    assert capsys.readouterr().out == (
        "# loose.md\nloose.md\nscore: 1.0000\nmatch_spans: \"thought\"\n\na loose thought"
        "\n\n---\n\n"
        "# loose.md\nloose.md  § Later\nscore: 0.9839\nmatch_spans: \"thought\"\n\nanother thought"
        "\n")
    # the default: snippets, one blank line between hits, no match_spans line
    print_search(Results("q", result, params), "text", explain=False)
    assert capsys.readouterr().out == (
        "# loose.md\nloose.md\nscore: 1.0000\n\n  a loose thought\n\n"
        "# loose.md\nloose.md  § Later\nscore: 0.9839\n\n  another thought\n")


def test_files_format_prints_each_path_once(golden_index: tuple[Path, Path], config_file: Path,
                                            workdir: Path) -> None:
    db = golden_index[1]
    args = ("retry", "--mode", "fts", "--limit", "10")
    many = ok_json(groove(config_file, db, "retry", "--mode", "fts", "--limit", "1000"))
    unique = list(dict.fromkeys(os.path.relpath(h["abs_path"]) for h in many["results"]))
    assert len(unique) < 10 < len(many["results"])  # fewer notes than hits: one has several
    first_ten = ok_json(groove(config_file, db, *args))["results"]
    assert len({h["path"] for h in first_ten}) < len(unique)  # 10 hits do not show every file
    files = groove(config_file, db, *args, "--format", "files", "--explain",
                   "--min-confidence-ratio", "1.5")
    assert files.exit_code == 0
    # hits collapse to files: more hits are fetched to fill the limit, and the shortfall is said
    assert files.stdout == "".join(f"{p}\n" for p in unique)
    assert (f"groove: note: {len(unique)} files, not 10: the {len(many['results'])} hits found "
            "are all in these files (hits collapse to files)") in files.stderr.splitlines()
    paths = [h["path"] for h in many["results"]]
    assert ("groove: note: weak match: no hit stands out from the rest (max / mean score below "
            "1.5)") in files.stderr.splitlines()
    per_hit = [line for line in files.stderr.splitlines() if ": explain: fts=" in line]
    assert len(per_hit) == len(paths)
    assert per_hit[0] == (f"{paths[0]}: explain: fts=- words=#1 cjk=- vec=- fused=#1 (1.0000) "
                          "rerank=- mmr=- scores: words=1.0000")


# --------------------------------------------------------------------------- filters


def test_filters_and_filter_applied(golden_index: tuple[Path, Path], config_file: Path,
                                    workdir: Path) -> None:
    doc = ok_json(groove(
        config_file, golden_index[1], "retry", "--mode", "fts", "--limit", "20",
        "--category", "team", "--topic", "reliability", "--path-glob", "team/**",
        "--path-glob", "!**/2025-03-04-*", "--tag-any", "meeting,retries", "--tag-all", "retries",
        "--date-from", "2025-03-01", "--date-to", "2025-03-31", "--min-confidence-ratio", "2"))
    assert {h["path"] for h in doc["results"]} == {
        "team/meetings/2025-03-18-retry-budget-follow-up.md"}
    assert list(doc["filter_applied"].items()) == [
        ("category", "team"),
        ("topic", "reliability"),
        ("path_globs", ["team/**", "!**/2025-03-04-*"]),
        ("tags_any", ["meeting", "retries"]),
        ("tags_all", ["retries"]),
        ("date_from", "2025-03-01"),
        ("date_to", "2025-03-31"),
        ("min_confidence_ratio", 2.0),
    ]


@pytest.mark.parametrize(("flags", "found"), [
    ((), False),  # default threshold 0.3 drops the 0.1 attendee line
    (("--include-low-quality",), True),
    (("--min-quality", "0.05"), True),
    (("--min-quality", "0.5", "--include-low-quality"), True),  # --include-low-quality wins
    (("--min-quality", "-3"), True),  # clamped to 0
])
def test_quality_threshold(golden_index: tuple[Path, Path], config_file: Path, workdir: Path,
                           flags: tuple[str, ...], found: bool) -> None:
    # quoted: exactly 参加者 (unquoted, the CJK leg also ranks every note sharing 参, 加 or 者)
    doc = ok_json(groove(config_file, golden_index[1], '"参加者"', "--mode", "fts", *flags))
    paths = [h["path"] for h in doc["results"]]
    assert paths == (["team/meetings/2025-05-12-検索品質定例.md"] if found else [])
    assert doc["filter_applied"] == {}


def test_quality_filter_disabled_in_config(golden_index: tuple[Path, Path], real_models_dir: Path,
                                           tmp_path: Path, workdir: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n"
                      "[quality_filter]\nenabled = false\n", encoding="utf-8")
    doc = ok_json(groove(config, golden_index[1], '"参加者"', "--mode", "fts"))
    assert [h["path"] for h in doc["results"]] == ["team/meetings/2025-05-12-検索品質定例.md"]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("query", "message"), [
    ("", "the query is empty"),
    ("   ", "the query is empty"),
    ("-async", "the query contains only exclusions (-term); add at least one term to search for"),
    ('-async -"retry budget"',
     "the query contains only exclusions (-term); add at least one term to search for"),
])
def test_refused_queries(golden_index: tuple[Path, Path], config_file: Path, workdir: Path,
                         query: str, message: str) -> None:
    result = groove(config_file, golden_index[1], "--", query)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"groove: error: {message}\n"


def test_malformed_glob(golden_index: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    result = groove(config_file, golden_index[1], "retry", "--path-glob", "[abc")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert 'groove: error: invalid path_glob pattern: "[abc"' in result.stderr.splitlines()


def test_limit_zero_is_a_usage_error(golden_index: tuple[Path, Path], config_file: Path,
                                     workdir: Path) -> None:
    result = groove(config_file, golden_index[1], "retry", "--limit", "0")
    assert result.exit_code == 2
    assert result.stdout == ""


def test_limit_above_1000_is_clamped_with_a_note(golden_index: tuple[Path, Path],
                                                 config_file: Path, workdir: Path) -> None:
    result = groove(config_file, golden_index[1], "retry", "--mode", "fts", "--limit", "5000",
                    "--explain")
    doc = ok_json(result)
    assert "groove: note: --limit 5000 clamped to 1000" in result.stderr.splitlines()
    assert explain_lines(result)[5].startswith("explain: pool vec=- fts=5000 ")  # P = 1000 × 5
    assert 5 < len(doc["results"]) <= 1000


def test_no_index(config_file: Path, tmp_path: Path, workdir: Path) -> None:
    db = tmp_path / "missing.db"
    result = groove(config_file, db, "retry")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert (f"groove: error: no index found at {db}. Run `groove index --kb-path <path>` first."
            in result.stderr.splitlines())
    kb = tmp_path / "kb"
    kb.mkdir()
    by_kb = runner.invoke(app, ["--config", str(config_file), "search", "retry", "--kb-path",
                                str(kb)])
    assert by_kb.exit_code == 1
    assert (f"groove: error: no index found at {kb / '.groove' / 'index.db'}. Run `groove index "
            f"--kb-path {kb}` first.") in by_kb.stderr.splitlines()
    assert not (kb / ".groove").exists()  # search never creates an index or its folder


# --------------------------------------------------------------------------- issue 15


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_a_query_that_is_not_utf8_is_a_usage_error(golden_index: tuple[Path, Path],
                                                   config_file: Path, workdir: Path,
                                                   mode: str) -> None:
    """Item 1: bytes that are not UTF-8 reached the FTS leg and the query-cache key."""
    result = groove(config_file, golden_index[1], "--mode", mode, "--", "\udce9\udce9\udce9")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == (
        "groove: error: the query is not valid UTF-8 text (byte 0xe9 at character 1)")


def test_raw_non_utf8_bytes_on_the_command_line(golden_index: tuple[Path, Path],
                                                config_file: Path, workdir: Path) -> None:
    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"groove_cli", b"--config", bytes(config_file),
         b"--db", bytes(golden_index[1]), b"search", b"--mode", b"fts", b"\xe9\xe9\xe9"],
        capture_output=True, cwd=workdir, timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"Traceback" not in proc.stderr
    assert b"groove: error: the query is not valid UTF-8 text (byte 0xe9" in proc.stderr


def test_a_date_bound_that_is_not_a_date(golden_index: tuple[Path, Path], config_file: Path,
                                         workdir: Path) -> None:
    """Item 3: "yesterday" returned 0 hits with exit 0."""
    result = groove(config_file, golden_index[1], "retry", "--date-from", "yesterday")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert ('groove: error: --date-from "yesterday" is not an ISO-8601 date'
            in result.stderr.splitlines())


def test_control_characters_are_escaped_in_text_and_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 10: a path holding a newline printed as two lines in --format files, and a note's
    ESC/BEL/NUL reached the terminal; JSON stays exact."""
    result, params = _thought_hits(
        tmp_path / "index.db",
        DocumentRow("evil\nname.md", "T\x1b[2J", None, None, None, ("a\x07",), None, "h", 1, "t"),
        [ChunkRow(0, "H\x00", 2, (), "ring \x07 the thought\x1b]0;x\x07", None, 4, 1.0)])
    print_search(Results("q", result, params), "files", explain=False)
    assert capsys.readouterr().out == "evil\\nname.md\n"
    print_search(Results("q", result, params), "text", explain=False, full=True)
    assert capsys.readouterr().out == (
        "# T\\x1b[2J\nevil\\nname.md  § H\\x00\nscore: 1.0000\ntags: a\\x07\n"
        "match_spans: \"thought\"\n\nring \\x07 the thought\\x1b]0;x\\x07\n")
    print_search(Results("q", result, params), "text", explain=False)
    assert capsys.readouterr().out == (
        "# T\\x1b[2J\nevil\\nname.md  § H\\x00\nscore: 1.0000\ntags: a\\x07\n"
        "\n  ring \\x07 the thought\\x1b]0;x\\x07\n")
    print_search(Results("q", result, params), "json", explain=False)
    hit = json.loads(capsys.readouterr().out)["results"][0]
    assert (hit["path"], hit["title"], hit["content"]) == (
        "evil\nname.md", "T\x1b[2J", "ring \x07 the thought\x1b]0;x\x07")


# --------------------------------------------------------------------------- locations


def hits_and_locations(config: Path, db: Path, *args: str
                       ) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON hits of a search and the location lines its text format prints."""
    hits = ok_json(groove(config, db, *args))["results"]
    text = groove(config, db, *args, "--format", "text").stdout.splitlines()
    return hits, [line for line in text if re.match(r"^\S+\.md:\d+", line)]


def test_text_locations_open_at_the_hit(golden_index: tuple[Path, Path], config_file: Path,
                                        workdir: Path) -> None:
    # every `path:line` the text format prints opens, from the working directory, at the
    # hit's first line: its heading, or the first line of its content
    hits, shown = hits_and_locations(config_file, golden_index[1], "retry budget", "--mode",
                                     "fts", "--limit", "8")
    assert len(shown) == len(hits) >= 5
    for line, hit in zip(shown, hits, strict=True):
        where = line.split("  § ")[0]
        path, number = where.rsplit(":", 1)
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        first = lines[int(number) - 1]
        if hit["heading"]:
            assert first.strip() in (f"## {hit['heading']}", f"### {hit['heading']}")
        else:
            assert first.strip() == hit["content"].split("\n")[0]
        last = lines[hit["line_end"] - 1]
        assert last.strip() and last.strip() in hit["content"]
        assert Path(hit["abs_path"]).is_absolute()
        assert Path(hit["abs_path"]).samefile(path)


def test_files_format_paths_open_from_the_working_directory(
        golden_index: tuple[Path, Path], config_file: Path, workdir: Path) -> None:
    files = groove(config_file, golden_index[1], "backup", "--format", "files", "--mode", "fts")
    printed = files.stdout.splitlines()
    assert printed and all(Path(p).is_file() for p in printed)
    assert not Path(printed[0]).is_absolute()
