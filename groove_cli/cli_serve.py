"""`groove serve` and `groove mcp`: open each KB's index once through the public API and hand
them to the serving layer (groove_cli/serve/); registered by cli_app.py. The server modules, mcp,
starlette and uvicorn load only inside these commands.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groove_cli.cli_options import KbOpt, global_options, run_core

if TYPE_CHECKING:
    from groove_cli.api import Index

KbsArg = Annotated[list[str] | None, typer.Argument(help=(
    "KB folders to serve (default: kb_path in groove.toml); their index as every command "
    "finds it (--db: a file or a postgresql:// URL)."), show_default=False)]
WatchOpt = Annotated[bool, typer.Option("--watch", help=(
    "Re-index notes as they change (added, edited, renamed, deleted)."))]
TOKEN_ENV = "GROOVE_SERVE_TOKEN"
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    """A server's KNN is one query against the vectors at a time: a BLAS thread pool only
    adds the wait for its threads to wake (bench/results/serve.md), so the server asks numpy's
    BLAS for one thread (read when numpy loads; an explicit setting is kept). Results are the
    same: each distance is one dot product, however the rows are split."""
    for name in BLAS_THREAD_VARS:
        os.environ.setdefault(name, "1")


def served_kbs(kbs: list[str] | None, kb_path: Path | None) -> list[str] | None:
    """The KB folders named positionally and by `--kb-path` (one way to name a KB whatever
    the command: cli.md §1), each once, in the order given."""
    named = [*(kbs or []), *([str(kb_path)] if kb_path is not None else [])]
    unique = list(dict.fromkeys(os.path.realpath(kb) for kb in named))
    return [next(kb for kb in named if os.path.realpath(kb) == real) for real in unique] or None


def open_indexes(ctx: typer.Context, kbs: list[str] | None) -> list[Index]:
    """One Index per KB, resolved as every command resolves it (cli.md §1)."""
    from groove_cli.api import Index, resolve
    from groove_cli.errors import UsageError

    options = global_options(ctx)
    if options.db is not None and len(kbs or []) > 1 and not options.db.startswith("postgres"):
        raise UsageError("--db names one index file; serve several KBs by their folders")
    opened = []
    for kb in kbs or [None]:  # type: ignore[list-item]
        settings, kb_dir, location, values = resolve(
            db=options.db, config_file=options.config, kb_required=options.db is None,
            flags={"kb_path": kb} if kb else {}, discover=True)
        if isinstance(location, Path) and not location.exists():
            raise UsageError(f"no index found at {location}",
                             hint=f"run `groove index --kb-path {kb_dir or '<path>'}` first")
        # absolute: the served Index must not depend on the working folder
        if isinstance(location, Path):
            location = location.absolute()
        opened.append(Index(settings, kb_dir.absolute() if kb_dir else None, location, values,
                            defer_cache=True))
    return opened


def serve_cmd(
    ctx: typer.Context,
    kbs: KbsArg = None,
    kb_path: KbOpt = None,
    host: Annotated[str, typer.Option("--host", help=(
        "Address to listen on; anything but loopback needs a token."))] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port (0: any free port).")] = 7531,
    socket: Annotated[Path | None, typer.Option("--socket", help=(
        "Listen on this unix socket instead of a TCP port."))] = None,
    token: Annotated[str | None, typer.Option("--token", help=(
        f"Require `Authorization: Bearer TOKEN` (default ${TOKEN_ENV})."))] = None,
    allow_origin: Annotated[list[str] | None, typer.Option("--allow-origin", help=(
        "A browser Origin allowed besides the server's own (repeatable)."))] = None,
    watch: WatchOpt = False,
) -> None:
    """Serve KBs over HTTP: a web page to search from at / (each KB's eval history at
    /report), MCP at /mcp, JSON at /search, /get, /status, /health.

    Models and index readers stay loaded, so searches are fast; `groove search`, `status`
    for a served KB go through the server (add --no-server to bypass). Loopback only unless
    a token is set. Stop with Ctrl-C or SIGTERM.

    Examples:

    * `groove serve ~/notes --watch`   (then open http://127.0.0.1:7531/)
    * `curl 'http://127.0.0.1:7531/search?q=retry+budget'`
    """
    one_blas_thread()
    from groove_cli.serve.runner import Listen, serve_http
    from groove_cli.serve.service import Service

    def run() -> None:
        listen = Listen(host=host, port=port, socket=socket,
                        token=token or os.environ.get(TOKEN_ENV) or None,
                        origins=tuple(allow_origin or ()))
        listen.check()
        serve_http(Service(open_indexes(ctx, served_kbs(kbs, kb_path))), listen, watch=watch)

    run_core(run)


def mcp_cmd(ctx: typer.Context, kbs: KbsArg = None, kb_path: KbOpt = None,
            watch: WatchOpt = False) -> None:
    """Serve KBs to one MCP client over stdin/stdout (desktop and editor agents).

    Exits when the client closes the connection.

    Example (an MCP client's config): `{"command": "groove", "args": ["mcp", "/path/to/notes"]}`
    """
    one_blas_thread()
    from groove_cli.serve.runner import leave, serve_stdio
    from groove_cli.serve.service import Service

    run_core(lambda: serve_stdio(Service(open_indexes(ctx, served_kbs(kbs, kb_path))),
                                 watch=watch))
    leave()  # the indexes are closed: skip the interpreter's slow teardown
