"""groove.toml discovery, precedence, validation, presets and the example file (config.md)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from groove_cli import messages
from groove_cli.config import (
    SCHEMA,
    SPECS,
    check_flag,
    discover_config,
    load_settings,
    resolve,
    validate_text,
)
from groove_cli.errors import ConfigError, UsageError

REPO = Path(__file__).resolve().parent.parent


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- discovery


def test_discovery_prefers_explicit_config(workdir: Path) -> None:
    _write(workdir / "groove.toml", "")
    other = _write(workdir / "elsewhere" / "x.toml", "")
    found = discover_config(Path("elsewhere/x.toml"), workdir)
    assert found is not None and found.path == other and found.origin == "flag"


def test_discovery_missing_explicit_config_is_an_error(workdir: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--config path not found: nope\.toml$"):
        discover_config(Path("nope.toml"), workdir)


def test_discovery_cwd_before_git_root(workdir: Path) -> None:
    (workdir / ".git").mkdir()
    _write(workdir / "groove.toml", "")
    sub = workdir / "a" / "b"
    sub.mkdir(parents=True)
    _write(sub / "groove.toml", "")
    found = discover_config(None, sub)
    assert found is not None and found.path == sub / "groove.toml" and found.origin == "cwd"


def test_discovery_git_root_then_user_file(workdir: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / ".git").write_text("gitdir: elsewhere")  # a .git *file* counts too
    _write(workdir / "groove.toml", "")
    sub = workdir / "deep" / "er"
    sub.mkdir(parents=True)
    found = discover_config(None, sub)
    assert found is not None and found.path == workdir / "groove.toml" and found.origin == "git"

    (workdir / "groove.toml").unlink()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = _write(tmp_path / "xdg" / "groove" / "groove.toml", "")
    found = discover_config(None, sub)
    assert found is not None and found.path == user and found.origin == "user"


def test_discovery_only_checks_the_git_root_itself(workdir: Path) -> None:
    (workdir / ".git").mkdir()
    _write(workdir / "a" / "groove.toml", "")  # between cwd and the root: not consulted
    sub = workdir / "a" / "b"
    sub.mkdir()
    assert discover_config(None, sub) is None


# ----------------------------------------------------------------------------- precedence


def test_builtin_defaults_without_any_file(workdir: Path) -> None:
    settings = load_settings(None, {})
    assert settings.config is None
    assert settings["search.fusion.rrf_k"] == 60.0
    assert settings.source("search.fusion.rrf_k") == "default"
    assert settings["exclude_dirs"] == [".obsidian", ".git", "node_modules", "target", ".vscode",
                                        ".idea"]


def test_file_beats_default(workdir: Path) -> None:
    _write(workdir / "groove.toml", "[search.fusion]\nrrf_k = 10\n")
    settings = load_settings(None, {})
    assert settings["search.fusion.rrf_k"] == 10.0
    assert isinstance(settings["search.fusion.rrf_k"], float)  # integers accepted for floats
    assert settings.source("search.fusion.rrf_k") == "file"


def test_flag_beats_file(workdir: Path) -> None:
    _write(workdir / "groove.toml", "[search.fusion]\nrrf_k = 10\n")
    settings = load_settings(None, {"search.fusion.rrf_k": 30.0})
    assert settings["search.fusion.rrf_k"] == 30.0
    assert settings.source("search.fusion.rrf_k") == "flag"


def test_preset_beats_default_but_not_file(workdir: Path) -> None:
    # config.md §2: --preset fast with dense_top_k = 10 in the file: the file wins for
    # dense_top_k, the other fast values apply.
    _write(workdir / "groove.toml", "[search.retrieval]\ndense_top_k = 10\n")
    settings = load_settings(None, {"search.retrieval.preset": "fast"})
    assert settings["search.retrieval.dense_top_k"] == 10
    assert settings.source("search.retrieval.dense_top_k") == "file"
    assert settings["search.retrieval.sparse_top_k"] == 20
    assert settings.source("search.retrieval.sparse_top_k") == "preset"
    assert settings["search.retrieval.vector_weight"] == 1.0  # fast leaves weights at built-ins
    assert settings.source("search.retrieval.vector_weight") == "default"


@pytest.mark.parametrize(
    ("preset", "expected"),
    [
        ("fast", (20, 20, 0.0, 1.0, 1.0)),
        ("balanced", (40, 40, 0.0, 1.0, 1.0)),
        ("accurate", (80, 80, 0.0, 1.0, 1.0)),
    ],
)
def test_presets_table(preset: str, expected: tuple[object, ...]) -> None:
    # config.md §5: a preset sets the candidate depth only; no floor, no leg weights
    settings = resolve({"search.retrieval.preset": preset}, {})
    keys = ("dense_top_k", "sparse_top_k", "min_score", "vector_weight", "fts_weight")
    assert tuple(settings[f"search.retrieval.{k}"] for k in keys) == expected
    assert settings.source("search.retrieval.min_score") == "default"


def test_preset_from_file_and_flag_override() -> None:
    settings = resolve({"search.retrieval.preset": "fast"}, {"search.retrieval.preset": "accurate"})
    assert settings["search.retrieval.dense_top_k"] == 80


def test_relative_paths_resolve_against_the_config_folder(workdir: Path) -> None:
    cfg = _write(workdir / "conf" / "groove.toml",
                 'kb_path = "notes"\ndb_path = "../idx/g.db"\nmodels_dir = "~/m"\n'
                 '[eval]\ngolden = "gold.yml"\n')
    settings = load_settings(cfg, {})
    assert settings["kb_path"] == str(workdir / "conf" / "notes")
    assert settings["db_path"] == str(workdir / "conf" / ".." / "idx" / "g.db")
    assert settings["models_dir"] == str(Path.home() / "m")
    assert settings["eval.golden"] == str(workdir / "conf" / "gold.yml")


# ----------------------------------------------------------------------------- validation

P = Path("/x/groove.toml")


def test_unknown_key_with_suggestion() -> None:
    with pytest.raises(ConfigError) as err:
        validate_text("[search.mmr]\nlamda = 0.5\n", P)
    assert err.value.message == '/x/groove.toml: unknown key "search.mmr.lamda" (did you mean "lambda"?)'


def test_unknown_key_without_suggestion() -> None:
    with pytest.raises(ConfigError) as err:
        validate_text("zzzz = 1\n", P)
    assert err.value.message == '/x/groove.toml: unknown key "zzzz"'


def test_unknown_table_with_suggestion() -> None:
    with pytest.raises(ConfigError) as err:
        validate_text("[search.fusionn]\nrrf_k = 1\n", P)
    assert err.value.message == ('/x/groove.toml: unknown table "search.fusionn" '
                                 '(did you mean "search.fusion"?)')


def test_wrong_type_messages() -> None:
    with pytest.raises(ConfigError) as err:
        validate_text('[search.fusion]\nrrf_k = "sixty"\n', P)
    assert err.value.message == (
        "/x/groove.toml: invalid config: search.fusion.rrf_k: expected float, got string")
    with pytest.raises(ConfigError) as err:
        validate_text("[eval]\nhistory_size = 2.0\n", P)  # floats are not accepted for integers
    assert err.value.message == (
        "/x/groove.toml: invalid config: eval.history_size: expected integer, got float")
    with pytest.raises(ConfigError, match="expected boolean, got integer"):
        validate_text("[search.mmr]\nenabled = 1\n", P)


def test_toml_syntax_error_names_the_file() -> None:
    with pytest.raises(ConfigError, match=r"^/x/groove.toml: invalid config: "):
        validate_text("[search\n", P)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[search.mmr]\nlambda = 1.5\n", "search.mmr.lambda = 1.5 is out of range [0.0, 1.0]"),
        ("[search.mmr]\nlambda = -0.1\n", "search.mmr.lambda = -0.1 is out of range [0.0, 1.0]"),
        ("[search.retrieval]\ndense_top_k = 5000\n",
         "search.retrieval.dense_top_k = 5000 is out of range [1, 4096]"),
        ("[search.fusion]\nrrf_k = 0.5\n", "search.fusion.rrf_k = 0.5 is out of range [1.0, 1000000.0]"),
        ("[eval]\nk_values = [1, 1001]\n", "eval.k_values = [1, 1001] is out of range [0, 1000]"),
        ("max_length = 8\n", "max_length = 8 is out of range [16, inf]"),
    ],
)
def test_range_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate_text(text, P)
    assert err.value.message == f"/x/groove.toml: {message}"


def test_nonfinite_float_rejected() -> None:
    with pytest.raises(ConfigError, match=r"search\.fusion\.rrf_k: must be finite"):
        validate_text("[search.fusion]\nrrf_k = inf\n", P)


def test_bm25_weights_not_all_zero() -> None:
    text = ("[search.fusion]\nbm25_heading_weight = 0\nbm25_context_weight = 0\n"
            "bm25_content_weight = 0\n")
    with pytest.raises(ConfigError, match="must not all be 0"):
        validate_text(text, P)
    validate_text(text.replace("bm25_content_weight = 0", "bm25_content_weight = 0.5"), P)


def test_parent_retriever_max_must_exceed_threshold() -> None:
    text = "[search.parent_retriever]\nmax_expanded_tokens = 50\n"
    with pytest.raises(ConfigError) as err:
        validate_text(text, P)
    assert err.value.message == (
        "/x/groove.toml: search.parent_retriever.max_expanded_tokens (50) must be greater than "
        "whole_doc_threshold_tokens (100)")
    with pytest.raises(ConfigError, match=r"out of range \[-inf, 8192\]"):
        validate_text("[search.parent_retriever]\nmax_expanded_tokens = 9000\n", P)


def test_parsers_enabled_rules() -> None:
    assert validate_text('[parsers]\nenabled = ["MD", "txt"]\n', P)["parsers.enabled"] == ["md", "txt"]
    with pytest.raises(ConfigError, match=re.escape('unsupported parser "pdf" (supported: md, txt)')):
        validate_text('[parsers]\nenabled = ["pdf"]\n', P)
    with pytest.raises(ConfigError, match="duplicate"):
        validate_text('[parsers]\nenabled = ["md", "MD"]\n', P)
    with pytest.raises(ConfigError, match="must not be empty"):
        validate_text("[parsers]\nenabled = []\n", P)


def test_enum_values_checked() -> None:
    with pytest.raises(ConfigError, match="must be one of hybrid, vector, fts"):
        validate_text('[search.retrieval]\nmode = "dense"\n', P)


def test_leg_weights_all_zero_from_file_is_config_error() -> None:
    expected = "vector_weight and search.retrieval.fts_weight must not all be 0"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        resolve({"search.retrieval.vector_weight": 0.0, "search.retrieval.fts_weight": 0.0}, {})


def test_leg_weights_all_zero_from_flag_is_usage_error() -> None:
    with pytest.raises(UsageError, match="--vector-weight and --fts-weight must not all be 0"):
        resolve({"search.retrieval.fts_weight": 0.0}, {"search.retrieval.vector_weight": 0.0})
    # only the legs that the mode runs count: fts mode with a zero vector weight is fine
    resolve({}, {"search.retrieval.vector_weight": 0.0, "search.retrieval.mode": "fts"})


def test_flag_range_check_names_the_flag() -> None:
    with pytest.raises(UsageError) as err:
        check_flag("--mmr-lambda", "search.mmr.lambda", 2.0)
    assert err.value.message == "--mmr-lambda 2.0 is out of range [0.0, 1.0]"
    assert check_flag("--rrf-k", "search.fusion.rrf_k", 10) == 10.0


# ----------------------------------------------------------------------------- example file


def _uncommented_text() -> str:
    lines = []
    for line in (REPO / "groove.toml.example").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^# (\[[a-z_.]+\]|[a-z0-9_]+ = .*)$", line)
        if match:
            lines.append(match.group(1))
    return "\n".join(lines) + "\n"


def _flatten(table: dict[str, object], prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in table.items():
        full = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out.update(_flatten(value, full))
        else:
            out[full] = value
    return out


def test_example_file_is_inert() -> None:
    assert tomllib.loads((REPO / "groove.toml.example").read_text(encoding="utf-8")) == {}


def test_example_file_lists_every_key_with_its_default() -> None:
    example = _flatten(tomllib.loads(_uncommented_text()))
    assert set(example) == set(SPECS)
    for spec in SCHEMA:
        if spec.default is not None:
            assert example[spec.key] == spec.default, spec.key
    # and the uncommented example is itself a valid config
    validate_text(_uncommented_text(), P)


def test_install_hints_name_the_package_and_its_extras() -> None:
    # issue 28: the example said `pip install 'groove[postgres]'`; the package is groove-cli
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for name in ("groove.toml.example", "README.md"):
        text = (REPO / name).read_text(encoding="utf-8")
        installs = re.findall(r"pip install '([\w.-]+)\[(\w+)\]'", text)
        assert installs, name
        for package, extra in installs:
            assert package == project["name"], (name, package)
            assert extra in project["optional-dependencies"], (name, extra)


# ----------------------------------------------------------------------------- issue 15


def test_an_unreadable_user_config_folder_is_skipped_with_a_warning(
        workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 7: an unreadable ~/.config/groove made every command fail with PermissionError.
    (A name over the file-system limit fails stat() for root too, like a 000 folder.)"""
    lines: list[str] = []
    messages.set_sink(lines.append)
    unreadable = tmp_path / ("x" * 300)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(unreadable))
    try:
        assert discover_config(None, workdir) is None
        assert load_settings(None, {}).config is None
    finally:
        messages.set_sink(None)
    assert lines[0] == (f"groove: warning: cannot read the per-user config folder "
                        f"{unreadable / 'groove'}: File name too long; ignoring it")


def test_a_byte_order_mark_is_accepted(workdir: Path) -> None:
    """Item 12: a BOM gave "Invalid statement (line 1, column 1)"."""
    path = workdir / "groove.toml"
    path.write_bytes(b"\xef\xbb\xbfmodel = \"x\"\n")
    assert load_settings(path, {}).str_("model") == "x"


def test_deeply_nested_toml_is_a_config_error() -> None:
    """Item 12: an array nested 3,000 deep raised RecursionError."""
    with pytest.raises(ConfigError) as caught:
        validate_text("exclude_dirs = " + "[" * 3000 + "]" * 3000 + "\n", Path("g.toml"))
    assert caught.value.message == ("g.toml: invalid config: arrays or tables are nested too "
                                    "deeply (groove.toml needs at most 2 levels)")
