"""`groove service install|uninstall|status` (osservice.py): the systemd user unit and the launchd
agent, written in a temporary HOME; no service manager is ever run."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import groove_cli
from groove_cli import api
from groove_cli.cli import app

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME is an empty temp folder (XDG_CONFIG_HOME unset: ~/.config)."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return folder


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    folder = tmp_path / "my notes %1"
    folder.mkdir()
    return folder


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["service", *args])
    return result.exit_code, result.stdout, result.stderr


def test_dry_run_prints_a_unit_that_systemd_accepts(home: Path, kb: Path, tmp_path: Path) -> None:
    code, out, err = invoke("install", str(kb), "--platform", "systemd", "--dry-run")
    assert code == 0, err
    first, _, unit = out.partition("\n")
    assert first == f"# {home}/.config/systemd/user/groove-my-notes-1.service"
    lines = unit.splitlines()
    assert "[Service]" in lines and "WantedBy=default.target" in lines
    escaped = str(kb).replace("%", "%%")
    exec_start = next(line for line in lines if line.startswith("ExecStart="))
    assert exec_start.endswith(f'serve --watch "{escaped}"')
    assert exec_start.split("=", 1)[1].startswith("/")  # an absolute program
    assert f"WorkingDirectory={escaped}" in lines
    assert tree(home) == []  # nothing written
    verify = shutil.which("systemd-analyze")
    if verify is None:
        pytest.skip("systemd-analyze is not installed")
    written = tmp_path / "groove-my-notes-1.service"
    written.write_text(unit, encoding="utf-8")
    checked = subprocess.run([verify, "verify", str(written)], capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stderr
    assert checked.stderr == ""


def test_systemd_install_status_uninstall_leaves_nothing(home: Path, kb: Path) -> None:
    code, out, err = invoke("install", str(kb), "--platform", "systemd", "--name", "notes",
                            "--port", "7600")
    assert code == 0, err
    path = home / ".config" / "systemd" / "user" / "groove-notes.service"
    assert out.splitlines() == [
        f"wrote {path}",
        "start it: systemctl --user daemon-reload && systemctl --user enable --now "
        "groove-notes.service",
        "logs: journalctl --user -u groove-notes.service"]
    assert "serve --watch --port 7600" in path.read_text(encoding="utf-8")
    code, out, _ = invoke("status", "--platform", "systemd", "--format", "json")
    assert code == 0
    import json

    [found] = json.loads(out)["services"]
    assert (found["name"], found["path"], found["installed"]) == ("notes", str(path), True)
    # what `systemctl --user enable` makes: uninstall removes it too
    wants = path.parent / "default.target.wants"
    wants.mkdir()
    (wants / path.name).symlink_to(path)
    code, out, err = invoke("uninstall", "notes", "--platform", "systemd")
    assert code == 0, err
    assert out.splitlines() == [f"removed {path}", "if it is still running, stop it: "
                                "systemctl --user disable --now groove-notes.service"]
    assert tree(home) == []  # ~/.config, made by install, is empty again: removed
    code, out, _ = invoke("status", "--platform", "systemd")
    assert out == "no groove service is installed\n"


def test_launchd_agent_round_trip(home: Path, kb: Path) -> None:
    (home / "Library").mkdir()
    (home / "Library" / "Preferences").mkdir()  # a folder of the user's: kept
    unit = api.install_service([kb], name="notes", platform="launchd")
    assert unit.path == home / "Library" / "LaunchAgents" / "io.groove.notes.plist"
    agent = plistlib.loads(unit.path.read_bytes())
    assert agent["Label"] == "io.groove.notes"
    assert agent["ProgramArguments"][-3:] == ["serve", "--watch", str(kb)]
    assert agent["StandardOutPath"] == str(home / "Library" / "Logs" / "groove" / "notes.log")
    assert agent["RunAtLoad"] is True and agent["WorkingDirectory"] == str(kb)
    assert (home / "Library" / "Logs" / "groove").is_dir()
    assert [u.name for u in api.services(platform="launchd")] == ["notes"]
    api.uninstall_service("notes", platform="launchd")
    assert tree(home) == ["Library", "Library/Preferences"]


@pytest.mark.parametrize(("args", "message"), [
    (["install", "{kb}", "--name", "a/b", "--dry-run", "--platform", "systemd"],
     "groove: error: service name 'a/b' must be 1 to 64 letters, digits, '.', '_' or '-'"),
    (["install", "{kb}/missing", "--dry-run", "--platform", "systemd"],
     "groove: error: the KB folder {kb}/missing does not exist"),
    (["install", "{kb}", "--dry-run", "--platform", "upstart"],
     "groove: error: unknown --platform 'upstart'"),
    (["install", "{kb}", "--port", "70000", "--dry-run", "--platform", "systemd"],
     "groove: error: --port 70000 must be from 1 to 65535"),
    (["uninstall", "nothing", "--platform", "systemd"],
     "groove: error: no groove service 'nothing' is installed (no "
     "{home}/.config/systemd/user/groove-nothing.service)"),
])
def test_bad_input_is_one_line(home: Path, kb: Path, args: list[str], message: str) -> None:
    code, out, err = invoke(*(a.format(kb=kb) for a in args))
    assert code in (1, 2) and out == ""
    assert err.splitlines()[0] == message.format(kb=kb, home=home)


def test_the_command_is_this_groove(home: Path, kb: Path, monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    script = tmp_path / "bin" / "groove"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    monkeypatch.setattr(sys, "argv", [str(script), "service"])
    unit = groove_cli.api.service_unit([kb], platform="systemd", name="n")
    assert f"ExecStart={script} serve --watch" in unit.text
    monkeypatch.setattr(sys, "argv", ["-c"])
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    unit = groove_cli.api.service_unit([kb], platform="systemd", name="n")
    assert f"ExecStart={Path(sys.executable).absolute()} -m groove_cli serve" in unit.text
    assert os.environ["HOME"] == str(home)
