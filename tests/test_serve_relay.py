"""The light command line (cli.py → serve/relay.py): `search`, `get` and `status` handed whole
to a running server, which runs the same command line there; the output is byte for byte the
in-process command's, the client loads neither typer nor rich, and anything the server does not
take (another KB, --no-server, a usage error drawn by the parser, a dead server) runs in-process
with the same output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serve_helpers import (
    Server,
    groove,
    heavy,
    loaded_modules,
    make_kb,
    serving,
    state_file,
)

CLI_LIBS = ("typer", "rich", "click", "groove_cli.cli_app", "groove_cli.config")
"""What only the in-process command line loads: a relayed command loads none of it."""


def in_process_cli(env: dict[str, str], *args: str, cwd: Path | None = None
                   ) -> subprocess.CompletedProcess[str]:
    """The full command line in this process (cli_app.main, no relay): what `groove ARGS`
    printed before the light client, server forwarding of the core call included."""
    code = "import sys; sys.argv[0] = 'groove'; from groove_cli.cli_app import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def loaded(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def registry(env: dict[str, str]) -> Path:
    return Path(env["XDG_DATA_HOME"]) / "groove" / "servers"


CASES = [
    ("search", "retry budget", "--format", "text"),
    ("search", "retry budget", "--format", "json", "--limit", "3"),
    ("search", "障害が起きたときの連絡手順", "--format", "files", "--mode", "fts"),
    ("search", "rate limiting", "--path-glob", "reliability/**", "--format", "csv"),
    ("get", "reliability/retry-budgets.md:10:3"),
    ("get", "reliability/retry-budgets.md", "--format", "json"),
    ("status",),
    ("status", "--format", "json"),
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a)[:40])
def test_a_relayed_command_prints_what_the_command_line_prints(
        server: Server, kb_env: tuple[Path, dict[str, str]], args: tuple[str, ...],
        tmp_path: Path) -> None:
    kb, env = kb_env
    relayed, modules = loaded_modules(env, tmp_path / "mods.json", *args, "--kb-path", str(kb))
    local = in_process_cli(env, *args, "--kb-path", str(kb))
    assert (relayed.returncode, relayed.stdout, relayed.stderr) == (
        local.returncode, local.stdout, local.stderr)
    assert relayed.returncode == 0 and relayed.stdout.strip()
    assert loaded(modules, CLI_LIBS) == [] and heavy(modules) == []  # the server ran it
    if args[0] == "status":
        assert f"{server.proc.pid}" in relayed.stdout  # the running server is shown
    elif args[0] == "search":  # and it is what the in-process search prints
        alone = groove(env, *args, "--kb-path", str(kb), "--no-server")
        assert (alone.stdout, alone.stderr) == (relayed.stdout, relayed.stderr)


def test_a_relayed_command_runs_in_the_clients_working_folder(
        server: Server, kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    sub = kb / "reliability"
    args = ("search", "retry budget", "--format", "text", "--kb-path", "..")
    relayed = subprocess.run([sys.executable, "-m", "groove_cli", *args], capture_output=True,
                             text=True, env=env, cwd=sub, timeout=120)
    local = groove(env, *args, "--no-server", cwd=sub)
    assert relayed.returncode == 0 and relayed.stdout == local.stdout
    assert "retry-budgets.md:" in relayed.stdout  # paths shown from the client's folder
    got = groove(env, "get", "retry-budgets.md:10:2", "--kb-path", "..", cwd=sub)
    assert got.stdout == groove(env, "get", "retry-budgets.md:10:2", "--kb-path", "..",
                                "--no-server", cwd=sub).stdout
    assert got.returncode == 0 and got.stdout.strip()


@pytest.mark.parametrize("args", [
    ("search", "retry", "--date-from", "last tuesday"),  # groove's own usage error: relayed
    ("search", "retry", "--format", "bogus"),  # the parser's error: declined, run here
    ("search", "retry", "--limit", "0"),
    ("get", "no/such/note.md"),
], ids=["date", "format", "limit", "missing"])
def test_a_relayed_error_is_the_in_process_error(
        server: Server, kb_env: tuple[Path, dict[str, str]], args: tuple[str, ...]) -> None:
    kb, env = kb_env
    relayed = groove(env, *args, "--kb-path", str(kb))
    local = groove(env, *args, "--kb-path", str(kb), "--no-server")
    assert (relayed.returncode, relayed.stdout, relayed.stderr) == (
        local.returncode, local.stdout, local.stderr)
    assert relayed.returncode in (1, 2) and relayed.stderr.strip()
    assert "Traceback" not in relayed.stderr


def test_no_server_runs_the_command_here(server: Server, kb_env: tuple[Path, dict[str, str]],
                                         tmp_path: Path) -> None:
    kb, env = kb_env
    run, modules = loaded_modules(env, tmp_path / "mods.json", "get",
                                  "reliability/retry-budgets.md:10:3", "--kb-path", str(kb),
                                  "--no-server")
    assert run.returncode == 0 and run.stdout.strip()
    assert "typer" in modules and "http.client" not in modules  # never asked a server
    assert run.stdout == in_process_cli(env, "get", "reliability/retry-budgets.md:10:3",
                                        "--kb-path", str(kb)).stdout


def test_a_server_of_another_kb_or_environment_leaves_the_command_here(
        server: Server, kb_env: tuple[Path, dict[str, str]], golden_index: tuple[Path, Path],
        real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = kb_env
    other, _ = make_kb(golden_index, tmp_path / "other", real_models_dir)
    args = ("search", "retry budget", "--mode", "fts", "--kb-path", str(other))
    run, modules = loaded_modules(env, tmp_path / "mods.json", *args)
    assert (run.returncode, run.stdout, run.stderr) == (0, groove(env, *args, "--no-server").stdout,
                                                        "")
    assert "typer" in modules  # declined: the command line ran here
    # another GROOVE_* variable: the server's settings may differ, the command runs here
    changed = dict(env, GROOVE_LOG="warning")
    mine = ("search", "retry budget", "--mode", "fts", "--kb-path", str(kb))
    run, modules = loaded_modules(changed, tmp_path / "mods2.json", *mine)
    assert run.returncode == 0 and "typer" in modules
    assert run.stdout == groove(env, *mine, "--no-server").stdout
    assert list(registry(env).glob("*.json"))  # the server stays listed


def test_a_killed_server_is_noted_once_and_forgotten(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    args = ("search", "retry budget", "--kb-path", str(kb), "--mode", "fts")
    with serving(kb, env) as running:
        entry = registry(env) / f"{running.proc.pid}.json"
        assert entry.is_file() and oct(entry.stat().st_mode & 0o777) == "0o600"
        assert oct(registry(env).stat().st_mode & 0o777) == "0o700"
        running.proc.send_signal(signal.SIGKILL)
        running.proc.wait(timeout=30)
        expected = groove(env, *args, "--no-server").stdout
        run = groove(env, *args)
        assert run.returncode == 0 and run.stdout == expected
        notes = run.stderr.splitlines()
        assert len(notes) == 1 and "its process is gone" in notes[0], run.stderr
        assert not entry.exists() and not state_file(kb).exists()
        assert groove(env, *args).stderr == ""


def test_a_stopped_server_leaves_no_registry_entry(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    with serving(kb, env) as running:
        entry = registry(env) / f"{running.proc.pid}.json"
        assert json.loads(entry.read_text())["address"] == running.url
    assert running.proc.returncode == 0 and not entry.exists()


def test_the_relay_loads_only_the_standard_library(
        server: Server, kb_env: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    kb, env = kb_env
    run, modules = loaded_modules(env, tmp_path / "mods.json", "search", "retry budget",
                                  "--kb-path", str(kb))
    assert run.returncode == 0
    ours = sorted(m for m in modules if m.startswith("groove_cli"))
    assert ours == ["groove_cli", "groove_cli.cli", "groove_cli.serve", "groove_cli.serve.relay",
                    "groove_cli.statedir"]
    assert not [m for m in modules if m.split(".")[0] in ("numpy", "typer", "rich", "click",
                                                           "mcp", "starlette", "uvicorn")]


def test_with_no_server_listed_the_entry_point_adds_nothing_heavy(
        kb_env: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """No server for this user: the relay looks at an empty registry and steps aside."""
    kb, env = kb_env
    alone = dict(env, XDG_DATA_HOME=str(tmp_path / "data"))
    run, modules = loaded_modules(alone, tmp_path / "mods.json", "search", "retry budget",
                                  "--kb-path", str(kb), "--mode", "fts")
    assert run.returncode == 0 and run.stdout.strip()
    assert heavy(modules) == []


def test_a_listed_server_that_no_longer_listens_is_forgotten_silently(
        kb_env: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """A registry entry whose pid is alive (reused) but where nothing listens."""
    import socket

    kb, env = kb_env
    alone = dict(env, XDG_DATA_HOME=str(tmp_path / "data"))
    folder = registry(alone)
    folder.mkdir(parents=True)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    entry = folder / "1.json"
    entry.write_text(json.dumps({"pid": os.getpid(), "address": f"http://127.0.0.1:{port}",
                                 "token": "t"}))
    args = ("search", "retry budget", "--kb-path", str(kb), "--mode", "fts")
    run = groove(alone, *args)
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == groove(alone, *args, "--no-server").stdout
    assert not entry.exists()


def test_an_output_too_large_to_relay_is_declined() -> None:
    from groove_cli.serve.relay import Decline
    from groove_cli.serve.relayed import MAX_OUTPUT_CHARS, Run

    run = Run(service=None, facts={})  # type: ignore[arg-type]
    run.write(1, "x" * (MAX_OUTPUT_CHARS - 10))
    run.write(2, "note\n")  # stderr pieces stay in order, merged per stream
    with pytest.raises(Decline):
        run.write(1, "one more line\n")
    assert [fd for fd, _ in run.output] == [1, 2]
