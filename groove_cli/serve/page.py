"""The web view of `groove serve` (serve.md §4.1): one static page at `/`, its script and style
under `/web/`, and `/info`, the JSON the page's status band reads besides `/status`; and the
eval history page at `/report` (serve.md §4.2), which shows the pictures `/report/plots`
(app.py) answers.

The page is a hand-written script with no framework and no build step, shipped as package data
(`groove_cli/serve/web/`). It searches and reads notes through the same JSON routes as any
client (`/search`, `/get`, `/status`), so it adds no second path to the engine. It is served
with a strict Content-Security-Policy (script and style from the server only, no inline
script, no framing, connections to the server only), and it builds its DOM with `textContent`:
nothing a note holds is ever read as HTML. The static files carry no data, so a token-guarded
server sends them without the token; the page then asks for the token and sends it as
`Authorization: Bearer` with each JSON request (every data route still needs it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from groove_cli.serve.service import Service

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
"""The page's Content-Security-Policy: nothing inline, nothing from another origin; images
also from `blob:` URLs, which only the page's own script makes (the history page's plots,
fetched with the token)."""
ASSETS: dict[str, tuple[str, str]] = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/report": ("report.html", "text/html; charset=utf-8"),
    "/web/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/web/style.css": ("style.css", "text/css; charset=utf-8"),
    "/web/icon.svg": ("icon.svg", "image/svg+xml"),
}
"""Route → (file in groove_cli/serve/web/, media type)."""
PUBLIC_PATHS = frozenset(ASSETS)
"""Routes a token-guarded server answers without the token: the static page, no data."""
DEFAULT_EDITOR_URL = "vscode://file/{path}:{line}"


@dataclass
class PageInfo:
    """What `/info` says besides the KBs' own status: set when the app is built."""

    watching: bool = False
    started: float = field(default_factory=time.monotonic)


def asset(name: str) -> bytes:
    """A file of groove_cli/serve/web/ (read on each request: they are small)."""
    from importlib.resources import files

    return (files("groove_cli.serve") / "web" / name).read_bytes()


def headers() -> dict[str, str]:
    return {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache",
            "X-Frame-Options": "DENY"}


def editor_url(service: Service) -> str:
    """The editor link template (`[serve] editor_url` of the first KB's settings)."""
    served = next(iter(service.kbs.values()))
    value = served.index.settings.values.get("serve.editor_url")
    return value if isinstance(value, str) and value else DEFAULT_EDITOR_URL


def info(service: Service, page: PageInfo) -> dict[str, Any]:
    """`/info`: version, the served KBs, the watcher's state, uptime and the editor template."""
    from groove_cli._version import version

    problems = service.problems()
    return {
        "version": version(),
        "kbs": list(service.kbs),
        "watcher": ("stopped" if problems else "watching") if page.watching else "off",
        "problems": problems,
        "warm": service.warm.is_set(),
        "uptime_s": round(time.monotonic() - page.started, 1),
        "editor_url": editor_url(service),
    }


def add_page(server: MCPServer[Any], service: Service, page: PageInfo) -> None:
    """`/`, `/report`, `/web/app.js`, `/web/style.css`, `/web/icon.svg` and `/info` on the
    server's Starlette app."""
    from starlette.responses import JSONResponse

    def static(route: str) -> Any:
        name, media = ASSETS[route]

        async def answer(request: Request) -> Response:
            return Response(asset(name), media_type=media, headers=headers())
        return answer

    async def info_route(request: Request) -> Response:
        return JSONResponse(info(service, page), headers={"Cache-Control": "no-store"})

    for route in ASSETS:
        server.custom_route(route, methods=["GET"])(static(route))
    server.custom_route("/info", methods=["GET"])(info_route)
