"""The server state file: where a running `groove serve` for an index can be reached.

It lives next to the index (`{index}.server.json`, so it follows the index wherever the KB's
state folder is), or in the KB folder for a Postgres store, and holds the server's pid, address
(`http://127.0.0.1:PORT` or `unix:PATH`) and token. Written 0600 and atomically; standard
library only, because the forwarding command line reads it before anything heavy is loaded.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from groove_cli.dburl import IndexLocation
from groove_cli.serve.reach import pid_alive

__all__ = ["ServerState", "index_id", "pid_alive", "read_state", "remove_state", "state_path",
           "write_state"]

SUFFIX = ".server.json"
PG_STATE = ".groove-server.json"
"""The state file of a Postgres-stored KB, in the KB folder (there is no index file)."""


@dataclass(frozen=True, slots=True)
class ServerState:
    """What a client needs to reach a running server."""

    pid: int
    address: str
    """`http://HOST:PORT` or `unix:/path/to/socket`."""
    token: str
    index: str
    """The index the server serves (a file path or a masked store URL), to detect a stale
    or foreign file."""

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def state_path(location: IndexLocation, kb: Path | None) -> Path | None:
    """The state file of this index: `{index}.server.json` beside an index file, the KB's
    `.groove-server.json` for a store URL, None for a store URL without a KB folder or a path
    that names no file (`--db /`: the command itself reports that)."""
    if isinstance(location, Path):
        return location.with_name(location.name + SUFFIX) if location.name else None
    if kb is not None:
        return kb / PG_STATE
    return None


def index_id(location: IndexLocation) -> str:
    """The index as the state file names it: the absolute file, or the masked URL."""
    if isinstance(location, Path):
        return str(location.resolve())
    from groove_cli.dburl import mask

    return mask(str(location))


def new_token() -> str:
    return secrets.token_urlsafe(24)


def read_state(path: Path) -> ServerState | None:
    """The state in `path`, or None when it is absent, a symbolic link or not a state file."""
    try:
        if path.is_symlink():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return ServerState(int(data["pid"]), str(data["address"]), str(data["token"]),
                           str(data["index"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_state(path: Path, state: ServerState) -> None:
    """Write the state file 0600 in one step (a reader never sees half of it)."""
    write_private(path, state.to_json())


def write_private(path: Path, document: object) -> None:
    """Write a JSON document 0600 in one step."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remove_state(path: Path, pid: int | None = None) -> None:
    """Remove the state file (only when it still names `pid`, if given)."""
    if pid is not None:
        current = read_state(path)
        if current is not None and current.pid != pid:
            return
    with contextlib.suppress(OSError):
        path.unlink()
