"""The HTTP side of `groove serve`: MCP over streamable HTTP at `/mcp`, the plain JSON routes
(`/search`, `/get`, `/status`, `/health`) that answer exactly what the command line's
`--format json` prints, the `/cli/*` routes forwarded commands use, the web view at `/` and
its eval history page at `/report` (page.py; its pictures from `/report/plots`), and the
guard in front of all of them (Host and Origin checked against DNS rebinding, the bearer token
when one is set).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from groove_cli.errors import GrooveError, UsageError
from groove_cli.jsondoc import loads_bounded
from groove_cli.serve.agent import build_mcp
from groove_cli.serve.limits import MAX_BODY, BodyCap
from groove_cli.serve.page import PUBLIC_PATHS, PageInfo, add_page
from groove_cli.serve.service import Service

log = logging.getLogger("groove.serve")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_SESSIONS = 64
"""MCP sessions open at once (an editor or agent holds one); a new one past it is refused."""
SESSION_IDLE_S = 600.0
"""An MCP session with no request for this long is closed."""


def error_json(exc: BaseException) -> tuple[dict[str, Any], int] | None:
    """The error document and HTTP status for an expected failure (None: a bug)."""
    from groove_cli.failures import translate

    error = translate(exc)
    if error is None:
        return None
    status = 400 if error.exit_code == 2 else 422
    return {"error": {"message": error.message, "hint": error.hint,
                      "exit_code": error.exit_code}}, status


def json_body(document: Any, status: int = 200, headers: dict[str, str] | None = None
              ) -> Response:
    """The document as the command line prints it (2-space indent, non-ASCII kept)."""
    from groove_cli.results import dumps_json

    return Response(dumps_json(document), status_code=status, headers=headers,
                    media_type="application/json")


async def call(action: Callable[[], Any]) -> Any:
    """Run a blocking engine call on a worker thread; expected failures become JSON errors."""
    try:
        return await anyio.to_thread.run_sync(action)
    except Exception as exc:
        known = error_json(exc)
        if known is None:
            log.exception("request failed")
            known = ({"error": {"message": f"internal error ({exc.__class__.__name__})",
                                "hint": "see the server log", "exit_code": 1}}, 500)
        return json_body(*known)


async def arguments(request: Request) -> dict[str, Any]:
    """A request's arguments: the JSON object of a POST (its size bounded by limits.BodyCap,
    its nesting by jsondoc), else the query string (repeated keys become lists; text that is
    not UTF-8 is refused, as the command line refuses it)."""
    if request.method == "POST":
        from starlette.requests import ClientDisconnect

        try:
            body = await request.body()
        except ClientDisconnect:
            raise UsageError("the request body did not arrive") from None
        try:
            data = loads_bounded(body.decode("utf-8") if body else "{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise UsageError(f"the request body is not a JSON object ({exc})") from None
        if not isinstance(data, dict):
            raise UsageError("the request body must be a JSON object")
        return data
    from urllib.parse import parse_qsl

    found: dict[str, Any] = {}
    try:
        pairs = parse_qsl(request.scope.get("query_string", b"").decode("ascii"),
                          keep_blank_values=True, encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise UsageError("the query string is not UTF-8 text",
                         hint="percent-encode the UTF-8 bytes of each value") from None
    for key, value in pairs:
        if key in found:
            found[key] = [*found[key], value] if isinstance(found[key], list) else [found[key], value]
        else:
            found[key] = [value] if key in ("path_glob", "tag_any", "tag_all") else value
    return found


def text_arg(args: dict[str, Any], key: str, *, required: str | None = None,
             alias: str | None = None) -> str | None:
    """A text argument (None when absent); a list, number or object is refused by name."""
    value = args.get(key, args.get(alias) if alias else None)
    if value is None:
        if required is not None:
            raise UsageError(required)
        return None
    if not isinstance(value, str):
        raise UsageError(f"{key} must be text, not {type(value).__name__}")
    return value


def int_arg(args: dict[str, Any], key: str, default: int) -> int:
    """A whole-number argument: a JSON integer, or digits in a query string (never a bool,
    a fraction or a list)."""
    value = args.get(key, default)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise UsageError(f"{key} {str(value)[:40]!r} must be a whole number")


FILTER_KEYS = ("path_glob", "tag_any", "tag_all", "category", "topic", "date_from", "date_to",
               "min_quality", "include_low_quality")


def search_filters(args: dict[str, Any]) -> dict[str, Any] | None:
    """The filters of a /search request: a `filters` object, or filter keys at the top."""
    if "filters" in args:
        filters = args["filters"]
        return filters if isinstance(filters, dict) or filters is None else {"bad": filters}
    found = {key: args[key] for key in FILTER_KEYS if key in args}
    if isinstance(found.get("min_quality"), str):
        try:
            found["min_quality"] = float(found["min_quality"])
        except ValueError:
            raise UsageError(f"min_quality {found['min_quality'][:40]!r} must be a number") from None
    if isinstance(found.get("include_low_quality"), str):
        flag = found["include_low_quality"].lower()
        if flag not in ("1", "true", "yes", "0", "false", "no"):
            raise UsageError(f"include_low_quality {flag[:40]!r} must be true or false")
        found["include_low_quality"] = flag in ("1", "true", "yes")
    return found or None


def add_routes(server: MCPServer[Any], service: Service, state_token: str) -> None:
    """The JSON routes and the forwarding routes, on the MCP server's Starlette app."""

    async def guarded(request: Request, action: Callable[[dict[str, Any]], Response]) -> Response:
        try:
            args = await arguments(request)
        except GrooveError as exc:
            return json_body(*error_json(exc))  # type: ignore[misc]
        return await call(lambda: action(args))  # type: ignore[no-any-return]

    async def health(request: Request) -> Response:
        """`{"ok": true}` to anyone (false once a KB's watcher stopped); with
        `Groove-Challenge: NONCE`, also the proof that this server holds the state file's token
        (a client checks it before it sends anything); with the token, also the pid, the KBs,
        the index paths, whether the warm-up is done and any KB's problem."""
        import os

        problems = service.problems()
        body: dict[str, Any] = {"ok": not problems}
        challenge = request.headers.get("groove-challenge")
        if challenge is not None and 0 < len(challenge) <= MAX_CHALLENGE:
            body["proof"] = proof(state_token, challenge)
        if "authorization" in request.headers and token_ok(
                request.headers.get("authorization"), state_token):
            body.update(pid=os.getpid(), kbs=list(service.kbs), indexes=service.indexes(),
                        warm=service.warm.is_set())
            if problems:
                body["problems"] = problems
        return JSONResponse(body)

    async def search(request: Request) -> Response:
        def run(args: dict[str, Any]) -> Response:
            query = text_arg(args, "query", alias="q",
                             required="/search needs a query: ?q=… or {\"query\": …}")
            assert query is not None
            results = service.search(query, limit=int_arg(args, "limit", 5),
                                     mode=text_arg(args, "mode"), filters=search_filters(args),
                                     kb=text_arg(args, "kb"))
            messages = [{"kind": m.kind, "text": m.text} for m in results.messages]
            return json_body(results.to_json(), headers={
                "Groove-Messages": json.dumps(messages, ensure_ascii=True)})
        return await guarded(request, run)

    async def get(request: Request) -> Response:
        def run(args: dict[str, Any]) -> Response:
            location = text_arg(args, "location", alias="path",
                                required="/get needs a location: ?path=PATH[:LINE[:COUNT]]")
            assert location is not None
            note = service.get(location, text_arg(args, "kb"))
            return json_body({key: note[key] for key in ("path", "line_start", "line_end",
                                                         "content")})
        return await guarded(request, run)

    async def status(request: Request) -> Response:
        return await guarded(request, lambda args: json_body(
            service.status(text_arg(args, "kb")).to_json()))

    async def report_plots(request: Request) -> Response:
        return await guarded(request, lambda args: json_body(
            service.history_pictures(text_arg(args, "kb"))))

    def forwarded(action: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
        async def route(request: Request) -> Response:
            if not token_ok(request.headers.get("authorization"), state_token):
                return JSONResponse({"error": {"message": "a token is required",
                                               "exit_code": 1}}, status_code=401)

            def run(args: dict[str, Any]) -> Response:
                try:
                    return JSONResponse(action(args))
                except Exception as exc:
                    known = error_json(exc)
                    if known is None:
                        raise
                    return JSONResponse(known[0])
            return await guarded(request, run)
        return route

    server.custom_route("/health", methods=["GET"])(health)
    server.custom_route("/search", methods=["GET", "POST"])(search)
    server.custom_route("/get", methods=["GET", "POST"])(get)
    server.custom_route("/status", methods=["GET"])(status)
    server.custom_route("/report/plots", methods=["GET"])(report_plots)
    server.custom_route("/cli/search", methods=["POST"])(forwarded(service.forwarded_search))
    server.custom_route("/cli/status", methods=["POST"])(forwarded(service.forwarded_status))


MAX_CHALLENGE = 128
"""The longest `Groove-Challenge` a server answers."""


def proof(token: str, challenge: str) -> str:
    """HMAC-SHA256 of a client's challenge under the state file's token (serve.md §5)."""
    return hmac.new(token.encode(), challenge.encode(), "sha256").hexdigest()


def token_ok(header: str | None, token: str | None) -> bool:
    """Whether an Authorization header carries `token` (compared in constant time)."""
    if not token:
        return True
    if not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[len("Bearer "):].encode(), token.encode())


class Guard:
    """Refuses a request whose Host or Origin is not this server's (DNS rebinding), and one
    without the bearer token when the server has one."""

    def __init__(self, app: ASGIApp, *, hosts: tuple[str, ...] | None, origins: tuple[str, ...],
                 token: str | None) -> None:
        self.app, self.hosts, self.origins, self.token = app, hosts, origins, token
        self.public = PUBLIC_PATHS | {"/health"}  # no data: /health and the page's files

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        problem = None
        if self.hosts is not None and headers.get("host", "") not in self.hosts:
            problem = (421, "this Host is not served (DNS rebinding protection)")
        elif "origin" in headers and headers["origin"] not in self.origins:
            problem = (403, "this Origin is not allowed")
        elif self.token and scope.get("path") not in self.public and not token_ok(
                headers.get("authorization"), self.token):
            problem = (401, "a bearer token is required")
        if problem is None:
            await self.app(scope, receive, send)
            return
        response = JSONResponse({"error": {"message": problem[1], "exit_code": 1}},
                                status_code=problem[0])
        await response(scope, receive, send)


def local_hosts(port: int) -> tuple[str, ...]:
    """The Host values a loopback server answers: its loopback names, with and without port."""
    names = ("127.0.0.1", "localhost", "[::1]")
    return tuple(f"{n}:{port}" for n in names) + names


def build_app(service: Service, *, port: int | None, token: str | None, state_token: str,
              origins: tuple[str, ...] = (), check_host: bool = True,
              watching: bool = False) -> Guard:
    """The whole HTTP app; `port` None for a unix socket (no Host check: browsers cannot
    reach one), `check_host` False when a token guards a non-loopback bind, `watching` whether
    a watcher keeps the KBs up to date (the web view's status band shows it)."""
    mcp = build_mcp(service)
    add_routes(mcp, service, state_token)
    add_page(mcp, service, PageInfo(watching=watching))
    hosts = local_hosts(port) if (port is not None and check_host) else None
    allowed_origins = tuple(origins) + (tuple(f"http://{h}" for h in local_hosts(port)[:3])
                                        if port is not None else ())
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=hosts is not None,
        allowed_hosts=list(hosts or ()), allowed_origins=list(allowed_origins))
    app = mcp.streamable_http_app(streamable_http_path="/mcp", transport_security=security,
                                  max_request_body_size=MAX_BODY, max_sessions=MAX_SESSIONS,
                                  session_idle_timeout=SESSION_IDLE_S)
    return Guard(BodyCap(app), hosts=hosts, origins=allowed_origins, token=token)
