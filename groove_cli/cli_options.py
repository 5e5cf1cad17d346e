"""What the commands of cli.py share: global options, settings and paths, error translation, and
the option bundles several commands declare once (`RetrievalFlags`, `FilterFlags`).

A bundle is a frozen dataclass plus its typer options; `with_options` puts the options on a
command in place of one parameter and hands the command the filled bundle, so `search` and
`eval` declare `--mode`, `--rrf-k`, … in one place and range-check them the same way.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_args

import typer
from typer.core import TyperGroup

from groove_cli import config, failures, messages
from groove_cli.config import KeySpec, Settings
from groove_cli.dburl import IndexLocation
from groove_cli.errors import UsageError

if TYPE_CHECKING:
    from groove_cli.api import Filters

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class GlobalOptions:
    """Options of the top-level callback, shared by every command."""

    def __init__(self, config: Path | None, db: str | None) -> None:
        self.config = config
        self.db = db


def global_options(ctx: typer.Context) -> GlobalOptions:
    obj = ctx.find_root().obj
    assert isinstance(obj, GlobalOptions)
    return obj


@contextmanager
def translated() -> Iterator[None]:
    """Expected failures leave as `groove: error: …` and their exit code (failures.py)."""
    try:
        yield
    except SystemExit as exc:  # rich ends a write into a closed pipe (`--help | head`) so
        if isinstance(exc.__context__, BrokenPipeError):
            raise typer.Exit(failures.report(failures.ReaderGone())) from None
        raise
    except Exception as exc:
        error = failures.translate(exc)
        if error is None:
            raise
        raise typer.Exit(failures.report(error)) from None


class GrooveGroup(TyperGroup):
    """The top-level command group: hooks failures.py's translation point around argument
    parsing and every command, so expected failures become `groove: error: …` and an exit
    code; a bug still shows its traceback."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Global options are parsed here, before `invoke`: their usage errors too. The
        messages' stderr handler is installed first (the library has none of its own)."""
        messages.install_stderr()
        with translated():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        with translated(), failures.guarded_stdout():
            return super().invoke(ctx)


def run_core(action: Callable[[], T]) -> T:
    """Run a core call; translate an expected failure (failures.py: a GrooveError, a damaged
    index file, a full disk, read-only storage) into the stderr contract and exit code."""
    try:
        return action()
    except KeyboardInterrupt:
        messages.error("interrupted")
        raise typer.Exit(130) from None
    except Exception as exc:
        error = failures.translate(exc)
        if error is None:
            raise
        raise typer.Exit(failures.report(error)) from None


COLLECTIONS_KEY = "groove.collections"


def remember_collections(ctx: typer.Context, value: list[str] | None) -> list[str] | None:
    """`-c NAME`'s callback: keep the names for settings_for (the commands never see them)."""
    ctx.meta[COLLECTIONS_KEY] = list(value or [])
    return value


def chosen_collections(ctx: typer.Context) -> list[str]:
    names = ctx.meta.get(COLLECTIONS_KEY) or []
    assert isinstance(names, list)
    return names


def collection_flags(ctx: typer.Context, flags: dict[str, object],
                     collection: str | None = None) -> tuple[dict[str, object], Path]:
    """The flags and working folder a command resolves with: with `-c NAME` it runs as if
    started in the collection's folder, so that KB's groove.toml (or its git root's) applies,
    not the working folder's. `collection` stands for the `-c` names (one KB of a multi-KB
    search)."""
    from groove_cli import kbs

    names = [collection] if collection is not None else chosen_collections(ctx)
    if len(names) > 1:
        raise UsageError("only search takes several -c; pass one collection",
                         hint="groove search QUERY -c a -c b searches several KBs")
    if names and "kb_path" in flags:
        raise UsageError(f"--kb-path and -c {names[0]} both name a KB; pass one of them")
    if not names:
        return flags, Path.cwd()
    kb = kbs.collection(names[0]).path
    return {**flags, "kb_path": str(kb)}, kb


def settings_for(ctx: typer.Context, flags: dict[str, object], *, announce: bool = True,
                 collection: str | None = None) -> Settings:
    """Resolve the settings with these flags and the KB (cli.md §1: `--kb-path` > `-c NAME` >
    kb_path of a project groove.toml > the KB the working folder is in > kb_path of the
    per-user groove.toml, `api.settings_at`); announce which config file (if any) was loaded."""
    from groove_cli.api import settings_at

    flags, cwd = collection_flags(ctx, flags, collection)
    options = global_options(ctx)
    settings, _ = settings_at(flags, config_file=options.config, cwd=cwd, db=options.db,
                              discover=True)
    if announce:
        announce_config(settings)
    return settings


def announce_config(settings: Settings) -> None:
    """Which config file applied: only with --verbose, for a user who wonders."""
    if settings.config is not None:
        messages.detail(f"loaded config: {settings.config.path}")
    else:
        messages.detail("no config file; using built-in defaults")


def set_flags(**pairs: object) -> dict[str, object]:
    """Drop unset flags so lower layers (file, preset, default) apply."""
    return {key: value for key, value in pairs.items() if value is not None}


def kb_flags(kb_path: Path | None, **pairs: object) -> dict[str, object]:
    """`--kb-path` and other flags as config keys, unset ones dropped."""
    return set_flags(kb_path=str(kb_path) if kb_path else None, **pairs)


def print_version(value: bool) -> None:
    """`--version`: print the version and exit."""
    if value:
        from groove_cli._version import version

        typer.echo(f"groove {version()}")
        raise typer.Exit(0)


def sub_app(help_text: str) -> typer.Typer:
    """A command group (`groove config …`, `groove models …`)."""
    return typer.Typer(help=help_text, no_args_is_help=True,
                       context_settings={"help_option_names": ["-h", "--help"]})


@dataclass(frozen=True, slots=True)
class Paths:
    settings: Settings
    kb: Path | None
    db: IndexLocation


def resolve_paths(ctx: typer.Context, flags: dict[str, object], *, kb_required: bool,
                  announce: bool = True, writing: bool = False, force: bool = False,
                  collection: str | None = None) -> Paths:
    """Settings, the KB folder and the index of a command (cli.md §1), resolved as the public
    API resolves them (`api.resolve`), once the SQLite runtime is known to be usable.
    `writing` (index): the KB's state folder is made and an old-layout index moved into it
    (statedir.py; `force`: a damaged one set aside instead)."""
    from groove_cli.api import resolve

    flags, cwd = collection_flags(ctx, flags, collection)
    options = global_options(ctx)
    settings, kb, db, _ = resolve(db=options.db, config_file=options.config,
                                  kb_required=kb_required, flags=flags, cwd=cwd,
                                  writing=writing, force=force, discover=True)
    if announce:
        announce_config(settings)
    return Paths(settings, kb, db)


def check_format(value: str, allowed: tuple[str, ...]) -> str:
    lowered = value.lower()
    if lowered not in allowed:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)}",
                                 param_hint="--format")
    return lowered


def bool_flag(flag: str, value: str | None) -> bool | None:
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise UsageError(f"{flag} expects true or false, got {value!r}")


def choice(flag: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        raise UsageError(f"{flag} must be one of {', '.join(allowed)}, got {value!r}")
    return value


# --------------------------------------------------------------------------- options

FormatOpt = Annotated[
    str,
    typer.Option("--format", help="Output format: text or json.", case_sensitive=False),
]
SUMMARY_HELP = " (Markdown is also appended to $GITHUB_STEP_SUMMARY when set, whatever the format)."
EvalFormatOpt = Annotated[str, typer.Option(
    "--format", case_sensitive=False,
    help="text, json, junit (one testcase per golden query) or markdown" + SUMMARY_HELP)]
TuneFormatOpt = Annotated[str, typer.Option(
    "--format", case_sensitive=False, help="text, json or markdown" + SUMMARY_HELP)]
CompareFormatOpt = Annotated[str, typer.Option(
    "--format", case_sensitive=False, help="text, json or markdown.")]
KbOpt = Annotated[
    Path | None,
    typer.Option("--kb-path", help=(
        "Knowledge-base root (default: -c, kb_path in groove.toml, else the KB the working "
        "folder is in)."))]
CollectionOpt = Annotated[list[str] | None, typer.Option(
    "--collection", "-c", callback=remember_collections, expose_value=False, metavar="NAME",
    help="A named collection (groove kb list) instead of --kb-path, from any folder.")]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", help="Embedding model: registry name or model directory."),
]
RerankerOpt = Annotated[str | None, typer.Option(
    "--reranker", help="Cross-encoder: registry name, model directory, or none.")]
GoldenOpt = Annotated[Path | None, typer.Option(
    "--golden", help="Golden file (default [eval].golden, else KB/.groove-eval.yml).")]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="Disable colour.")]
NoServerOpt = Annotated[bool, typer.Option("--no-server", help=(
    "Run in this process even when `groove serve` serves the index."))]
VerboseOpt = Annotated[bool, typer.Option(
    "--verbose", "-v",
    help=("Also print informational notes (which config file was loaded, …); tune: the full "
          "report; status: the pending files by name."))]


def verbose(on: bool) -> None:
    """Apply `--verbose` before any work, so every note of the run honours it."""
    messages.set_verbose(on)


def with_options(param: str, bundle: Callable[[dict[str, Any]], Any],
                 options: Mapping[str, Any]) -> Callable[[F], F]:
    """Replace the command parameter `param` by the options (same place in --help); the
    command receives `bundle(values by option name)` as `param`. Every option defaults to None
    unless the annotation's type is bool (a switch, default False)."""

    def decorate(func: F) -> F:
        signature = inspect.signature(func, eval_str=True)
        expanded: list[inspect.Parameter] = []
        for parameter in signature.parameters.values():
            if parameter.name != param:
                expanded.append(parameter)
                continue
            expanded += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                           default=_option_default(annotation),
                                           annotation=annotation)
                         for name, annotation in options.items()]

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            kwargs[param] = bundle({name: kwargs.pop(name) for name in options})
            return func(*args, **kwargs)

        command.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=expanded)
        return command  # type: ignore[return-value]

    return decorate


def _option_default(annotation: Any) -> object:
    return False if get_args(annotation)[0] is bool else None


@dataclass(frozen=True, slots=True)
class RetrievalFlags:
    """The retrieval options `search` and `eval` share (cli.md §5, §6): one per config key
    that declares a `flag` (config_schema.py), as typed on the command line, by key."""

    given: Mapping[str, object] = field(default_factory=dict)
    """Config key → the flag's value (None: not given)."""

    def config_flags(self) -> dict[str, object]:
        """Range-check the flags and map them to config keys (unset flags left out)."""
        return set_flags(**{key: flag_value(config.SPECS[key], value)
                            for key, value in self.given.items()})


def flag_value(spec: KeySpec, value: object) -> object:
    """A declared flag's value checked against its key: a choice, true/false, or a number in
    range (a violation is a usage error naming the flag)."""
    assert spec.flag is not None
    if value is None:
        return None
    if spec.kind in ("enum", "enum_opt"):
        return choice(spec.flag, str(value), spec.choices)
    if spec.kind == "bool":
        return bool_flag(spec.flag, str(value))
    return config.check_flag(spec.flag, spec.key, value)


def flag_param(spec: KeySpec) -> str:
    """The command parameter of a declared flag: `--rrf-k` → `rrf_k`."""
    assert spec.flag is not None
    return spec.flag.removeprefix("--").replace("-", "_")


def _number(value: float) -> str:
    """A bound as help text reads it: 1, 0.5, 1e6."""
    return f"{value:.0e}".replace("e+0", "e") if abs(value) >= 1e5 else f"{value:g}"


def flag_help(spec: KeySpec) -> str:
    """The key's help with its range and built-in default, generated so neither can drift."""
    facts: list[str] = []
    if spec.kind in ("int", "float") and spec.lo is not None:
        facts.append(f"{_number(spec.lo)}-{_number(spec.hi)}" if spec.hi is not None
                     else f">= {_number(spec.lo)}")
    if spec.default is not None:
        default = spec.default
        facts.append(f"default {str(default).lower() if isinstance(default, bool) else default}")
    return f"{spec.help.rstrip('.')} ({'; '.join(facts)})." if facts else spec.help


FLAG_TYPES: dict[str, type] = {"int": int, "float": float, "bool": str, "enum": str,
                               "enum_opt": str}
"""The command-line type of a declared flag by its key's kind (true/false is parsed by
`bool_flag`, so `--mmr false` reads as a value, not a switch)."""


def retrieval_options(schema: tuple[KeySpec, ...] = config.SCHEMA) -> dict[str, Any]:
    """The typer options of every key that declares a flag, in schema order."""
    options: dict[str, Any] = {}
    for spec in schema:
        if spec.flag is None:
            continue
        metavar = ("true|false" if spec.kind == "bool"
                   else "|".join(spec.choices) if spec.choices else None)
        options[flag_param(spec)] = Annotated[FLAG_TYPES[spec.kind] | None, typer.Option(
            spec.flag, help=flag_help(spec), metavar=metavar)]
    return options


def retrieval_flags(schema: tuple[KeySpec, ...] = config.SCHEMA
                    ) -> Callable[[dict[str, object]], RetrievalFlags]:
    """The bundle of `retrieval_options(schema)`'s values, by config key."""
    keys = {flag_param(spec): spec.key for spec in schema if spec.flag is not None}
    return lambda values: RetrievalFlags({keys[name]: value for name, value in values.items()})


with_retrieval_flags = with_options("retrieval", retrieval_flags(), retrieval_options())


@dataclass(frozen=True, slots=True)
class FilterFlags:
    """`search`'s metadata and quality filters (cli.md §5)."""

    category: str | None = None
    topic: str | None = None
    path_glob: list[str] | None = None
    tag_any: list[str] | None = None
    tag_all: list[str] | None = None
    date_from: str | None = None
    date_to: str | None = None
    min_quality: float | None = None
    include_low_quality: bool = False

    def filters(self) -> Filters:
        """The public API's Filters (checked and resolved against settings by the search)."""
        from groove_cli.api import Filters

        return Filters(path_glob=tuple(self.path_glob or ()), tag_any=tuple(self.tag_any or ()),
                       tag_all=tuple(self.tag_all or ()), category=self.category,
                       topic=self.topic, date_from=self.date_from, date_to=self.date_to,
                       min_quality=self.min_quality,
                       include_low_quality=self.include_low_quality)


FILTER_OPTIONS: dict[str, Any] = {
    "category": Annotated[str | None, typer.Option("--category", help="Exact document category.")],
    "topic": Annotated[str | None, typer.Option("--topic", help="Exact document topic.")],
    "path_glob": Annotated[list[str] | None, typer.Option("--path-glob", help=(
        "Path glob (* ** ? [..] {a,b}); repeatable; a leading ! excludes."))],
    "tag_any": Annotated[list[str] | None, typer.Option("--tag-any", help=(
        "Comma-separated tags; any must be present. Repeatable."))],
    "tag_all": Annotated[list[str] | None, typer.Option("--tag-all", help=(
        "Comma-separated tags; all must be present. Repeatable."))],
    "date_from": Annotated[str | None, typer.Option("--date-from", help=(
        "Inclusive lower bound: an ISO-8601 date (2026-05-06, or 2026-05 / 2026)."))],
    "date_to": Annotated[str | None, typer.Option("--date-to", help=(
        "Inclusive upper bound: an ISO-8601 date (2026-05-06, or 2026-05 / 2026)."))],
    "min_quality": Annotated[float | None, typer.Option("--min-quality", help=(
        "Quality threshold, clamped to [0, 1] (default [quality_filter] / 0.3)."))],
    "include_low_quality": Annotated[bool, typer.Option("--include-low-quality", help=(
        "Quality threshold 0 (wins over --min-quality)."))],
}
with_filter_flags = with_options("filters", lambda values: FilterFlags(**values),
                                 FILTER_OPTIONS)
