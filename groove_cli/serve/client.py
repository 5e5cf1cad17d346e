"""The command line's side of forwarding: find a running server for the index, send it the
command's request, hand back its answer; standard library only (http.client, socket, json), so
a forwarded `groove search` loads no model, numpy or server code.

A state file whose process is gone, that names another index, or whose server does not answer
the health check in time is removed, with one `groove: note:` on stderr, and the command runs
in-process. A server that resolved other settings than this command (another groove.toml,
other GROOVE_* variables) is skipped silently: the command runs in-process.
"""

from __future__ import annotations

import hashlib
import http.client
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_cli import messages
from groove_cli.serve.reach import connection
from groove_cli.serve.state import (
    ServerState,
    index_id,
    pid_alive,
    read_state,
    remove_state,
    state_path,
)

if TYPE_CHECKING:
    from groove_cli.config import Settings
    from groove_cli.dburl import IndexLocation

HEALTH_TIMEOUT_S = 1.0
"""How long a server may take to answer the health check before it counts as dead."""
REQUEST_TIMEOUT_S = 300.0
UNCOMPARED = frozenset({"kb_path", "db_path"})
"""Settings a server and a client may spell differently for the same index (the index itself
is compared by its absolute path)."""


def settings_fingerprint(settings: Settings) -> str:
    """A digest of every resolved setting and which of them are flags: equal digests mean a
    search computes the same thing in the server and in the command line."""
    values = {key: value for key, value in settings.values.items() if key not in UNCOMPARED}
    flags = sorted(key for key in settings.flags if key not in UNCOMPARED)
    text = json.dumps([values, flags], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def running_server(location: IndexLocation, kb: Path | None) -> ServerState | None:
    """The state of a server whose process is alive for this index (no network check)."""
    path = state_path(location, kb)
    if path is None:
        return None
    state = read_state(path)
    if state is None or not pid_alive(state.pid) or state.index != index_id(location):
        return None
    return state


def _ignore(path: Path, state: ServerState | None, reason: str) -> None:
    who = f" (pid {state.pid}, {state.address})" if state else ""
    messages.note(f"ignoring the groove server of {path}{who}: {reason}; running without it")
    remove_state(path, state.pid if state else None)


def forward(location: IndexLocation, kb: Path | None, route: str,
            request: dict[str, Any]) -> dict[str, Any] | None:
    """POST `request` to `route` of the server for this index; its JSON answer, or None when
    no usable server runs (see the module doc)."""
    path = state_path(location, kb)
    if path is None or not (path.exists() or path.is_symlink()):
        return None
    state = read_state(path)
    if state is None:
        _ignore(path, None, "the state file is unreadable")
        return None
    if not pid_alive(state.pid):
        _ignore(path, state, "its process is gone")
        return None
    if state.index != index_id(location):
        _ignore(path, state, f"it serves another index ({state.index})")
        return None
    headers = {"Authorization": f"Bearer {state.token}", "Host": "localhost",
               "Content-Type": "application/json"}
    try:
        conn = connection(state.address, HEALTH_TIMEOUT_S)
        conn.request("GET", "/health", headers=headers)
        health = json.loads(conn.getresponse().read() or b"{}")
        if index_id(location) not in health.get("indexes", []):
            conn.close()
            _ignore(path, state, "it does not serve this index")
            return None
        if conn.sock is not None:
            conn.sock.settimeout(REQUEST_TIMEOUT_S)
        conn.request("POST", route, body=json.dumps(request).encode("utf-8"), headers=headers)
        response = conn.getresponse()
        answer = json.loads(response.read() or b"{}")
        conn.close()
    except (OSError, ValueError, http.client.HTTPException) as exc:
        _ignore(path, state, f"no answer ({exc.__class__.__name__}: {exc})")
        return None
    if not isinstance(answer, dict) or answer.get("foreign"):
        _ignore(path, state, "it does not serve this index")
        return None
    if answer.get("mismatch"):
        messages.detail("the running server resolved other settings; searching in-process")
        return None
    return answer


def raise_error(answer: dict[str, Any]) -> None:
    """Raise the GrooveError a server answered with (same message, hint and exit code)."""
    from groove_cli.errors import GrooveError

    error = answer.get("error")
    if isinstance(error, dict):
        exc = GrooveError(str(error.get("message")), error.get("hint"))
        exc.exit_code = int(error.get("exit_code", 1))
        raise exc


def forward_search(settings: Settings, location: IndexLocation, kb: Path | None, query: str,
                   limit: int, filters: Any, flags: dict[str, object], *,
                   files: bool = False) -> Any:
    """The Results of this search from a running server, or None (run it in-process)."""
    import dataclasses

    request = {"index": index_id(location), "query": query, "limit": limit, "files": files,
               "filters": {k: list(v) if isinstance(v, tuple) else v
                           for k, v in dataclasses.asdict(filters).items()},
               "flags": {k: v for k, v in flags.items() if k not in UNCOMPARED},
               "fingerprint": settings_fingerprint(settings)}
    answer = forward(location, kb, "/cli/search", request)
    if answer is None:
        return None
    raise_error(answer)
    from groove_cli.serve.codec import decode

    return decode(answer["results"])


def forward_status(location: IndexLocation, kb: Path | None) -> Any:
    """The StatusReport from a running server, or None."""
    answer = forward(location, kb, "/cli/status", {"index": index_id(location)})
    if answer is None:
        return None
    raise_error(answer)
    from groove_cli.serve.codec import decode

    return decode(answer["report"])

