"""Running a server: claiming each KB's state file (one server per index), the HTTP server
(uvicorn) or the stdio MCP session, the watcher, and leaving cleanly: SIGTERM and Ctrl-C let
in-flight requests finish, then the state files are removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_cli import messages
from groove_cli.errors import GrooveError, UsageError
from groove_cli.serve.client import running_server
from groove_cli.serve.service import Service
from groove_cli.serve.state import (
    ServerState,
    index_id,
    new_token,
    read_state,
    remove_state,
    state_path,
    write_state,
)

if TYPE_CHECKING:
    from groove_cli.serve.watch import Watcher

GRACE_S = 10
"""How long a stopping server waits for in-flight requests."""


@dataclass(frozen=True, slots=True)
class Listen:
    """Where the HTTP server listens: a loopback (or, with a token, any) host and port, or a
    unix socket."""

    host: str = "127.0.0.1"
    port: int = 7531
    socket: Path | None = None
    token: str | None = None
    origins: tuple[str, ...] = ()

    def check(self) -> None:
        from groove_cli.serve.app import LOOPBACK

        if self.socket is None and self.host not in LOOPBACK and not self.token:
            raise UsageError(f"--host {self.host} is not loopback: set a token first",
                             hint="pass --token or set GROOVE_SERVE_TOKEN; clients send it as "
                                  "Authorization: Bearer TOKEN")
        if not 0 <= self.port <= 65535:
            raise UsageError(f"--port {self.port} must be from 0 to 65535")
        if self.token is not None and not (
                self.token and self.token.isascii() and self.token.isprintable()
                and " " not in self.token):
            raise UsageError("--token must be printable ASCII characters without spaces",
                             hint="a client sends it as `Authorization: Bearer TOKEN`, which cannot "
                                  "carry spaces or control characters")


def claim_socket(path: Path) -> Path:
    """The absolute socket path, with a stale groove socket there removed: only a socket of
    this user that no server answers is removed; anything else at the path is refused."""
    import socket
    import stat

    path = path.absolute()
    try:
        info = path.lstat()
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise GrooveError(f"cannot use --socket {path}: {exc.strerror or exc}") from None
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        what = "a socket of another user" if stat.S_ISSOCK(info.st_mode) else "not a socket"
        raise GrooveError(f"--socket {path} exists and is {what}; groove leaves it alone",
                          hint="pick another --socket path")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink(missing_ok=True)  # nobody listens: a stale socket of ours
        return path
    finally:
        probe.close()
    raise GrooveError(f"--socket {path} is in use by a running server",
                      hint="stop that server first, or pick another --socket path")


def bind_socket(path: Path) -> tuple[Any, tuple[int, int]]:
    """A listening unix socket at `path`, readable and writable by this user only (0600, set
    before any client can connect), and its (device, inode) for removing exactly it later."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise GrooveError(f"cannot listen on --socket {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(previous)
    info = path.stat()
    return sock, (info.st_dev, info.st_ino)


def remove_own_socket(path: Path, identity: tuple[int, int]) -> None:
    """Remove the socket this server bound, never a file that replaced it since."""
    try:
        info = path.lstat()
    except OSError:
        return
    if (info.st_dev, info.st_ino) == identity:
        path.unlink(missing_ok=True)


def refuse_running(service: Service) -> None:
    """Refuse to serve an index another live server already serves; clean stale files."""
    for served in service.kbs.values():
        path = state_path(served.index.location, served.kb)
        if path is None:
            continue
        other = running_server(served.index.location, served.kb)
        if other is not None and other.pid != os.getpid():
            raise GrooveError(f"{served.name} is already served by pid {other.pid} at "
                              f"{other.address}",
                              hint=f"use that server, or stop it first (kill {other.pid})")
        if read_state(path) is not None or path.is_symlink():
            messages.note(f"removing the stale server file {path}")
            remove_state(path)


@contextlib.contextmanager
def state_files(service: Service, address: str, token: str) -> Iterator[list[Path]]:
    """Write each KB's state file for the running server; remove them when it stops."""
    written: list[Path] = []
    try:
        for served in service.kbs.values():
            path = state_path(served.index.location, served.kb)
            if path is None:
                continue
            write_state(path, ServerState(os.getpid(), address, token,
                                          index_id(served.index.location)))
            written.append(path)
        yield written
    finally:
        for path in reversed(written):
            remove_state(path, os.getpid())


def serve_http(service: Service, listen: Listen, *, watch: bool = False) -> None:
    """Serve until SIGTERM or Ctrl-C (see the module doc)."""
    import uvicorn

    from groove_cli.serve.app import LOOPBACK, build_app
    from groove_cli.serve.limits import MAX_CONNECTIONS, BoundedH11, raise_open_file_limit

    listen.check()
    refuse_running(service)
    raise_open_file_limit()
    state_token = listen.token or new_token()
    sock: Any
    port: int | None = None
    socket_path = socket_identity = None
    if listen.socket is not None:
        socket_path = claim_socket(listen.socket)
        sock, socket_identity = bind_socket(socket_path)
        address = f"unix:{socket_path}"
    else:
        import socket

        family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
        # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY on accepted connections only
        # then; without it every response waits for the client's delayed ACK
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((listen.host, listen.port))
        except OSError as exc:
            sock.close()
            raise GrooveError(f"cannot listen on {listen.host}:{listen.port}: {exc.strerror}",
                              hint="pick another --port (0 picks a free one)") from None
        port = sock.getsockname()[1]
        shown = f"[{listen.host}]" if ":" in listen.host else listen.host
        address = f"http://{shown}:{port}"
    app = build_app(service, port=port, token=listen.token, state_token=state_token,
                    origins=listen.origins, check_host=listen.host in LOOPBACK)
    config = uvicorn.Config(app, http=BoundedH11, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=GRACE_S, access_log=False,
                            backlog=MAX_CONNECTIONS)
    server = uvicorn.Server(config)
    watcher = None
    if watch:
        from groove_cli.serve.watch import Watcher

        watcher = Watcher(list(service.kbs.values()))

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if task.done():
            await task
            return
        if watcher is not None:  # clients come once the KBs are caught up and watched
            watcher.start()
            await asyncio.to_thread(watcher.ready.wait)
        with state_files(service, address, state_token):
            messages.progress(f"groove: serving {', '.join(service.kbs)} at {address} "
                              f"(pid {os.getpid()}; MCP at {address}/mcp)")
            await task

    try:
        with _until_stopped(service, watcher, lambda *_: None):  # uvicorn re-raises SIGTERM
            asyncio.run(main())
    finally:
        if socket_path is not None and socket_identity is not None:
            remove_own_socket(socket_path, socket_identity)


@contextlib.contextmanager
def _until_stopped(service: Service, watcher: Watcher | None,
                   on_term: Callable[..., Any]) -> Iterator[None]:
    """Run the block with SIGTERM handled by `on_term`; Ctrl-C ends it quietly; the watcher
    and the served indexes are closed however it ends."""
    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if watcher is not None:
            watcher.stop()
        service.close()


def serve_stdio(service: Service, *, watch: bool = False) -> None:
    """MCP over stdin/stdout until the client closes stdin (or SIGTERM, Ctrl-C)."""
    import anyio

    from groove_cli.serve.tools import build_mcp

    mcp = build_mcp(service)
    watcher = None
    if watch:
        from groove_cli.serve.watch import Watcher

        watcher = Watcher(list(service.kbs.values()))
        watcher.start()
        watcher.ready.wait()

    def stop(*_: Any) -> None:
        raise KeyboardInterrupt

    with _until_stopped(service, watcher, stop):
        anyio.run(mcp.run_stdio_async)


def wait_for_state(path: Path, timeout: float = 30.0) -> ServerState:
    """The state file a starting server writes (tests and benchmarks start servers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = read_state(path)
        if state is not None:
            return state
        time.sleep(0.02)
    raise TimeoutError(f"no server state at {path}")
