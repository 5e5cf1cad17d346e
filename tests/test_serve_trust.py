"""The command line trusts no server it did not check (issue 40, items 4, 5 and 10): a state file
planted in the KB folder, or a process squatting at a state file's address, gets neither the
token nor the request; an error answer never exits 0; a busy server keeps its file.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from groove_cli.errors import GrooveError
from groove_cli.serve.client import raise_error
from groove_cli.serve.state import ServerState, index_id, write_state
from tests.serve_helpers import groove, make_kb


@pytest.fixture
def kb_env(golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path
           ) -> tuple[Path, dict[str, str]]:
    return make_kb(golden_index, tmp_path, real_models_dir)


def plant(kb: Path, address: str, *, mode: int = 0o600) -> Path:
    """A state file for the KB's index naming `address`, as a live server's would (this
    process's pid is alive)."""
    db = kb / ".groove.db"
    path = db.with_name(db.name + ".server.json")
    write_state(path, ServerState(os.getpid(), address, "planted-token", index_id(db)))
    path.chmod(mode)
    return path


def search_fts(kb: Path, env: dict[str, str]) -> tuple[int, str, str]:
    run = groove(env, "search", "retry budget", "--kb-path", str(kb), "--mode", "fts")
    return run.returncode, run.stdout, run.stderr


def non_loopback_ip() -> str | None:
    """An address of this machine off the loopback, if it has one (no packet is sent)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))
        ip = str(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()
    return None if ip.startswith("127.") else ip


def test_a_planted_file_naming_another_host_gets_nothing(kb_env: tuple[Path, dict[str, str]]
                                                         ) -> None:
    kb, env = kb_env
    ip = non_loopback_ip()
    if ip is None:
        pytest.skip("this machine has no address off the loopback")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((ip, 0))
    listener.listen(8)
    listener.setblocking(False)
    try:
        state = plant(kb, f"http://{ip}:{listener.getsockname()[1]}")
        local = groove(env, "search", "retry budget", "--kb-path", str(kb), "--mode", "fts",
                       "--no-server").stdout
        code, out, err = search_fts(kb, env)
        assert code == 0 and out == local
        assert "its address is not on this machine's loopback" in err
        with pytest.raises(BlockingIOError):  # nobody ever connected
            listener.accept()
        assert not state.exists()
    finally:
        listener.close()


def test_a_state_file_others_can_read_or_write_is_not_followed(
        kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    state = plant(kb, "http://127.0.0.1:9", mode=0o644)
    code, _, err = search_fts(kb, env)
    assert code == 0 and "not this user's private (0600) file" in err
    assert not state.exists()


class Impostor(socketserver.ThreadingTCPServer):
    """Answers every request like a friendly groove server would, recording what it got."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []
        super().__init__(("127.0.0.1", 0), ImpostorHandler)


class ImpostorHandler(BaseHTTPRequestHandler):
    server: Impostor

    def answer(self) -> None:
        self.server.seen.append((self.command, self.path, self.headers.get("Authorization")))
        body = json.dumps({"ok": True, "proof": "0" * 64, "indexes": [], "error": {
            "message": "fake failure", "exit_code": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def impostor() -> Iterator[Impostor]:
    server = Impostor()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_a_squatter_at_the_address_cannot_prove_itself_and_gets_no_token(
        kb_env: tuple[Path, dict[str, str]], impostor: Impostor) -> None:
    kb, env = kb_env
    state = plant(kb, f"http://127.0.0.1:{impostor.server_address[1]}")
    code, out, err = search_fts(kb, env)
    assert code == 0 and "fake failure" not in out + err
    assert "cannot prove it is the server that wrote the state file" in err
    assert impostor.seen == [("GET", "/health", None)]  # challenged, never given the token
    assert state.exists()  # skipped, not removed: it names a live process


def test_nothing_listening_at_a_live_pid_s_address_removes_the_file(
        kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()  # nothing listens there now; the pid (this process) lives: a reused pid
    state = plant(kb, f"http://127.0.0.1:{port}")
    code, _, err = search_fts(kb, env)
    assert code == 0 and "nothing listens at its address" in err
    assert not state.exists()


@pytest.mark.parametrize(("given", "exit_code"), [(0, 1), (2, 2), (-1, 1), (300, 1),
                                                  ("3", 1), (True, 1)])
def test_an_error_answer_never_exits_0(given: object, exit_code: int) -> None:
    with pytest.raises(GrooveError) as raised:
        raise_error({"error": {"message": "boom", "exit_code": given}})
    assert raised.value.exit_code == exit_code and str(raised.value) == "boom"
