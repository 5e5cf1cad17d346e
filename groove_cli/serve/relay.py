"""The light way in for `groove search`, `get` and `status`: before typer, rich or any of the
command line loads, hand the command's argv to a running `groove serve`, which runs the very same
command line (same parser, same renderers) against its warm index for this process's working
directory, terminal and environment, and print what it answers, byte for byte.

Running servers are listed in the user's registry folder (`REGISTRY`, one file per server,
0600 in a 0700 folder). A server takes the command only when it serves the index the command
resolves to, with the same settings, code and environment (serve.md §5); otherwise — or when
no server answers — `relay` returns None and the command line runs in this process, which finds
a dead or foreign server's state file itself (one note) and may still forward the search's
core call. Standard library only; `http.client` loads only when a server is listed.

Inside the server, `serving()` names the relayed command running in this context
(relayed.Run): the command line's forwarding calls (client.py, `claim`, `refuse`) then use the
served warm Index instead of opening one, or raise `Decline` when the index is not served there.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from groove_cli.statedir import user_data_dir

GLOBAL_VALUED = ("--config", "--db")
"""The global options that take a value (cli_app.main_callback); `invoked_command` skips them."""
RELAYED = ("search", "get", "status")
"""The commands a running server may run for the command line (serve.md §5)."""


def invoked_command(args: Sequence[str]) -> str | None:
    """The top-level command name `args` run, past the global options; None when it cannot
    tell (no command, --help, --version, an unknown option)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in GLOBAL_VALUED:
            i += 2
        elif arg.startswith(tuple(f"{name}=" for name in GLOBAL_VALUED)):
            i += 1
        elif arg.startswith("-"):
            return None
        else:
            return arg
    return None


REGISTRY = ("groove", "servers")
"""The registry folder, under the user's data folder."""
CONNECT_TIMEOUT_S = 1.0
RUN_TIMEOUT_S = 300.0
ROUTE = "/cli/run"
SKIP = frozenset({"--no-server", "-h", "--help", "--version", "--all", "-c", "--collection",
                  "--install-completion", "--show-completion"})
"""Arguments that keep a command in this process: asked not to forward, help (drawn for this
terminal), several or named collections (served KBs are chosen by their index)."""
ENV_NAMES = frozenset({"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "APPDATA",
                       "LOCALAPPDATA", "NO_COLOR", "FORCE_COLOR", "TERM", "COLORTERM", "COLUMNS",
                       "LINES", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "PYTHONPATH",
                       "TRANSFORMERS_OFFLINE"})
ENV_PREFIXES = ("GROOVE_", "HF_")
ENV_IGNORED = frozenset({"GROOVE_SERVE_TOKEN"})

_serving: ContextVar[Any] = ContextVar("groove_relayed", default=None)


class Decline(Exception):
    """Raised inside the server when a relayed command is not its to run (the command line
    then runs it in its own process)."""


def serving() -> Any:
    """The relayed command running in this context (relayed.Run), or None (not in a server)."""
    return _serving.get()


@contextmanager
def serving_as(run: Any) -> Iterator[None]:
    """Mark the block as running the relayed command `run` (relayed.py)."""
    token = _serving.set(run)
    try:
        yield
    finally:
        _serving.reset(token)


def refuse(reason: str) -> None:
    """Inside the server, running a relayed command: Decline it (the command line runs it
    in its own process). Outside a server: nothing."""
    if serving() is not None:
        raise Decline(reason)


def claim(resolve: Callable[[], Any]) -> None:
    """Inside the server, running a relayed command that opens no index (`get`): go on only
    when the index `resolve` names (an IndexLocation) is served here, else Decline. Outside a
    server: nothing (`resolve` is not called)."""
    relayed = serving()
    if relayed is None:
        return
    try:
        location = resolve()
    except Exception as exc:
        raise Decline(f"cannot resolve the index ({exc.__class__.__name__})") from None
    relayed.claim_location(location)


def registry_dir() -> Path:
    return user_data_dir().joinpath(*REGISTRY)


def relevant_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that change what a command resolves or how its output looks."""
    return {name: value for name, value in environ.items()
            if (name in ENV_NAMES or name.startswith(ENV_PREFIXES)) and name not in ENV_IGNORED}


def code_dir() -> str:
    """Where this groove's code lives: a server running other code does not take commands."""
    return os.path.dirname(os.path.abspath(__file__))


def stream_facts(stream: Any) -> dict[str, Any]:
    """What the renderers ask of a standard stream."""
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        tty = False
    return {"tty": tty, "encoding": getattr(stream, "encoding", None) or "utf-8"}


def request_for(args: Sequence[str]) -> dict[str, Any] | None:
    """The request a server needs to run `groove ARGS` as this process would; None when this
    process must run it (see SKIP)."""
    if invoked_command(args) not in RELAYED or any(arg in SKIP for arg in args):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    return {"argv": list(args), "cwd": cwd, "env": relevant_env(os.environ), "code": code_dir(),
            "stdout": stream_facts(sys.stdout), "stderr": stream_facts(sys.stderr)}


def listed_servers() -> list[dict[str, Any]]:
    """The registered servers whose process is alive (newest first); stale entries are
    removed."""
    folder = registry_dir()
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.stat().st_mtime, reverse=True)
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.name.endswith(".json") or entry.is_symlink():
            continue
        try:
            with open(entry.path, encoding="utf-8") as handle:
                data = json.load(handle)
            pid, address, token = int(data["pid"]), str(data["address"]), str(data["token"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not pid_alive(pid):
            with suppress(OSError):
                os.unlink(entry.path)
            continue
        found.append({"pid": pid, "address": address, "token": token, "entry": entry.path})
    return found


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def connection(address: str, timeout: float) -> Any:
    """An http.client connection to `http://HOST:PORT` or `unix:PATH`."""
    import http.client
    import socket

    if address.startswith("unix:"):
        class UnixConnection(http.client.HTTPConnection):
            def connect(self) -> None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self.timeout)
                sock.connect(address[len("unix:"):])
                self.sock = sock

        return UnixConnection("localhost", timeout=timeout)
    if not address.startswith("http://"):
        raise ValueError(f"unsupported address {address!r}")
    return http.client.HTTPConnection(address[len("http://"):], timeout=timeout)


def ask(server: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any] | None:
    """POST the request to one server; its answer, or None when it cannot take it."""
    try:
        conn = connection(str(server["address"]), CONNECT_TIMEOUT_S)
        conn.connect()
        if conn.sock is not None:
            conn.sock.settimeout(RUN_TIMEOUT_S)
        conn.request("POST", ROUTE, body=json.dumps(request).encode("utf-8"),
                     headers={"Authorization": f"Bearer {server['token']}", "Host": "localhost",
                              "Content-Type": "application/json"})
        response = conn.getresponse()
        body = response.read()
        conn.close()
        if response.status != 200:
            return None
        answer = json.loads(body)
    except (ConnectionRefusedError, FileNotFoundError):  # nothing listens (the pid was reused)
        with suppress(OSError):
            os.unlink(str(server["entry"]))
        return None
    except Exception:  # any other failure (a server stopping, a bad answer): run in this process
        return None
    if not isinstance(answer, dict) or "exit_code" not in answer:
        return None
    return answer


def replay(answer: Mapping[str, Any]) -> int:
    """Write a relayed command's output as it wrote it (stdout and stderr in order); its exit
    code. A reader gone from stdout ends the output quietly, as in-process (failures.py)."""
    streams = {1: sys.stdout, 2: sys.stderr}
    try:
        for fd, text in answer.get("output", []):
            stream = streams[int(fd)]
            stream.write(str(text))
            stream.flush()
    except BrokenPipeError:
        from groove_cli.failures import ReaderGone, discard

        discard(sys.stdout)
        return ReaderGone.exit_code
    return int(answer["exit_code"])


def relay(args: Sequence[str]) -> int | None:
    """Run `groove ARGS` on a running server that takes it: its exit code, after its output
    is written; None when none does (see the module doc)."""
    request = request_for(args)
    if request is None:
        return None
    try:
        for server in listed_servers():
            answer = ask(server, request)
            if answer is not None:
                return replay(answer)
    except KeyboardInterrupt:  # Ctrl-C while the server works: as in-process (run_core)
        from groove_cli import messages

        messages.error("interrupted")
        return 130
    return None
