"""How the command line reaches a running `groove serve`: is its process alive, and an HTTP
connection to its address. Standard library only (a forwarded search loads no server code).
"""

from __future__ import annotations

import os
from typing import Any


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def connection(address: str, timeout: float) -> Any:
    """An http.client connection to `http://HOST:PORT` or `unix:PATH`."""
    import http.client
    import socket

    if address.startswith("unix:"):
        class UnixConnection(http.client.HTTPConnection):
            def connect(self) -> None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self.timeout)
                sock.connect(address[len("unix:"):])
                self.sock = sock

        return UnixConnection("localhost", timeout=timeout)
    if not address.startswith("http://"):
        raise ValueError(f"unsupported address {address!r}")
    return http.client.HTTPConnection(address[len("http://"):], timeout=timeout)
