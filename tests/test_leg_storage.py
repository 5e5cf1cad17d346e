"""Each full-text leg's storage is declared once (store/fts_tables.py, issue 38), and the rest
keeps in step with it: every leg reads a declared table; the SQLite migrations create exactly
the declared FTS5 tables with their tokenizers, and the Postgres migrations exactly their
columns; no store module outside the declarations names a table or a column by hand; the
Postgres store re-tokenises a declared table as SQLite does (docs/design/code.md "Adding a
leg").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groove_cli.retrieve.legs import registered
from groove_cli.store import Store
from groove_cli.store.fts_tables import TABLES, FtsTable, TokeniserVersion, named
from groove_cli.store.postgres import schema
from groove_cli.types import ChunkRow, DocumentRow

REPO = Path(__file__).resolve().parent.parent
NEW_TABLE = FtsTable("fts_test", "unicode61 remove_diacritics 2", "test", postings_code=9,
                     version=TokeniserVersion("test_tokeniser_version", "1"))
"""A table declared after migration 1, as a new leg would declare it."""


def _hand_written(table: FtsTable) -> set[str]:
    """The names a store module must take from the declaration rather than write itself."""
    names = {table.name, *table.pg_columns, table.pg_length, table.pg_total}
    return names | ({table.sql_function} if table.sql_function else set())


def _named_by_hand(text: str, names: set[str]) -> list[str]:
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    return [f"{n}: {m.group(0)}" for n, line in enumerate(text.splitlines(), 1)
            for m in pattern.finditer(line)]


# --------------------------------------------------------------------------- the declarations


def test_every_leg_reads_one_declared_table_in_fusion_order() -> None:
    assert [leg.storage for leg in registered()] == list(TABLES)
    assert [leg.table for leg in registered()] == [table.name for table in TABLES]
    for field in ("name", "pg_prefix", "sql_function"):
        values = [getattr(t, field) for t in TABLES if getattr(t, field) is not None]
        assert len(values) == len(set(values)), field
    codes = [t.postings_code for t in TABLES if t.postings_code is not None]
    assert len(codes) == len(set(codes)) and 0 not in codes
    assert all(t.postings_code is None for t in TABLES if t.substrings)
    assert named("fts_words") is TABLES[1]
    with pytest.raises(ValueError, match="not an FTS table"):
        named("documents")


def test_a_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="postings code"):
        FtsTable("fts_x", "unicode61", "x")
    with pytest.raises(ValueError, match="go together"):
        FtsTable("fts_x", "unicode61", "x", postings_code=5, sql_function="groove_x")
    assert FtsTable("fts_x", "trigram case_sensitive 0", "x").substrings
    assert NEW_TABLE.tokenizer == ("unicode61", ["remove_diacritics", "2"])
    assert NEW_TABLE.value == "?" and TABLES[2].value == "groove_cjk(?)"


# --------------------------------------------------------------------------- SQLite


def test_a_fresh_sqlite_index_holds_exactly_the_declared_tables(tmp_path: Path) -> None:
    store = Store.open_for_index(tmp_path / "index.db")
    try:
        virtual = {str(name): str(sql) for name, sql in store.con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%'")}
        fts5 = {name: sql for name, sql in virtual.items()
                if re.search(r"\bUSING\s+fts5\b", sql, re.IGNORECASE)}
        assert set(fts5) == {table.name for table in TABLES}
        for table in TABLES:
            tokenize = re.search(r"tokenize\s*=\s*'([^']*)'", fts5[table.name])
            assert tokenize is not None and tokenize.group(1) == table.tokenize, table.name
            columns = [str(r[1]) for r in store.con.execute(f"PRAGMA table_info({table.name})")]
            assert columns == ["heading", "context", "content"], table.name
            if table.sql_function is not None and table.prepare is not None:
                found = store.con.execute(f"SELECT {table.sql_function}(?)", ("評価 ＡＢＣ",))
                assert found.fetchall()[0][0] == table.prepare("評価 ＡＢＣ")
        with store.transaction():
            store.backfill_fts()
        meta = store.meta()
        assert all(meta[t.version.key] == t.version.version for t in TABLES if t.version)
    finally:
        store.close()


# --------------------------------------------------------------------------- Postgres, as SQL


def _migrations_sql() -> str:
    return re.sub(r"--[^\n]*", "", "\n".join(sql for _, sql in schema.MIGRATIONS))


def test_the_postgres_migrations_declare_exactly_the_declared_columns() -> None:
    sql = _migrations_sql()
    prefixes = {t.pg_prefix for t in TABLES}
    for suffix, kind in (("heading", "text"), ("context", "text"), ("content", "text"),
                         ("len", "integer"), ("tokens", "bigint")):
        found = set(re.findall(rf"\b(\w+)_{suffix}\s+{kind}\s+NOT NULL", sql))
        assert found == prefixes, (suffix, found)
    for table in TABLES:
        if table.substrings:  # pg_trgm's index over the folded columns
            assert ", ".join(f"{c} gin_trgm_ops" for c in table.pg_columns) in sql


def test_a_later_table_declares_its_postgres_migration() -> None:
    later = dataclasses.replace(NEW_TABLE, pg_migration=schema.SCHEMA_VERSION + 1)
    derived = schema.migrations((*TABLES, later))
    assert [number for number, _ in derived] == list(range(1, schema.SCHEMA_VERSION + 2))
    assert derived[-1] == (schema.SCHEMA_VERSION + 1, schema.add_table_sql(later))
    assert schema.migrations(TABLES) == schema.MIGRATIONS  # today's tables: migration 1 only
    with pytest.raises(ValueError, match="numbered 1, 2"):  # a gap or a clash is refused
        schema.migrations((*TABLES, dataclasses.replace(later, pg_migration=1)))


def test_a_later_table_gets_its_columns_from_its_declaration() -> None:
    sql = schema.add_table_sql(NEW_TABLE)
    assert re.findall(r"ADD COLUMN (\w+)", sql) == [NEW_TABLE.pg_total, *NEW_TABLE.pg_columns,
                                                     NEW_TABLE.pg_length]
    with pytest.raises(ValueError, match="needs a version"):
        schema.add_table_sql(FtsTable("fts_x", "unicode61", "x", postings_code=8))


# --------------------------------------------------------------------------- no names by hand


def test_no_store_module_names_a_table_or_column_by_hand() -> None:
    names = set().union(*(_hand_written(table) for table in TABLES))
    assert _named_by_hand('x = "fts_words"  # cjk_len', names) == ["1: fts_words", "1: cjk_len"]
    found = []
    for path in sorted((REPO / "groove_cli" / "store").rglob("*.py")):
        if path.name != "fts_tables.py":
            found += [f"{path.relative_to(REPO)}:{hit}"
                      for hit in _named_by_hand(path.read_text(encoding="utf-8"), names)]
    assert found == []


# --------------------------------------------------------------------------- Postgres, served


@pytest.fixture
def pg(pg_url: str, pg_kb: str) -> Iterator[Any]:
    from groove_cli.dburl import PgTarget
    from groove_cli.store.postgres import PgStore

    store = PgStore.open_for_index(PgTarget(pg_url, pg_kb, vector_index="exact"))
    try:
        yield store
    finally:
        store.close()


def _columns(store: Any, table: str) -> set[str]:
    return {str(r[0]) for r in store.con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s", (table,))}


def _write(store: Any) -> None:
    doc = DocumentRow("jp/a.md", "a", "jp", "jp", None, (), None, "h", 10,
                      "2025-01-01T00:00:00.000000Z")
    rows = [ChunkRow(0, "障害対応", 2, ("障害対応",), "障害が起きたら連絡する。retry budgets.",
                     "運用 > 障害", 10, 0.5, 1, 2),
            ChunkRow(1, None, None, (), "評価方法を見直す。評価は毎週。", None, 8, 0.5, 3, 4)]
    with store.transaction():
        store.reset(4)
        store.write_document(doc, rows, None, None)


def _table_state(store: Any, table: FtsTable) -> tuple[object, ...]:
    cols = ", ".join((*table.pg_columns, table.pg_length))
    return (store.con.execute(f"SELECT id, {cols} FROM groove_chunks WHERE kb = %s ORDER BY id",
                              (store.kb,)).fetchall(),
            store.con.execute("SELECT * FROM groove_postings WHERE kb = %s AND tbl = %s "
                              "ORDER BY term, chunk_id", (store.kb, table.postings_code)).fetchall(),
            store.con.execute(f"SELECT {table.pg_total} FROM groove_kb WHERE id = %s",
                              (store.kb,)).fetchall())


def test_the_postgres_schema_holds_the_declared_columns(pg: Any) -> None:
    chunks, kb = _columns(pg, "groove_chunks"), _columns(pg, "groove_kb")
    for table in TABLES:
        assert {*table.pg_columns, table.pg_length} <= chunks and table.pg_total in kb
    declared = {t.pg_prefix for t in TABLES}
    assert {c.rsplit("_", 1)[0] for c in chunks if re.fullmatch(r"\w+_len", c)} == declared
    assert {c.rsplit("_", 1)[0] for c in kb if re.fullmatch(r"\w+_tokens", c)} == declared
    meta = pg.meta()  # a new KB is cut by today's tokenisers
    assert all(meta[t.version.key] == t.version.version for t in TABLES if t.version)


def test_postgres_re_tokenises_a_table_whose_version_changed(pg: Any) -> None:
    """The table's columns, postings and token total come back as the writer wrote them."""
    _write(pg)
    versioned = [t for t in TABLES if t.version is not None]
    assert versioned
    before = {t.name: _table_state(pg, t) for t in versioned}
    with pg.transaction():
        for t in versioned:
            assert t.version is not None
            pg.set_meta({t.version.key: "0"})
            h, c, b = t.pg_columns
            pg.con.execute(f"UPDATE groove_chunks SET {h} = '', {c} = '', {b} = '', "
                           f"{t.pg_length} = 0 WHERE kb = %s", (pg.kb,))
            pg.con.execute("DELETE FROM groove_postings WHERE kb = %s AND tbl = %s",
                           (pg.kb, t.postings_code))
            pg.con.execute(f"UPDATE groove_kb SET {t.pg_total} = 0 WHERE id = %s", (pg.kb,))
    with pg.transaction():
        assert pg.backfill_fts() == 2
    assert {t.name: _table_state(pg, t) for t in versioned} == before
    with pg.transaction():
        assert pg.backfill_fts() == 0


def test_a_postgres_kb_without_a_tables_version_is_re_tokenised(pg: Any, pg_url: str,
                                                                 pg_kb: str) -> None:
    """A KB written before a table existed records no version of it: reopened for `index`, it
    is not marked current, so `backfill_fts` fills the table."""
    from groove_cli.dburl import PgTarget
    from groove_cli.store.postgres import PgStore

    _write(pg)
    versioned = [t for t in TABLES if t.version is not None]
    with pg.transaction():
        for t in versioned:
            assert t.version is not None
            pg.con.execute("DELETE FROM groove_meta WHERE kb = %s AND key = %s",
                           (pg.kb, t.version.key))
    pg.close()
    again = PgStore.open_for_index(PgTarget(pg_url, pg_kb, vector_index="exact"))
    try:
        with again.transaction():
            assert again.backfill_fts() == 2
    finally:
        again.close()


def test_a_later_tables_migration_applies(pg: Any) -> None:
    """`add_table_sql` on the real schema (rolled back): the declared columns appear."""
    import psycopg

    with pg.con.transaction():  # psycopg.Rollback ends the block, rolled back
        pg.con.execute(schema.add_table_sql(NEW_TABLE))
        assert {*NEW_TABLE.pg_columns, NEW_TABLE.pg_length} <= _columns(pg, "groove_chunks")
        assert NEW_TABLE.pg_total in _columns(pg, "groove_kb")
        raise psycopg.Rollback()
    assert NEW_TABLE.pg_total not in _columns(pg, "groove_kb")
