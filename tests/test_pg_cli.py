"""Every command through a `postgresql://` URL (issue 18), end to end with the real model on
the sample KB: the same hits and the same eval numbers as the SQLite index of the same notes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from groove_cli.cli import app

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[dev]')")

runner = CliRunner()
E2E_KB = "golden-e2e-" + os.urandom(3).hex()  # unique: GROOVE_TEST_PG_URL may name a kept server
QUERIES = ("how do retry budgets stop retry storms?", "障害が起きたときの連絡手順",
           "backup restore -drill", "on-call rotation handover")


def _config(tmp_path: Path, models: Path, kb_id: str) -> Path:
    config = tmp_path / "groove.toml"
    config.write_text(f'models_dir = "{models}"\n[store]\nkb = "{kb_id}"\n', encoding="utf-8")
    return config


def _run(*args: str) -> Result:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (result.output, result.stderr)
    return result


def _json(result: Result) -> Any:
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def pg_golden(pg_url: str, golden_index: tuple[Path, Path], real_models_dir: Path,
              tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, str]:
    """The sample KB indexed into Postgres through the CLI once: (kb, a private copy of its
    SQLite index — searches write its query cache —, config, url)."""
    import shutil

    kb, shared = golden_index
    folder = tmp_path_factory.mktemp("pgcli")
    db = folder / shared.name
    for suffix in ("", ".vectors.npy", ".vectors-ids.npy", ".vectors.json"):
        source = shared.with_name(shared.name + suffix)
        if source.exists():
            shutil.copy2(source, db.with_name(db.name + suffix))
    config = _config(folder, real_models_dir, E2E_KB)
    _run("--config", str(config), "--db", pg_url, "index", "--kb-path", str(kb), "--quiet")
    return kb, db, config, pg_url


def test_search_gives_the_same_hits_as_sqlite(pg_golden: tuple[Path, Path, Path, str]) -> None:
    kb, db, config, url = pg_golden
    for query in QUERIES:
        for mode in ("hybrid", "fts", "vector"):
            args = ["search", "--kb-path", str(kb), "--format", "json", "--mode", mode,
                    "--limit", "5", query]
            pg = _json(_run("--config", str(config), "--db", url, *args))
            lite = _json(_run("--config", str(config), "--db", str(db), *args))
            assert [(h["path"], h["heading"]) for h in pg["results"]] == \
                [(h["path"], h["heading"]) for h in lite["results"]], (query, mode)
            assert pg["results"], query


def test_eval_scores_the_same_as_sqlite(pg_golden: tuple[Path, Path, Path, str]) -> None:
    kb, db, config, url = pg_golden
    args = ["eval", "--kb-path", str(kb), "--no-history", "--format", "json"]
    pg = _json(_run("--config", str(config), "--db", url, *args))["aggregate"]
    lite = _json(_run("--config", str(config), "--db", str(db), *args))["aggregate"]
    assert pg["ndcg_at_k"]["10"] == pytest.approx(lite["ndcg_at_k"]["10"], abs=1e-9)
    assert pg["mrr"] == pytest.approx(lite["mrr"], abs=1e-9)
    assert lite["ndcg_at_k"]["10"] > 0.7  # not two empty runs agreeing


def test_status_lists_the_kbs_and_doctor_checks_the_server(
        pg_golden: tuple[Path, Path, Path, str]) -> None:
    kb, _db, config, url = pg_golden
    status = _json(_run("--config", str(config), "--db", url, "status", "--format", "json"))
    assert status["documents"] == 27 and status["chunks"] > 0 and status["schema_version"] == 2
    assert E2E_KB in [k["kb"] for k in status["knowledge_bases"]]
    doctor = _run("--config", str(config), "--db", url, "doctor", "--kb-path", str(kb)).stdout
    assert "Server: PostgreSQL 18" in doctor and "vector 0.8" in doctor
    assert "No issues found." in doctor
    again = _run("--config", str(config), "--db", url, "index", "--kb-path", str(kb))
    assert "27 docs (0 updated" in again.stderr  # an unchanged KB: nothing rewritten


def test_config_show_and_errors_never_print_the_password(tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text('[store]\nurl = "postgresql://ann:hunter2@127.0.0.1:1/team"\n',
                      encoding="utf-8")
    shown = _run("--config", str(config), "config", "show").stdout
    assert "postgresql://ann:***@127.0.0.1:1/team" in shown and "hunter2" not in shown
    failed = runner.invoke(app, ["--config", str(config), "search", "retry", "--mode", "fts"])
    assert failed.exit_code == 1
    assert "cannot connect to the Postgres store postgresql://ann:***@" in failed.stderr
    assert "hunter2" not in failed.stderr + failed.stdout


def test_status_of_a_kb_the_database_lacks_is_a_note(pg_url: str, tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text('[store]\nkb = "never-indexed"\n', encoding="utf-8")
    result = _run("--config", str(config), "--db", pg_url, "status")
    assert "no index of KB never-indexed in the Postgres store" in result.stderr
    assert result.stdout == ""


def test_store_selection_precedence_is_flag_env_config_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from groove_cli import config as cfg
    from groove_cli.dburl import PgTarget

    kb = tmp_path / "kb"
    kb.mkdir()
    file = tmp_path / "groove.toml"
    file.write_text('[store]\nurl = "postgresql://cfg/db"\nef_search = 64\n', encoding="utf-8")
    settings = cfg.load_settings(file, {})
    monkeypatch.setenv("GROOVE_DB_URL", "postgres://env/db")
    assert cfg.index_location(settings, "postgresql://flag/db", kb) == PgTarget(
        "postgresql://flag/db", cfg.kb_name_for(kb), 64)
    assert cfg.index_location(settings, str(tmp_path / "x.db"), kb) == tmp_path / "x.db"
    assert isinstance(found := cfg.index_location(settings, None, kb), PgTarget)
    assert found.url == "postgres://env/db"
    monkeypatch.delenv("GROOVE_DB_URL")
    assert isinstance(found := cfg.index_location(settings, None, kb), PgTarget)
    assert found.url == "postgresql://cfg/db"
    plain = cfg.resolve({}, {})
    assert cfg.index_location(plain, None, kb) == kb / ".groove" / "index.db"
