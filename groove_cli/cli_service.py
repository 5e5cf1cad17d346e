"""`groove service install|uninstall|status`: `groove serve --watch` as the user's OS service
(a systemd user unit, a launchd agent), through the public API (api.install_service …)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groove_cli.cli_options import check_format, run_core, settings_for, sub_app
from groove_cli.render import output

if TYPE_CHECKING:
    from groove_cli.osservice import ServiceUnit

service_app = sub_app("Run `groove serve --watch` as your OS service (systemd, launchd).")

PlatformOpt = Annotated[str | None, typer.Option("--platform", help=(
    "systemd or launchd (default: this system's)."))]
NameOpt = Annotated[str | None, typer.Option("--name", help=(
    "The service's name (default: the first KB folder's name)."))]


def _kbs(ctx: typer.Context, kbs: list[Path] | None) -> list[Path]:
    """The KB folders given, else kb_path as every command resolves it (cli.md §1)."""
    if kbs:
        return kbs
    from groove_cli import config

    settings = settings_for(ctx, {}, announce=False)
    found = config.kb_path(settings, required=True)
    assert found is not None
    return [found]


@service_app.command("install")
def service_install(
    ctx: typer.Context,
    kbs: Annotated[list[Path] | None, typer.Argument(help=(
        "KB folders to serve (default: kb_path in groove.toml)."), show_default=False)] = None,
    name: NameOpt = None,
    port: Annotated[int | None, typer.Option("--port", help=(
        "The server's TCP port (default: serve's, 7531)."))] = None,
    platform: PlatformOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help=(
        "Print the unit (or agent plist) and where it would go; write nothing."))] = False,
) -> None:
    """Write a systemd user unit (Linux) or launchd agent (macOS) running serve --watch.

    Logs go to the journal (journalctl --user -u groove-NAME) or ~/Library/Logs/groove/.
    groove runs no service manager itself: the command that starts the service is printed.

    Example: `groove service install ~/notes --dry-run`
    """
    from groove_cli.api import install_service, service_unit

    def run() -> ServiceUnit:
        folders = _kbs(ctx, kbs)
        if dry_run:
            return service_unit(folders, name=name, platform=platform, port=port)
        return install_service(folders, name=name, platform=platform, port=port)

    unit = run_core(run)
    if dry_run:
        output.print_line(f"# {unit.path}")
        output.print_line(unit.text.rstrip("\n"))
        return
    output.print_line(f"wrote {unit.path}")
    output.print_line(f"start it: {unit.start}")
    output.print_line(f"logs: {unit.logs}")


@service_app.command("uninstall")
def service_uninstall(
    name: Annotated[str, typer.Argument(help="The service's name (groove service status).")],
    platform: PlatformOpt = None,
) -> None:
    """Remove a groove service's file (stop it first with the command printed).

    Example: `groove service uninstall notes`
    """
    from groove_cli.api import uninstall_service

    unit = run_core(lambda: uninstall_service(name, platform=platform))
    output.print_line(f"removed {unit.path}")
    output.print_line(f"if it is still running, stop it: {unit.stop}")


@service_app.command("status")
def service_status(
    platform: PlatformOpt = None,
    format: Annotated[str, typer.Option("--format", case_sensitive=False,
                                        help="text or json.")] = "text",
) -> None:
    """List the groove services installed for this user, their files and logs.

    Example: `groove service status`
    """
    from groove_cli.api import services

    fmt = check_format(format, ("text", "json"))
    found = run_core(lambda: services(platform=platform))
    if fmt == "json":
        output.print_json({"services": [u.to_json() for u in found]})
        return
    if not found:
        output.print_line("no groove service is installed")
    for unit in found:
        command = next((line.partition("=")[2] for line in unit.text.splitlines()
                        if line.startswith("ExecStart=")), "")
        output.print_line(f"{unit.name}: {unit.path}" + (f"\n  runs: {command}" if command
                                                          else ""))
        output.print_line(f"  logs: {unit.logs}\n  start: {unit.start}")
