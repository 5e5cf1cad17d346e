"""Property-based fuzzing of everything a user types or hands groove (issue 15).

Each test feeds hostile input (random text with control characters, lone surrogates, huge
numbers, deep nesting, random bytes) to one entry point and asserts the contract: a result or
groove's own error (GrooveError: a one-line message and a documented exit code), never an
unexpected exception. The CLI is driven in-process on a real tiny index.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from groove_cli.cli import app
from groove_cli.config import load_config_file, validate_text
from groove_cli.errors import ConfigError, GoldenError, GrooveError, UsageError
from groove_cli.evaluate.golden import load_golden
from groove_cli.evaluate.history import HISTORY_NAME, load_history
from groove_cli.render.search import print_search
from groove_cli.retrieve.filters import FilterSpec, compile_filters, glob_to_regex
from groove_cli.retrieve.pipeline import SearchParams, search
from groove_cli.retrieve.query import compile_query
from groove_cli.store import Store
from tests.onnx_builders import model_dir
from tests.test_index import DIM, TINY_MODEL_TOML, Groove, make_groove, tiny_embedder_onnx, write_kb

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

# text with the characters that broke groove: controls, quotes, dashes, FTS5 syntax, CJK,
# lone surrogates (what non-UTF-8 command-line bytes become)
HOSTILE = st.text(alphabet=st.one_of(
    st.sampled_from(list('-"*?[]{},!^:()\\/ \t\n\r\x00\x07\x1bANDORNOTNEAR')),
    st.sampled_from(["\udce9", "\ud800", "\ufeff", "障", "害", "é", "ß", "\u202e"]),
    st.characters(codec="utf-8"),
), max_size=40)


# --------------------------------------------------------------------------- core


@given(HOSTILE)
@FUZZ
def test_query_compiler(text: str) -> None:
    try:
        compiled = compile_query(text)
    except UsageError:
        return
    assert compiled.positive_text.strip()


@given(category=st.none() | HOSTILE, globs=st.lists(HOSTILE, max_size=3),
       tags=st.lists(HOSTILE, max_size=3), date_from=st.none() | HOSTILE,
       date_to=st.none() | HOSTILE, path=HOSTILE, date=st.none() | HOSTILE)
@FUZZ
def test_filters(category: str | None, globs: list[str], tags: list[str], date_from: str | None,
                 date_to: str | None, path: str, date: str | None) -> None:
    spec = FilterSpec(category=category, path_globs=tuple(globs), tags_any=tuple(tags),
                      date_from=date_from, date_to=date_to)
    try:
        row_filter = compile_filters(spec)
    except UsageError:
        return
    row_filter.passes(quality=0.5, category=category, topic=None, path=path, tags=tags, date=date)


@given(st.text(alphabet="{},*?[]!a/", max_size=60), st.text(alphabet="a/{},", max_size=200))
@FUZZ
def test_globs_are_bounded(glob: str, path: str) -> None:
    try:
        matcher = glob_to_regex(glob)
    except UsageError:
        return
    matcher.fullmatch(path)


KEYS = st.sampled_from(["model", "kb_path", "db_path", "reranker", "max_length", "exclude_dirs",
                        "eval.k_values", "search.retrieval.mode", "search.mmr.lambda",
                        "[search.retrieval]", "[eval]", "quality_filter.threshold", "x"])
TOML_VALUES = st.one_of(st.integers(-10**20, 10**20).map(str), st.floats().map(repr),
                        HOSTILE.map(json.dumps), st.just("[" * 50 + "]" * 50), st.just("true"),
                        st.just("{a = 1}"), st.just('"""'), st.just("nan"))


@given(st.lists(st.tuples(KEYS, TOML_VALUES), max_size=6), st.booleans())
@FUZZ
def test_config_text(pairs: list[tuple[str, str]], bom: bool) -> None:
    text = ("\ufeff" if bom else "") + "".join(
        f"{key}\n" if key.startswith("[") else f"{key} = {value}\n" for key, value in pairs)
    with contextlib.suppress(ConfigError):
        validate_text(text, Path("groove.toml"))


@given(st.binary(max_size=200))
@FUZZ
def test_config_file_bytes(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "groove.toml"
    path.write_bytes(raw)
    with contextlib.suppress(ConfigError):
        load_config_file(path)


GOLDEN_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | HOSTILE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["query", "id", "expected", "path", "heading", "defaults", "queries",
                         "tags", "limit"]), inner, max_size=3),
    max_leaves=8)


@given(GOLDEN_VALUES, st.booleans())
@FUZZ
def test_golden_loader(tmp_path: Path, document: object, as_json: bool) -> None:
    path = tmp_path / ("g.json" if as_json else "g.yml")
    path.write_text(json.dumps(document), encoding="utf-8", errors="surrogatepass")
    try:
        golden = load_golden(path, check_query=compile_query)
    except GoldenError:
        return
    assert golden.queries


@given(st.binary(max_size=300) | GOLDEN_VALUES.map(lambda v: json.dumps({"runs": [v]}).encode(
    "utf-8", "surrogatepass")))
@FUZZ
def test_history_loader(tmp_path: Path, raw: bytes) -> None:
    (tmp_path / HISTORY_NAME).write_bytes(raw)
    with contextlib.suppress(GrooveError):
        load_history(tmp_path / HISTORY_NAME)
    for aside in tmp_path.glob(HISTORY_NAME + ".corrupt-*"):
        aside.unlink()


# --------------------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Groove:
    root = tmp_path_factory.mktemp("fuzz")
    model = model_dir(root / "tiny", tiny_embedder_onnx(), TINY_MODEL_TOML).resolve()
    work = root / "work"
    work.mkdir()
    groove = make_groove(work, root, model)
    write_kb(groove.kb)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        groove.index_ok()
    return groove


OPTIONS = st.sampled_from(["--limit", "--mode", "--path-glob", "--date-from", "--date-to",
                           "--tag-any", "--category", "--min-score", "--rrf-k", "--format",
                           "--mmr", "--mmr-lambda", "--dense-top-k", "--min-quality", "--k",
                           "--explain", "--preset", "--vector-weight"])
OPTION_VALUES = st.one_of(HOSTILE, st.sampled_from(
    ["0", "-1", "1e308", "nan", "inf", "text", "files", "json", "fts", "hybrid", "vector",
     "true", "2026-02-30", "2026", "{,}" * 20, "*a" * 12 + "x"]))


@given(query=HOSTILE, options=st.lists(st.tuples(OPTIONS, OPTION_VALUES), max_size=3),
       double_dash=st.booleans())
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_search_command(tiny_index: Groove, monkeypatch: pytest.MonkeyPatch, query: str,
                        options: list[tuple[str, str]], double_dash: bool) -> None:
    monkeypatch.chdir(tiny_index.work)
    args = ["--db", str(tiny_index.db), "search", "--mode", "fts"]
    for flag, value in options:
        args += [flag, value]
    args += ["--", query] if double_dash else [query]
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code != 0:
        assert "groove: error: " in result.stderr or "Usage:" in result.stderr, result.stderr


@given(query=HOSTILE, globs=st.lists(HOSTILE, max_size=2), date_from=st.none() | HOSTILE,
       fmt=st.sampled_from(["json", "text", "files"]))
@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_full_text_search_and_rendering(tiny_index: Groove, capsys: pytest.CaptureFixture[str],
                                        query: str, globs: list[str], date_from: str | None,
                                        fmt: str) -> None:
    """The FTS leg on a real index and every output format: what the CLI runs after parsing."""
    try:
        compiled = compile_query(query)
        params = SearchParams(mode="fts", min_confidence_ratio=0.0,
                              filters=FilterSpec(path_globs=tuple(globs), date_from=date_from))
        compile_filters(params.filters)
    except UsageError:
        return
    reader = Store.open_readonly(tiny_index.db)
    try:
        result = search(reader, compiled, params, vector=None, knn=reader.vec_search, dim=DIM)
    finally:
        reader.close()
    print_search(result, params, fmt, explain=True, filter_applied={})
    out = capsys.readouterr().out
    out.encode("utf-8")  # what reaches stdout must be encodable
