"""The command line: resolve settings, make one core call, render the result.

Each command adapts flags to the core and nothing more; the core raises GrooveError subclasses
and `_run` turns them into `groove: error: …` lines with the right exit code, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from groove_cli import __version__, messages
from groove_cli.config import Settings, load_settings
from groove_cli.errors import GrooveError
from groove_cli.render import output

T = TypeVar("T")

app = typer.Typer(
    name="groove",
    help=(
        "Hybrid full-text + vector search over a folder of Markdown notes, "
        "with built-in evaluation and tuning.\n\n"
        "Global options go before the command: [bold]groove --config x.toml search 'query'[/bold]"
    ),
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(
    help="Inspect and validate groove.toml.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(config_app, name="config")


class GlobalOptions:
    """Options of the top-level callback, shared by every command."""

    def __init__(self, config: Path | None, db: Path | None) -> None:
        self.config = config
        self.db = db


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"groove {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_callback(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Use this groove.toml instead of discovering one."),
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="The index file (default: config db_path, else <kb>/.groove.db)."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True,
                     help="Print the version and exit."),
    ] = False,
) -> None:
    """groove — search your notes the way a good retrieval system does, and measure it."""
    ctx.obj = GlobalOptions(config, db)


def _globals(ctx: typer.Context) -> GlobalOptions:
    obj = ctx.find_root().obj
    assert isinstance(obj, GlobalOptions)
    return obj


def _run(action: Callable[[], T]) -> T:
    """Run a core call; translate GrooveError into the stderr contract and exit code."""
    try:
        return action()
    except GrooveError as exc:
        messages.error(exc.message)
        if exc.hint:
            messages.always(f"groove: hint: {exc.hint}")
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        messages.error("interrupted")
        raise typer.Exit(130) from None


def _settings(ctx: typer.Context, flags: dict[str, object], *, announce: bool = True) -> Settings:
    settings = load_settings(_globals(ctx).config, flags)
    if announce:
        if settings.config is not None:
            messages.note(f"loaded config: {settings.config.path}")
        else:
            messages.note("no config file; using built-in defaults")
    return settings


FormatOpt = Annotated[
    str,
    typer.Option("--format", help="Output format: text or json.", case_sensitive=False),
]


def _check_format(value: str, allowed: tuple[str, ...]) -> str:
    lowered = value.lower()
    if lowered not in allowed:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)}", param_hint="--format")
    return lowered


@config_app.command("show")
def config_show(
    ctx: typer.Context,
    format: FormatOpt = "text",
) -> None:
    """Print every resolved setting and where it came from (default, file, preset, flag).

    Example: [bold]groove config show --format json[/bold]
    """
    fmt = _check_format(format, ("text", "json"))
    settings = _run(lambda: _settings(ctx, {}, announce=False))
    output.print_config(settings, fmt)


@config_app.command("check")
def config_check(ctx: typer.Context) -> None:
    """Validate groove.toml: exit 0 when valid, 1 with the first problem otherwise.

    Example: [bold]groove --config ./groove.toml config check[/bold]
    """
    settings = _run(lambda: _settings(ctx, {}, announce=False))
    where = settings.config.path if settings.config else None
    output.print_line(f"{where}: ok" if where else "no config file; built-in defaults are valid")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
