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

    listen.check()
    refuse_running(service)
    state_token = listen.token or new_token()
    if listen.socket is not None:
        listen.socket.unlink(missing_ok=True)
    sock = None
    port: int | None = None
    if listen.socket is None:
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
    app = build_app(service, port=port, token=listen.token, state_token=state_token,
                    origins=listen.origins, check_host=listen.host in LOOPBACK)
    config = uvicorn.Config(app, uds=str(listen.socket) if listen.socket else None,
                            log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=GRACE_S, access_log=False)
    server = uvicorn.Server(config)
    if listen.socket is not None:
        address = f"unix:{listen.socket}"
    else:
        shown = f"[{listen.host}]" if ":" in listen.host else listen.host
        address = f"http://{shown}:{port}"
    watcher = None
    if watch:
        from groove_cli.serve.watch import Watcher

        watcher = Watcher(list(service.kbs.values()))

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock] if sock else None))
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
        if listen.socket is not None:
            listen.socket.unlink(missing_ok=True)


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
