"""The CJK full-text table through `groove index`, `search` and `eval` (issue #13): migration 3
backfills an older index without re-embedding, rows are written with the chunks, and search and
eval rank Japanese queries through the same legs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from groove_cli.store import SCHEMA_VERSION
from groove_cli.text.cjk import row_text
from tests.test_index import Groove, chunk_ids, make_groove, meta, rows, write_kb
from tests.test_status_doctor import tiny_model, writable  # noqa: F401 (a fixture)

JA_FILES = {
    "ja/eval.md": "# 評価\n\n再ランキングの評価方法について説明します。検索結果の順位を比べます。\n",
    "ja/index.md": "# 索引\n\n索引は毎晩作り直します。データベースの設定を確認してください。\n",
    "en/notes.md": "# Notes\n\nThe retry budget protects the database during nightly backups.\n",
}


@pytest.fixture
def ja(tiny_model: Path, workdir: Path, tmp_path: Path) -> Groove:  # noqa: F811 (fixture)
    groove = make_groove(workdir, tmp_path, tiny_model)
    write_kb(groove.kb, JA_FILES)
    result = groove.index()
    assert result.exit_code == 0, result.stderr
    return groove


def search_paths(groove: Groove, *args: str) -> list[str]:
    result = groove.run("search", *args, "--format", "json", "--include-low-quality",
                        "--kb-path", str(groove.kb))
    assert result.exit_code == 0, result.stderr
    return list(dict.fromkeys(hit["path"] for hit in json.loads(result.stdout)["results"]))


def test_index_writes_the_cjk_rows_with_the_chunks(ja: Groove) -> None:
    chunks = {int(str(r[0])): str(r[1]) for r in rows(ja.db, "SELECT id, content FROM chunks")}
    assert {int(str(r[0])) for r in rows(ja.db, "SELECT rowid FROM fts_cjk")} == set(chunks)
    assert meta(ja.db)["cjk_tokeniser_version"] == "1"
    (eval_id,) = chunk_ids(ja.db, "ja/eval.md")
    # contentless: the tokens are checked through a match on each of them
    for token in row_text(chunks[eval_id]).split()[:12]:
        found = rows(ja.db, "SELECT rowid FROM fts_cjk WHERE fts_cjk MATCH ?", (f'"{token}"',))
        assert eval_id in {int(str(r[0])) for r in found}


def test_migration_3_backfills_an_old_index_without_re_embedding(ja: Groove) -> None:
    db = ja.db
    vectors = rows(db, "SELECT chunk_id, embedding FROM vec_chunks ORDER BY chunk_id")
    with writable(db) as con:  # what a schema-2 groove wrote: no fts_cjk, no tokeniser version,
        con.execute("DROP TABLE fts_cjk")  # no chunk lines (migration 0004), no pieces (0005)
        con.execute("DROP TABLE chunk_pieces")
        con.execute("ALTER TABLE chunks DROP COLUMN pieces")
        con.execute("ALTER TABLE chunks DROP COLUMN line_start")
        con.execute("ALTER TABLE chunks DROP COLUMN line_end")
        con.execute("DELETE FROM index_meta WHERE key = 'cjk_tokeniser_version'")
        con.execute("PRAGMA user_version = 2")
    refused = ja.run("search", "評価", "--kb-path", str(ja.kb))
    assert refused.exit_code == 1
    assert "uses schema version 2; run `groove index" in refused.stderr

    again = ja.index_ok()
    assert "Backfilled" not in again.stderr  # the migration itself filled the table
    assert "0 updated" in again.stderr.splitlines()[-1]
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)] and SCHEMA_VERSION == 5
    assert rows(db, "SELECT chunk_id, embedding FROM vec_chunks ORDER BY chunk_id") == vectors
    chunks = {int(str(r[0])) for r in rows(db, "SELECT id FROM chunks")}
    assert {int(str(r[0])) for r in rows(db, "SELECT rowid FROM fts_cjk")} == chunks
    assert search_paths(ja, "評価", "--mode", "fts") == ["ja/eval.md"]


def test_a_changed_tokeniser_version_re_tokenises_on_the_next_index(ja: Groove) -> None:
    with writable(ja.db) as con:
        con.execute("DELETE FROM fts_cjk")
        con.execute("UPDATE index_meta SET value = '0' WHERE key = 'cjk_tokeniser_version'")
    again = ja.index_ok()
    assert "Backfilled 3 chunks into FTS index" in again.stderr
    assert meta(ja.db)["cjk_tokeniser_version"] == "1"
    assert search_paths(ja, "毎晩", "--mode", "fts") == ["ja/index.md"]


def test_two_character_words_and_exclusions(ja: Groove) -> None:
    # 評価 and 設定 are 2-character words the trigram table could never match alone
    assert search_paths(ja, "評価", "--mode", "fts") == ["ja/eval.md"]
    assert search_paths(ja, "設定", "--mode", "fts") == ["ja/index.md"]
    # 索 is in both 索引 and 検索結果: a 1-character query finds both
    assert sorted(search_paths(ja, "索", "--mode", "fts")) == ["ja/eval.md", "ja/index.md"]
    # -評価 / -晩 / -索 exclude every chunk holding them, in every mode (issue #13: 2- and
    # 1-character exclusions)
    for mode in ("fts", "hybrid", "vector"):
        found = search_paths(ja, "データベース -評価", "--mode", mode)
        assert "ja/eval.md" not in found and "ja/index.md" in found
        found = search_paths(ja, "データベース 評価 -晩", "--mode", mode)
        assert "ja/index.md" not in found and "ja/eval.md" in found
        found = search_paths(ja, "データベース 評価 retry -索", "--mode", mode)
        assert found == ["en/notes.md"]


def test_search_and_eval_rank_japanese_queries_alike(ja: Groove, tmp_path: Path) -> None:
    """eval scores exactly the hits search returns, CJK leg included (both modes)."""
    queries = ["評価の方法", "データベースの設定", "retry budget の設定", "毎晩 -評価"]
    golden = tmp_path / "golden.yml"
    golden.write_text(yaml.safe_dump({"queries": [
        {"id": f"q{i}", "query": q, "expected": [{"path": "ja/eval.md"}]}
        for i, q in enumerate(queries)]}, allow_unicode=True), encoding="utf-8")
    for mode in ("fts", "hybrid"):
        result = ja.run("eval", "--kb-path", str(ja.kb), "--golden", str(golden), "--mode", mode,
                        "--format", "json", "--no-history", "--limit", "3")
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["fingerprint"]["fts_query_version"] == 5
        per_query = {q["id"]: [h["path"] for h in q["top_k"]] for q in report["per_query"]}
        for i, query in enumerate(queries):
            found = search_paths(ja, query, "--mode", mode, "--limit", "3")
            assert per_query[f"q{i}"] == found, (mode, query)
