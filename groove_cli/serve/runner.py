"""Running a server: claiming each KB's state file (one server per index), the HTTP server
(uvicorn) or the stdio MCP session, the watcher, the warm-up, and leaving cleanly: SIGTERM and
Ctrl-C let in-flight requests finish, then the state files are removed.

Warm-up: both commands run one throwaway hybrid search per KB on a background thread at start
(`Warm`), so the query model, the vector snapshot and the read connections are loaded before
the first caller's search; `Service.warm` says when it is done.

`groove mcp` answers the client's `initialize` itself, before the MCP SDK is imported (the SDK
is most of the start-up: bench/results/serve.md): the answer is built from plain data
(`initialize_result`), the SDK loads on a thread meanwhile, and once it has loaded it is handed
the client's opening lines again followed by the rest of stdin; its own answer to the replayed
`initialize` is dropped (and compared with the one sent). It leaves with `leave()` once the
indexes are closed: the interpreter's teardown of the loaded libraries would take longer than
the client should wait.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from groove_cli import messages
from groove_cli._version import version
from groove_cli.errors import GrooveError, UsageError
from groove_cli.serve.service import MCP_NAME, Service
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
    from groove_cli.serve.tools import GrooveMCP
    from groove_cli.serve.watch import Watcher

log = logging.getLogger("groove.serve")

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
    from groove_cli.serve.client import running_server

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
            try:
                write_state(path, ServerState(os.getpid(), address, token,
                                              index_id(served.index.location)))
            except OSError as exc:  # a read-only KB or a full disk: serve, but say so
                messages.warning(f"cannot write the server file {path} "
                                 f"({exc.strerror or exc}); `groove search` will not forward "
                                 f"to this server, clients that know {address} still work")
                continue
            written.append(path)
        yield written
    finally:
        for path in reversed(written):
            remove_state(path, os.getpid())


def serve_http(service: Service, listen: Listen, *, watch: bool = False) -> None:
    """Serve until SIGTERM or Ctrl-C (see the module doc)."""
    listen.check()
    refuse_running(service)
    warm = Warm()
    warm.start(service)  # while the server loads and binds
    try:
        _serve_http(service, listen, warm, watch=watch)
    finally:
        warm.wait()


def _serve_http(service: Service, listen: Listen, warm: Warm, *, watch: bool) -> None:
    import asyncio

    import uvicorn

    from groove_cli.serve.app import LOOPBACK, build_app
    from groove_cli.serve.limits import MAX_CONNECTIONS, BoundedH11, raise_open_file_limit

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
                    origins=listen.origins, check_host=listen.host in LOOPBACK,
                    watching=watch)
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
        # and once warm: a client that finds the state file finds a warm server (requests
        # that know the address are answered meanwhile)
        while not service.warm.is_set() and not task.done():
            await asyncio.sleep(0.01)
        if task.done():
            await task
            return
        settle(collect=True)
        with state_files(service, address, state_token):
            messages.progress(f"groove: serving {', '.join(service.kbs)} at {address} "
                              f"(pid {os.getpid()}; MCP at {address}/mcp)")
            await task

    try:
        # uvicorn re-raises SIGTERM
        with _until_stopped(service, watcher, lambda *_: None, warm):
            asyncio.run(main())
    finally:
        if socket_path is not None and socket_identity is not None:
            remove_own_socket(socket_path, socket_identity)


@contextlib.contextmanager
def _until_stopped(service: Service, watcher: Watcher | None,
                   on_term: Callable[..., Any], warm: Warm) -> Iterator[None]:
    """Run the block with SIGTERM handled by `on_term`; Ctrl-C ends it quietly; the watcher
    and the served indexes are closed however it ends (after the warm-up's search ends)."""
    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if watcher is not None:
            watcher.stop()
        warm.wait()
        service.close()


def settle(*, collect: bool) -> None:
    """Move everything start-up made (the SDK's and the engine's modules, the served
    indexes) into the collector's permanent generation, once the server is loaded: a full
    collection then walks only what requests create, instead of pausing one request for the
    whole start-up heap (serve.md §1.1). `collect` first frees start-up's garbage; without
    it, what start-up left unreachable stays allocated."""
    import gc

    if collect:
        gc.collect()
    gc.freeze()


WARM_QUERY = "groove warm-up"
"""The warm-up search's text, followed by a random word: a text the query cache holds would
answer without loading the model."""


class Warm:
    """The warm-up: one throwaway hybrid search per KB through its Index, on a thread."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None

    def start(self, service: Service) -> None:
        self.thread = threading.Thread(target=warm_up, args=(service,), name="groove-warm-up",
                                       daemon=True)
        self.thread.start()

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()


def warm_up(service: Service) -> None:
    """Search each served KB once (hybrid, one hit) so its models, vector snapshot and
    readers load now; the search's warnings go to the log, a failure is logged (the first
    real search reports it); `service.warm` is set at the end either way."""
    import secrets

    try:
        for served in list(service.kbs.values()):
            try:
                with served.lease() as index:
                    results = index.search(f"{WARM_QUERY} {secrets.token_hex(4)}", limit=1,
                                            mode="hybrid")
                for warning in results.warnings:
                    messages.warning(warning)
            except Exception as exc:
                log.warning("warming up %s: %s", served.name, exc)
    finally:
        service.warm.set()


HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The MCP versions the SDK negotiates through `initialize` (mcp_types.version's
HANDSHAKE_PROTOCOL_VERSIONS, oldest first; tests/test_serve_mcp.py checks they agree)."""
CAPABILITIES = {"prompts": {"listChanged": False},
                "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}
"""What the SDK's server (tools.GrooveMCP) announces."""


def initialize_result(service: Service, params: dict[str, Any]) -> dict[str, Any]:
    """The SDK's answer to `initialize`, from plain data: the client's protocol version when
    the SDK speaks it through the handshake, else its latest."""
    asked = params.get("protocolVersion")
    return {"protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
            "capabilities": CAPABILITIES,
            "serverInfo": {"name": MCP_NAME, "version": version()},
            "instructions": service.instructions()}


def initialize_request(message: Any) -> tuple[int | str, dict[str, Any]] | None:
    """The id and params of a well-formed `initialize` request; None for anything else (the
    SDK answers it)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get(
            "method") != "initialize":
        return None
    ident, params = message.get("id"), message.get("params")
    if isinstance(ident, bool) or not isinstance(ident, int | str) or not isinstance(
            params, dict):
        return None
    info = params.get("clientInfo")
    if not (isinstance(params.get("protocolVersion"), str)
            and isinstance(params.get("capabilities"), dict) and isinstance(info, dict)
            and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
        return None
    return ident, params


@dataclass
class Opening:
    """What the client sent up to its first request, and the front's answer to it."""

    lines: list[bytes]
    answered: tuple[int | str, dict[str, Any]] | None = None
    """(id, result) of the `initialize` answered before the SDK loaded."""
    ended: bool = False
    """stdin closed before any request."""


def read_opening(wire_in: IO[bytes], wire_out: IO[bytes], service: Service) -> Opening:
    """Read the client's lines up to its first request; answer it when it is `initialize`."""
    opening = Opening([])
    while True:
        line = wire_in.readline()
        if not line:
            opening.ended = True
            return opening
        opening.lines.append(line)
        try:
            message = json.loads(line)
        except ValueError:
            continue  # the SDK answers it
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            continue  # a notification or a response: the SDK reads it too
        found = initialize_request(message)
        if found is not None:
            result = initialize_result(service, found[1])
            wire_out.write(json.dumps({"jsonrpc": "2.0", "id": found[0], "result": result},
                                      separators=(",", ":")).encode() + b"\n")
            wire_out.flush()
            opening.answered = (found[0], result)
        return opening


class Replayed:
    """What the SDK reads: the opening lines again, then the rest of stdin."""

    def __init__(self, lines: list[bytes], wire_in: IO[bytes]) -> None:
        self.lines, self.wire_in = lines, wire_in

    def __aiter__(self) -> AsyncIterator[str]:
        return self._read()

    async def _read(self) -> AsyncIterator[str]:
        import anyio.to_thread

        for line in self.lines:
            yield line.decode("utf-8", errors="replace")
        while True:
            line = await anyio.to_thread.run_sync(self.wire_in.readline, abandon_on_cancel=True)
            if not line:
                return
            yield line.decode("utf-8", errors="replace")


class Answers:
    """What the SDK writes, sent to the client, less its answer to the replayed
    `initialize` (already sent: a different one is logged)."""

    def __init__(self, wire_out: IO[bytes], answered: tuple[int | str, dict[str, Any]] | None
                 ) -> None:
        self.wire_out, self.pending = wire_out, answered

    async def write(self, text: str) -> None:
        import anyio.to_thread

        if self.pending is not None:
            ident, sent = self.pending
            try:
                message = json.loads(text)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("id") == ident and (
                    "result" in message or "error" in message):
                self.pending = None
                if message.get("result") != sent:
                    log.warning("groove answered initialize with %s; the SDK answers %s",
                                json.dumps(sent)[:300], text[:300])
                return
        await anyio.to_thread.run_sync(self._send, text.encode("utf-8"))

    def _send(self, data: bytes) -> None:
        self.wire_out.write(data)
        self.wire_out.flush()

    async def flush(self) -> None:
        """Each write is flushed already."""


class Loader(threading.Thread):
    """Imports the SDK and builds the MCP server on a thread."""

    def __init__(self, service: Service) -> None:
        super().__init__(name="groove-mcp-load", daemon=True)
        self.service = service
        self.server: GrooveMCP | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            from groove_cli.serve.agent import build_mcp

            self.server = build_mcp(self.service)
        except BaseException as exc:
            self.error = exc

    def result(self) -> GrooveMCP:
        self.join()
        if self.error is not None:
            raise self.error
        assert self.server is not None
        return self.server


def serve_stdio(service: Service, *, watch: bool = False) -> None:
    """MCP over stdin/stdout until the client closes stdin (or SIGTERM, Ctrl-C); see the
    module doc for the order of things."""
    import importlib.util
    import sys

    if importlib.util.find_spec("mcp") is None:
        raise GrooveError("groove mcp needs the MCP SDK",
                          hint="install the serve extra: pip install 'groove-cli[serve]'")
    service.instructions()  # read before the client waits for it
    wire_in = sys.stdin.buffer
    wire_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to stderr, not the wire
    watcher = None
    if watch:
        from groove_cli.serve.watch import Watcher

        watcher = Watcher(list(service.kbs.values()))
    warm = Warm()

    def stop(*_: Any) -> None:
        raise KeyboardInterrupt

    with _until_stopped(service, watcher, stop, warm):
        if watcher is not None:
            watcher.start()
        loader = Loader(service)
        loader.start()
        opening = read_opening(wire_in, wire_out, service)
        if opening.ended:
            return
        mcp = loader.result()
        settle(collect=False)  # a collection now would delay the client's next answer
        warm.start(service)  # the client has initialised: it is going to search
        if watcher is not None:
            watcher.ready.wait()
        import anyio

        anyio.run(mcp.serve_stdio, Replayed(opening.lines, wire_in),
                  Answers(wire_out, opening.answered))


def leave(code: int = 0) -> None:
    """End the process now, output flushed: what is left after a stdio session (the loaded
    libraries' teardown) is not worth the client's wait."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(code)


def wait_for_state(path: Path, timeout: float = 30.0) -> ServerState:
    """The state file a starting server writes (tests and benchmarks start servers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = read_state(path)
        if state is not None:
            return state
        time.sleep(0.02)
    raise TimeoutError(f"no server state at {path}")
