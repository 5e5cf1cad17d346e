"""Bounds on what one client can hold of the HTTP server (serve.md §5 "Bounds"): how long a
request head may take, how many connections stay open, how large and how slow a body may be.

uvicorn (h11) has a keep-alive timeout but none for a request head that never ends, and its
`limit_concurrency` answers 503 to newcomers once slow connections fill it, which hands the
server to whoever opens the most sockets. `BoundedH11` closes a connection whose head has not
arrived in time and, at the cap, closes the oldest connection with no request in flight instead
of refusing the newcomer. `BodyCap` refuses a body past the byte cap before reading it, and
one slower than the body deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
from collections import OrderedDict
from typing import Any, ClassVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 10.0
"""How long a connection may take to send a request head (from connecting, or from the end of
its previous response)."""
BODY_TIMEOUT_S = 30.0
"""How long a request body may take to arrive, whole."""
MAX_CONNECTIONS = 1024
"""Open connections kept; past it the oldest idle one (no request in flight) is closed."""
MAX_BODY = 1_000_000
"""The largest request body read, on every route (MCP included)."""


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol with a head timeout and the idle-first connection cap."""

    idle: ClassVar[OrderedDict[int, BoundedH11]] = OrderedDict()
    """Connections waiting for a request head, oldest first (one server per process)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_head()
        while len(self.connections) > MAX_CONNECTIONS and len(self.idle) > 1:
            _, oldest = self.idle.popitem(last=False)
            if oldest is self:
                self.idle[id(self)] = self
                continue
            oldest._close_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        before = self.cycle
        super().data_received(data)
        if self.cycle is not before:
            self._head_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._wait_for_head()

    def _wait_for_head(self) -> None:
        self._head_arrived()
        self.idle[id(self)] = self
        self.head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._close_idle)

    def _head_arrived(self) -> None:
        self.idle.pop(id(self), None)
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _close_idle(self) -> None:
        self._head_arrived()
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()


class BodyCap:
    """Refuses a body larger than `MAX_BODY` from its Content-Length before reading any of it
    (413), a body without one (411: every client groove knows sends it, and h11 never reads
    past it), and a body that takes longer than BODY_TIMEOUT_S (408). After a refusal the app
    sees the client gone and nothing it sends goes out."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            await refuse(413, f"the request body is larger than {MAX_BODY} bytes", send)
            return
        if length is None and b"transfer-encoding" in headers:
            await refuse(411, "send the request body with a Content-Length", send)
            return
        deadline = asyncio.get_running_loop().time() + BODY_TIMEOUT_S
        body_done = length is None or length == b"0"
        refused = False

        async def timed() -> Message:
            nonlocal body_done, refused
            if refused:
                return {"type": "http.disconnect"}
            if body_done:  # waiting for a disconnect (a stream) is not bounded
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                refused = True
                await refuse(408, f"the request body took longer than {BODY_TIMEOUT_S:g} s",
                             send)
                return {"type": "http.disconnect"}
            body_done = message["type"] != "http.request" or not message.get("more_body")
            return message

        async def sending(message: Message) -> None:
            if not refused:
                await send(message)

        try:
            await self.app(scope, timed, sending)
        except Exception:
            if not refused:
                raise


async def refuse(status: int, message: str, send: Send) -> None:
    """A JSON error answer; the connection is closed after it (the body is never read)."""
    body = json.dumps({"error": {"message": message, "exit_code": 2}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def raise_open_file_limit() -> None:
    """Let the process open as many files as its hard limit allows, so a connection cap, not
    the descriptor table, decides when connections are closed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 4 * MAX_CONNECTIONS)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
