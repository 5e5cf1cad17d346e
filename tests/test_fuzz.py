"""Property-based fuzzing of everything a user types or hands groove (issue 15).

Each test feeds hostile input (random text with control characters, lone surrogates, huge
numbers, deep nesting, random bytes) to one entry point and asserts the contract: a result or
groove's own error (GrooveError: a one-line message and a documented exit code), never an
unexpected exception. The CLI is driven in-process on a real tiny index.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from groove_cli.cli import app
from groove_cli.config import load_config_file, validate_text
from groove_cli.dburl import mask
from groove_cli.errors import ConfigError, GoldenError, GrooveError, UsageError
from groove_cli.evaluate.baseline import load_baseline
from groove_cli.evaluate.golden import load_golden
from groove_cli.evaluate.history import HISTORY_NAME, load_history
from groove_cli.evaluate.trec import run_lines
from groove_cli.outfile import write_output
from groove_cli.render.junit import render_junit, xml_safe
from groove_cli.render.markdown import eval_markdown
from groove_cli.render.search import print_search
from groove_cli.results import Results
from groove_cli.retrieve.filters import FilterSpec, compile_filters, glob_to_regex
from groove_cli.retrieve.pipeline import SearchParams, search
from groove_cli.retrieve.query import compile_query
from groove_cli.store import Store
from tests.onnx_builders import model_dir
from tests.test_eval_baseline import make_run
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
    print_search(Results("q", result, params), fmt, explain=True)
    out = capsys.readouterr().out
    out.encode("utf-8")  # what reaches stdout must be encodable


# --------------------------------------------------------------------------- issue 29

# A password as typed: printable, no whitespace (a URL with a raw space is refused, and the
# refusal is checked by test_dburl), between two markers so a partial leak of either end shows.
PASSWORDS = st.text(alphabet=st.characters(codec="ascii", categories=("L", "N", "P", "S")),
                    min_size=1, max_size=12).map(lambda middle: f"Qz{middle}7X")
SCHEMES = st.sampled_from(["postgresql://", "postgres://", "postgresq://", "postgresql:/",
                           "http://", "PostgreSQL://", "pg+x:/", ""])


@given(scheme=SCHEMES, password=PASSWORDS, encode=st.booleans(),
       source=st.sampled_from(["flag", "env", "config"]),
       command=st.sampled_from([["status"], ["config", "show"],
                                ["config", "show", "--format", "json"], ["config", "check"],
                                ["search", "q", "--mode", "fts"], ["index"]]))
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_no_printed_line_holds_a_url_password(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                              scheme: str, password: str, encode: bool,
                                              source: str, command: list[str]) -> None:
    """Whatever the scheme and the password's characters, and whichever source names the
    URL, nothing groove prints carries the password (issue 29 item 1). A URL groove accepts
    names a closed local port, so a command that connects fails at once; a raw password that
    would change the URL's host or port (`/`, `?`, `#`, `@`, a stray `%`) is refused first."""
    for leftover in workdir.iterdir():  # the fixture's folder is shared by the examples
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    typed = quote(password, safe="") if encode else password
    url = f"{scheme}ann:{typed}@127.0.0.1:1/team"
    (workdir / "kb").mkdir(exist_ok=True)
    config = workdir / "groove.toml"
    config.write_text(f"kb_path = {json.dumps(str(workdir / 'kb'))}\n", encoding="utf-8")
    monkeypatch.delenv("GROOVE_DB_URL", raising=False)
    args = list(command)
    if source == "flag":
        args = ["--db", url, *args]
    elif source == "env":
        monkeypatch.setenv("GROOVE_DB_URL", url)
    else:
        config.write_text(config.read_text(encoding="utf-8")
                          + f"[store]\nurl = {json.dumps(url)}\n", encoding="utf-8")
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    printed = result.stdout + result.stderr
    for secret in {password, typed, "Qz", "7X"}:
        assert secret not in printed, (url, args, printed)
    assert sorted(p.name for p in workdir.iterdir()) == ["groove.toml", "kb"]


@given(before=HOSTILE, after=HOSTILE, scheme=SCHEMES, password=PASSWORDS,
       quote_char=st.sampled_from(["", "'", '"', "(", "<"]))
@FUZZ
def test_mask_hides_a_password_anywhere_in_a_line(before: str, after: str, scheme: str,
                                                  password: str, quote_char: str) -> None:
    """A URL inside any stderr line (a warning quoting it, a server's message) loses its
    password to `mask`, whatever text surrounds it."""
    line = f"{before} {quote_char}{scheme}ann:{password}@db.internal/team {after}"
    masked = mask(line)
    around = before + after  # the markers may only come from the text around the URL
    assert ("Qz" not in masked or "Qz" in around) and ("7X" not in masked or "7X" in around)


OUTPUT_TARGETS = st.sampled_from(["new", "regular", "link-to-file", "dangling-link", "folder",
                                  "fifo", "missing-parent", "dash", "root", "devnull"])


@given(target=OUTPUT_TARGETS, name=st.text(alphabet=st.characters(
    codec="utf-8", exclude_characters="/\x00", exclude_categories=("Cs",)), min_size=1,
    max_size=20).filter(lambda n: n not in (".", "..")), data=st.binary(max_size=200),
    append=st.booleans())
@FUZZ
def test_output_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str,
                      name: str, data: bytes, append: bool) -> None:
    """Every kind of output path: written as the rule says, or one line of refusal; a link,
    a FIFO or a folder is never replaced (issue 29 items 2 and 11)."""
    folder = tmp_path / "out"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep")
    path: Path | str = folder / name
    assert isinstance(path, Path)
    if target == "regular":
        path.write_bytes(b"old")
    elif target == "link-to-file":
        path.symlink_to(victim)
    elif target == "dangling-link":
        path.symlink_to(folder / "nowhere")
    elif target == "folder":
        path.mkdir()
    elif target == "fifo":
        os.mkfifo(path)
    elif target == "missing-parent":
        path = folder / "missing" / name
    else:
        path = {"dash": "-", "root": "/", "devnull": os.devnull}.get(target, path)
    text = data.decode("utf-8", "replace").encode("utf-8")
    try:
        write_output(path, text, flag="--trec-run", what="TREC run file", append=append,
                     wait=False)
    except GrooveError as exc:
        assert "\n" not in exc.message
        assert target in ("link-to-file", "dangling-link", "folder", "fifo", "missing-parent",
                          "root")
    else:
        if target in ("new", "regular"):
            assert isinstance(path, Path)
            expected = (b"old" + text) if append and target == "regular" else text
            assert path.read_bytes() == expected
        if target == "dash":
            assert capsys.readouterr().out == text.decode("utf-8")
    assert victim.read_bytes() == b"keep"
    assert sorted(os.listdir(folder)) == ([] if target in ("missing-parent", "dash", "root",
                                                           "devnull") else [name])
    if target == "fifo":
        assert stat.S_ISFIFO(os.lstat(folder / name).st_mode)
    if target in ("link-to-file", "dangling-link"):
        assert (folder / name).is_symlink()


def _nested(depth: int, kinds: list[bool]) -> str:
    opens = "".join('{"a": ' if kinds[i % len(kinds)] else "[" for i in range(depth))
    closes = "".join("}" if kinds[i % len(kinds)] else "]" for i in reversed(range(depth)))
    return opens + "1" + closes


@given(depth=st.integers(1, 4000), kinds=st.lists(st.booleans(), min_size=1, max_size=5),
       where=st.sampled_from(["baseline", "history", "golden"]))
@FUZZ
def test_nested_json(tmp_path: Path, depth: int, kinds: list[bool], where: str) -> None:
    """Any nesting depth is a result or groove's own error, never a RecursionError (issue 29
    item 9)."""
    nested = _nested(depth, kinds)
    try:
        if where == "baseline":
            (tmp_path / "b.json").write_text(nested, encoding="utf-8")
            load_baseline(tmp_path / "b.json")
        elif where == "history":
            (tmp_path / HISTORY_NAME).write_text('{"runs": [' + nested + "]}", encoding="utf-8")
            load_history(tmp_path)
        else:
            (tmp_path / "g.json").write_text('{"queries": [{"id": "a", "query": "x", '
                                              '"expected": [' + nested + "]}]}",
                                              encoding="utf-8")
            load_golden(tmp_path / "g.json", check_query=compile_query)
    except GrooveError as exc:
        assert "\n" not in exc.message
    for aside in tmp_path.glob(HISTORY_NAME + ".corrupt-*"):
        aside.unlink()


CONTROLS = st.text(alphabet=st.one_of(st.characters(max_codepoint=0x9f),
                                      st.sampled_from(list("`<>&|*_[]()!#\\\ufffe\uffff"))),
                   min_size=1, max_size=20)


@given(ids=st.lists(CONTROLS, min_size=1, max_size=3, unique=True), query=CONTROLS,
       path=CONTROLS, heading=st.none() | CONTROLS)
@FUZZ
def test_control_characters_in_golden_files(tmp_path: Path, ids: list[str], query: str,
                                            path: str, heading: str | None) -> None:
    """Ids, queries and paths from a golden file, whatever characters they hold: JUnit stays
    well-formed XML, Markdown lets no raw HTML or control character through, TREC lines stay
    six control-free fields (issue 29 item 7)."""
    golden = tmp_path / "g.yml"
    golden.write_text(yaml.safe_dump({"queries": [
        {"id": i, "query": f"q {query}", "expected": [{"path": f"{path}.md", "heading": heading}]}
        for i in ids]}), encoding="utf-8")
    try:
        loaded = load_golden(golden, check_query=compile_query)
    except (GoldenError, UsageError):
        return
    run = make_run([0.0] * len(loaded.queries))
    for entry, q in zip(run["per_query"], loaded.queries, strict=True):
        expected = q.expected[0]
        entry.update(id=q.id, query=q.query,
                     expected=[{"path": expected.path, "heading": expected.heading}],
                     top_k=[{"rank": 1, "path": expected.path, "heading": expected.heading,
                             "score": 0.5}])
    root = ET.fromstring(render_junit(run, suite_name=f"groove eval: {path}"))
    assert [c.get("name") for c in root.iter("testcase")] == [xml_safe(q.id) for q in
                                                              loaded.queries]
    markdown = eval_markdown({**run, "previous": None, "diff": None, "regressions": None},
                             golden=path)
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    assert "<img" not in html and "<script" not in html
    assert not any(ord(c) < 32 and c != "\n" for c in markdown)
    for line in run_lines(run):
        fields = line.split(" ")
        assert len(fields) == 6 and all(fields)
        assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in line)
