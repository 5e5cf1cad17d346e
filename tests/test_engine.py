"""groove_cli.engine: the engine's stages for benchmarks (docs/design/code.md "Python API")."""

from __future__ import annotations

import importlib
import itertools
import subprocess
import sys
from pathlib import Path

import pytest

import groove_cli
from groove_cli import engine
from groove_cli.retrieve.query import compile_query

REPO = Path(__file__).resolve().parent.parent


def test_every_engine_name_is_the_engine_s_own_object() -> None:
    """Each exported name loads and is the object of its home module (a re-export, no copy)."""
    helpers = {"compiling_with", "default_settings", "searcher_of"}
    assert set(engine.__all__) == set(engine._HOME) | helpers
    for name in engine.__all__:
        value = getattr(engine, name)
        home = engine._HOME.get(name)
        if home is not None:
            own = getattr(importlib.import_module(home), engine._RENAMED.get(name, name))
            assert value is own, name
    with pytest.raises(AttributeError, match="no_such_stage"):
        engine.no_such_stage  # noqa: B018


def test_importing_the_package_or_the_engine_stays_light() -> None:
    code = ("import sys, groove_cli; a = 'groove_cli.engine' in sys.modules; "
            "import groove_cli.engine; "
            "print(a, 'numpy' in sys.modules, 'groove_cli.retrieve' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO, env={"PYTHONPATH": str(REPO)})
    assert out.stdout.split() == ["False", "False", "False"]


def test_searcher_of_an_index_ranks_and_scores_a_full_text_leg(
        golden_index: tuple[Path, Path]) -> None:
    kb, db = golden_index
    expr = compile_query("retry budget").word_expr
    assert expr is not None
    searcher = engine.searcher_of(groove_cli.open(kb, db=db))
    try:
        store = searcher.store
        weights = engine.DEFAULT_BM25_WEIGHTS
        scored = store.fts_scored_ids(expr, weights, 5, "fts_words")
        assert [cid for cid, _ in scored] == store.fts_search_ids(expr, weights, 5, "fts_words")
        assert len(scored) == 5 and all(a[1] >= b[1] > 0 for a, b in itertools.pairwise(scored))
    finally:
        searcher.close()


def test_compiling_with_sets_eval_s_compiler_for_the_block_only() -> None:
    import threading

    from groove_cli.evaluate import runner

    def v0(text: str) -> object:
        return text

    seen_elsewhere: list[object] = []
    with pytest.raises(RuntimeError), engine.compiling_with(v0):  # type: ignore[arg-type]
        assert runner.QUERY_COMPILER.get() is v0
        other = threading.Thread(target=lambda: seen_elsewhere.append(
            runner.QUERY_COMPILER.get()))
        other.start()
        other.join()
        raise RuntimeError
    assert seen_elsewhere == [compile_query]  # another thread keeps the real compiler
    assert runner.QUERY_COMPILER.get() is compile_query
    assert runner.compile_query is compile_query  # no module global is swapped


def test_the_engine_exports_what_bench_uses_and_no_more() -> None:
    """A name is in engine.py because a benchmark needs it (code.md "Python API")."""
    import ast

    used: set[str] = set()
    for path in (REPO / "bench").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "groove_cli.engine":
                used |= {alias.name for alias in node.names}
    assert sorted(set(engine.__all__) - used) == []
