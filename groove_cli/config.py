"""groove.toml: discovery, validation, presets and resolution with a source for every value.

Precedence for every setting is CLI flag > config file > preset > built-in default (config.md §2).
The schema below is the single source of truth for keys, types, defaults and ranges: validation,
`config show`, flag range checks and the groove.toml.example test all read it.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NoReturn

from groove_cli import messages, statedir
from groove_cli.config_schema import (
    DEFAULT_BM25_WEIGHTS,
    DEFAULT_CJK_WEIGHT,
    DEFAULT_EXCLUDE_DIRS,
    DEFAULT_FUSION,
    DEFAULT_LEG_WEIGHT,
    DEFAULT_MIN_SCORE,
    DEFAULT_MODEL,
    DEFAULT_RRF_K,
    DEFAULT_SCORE_ALPHA,
    DEFAULT_SCORE_ALPHA_LONG,
    DEFAULT_SCORE_ALPHA_MID,
    DEFAULT_SCORE_ALPHA_SHORT,
    DEFAULT_SCORE_CJK_WEIGHT,
    DEFAULT_VECTOR_PIECES,
    FUSION_METHODS,
    MAX_LIMIT,
    MAX_TOP_K,
    MODES,
    PARSER_IDS,
    PRESET_VALUES,
    PRESETS,
    SCHEMA,
    SPECS,
    TABLES,
    KeySpec,
    Kind,
    default_float,
    default_int,
)
from groove_cli.dburl import (
    DEFAULT_EF_SEARCH,
    ENV_URL,
    IndexLocation,
    PgTarget,
    kb_name_for,
    looks_like_url,
    mask_url,
    parse_db_url,
)
from groove_cli.errors import ConfigError, UsageError

# The schema lives in config_schema.py; callers keep importing it from here.
__all__ = [
    "DEFAULT_BM25_WEIGHTS", "DEFAULT_CJK_WEIGHT", "DEFAULT_EXCLUDE_DIRS", "DEFAULT_FUSION",
    "DEFAULT_LEG_WEIGHT", "DEFAULT_MIN_SCORE", "DEFAULT_MODEL", "DEFAULT_RRF_K",
    "DEFAULT_SCORE_ALPHA", "DEFAULT_SCORE_ALPHA_LONG", "DEFAULT_SCORE_ALPHA_MID",
    "DEFAULT_SCORE_ALPHA_SHORT", "DEFAULT_SCORE_CJK_WEIGHT", "DEFAULT_VECTOR_PIECES",
    "FUSION_METHODS", "MAX_LIMIT", "MAX_TOP_K", "MODES", "PARSER_IDS", "PRESETS", "PRESET_VALUES",
    "SCHEMA", "SPECS", "TABLES", "KeySpec", "Kind", "default_float", "default_int",
]

Source = Literal["default", "file", "preset", "flag", "found"]
"""Where a value came from; `found`: the KB the working folder is in (kb_path only)."""


_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "float",
    str: "string",
    list: "array",
    dict: "table",
}


def _type_name(value: object) -> str:
    for py_type, name in _TYPE_NAMES.items():
        if type(value) is py_type:
            return name
    return type(value).__name__


def _expected_name(kind: Kind) -> str:
    return {
        "path": "string",
        "str": "string",
        "enum": "string",
        "enum_opt": "string",
        "int": "integer",
        "float": "float",
        "bool": "boolean",
        "list_str": "array of strings",
        "list_int": "array of integers",
        "list_float": "array of numbers",
    }[kind]


def _fmt_bound(spec: KeySpec, bound: float | None, side: str) -> str:
    if bound is None:
        return "inf" if side == "hi" else "-inf"
    if spec.kind in ("int", "list_int"):
        return str(int(bound))
    return repr(float(bound))


def range_text(spec: KeySpec) -> str:
    """`[lo, hi]` as shown in range errors (`[0.0, 1.0]`, `[1, 4096]`, `[0.0, inf]`)."""
    return f"[{_fmt_bound(spec, spec.lo, 'lo')}, {_fmt_bound(spec, spec.hi, 'hi')}]"


def check_value(spec: KeySpec, value: object) -> str | None:
    """Return why `value` is invalid for `spec` (None when valid). Types are checked first."""
    kind = spec.kind
    if kind in ("path", "str", "enum", "enum_opt"):
        if not isinstance(value, str):
            return f"expected {_expected_name(kind)}, got {_type_name(value)}"
        if kind in ("enum", "enum_opt") and value not in spec.choices:
            return f"must be one of {', '.join(spec.choices)}, got {value!r}"
        return None
    if kind == "bool":
        return None if isinstance(value, bool) else f"expected boolean, got {_type_name(value)}"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected integer, got {_type_name(value)}"
        return _range_problem(spec, value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected float, got {_type_name(value)}"
        return _range_problem(spec, float(value))
    if not isinstance(value, list):
        return f"expected {_expected_name(kind)}, got {_type_name(value)}"
    item_type: type | tuple[type, ...] = {"list_str": str, "list_int": int}.get(kind, (int, float))
    for item in value:
        if isinstance(item, bool) or not isinstance(item, item_type):
            return f"expected {_expected_name(kind)}, got an array containing {_type_name(item)}"
    if kind == "list_float" and not all(math.isfinite(float(item)) for item in value):
        return "must contain finite numbers"
    if kind == "list_int":
        if not value:
            return "must not be empty"
        for item in value:
            problem = _range_problem(spec, item)
            if problem:
                return problem
    return None


def _range_problem(spec: KeySpec, value: float) -> str | None:
    if spec.finite and not math.isfinite(value):
        return f"must be finite, got {value}"
    if math.isnan(value):
        return f"must be a number, got {value}"
    if (spec.lo is not None and value < spec.lo) or (spec.hi is not None and value > spec.hi):
        return f"__range__ {value}"
    return None


def _normalise(spec: KeySpec, value: object) -> object:
    """Integers are accepted where a float is expected; store them as float."""
    if spec.kind == "float" and isinstance(value, int):
        return float(value)
    return value


# --------------------------------------------------------------------------- discovery


def user_config_dir() -> Path:
    """The per-user configuration folder (config.md §1 step 4)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def user_cache_dir() -> Path:
    """The per-user cache folder (models cache default)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def user_config_path() -> Path:
    return user_config_dir() / "groove" / "groove.toml"


def git_root(start: Path, max_levels: int = 20) -> Path | None:
    """Nearest ancestor of `start` (itself included, ≤ 20 levels) holding a `.git` entry."""
    current = start
    for _ in range(max_levels + 1):
        if (current / ".git").exists():
            return current
        if current.parent == current:
            return None
        current = current.parent
    return None


ConfigOrigin = Literal["flag", "cwd", "git", "user"]


@dataclass(frozen=True, slots=True)
class FoundConfig:
    path: Path
    origin: ConfigOrigin


def discover_config(explicit: Path | None, cwd: Path) -> FoundConfig | None:
    """Find groove.toml: --config, ./groove.toml, <git root>/groove.toml, the per-user file."""
    if explicit is not None:
        path = Path(os.path.expanduser(str(explicit)))
        if not path.is_absolute():
            path = cwd / path
        if not path.is_file():
            raise ConfigError(f"--config path not found: {explicit}")
        return FoundConfig(path, "flag")
    local = cwd / "groove.toml"
    if local.is_file():
        return FoundConfig(local, "cwd")
    root = git_root(cwd)
    if root is not None and (root / "groove.toml").is_file():
        return FoundConfig(root / "groove.toml", "git")
    user = user_config_path()
    if _user_file_exists(user):
        return FoundConfig(user, "user")
    return None


def _user_file_exists(path: Path) -> bool:
    """Whether the per-user groove.toml exists; a folder that cannot be read (permissions, a
    broken mount) is skipped with a warning rather than failing every command."""
    try:
        return path.is_file()
    except OSError as exc:
        messages.warning(f"cannot read the per-user config folder {path.parent}: "
                         f"{exc.strerror or exc}; ignoring it")
        return False


# --------------------------------------------------------------------------- validation


def _suggest(name: str, candidates: list[str]) -> str:
    match = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f' (did you mean "{match[0]}"?)' if match else ""


def _walk(table: Mapping[str, object], prefix: str, path: Path, out: dict[str, object]) -> None:
    keys_here = [s.name for s in SCHEMA if s.table == prefix]
    tables_here = sorted(
        {t[len(prefix) + 1 if prefix else 0 :].split(".")[0] for t in TABLES if _under(t, prefix)}
    )
    for name, value in table.items():
        full = f"{prefix}.{name}" if prefix else name
        if name in keys_here:
            out[full] = value
        elif name in tables_here and isinstance(value, dict):
            _walk(value, full, path, out)
        elif name in tables_here:
            raise ConfigError(f"{path}: invalid config: {full}: expected table, got {_type_name(value)}")
        elif isinstance(value, dict):
            table_names = [f"{prefix}.{t}" if prefix else t for t in tables_here]
            raise ConfigError(f'{path}: unknown table "{full}"{_suggest(full, table_names)}')
        else:
            raise ConfigError(f'{path}: unknown key "{full}"{_suggest(name, keys_here)}')


def _under(table: str, prefix: str) -> bool:
    return table != prefix and (not prefix or table.startswith(prefix + "."))


def _resolve_path(value: str, base: Path) -> str:
    expanded = Path(os.path.expanduser(value))
    return str(expanded if expanded.is_absolute() else (base / expanded))


def validate_text(text: str, path: Path) -> dict[str, object]:
    """Parse and validate groove.toml text; return dotted key → value (paths resolved)."""
    try:
        data = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid config: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid config: arrays or tables are nested too deeply "
                          "(groove.toml needs at most 2 levels)") from None
    raw: dict[str, object] = {}
    _walk(data, "", path, raw)
    values: dict[str, object] = {}
    for key, value in raw.items():
        spec = SPECS[key]
        problem = check_value(spec, value)
        if problem and problem.startswith("__range__"):
            raise ConfigError(f"{path}: {key} = {value!r} is out of range {range_text(spec)}")
        if problem:
            raise ConfigError(f"{path}: invalid config: {key}: {problem}")
        value = _normalise(spec, value)
        if spec.kind == "path":
            assert isinstance(value, str)
            if key == "db_path" and looks_like_url(value):
                raise ConfigError(f"{path}: invalid config: db_path {mask_url(value)} is a URL, "
                                  "not a file", hint="put a Postgres URL in [store] url")
            value = _resolve_path(value, path.parent)
        values[key] = value
    _check_file_cross_keys(values, path)
    return values


def _check_store_url(values: dict[str, object], path: Path) -> None:
    """`[store] url` is read by the one URL parser: `config check` fails on a bad one."""
    url = values.get("store.url")
    if not isinstance(url, str) or not url.strip():
        return
    try:
        if parse_db_url(url, source="store.url") is None:
            _not_url("store.url", url)
    except UsageError as exc:
        raise ConfigError(f"{path}: invalid config: {exc.message}", hint=exc.hint) from None


def _check_file_cross_keys(values: dict[str, object], path: Path) -> None:
    _check_store_url(values, path)
    enabled = values.get("parsers.enabled")
    if isinstance(enabled, list):
        lowered = [str(v).lower() for v in enabled]
        if not lowered:
            raise ConfigError(f"{path}: invalid config: parsers.enabled must not be empty")
        for item in lowered:
            if item not in PARSER_IDS:
                raise ConfigError(
                    f'{path}: invalid config: parsers.enabled: unsupported parser "{item}" '
                    f"(supported: {', '.join(PARSER_IDS)})"
                )
        if len(set(lowered)) != len(lowered):
            raise ConfigError(f"{path}: invalid config: parsers.enabled has duplicate entries")
        values["parsers.enabled"] = lowered
    weights = [
        values.get(f"search.fusion.bm25_{c}_weight", SPECS[f"search.fusion.bm25_{c}_weight"].default)
        for c in ("heading", "context", "content")
    ]
    if all(w == 0 for w in weights):
        raise ConfigError(
            f"{path}: search.fusion.bm25_heading_weight, bm25_context_weight and "
            "bm25_content_weight must not all be 0"
        )
    threshold = values.get(
        "search.parent_retriever.whole_doc_threshold_tokens",
        SPECS["search.parent_retriever.whole_doc_threshold_tokens"].default,
    )
    maximum = values.get(
        "search.parent_retriever.max_expanded_tokens",
        SPECS["search.parent_retriever.max_expanded_tokens"].default,
    )
    assert isinstance(threshold, int) and isinstance(maximum, int)
    if maximum <= threshold:
        raise ConfigError(
            f"{path}: search.parent_retriever.max_expanded_tokens ({maximum}) must be greater "
            f"than whole_doc_threshold_tokens ({threshold})"
        )


def load_config_file(path: Path) -> dict[str, object]:
    """Read and validate a groove.toml file."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM (some Windows editors) is accepted
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: invalid config: the file is not UTF-8") from None
    return validate_text(text, path)


# --------------------------------------------------------------------------- flags


def check_flag(flag: str, key: str, value: object) -> object:
    """Range-check a command-line value against its config key; a violation is a usage error."""
    spec = SPECS[key]
    problem = check_value(spec, value)
    if problem and problem.startswith("__range__"):
        raise UsageError(f"{flag} {value} is out of range {range_text(spec)}")
    if problem:
        raise UsageError(f"{flag}: {problem}")
    return _normalise(spec, value)


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True, slots=True)
class Settings:
    """Every resolved setting with the layer it came from."""

    values: Mapping[str, object]
    sources: Mapping[str, Source]
    config: FoundConfig | None = None
    flags: frozenset[str] = field(default_factory=frozenset)

    def __getitem__(self, key: str) -> object:
        return self.values[key]

    def source(self, key: str) -> Source:
        return self.sources[key]

    def str_(self, key: str) -> str | None:
        value = self.values[key]
        assert value is None or isinstance(value, str)
        return value

    def float_(self, key: str) -> float:
        value = self.values[key]
        assert isinstance(value, (int, float))
        return float(value)

    def int_(self, key: str) -> int | None:
        value = self.values[key]
        assert value is None or isinstance(value, int)
        return value

    def bool_(self, key: str) -> bool:
        value = self.values[key]
        assert isinstance(value, bool)
        return value

    def list_(self, key: str) -> list[object]:
        value = self.values[key]
        assert isinstance(value, list)
        return value

    def path(self, key: str) -> Path | None:
        value = self.values[key]
        return None if value is None else Path(str(value))


def resolve(file_values: Mapping[str, object], flags: Mapping[str, object], *,
            config: FoundConfig | None = None) -> Settings:
    """Merge the layers: flag > file > preset > built-in default (config.md §2)."""
    preset_name = flags.get("search.retrieval.preset", file_values.get("search.retrieval.preset"))
    preset = PRESET_VALUES.get(str(preset_name), {}) if preset_name else {}
    values: dict[str, object] = {}
    sources: dict[str, Source] = {}
    for spec in SCHEMA:
        key = spec.key
        if key in flags and flags[key] is not None:
            values[key], sources[key] = flags[key], "flag"
        elif key in file_values:
            values[key], sources[key] = file_values[key], "file"
        elif key in preset:
            values[key], sources[key] = preset[key], "preset"
        else:
            default = spec.default
            values[key] = list(default) if isinstance(default, list) else default
            sources[key] = "default"
    settings = Settings(values, sources, config, frozenset(k for k, v in flags.items() if v is not None))
    check_leg_weights(settings)
    return settings


_WEIGHT_FLAGS = {
    "search.retrieval.vector_weight": "--vector-weight",
    "search.retrieval.fts_weight": "--fts-weight",
}


def check_leg_weights(settings: Settings) -> None:
    """The weights of the legs that `mode` runs must not all be 0 (config.md §4)."""
    mode = settings.str_("search.retrieval.mode")
    keys = {
        "hybrid": ["search.retrieval.vector_weight", "search.retrieval.fts_weight"],
        "vector": ["search.retrieval.vector_weight"],
        "fts": ["search.retrieval.fts_weight"],
    }[mode or "hybrid"]
    if any(settings.float_(k) > 0 for k in keys):
        return
    from_flags = [k for k in keys if settings.source(k) == "flag"]
    if from_flags or settings.source("search.retrieval.mode") == "flag":
        names = " and ".join(_WEIGHT_FLAGS[k] for k in keys)
        raise UsageError(f"{names} must not all be 0 in {mode} mode (no leg would run)")
    where = settings.config.path if settings.config else "groove.toml"
    names = " and ".join(keys)
    raise ConfigError(f"{where}: {names} must not all be 0 in {mode} mode (no leg would run)")


def load_settings(explicit_config: Path | None, flags: Mapping[str, object], *,
                  cwd: Path | None = None) -> Settings:
    """Discover, validate and resolve in one call (what every command does first)."""
    found = discover_config(explicit_config, cwd or Path.cwd())
    file_values = load_config_file(found.path) if found else {}
    return resolve(file_values, flags, config=found)


def with_found_kb(settings: Settings, kb: Path) -> Settings:
    """`settings` with kb_path set to the KB the working folder is in (source `found`)."""
    return Settings({**settings.values, "kb_path": str(kb)},
                    {**settings.sources, "kb_path": "found"}, settings.config, settings.flags)


def models_dir(settings: Settings) -> Path:
    """The model cache folder: config `models_dir`, else `<user cache>/groove/models`."""
    configured = settings.path("models_dir")
    return configured if configured is not None else user_cache_dir() / "groove" / "models"


def no_kb_error() -> UsageError:
    return UsageError(
        "--kb-path is required: no knowledge base found from the working folder (pass "
        "--kb-path or -c NAME, set kb_path in groove.toml, or run inside an indexed KB)")


def kb_path(settings: Settings, *, required: bool = True) -> Path | None:
    """`--kb-path` > config kb_path; missing is a usage error when the command needs it."""
    value = settings.path("kb_path")
    if value is None:
        if required:
            raise no_kb_error()
        return None
    path = Path(os.path.expanduser(str(value)))
    if not path.is_dir():
        raise UsageError(f"--kb-path {value} is not an existing directory")
    return path


def db_path(settings: Settings, flag: Path | None, kb: Path | None) -> Path:
    """`--db` > config db_path > the KB's state folder (`<kb>/.groove/index.db`, statedir.py)."""
    if flag is not None:
        return Path(os.path.expanduser(str(flag))).absolute()
    configured = settings.path("db_path")
    if configured is not None:
        return configured
    if kb is None:
        raise no_kb_error()
    return statedir.index_file(kb, settings.str_("store.location"))


def store_url(settings: Settings, flag: str | None = None) -> tuple[str | None, str]:
    """The Postgres URL in effect and where it came from: `--db` (`flag`) > GROOVE_DB_URL
    (`env`) > `[store] url` (its settings source); (None, that source) when none is set.
    `config show` prints this pair, so it shows what `index_location` uses."""
    if flag is not None and parse_db_url(flag, source="--db") is not None:
        return flag.strip(), "flag"
    env = os.environ.get(ENV_URL, "").strip()
    if env:
        return env, f"env {ENV_URL}"
    configured = settings.str_("store.url")
    return (configured.strip() if configured else None), settings.source("store.url")


def index_location(settings: Settings, flag: str | None, kb: Path | None, *,
                   environment: bool = True) -> IndexLocation:
    """Where the index is: a Postgres KB when `--db` is a URL, else (without `--db`) when
    GROOVE_DB_URL (read only with `environment`) or `[store] url` is set; otherwise the SQLite
    file of `db_path`. Precedence: flag > environment > config > the SQLite default. Every
    source is read by `dburl.parse_db_url`: a URL groove does not accept is a usage error,
    never a file path."""
    url = None
    if flag is not None:
        url = parse_db_url(flag, source="--db")
        if url is None:
            return db_path(settings, Path(flag), kb)
    else:
        env = os.environ.get(ENV_URL, "").strip() if environment else ""
        configured = (settings.str_("store.url") or "").strip()
        if env:
            url = parse_db_url(env, source=ENV_URL) or _not_url(ENV_URL, env)
        elif configured:
            url = parse_db_url(configured, source="[store] url") or _not_url("[store] url",
                                                                            configured)
    if url is None:
        return db_path(settings, None, kb)
    named = settings.str_("store.kb")
    ef = settings.int_("store.ef_search")
    return PgTarget(url, named or kb_name_for(kb), ef if ef is not None else DEFAULT_EF_SEARCH,
                    kb_explicit=bool(named), vector_index=settings.str_("store.vector_index")
                    or "hnsw")


def _not_url(source: str, value: str) -> NoReturn:
    """GROOVE_DB_URL and `[store] url` name a database only: a path there is a usage error."""
    from groove_cli.dburl import ACCEPTED_TEXT, URL_HINT

    raise UsageError(f"{source} {mask_url(value)} is not a Postgres URL ({ACCEPTED_TEXT})",
                     hint=URL_HINT)


THREADS_ENV = "GROOVE_THREADS"


def model_threads(settings: Settings) -> int | None:
    """The model's intra-op threads: GROOVE_THREADS > `threads` > None (the cores this process
    may use; 0 means the same). A bad GROOVE_THREADS is a usage error naming it."""
    env = os.environ.get(THREADS_ENV, "").strip()
    if env:
        spec = SPECS["threads"]
        value = int(env) if env.isdigit() else None
        if value is None or check_value(spec, value) is not None:
            raise UsageError(f"{THREADS_ENV}={env!r} is not a thread count",
                             hint=f"set it to an integer {range_text(spec)}, or 0 for every core")
        return value or None
    return settings.int_("threads") or None


def offline_mode() -> bool:
    """GROOVE_OFFLINE=1 or HF_HUB_OFFLINE=1 forbid model downloads (config.md §6)."""
    return any(os.environ.get(name, "").strip() not in ("", "0") for name in
               ("GROOVE_OFFLINE", "HF_HUB_OFFLINE"))
