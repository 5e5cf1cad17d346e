"""The command line's side of forwarding: find a running server for the index, send it the
command's request, hand back its answer; standard library only (http.client, socket, json), so
a forwarded `groove search` loads no model, numpy or server code.

A state file whose process is gone, that names another index, that is not this user's 0600
file or names an address off this machine's loopback, or where nothing listens, is removed
with one `groove: note:` on stderr, and the command runs in-process. Before the token or the
request leave, whatever answers at the address proves it holds the token (an HMAC of a fresh
challenge); one that cannot, or does not answer within 1 s, is skipped (its file is kept: a
busy server stays listed). A server that resolved other settings than this command (another
groove.toml, other GROOVE_* variables) is skipped silently: the command runs in-process.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import secrets
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
"""How long a server may take to connect and answer the health check before it is skipped."""
REQUEST_TIMEOUT_S = 60.0
"""How long a server that proved itself may take to answer the request (a cold one loads its
model first); past it the command runs in-process."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
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


def _ignore(path: Path, state: ServerState | None, reason: str, *, remove: bool = True) -> None:
    who = f" (pid {state.pid}, {state.address})" if state else ""
    messages.note(f"ignoring the groove server of {path}{who}: {reason}; running without it")
    if remove:
        remove_state(path, state.pid if state else None)


def untrusted(path: Path, state: ServerState) -> str | None:
    """Why a state file may not be followed, or None: it must be this user's own 0600 file
    (the server writes it so), and name an address on this machine (loopback or a unix
    socket): a file planted in the KB folder must not send a search anywhere else."""
    try:
        st = path.lstat()
    except OSError as exc:
        return f"the state file cannot be read ({exc.strerror})"
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        return "the state file is not this user's private (0600) file"
    address = state.address
    if address.startswith("unix:"):
        return None if os.path.isabs(address[len("unix:"):]) else "its socket path is relative"
    host, _, port = address.removeprefix("http://").rpartition(":")
    if not address.startswith("http://") or host not in LOOPBACK_HOSTS or not port.isdigit():
        return "its address is not on this machine's loopback"
    return None


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
    distrust = untrusted(path, state)
    if distrust is not None:
        _ignore(path, state, distrust)
        return None
    challenge = secrets.token_hex(16)
    try:  # the server proves it holds the token before the token or the request leave here
        conn = connection(state.address, HEALTH_TIMEOUT_S)
        conn.request("GET", "/health", headers={"Host": "localhost",
                                                "Groove-Challenge": challenge})
        health = json.loads(conn.getresponse().read() or b"{}")
    except (ConnectionRefusedError, FileNotFoundError):  # nothing listens: the pid was reused
        _ignore(path, state, "nothing listens at its address")
        return None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        # a live server that does not answer in time keeps its file: it may be busy
        _ignore(path, state, f"no answer within {HEALTH_TIMEOUT_S:g} s "
                             f"({exc.__class__.__name__})", remove=False)
        return None
    expected = hmac.new(state.token.encode(), challenge.encode(), "sha256").hexdigest()
    if not isinstance(health, dict) or not hmac.compare_digest(
            str(health.get("proof", "")), expected):
        conn.close()
        _ignore(path, state, "what answers there cannot prove it is the server that wrote "
                             "the state file", remove=False)
        return None
    headers = {"Authorization": f"Bearer {state.token}", "Host": "localhost",
               "Content-Type": "application/json"}
    try:
        if conn.sock is not None:
            conn.sock.settimeout(REQUEST_TIMEOUT_S)
        conn.request("POST", route, body=json.dumps(request).encode("utf-8"), headers=headers)
        response = conn.getresponse()
        answer = json.loads(response.read() or b"{}")
        conn.close()
    except (OSError, ValueError, http.client.HTTPException) as exc:
        _ignore(path, state, f"no answer ({exc.__class__.__name__}: {exc})", remove=False)
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
        code = error.get("exit_code", 1)
        exc.exit_code = (code if isinstance(code, int) and not isinstance(code, bool)
                         and 1 <= code <= 125 else 1)
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

