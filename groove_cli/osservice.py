"""`groove service`: run `groove serve --watch` for some KBs as the user's own OS service
(cli.md `service`): a systemd user unit on Linux, a launchd agent on macOS.

- systemd: `$XDG_CONFIG_HOME/systemd/user/groove-NAME.service` (default `~/.config/…`),
  logs in the journal (`journalctl --user -u groove-NAME`);
- launchd: `~/Library/LaunchAgents/io.groove.NAME.plist`, logs in
  `~/Library/Logs/groove/NAME.log`.

The file is written through the one output writer (outfile.replace_file: a temporary file
renamed over the target). groove never runs systemctl or launchctl itself: `install` and
`uninstall` print the command that starts or stops the service, so nothing outside the
user's files changes without them. `uninstall` removes the file, systemd's `enable` link
and the folders `install` made, when empty.
"""

from __future__ import annotations

import contextlib
import os
import plistlib
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from groove_cli.errors import GrooveError, UsageError
from groove_cli.outfile import replace_file, umask

Platform = Literal["systemd", "launchd"]
PLATFORMS: tuple[str, ...] = ("systemd", "launchd")
PREFIX = "groove-"
LAUNCHD_PREFIX = "io.groove."
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True, slots=True)
class ServiceUnit:
    """One service: its name, platform, file, the file's text and where its logs go."""

    name: str
    platform: Platform
    path: Path
    text: str
    logs: str
    start: str
    """The command that starts it (printed by `install`)."""
    stop: str
    """The command that stops it (printed by `uninstall`)."""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "platform": self.platform, "path": str(self.path),
                "logs": self.logs, "start": self.start, "stop": self.stop,
                "installed": self.path.is_file()}


def current_platform(given: str | None = None) -> Platform:
    """`given` checked, else this machine's service manager."""
    if given is not None:
        if given not in PLATFORMS:
            raise UsageError(f"unknown --platform {given[:40]!r}",
                             hint=f"use one of: {', '.join(PLATFORMS)}")
        return given  # type: ignore[return-value]
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux"):
        return "systemd"
    raise UsageError(f"groove service supports Linux (systemd) and macOS (launchd), not "
                     f"{sys.platform}", hint="run `groove serve --watch` from your own service "
                                             "manager")


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name) or name.startswith("."):
        raise UsageError(f"service name {name[:64]!r} must be 1 to 64 letters, digits, '.', '_' "
                         "or '-'", hint="pass --name NAME")
    return name


def default_name(kbs: Sequence[Path]) -> str:
    """The first KB folder's name, made a valid service name."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", kbs[0].name).strip("-.") if kbs else ""
    return (base or "kb")[:64]


def groove_command() -> list[str]:
    """The absolute command that runs this groove: the `groove` script that is running, else
    the one on PATH, else this Python with `-m groove_cli`."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "groove" and argv0.is_file():
        return [str(argv0.resolve())]
    found = shutil.which("groove")
    if found:
        return [str(Path(found).resolve())]
    return [str(Path(sys.executable).absolute()), "-m", "groove_cli"]


def config_home(home: Path) -> Path:
    given = os.environ.get("XDG_CONFIG_HOME")
    return Path(given) if given and Path(given).is_absolute() else home / ".config"


def systemd_quote(arg: str) -> str:
    """One ExecStart word: `%` and `$` doubled (specifiers, variables), quoted with `\\` and `"`
    escaped when it has a space, quote or backslash."""
    if any(ord(ch) < 32 for ch in arg):
        raise UsageError(f"{arg[:60]!r}: a control character cannot go in a service command")
    arg = arg.replace("%", "%%").replace("$", "$$")
    if re.search(r'[\s"\'\\;]', arg) or not arg:
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def serve_args(kbs: Sequence[Path], port: int | None) -> list[str]:
    args = ["serve", "--watch"]
    if port is not None:
        args += ["--port", str(port)]
    return args + [str(kb) for kb in kbs]


def unit_for(kbs: Sequence[Path], *, name: str | None = None, platform: Platform,
             home: Path, port: int | None = None, command: Sequence[str] | None = None
             ) -> ServiceUnit:
    """The service file that runs `groove serve --watch KBS` (KB folders, made absolute)."""
    if not kbs:
        raise UsageError("name the KB folders to serve", hint="groove service install ~/notes")
    folders = [kb.expanduser().absolute() for kb in kbs]
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"the KB folder {folder} does not exist",
                             hint="pass the folder of notes you index")
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"--port {port} must be from 1 to 65535")
    label = check_name(name if name is not None else default_name(folders))
    argv = [*(command or groove_command()), *serve_args(folders, port)]
    described = ", ".join(f.name for f in folders)
    if platform == "systemd":
        unit = f"{PREFIX}{label}.service"
        text = "\n".join([
            "[Unit]",
            f"Description=groove serve --watch ({described.replace('%', '%%')})",
            "After=network.target",
            "",
            "[Service]",
            "Type=simple",
            f"ExecStart={' '.join(systemd_quote(a) for a in argv)}",
            f"WorkingDirectory={str(folders[0]).replace('%', '%%')}",
            "Environment=PYTHONUNBUFFERED=1",
            "Restart=on-failure",
            "RestartSec=5",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ])
        return ServiceUnit(label, platform, config_home(home) / "systemd" / "user" / unit, text,
                           f"journalctl --user -u {unit}",
                           f"systemctl --user daemon-reload && systemctl --user enable --now "
                           f"{unit}", f"systemctl --user disable --now {unit}")
    agent = f"{LAUNCHD_PREFIX}{label}"
    logs = home / "Library" / "Logs" / "groove"
    path = home / "Library" / "LaunchAgents" / f"{agent}.plist"
    plist = {"Label": agent, "ProgramArguments": argv, "WorkingDirectory": str(folders[0]),
             "RunAtLoad": True, "KeepAlive": {"SuccessfulExit": False},
             "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
             "StandardOutPath": str(logs / f"{label}.log"),
             "StandardErrorPath": str(logs / f"{label}.log"), "ProcessType": "Background"}
    text = plistlib.dumps(plist, sort_keys=False).decode("utf-8")
    return ServiceUnit(label, platform, path, text, str(logs / f"{label}.log"),
                       f"launchctl bootstrap gui/$(id -u) {path}",
                       f"launchctl bootout gui/$(id -u)/{agent}")


def _made_dirs(unit: ServiceUnit, home: Path) -> list[Path]:
    """The folders `install` may create, deepest first (`uninstall` removes them when empty)."""
    if unit.platform == "systemd":
        return [unit.path.parent, unit.path.parent.parent, unit.path.parent.parent.parent]
    return [home / "Library" / "Logs" / "groove", unit.path.parent,
            home / "Library" / "Logs", home / "Library"]


def install(unit: ServiceUnit, home: Path) -> ServiceUnit:
    """Write the unit (replacing one of the same name); make its log folder (launchd)."""
    try:
        unit.path.parent.mkdir(parents=True, exist_ok=True)
        if unit.platform == "launchd":
            (home / "Library" / "Logs" / "groove").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GrooveError(f"cannot make {unit.path.parent}: {exc.strerror or exc}") from None
    replace_file(unit.path, unit.text.encode("utf-8"), 0o644 & ~umask(), None,
                 what="the service file")
    return unit


def find(name: str, platform: Platform, home: Path) -> ServiceUnit:
    """The installed-or-not unit of that name (text: the installed file's, else empty)."""
    check_name(name)
    shell = unit_for([home], name=name, platform=platform, home=home, command=["groove"])
    text = shell.path.read_text(encoding="utf-8") if shell.path.is_file() else ""
    return ServiceUnit(name, platform, shell.path, text, shell.logs, shell.start, shell.stop)


def uninstall(name: str, platform: Platform, home: Path) -> ServiceUnit:
    """Remove the named service's file, its systemd `enable` link and the empty folders."""
    unit = find(name, platform, home)
    if not unit.path.is_file():
        raise GrooveError(f"no groove service {name!r} is installed (no {unit.path})",
                          hint="groove service status lists the installed ones")
    if platform == "systemd":
        wants = unit.path.parent / "default.target.wants" / unit.path.name
        if wants.is_symlink():
            wants.unlink()
            _remove_empty([wants.parent])
    try:
        unit.path.unlink()
    except OSError as exc:
        raise GrooveError(f"cannot remove {unit.path}: {exc.strerror or exc}") from None
    _remove_empty(_made_dirs(unit, home))
    return unit


def _remove_empty(folders: Sequence[Path]) -> None:
    for folder in folders:
        with contextlib.suppress(OSError):  # not empty (or not there): kept
            folder.rmdir()


def installed(platform: Platform, home: Path) -> list[ServiceUnit]:
    """Every groove service installed for this user, by name."""
    shell = unit_for([home], name="x", platform=platform, home=home, command=["groove"])
    folder = shell.path.parent
    prefix, suffix = ((PREFIX, ".service") if platform == "systemd"
                      else (LAUNCHD_PREFIX, ".plist"))
    names = sorted(p.name[len(prefix):-len(suffix)] for p in folder.glob(f"{prefix}*{suffix}")
                   if p.is_file()) if folder.is_dir() else []
    return [find(n, platform, home) for n in names if _NAME.fullmatch(n)]
