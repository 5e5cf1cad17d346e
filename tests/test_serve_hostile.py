"""A hostile client against a real `groove serve` (issue 40): location-shaped names, huge and
endless bodies, nested JSON, ill-typed parameters, slow connections past the connection cap,
a planted `--socket` path, concurrent `kb add`. Every answer is a one-line JSON error (never a
500 or a traceback in the log) and the server keeps serving."""

from __future__ import annotations

import http.client
import json
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groove_cli.serve.limits import MAX_BODY, MAX_CONNECTIONS
from tests.serve_helpers import Server, groove, make_kb
from tests.waiting import HANG_GUARD_S, wait_until


def raw(server: Server, request: bytes) -> tuple[int, dict[str, Any]]:
    """Send `request` bytes as they are; the status and JSON body of the answer."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=HANG_GUARD_S) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body or b"{}")


def post(server: Server, route: str, body: bytes, headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, Any]]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=HANG_GUARD_S)
    try:
        conn.request("POST", route, body=body, headers={"Content-Type": "application/json",
                                                         **(headers or {})})
        response = conn.getresponse()
        raw = response.read() or b"{}"
        try:
            return response.status, json.loads(raw)
        except ValueError:  # a route that does not exist answers plain text
            return response.status, {"text": raw.decode("utf-8", "replace")}
    finally:
        conn.close()


def error(answer: tuple[int, dict[str, Any]]) -> tuple[int, str]:
    code, body = answer
    return code, body["error"]["message"]


def still_serving(server: Server) -> None:
    code, body, _ = server.get("/search", q="retry budget", limit="1")
    assert code == 200 and json.loads(body)["results"], body
    assert not server.logged("Traceback") and not server.logged("Exception in ASGI")


def test_huge_and_endless_bodies_are_refused_before_they_are_read(server: Server) -> None:
    # Content-Length says 1.5 GB: refused from the header alone, none of it read
    head = (f"POST /search HTTP/1.1\r\nHost: {server.url.removeprefix('http://')}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1500000000\r\n\r\n{").encode()
    assert error(raw(server, head)) == (413, f"the request body is larger than {MAX_BODY} bytes")
    chunked = (f"POST /search HTTP/1.1\r\nHost: {server.url.removeprefix('http://')}\r\n"
               "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"q\":\r\n0\r\n\r\n").encode()
    assert error(raw(server, chunked))[0] == 411
    still_serving(server)


@pytest.mark.parametrize("depth", [100, 100_000])
def test_nested_json_is_a_clear_error(server: Server, depth: int) -> None:
    code, message = error(post(server, "/search", b'{"q": ' + b"[" * depth + b"]" * depth + b"}"))
    assert code == 400 and "nested more than 64 deep" in message
    still_serving(server)


@pytest.mark.parametrize(("body", "expected"), [
    ({"query": "retry", "limit": True}, "limit 'True' must be a whole number"),
    ({"query": "retry", "limit": 1.5}, "limit '1.5' must be a whole number"),
    ({"query": "retry", "kb": ["a", "b"]}, "kb must be text, not list"),
    ({"query": ["retry"]}, "query must be text, not list"),
    ({"query": "retry", "mode": {"x": 1}}, "mode must be text, not dict"),
])
def test_ill_typed_parameters_are_refused_by_name(server: Server, body: dict[str, Any],
                                                  expected: str) -> None:
    assert error(post(server, "/search", json.dumps(body).encode())) == (400, expected)
    still_serving(server)


def test_a_query_string_that_is_not_utf8_is_refused(server: Server) -> None:
    host = server.url.removeprefix("http://")
    answer = raw(server, f"GET /search?q=%ff%fe HTTP/1.1\r\nHost: {host}\r\n"
                         "Connection: close\r\n\r\n".encode())
    assert error(answer) == (400, "the query string is not UTF-8 text")
    assert error(raw(server, f"GET /get?path=a.md&kb=x&kb=y HTTP/1.1\r\nHost: {host}\r\n"
                             "Connection: close\r\n\r\n".encode())) == (400, "kb must be text, not list")


def test_a_file_named_like_a_location_is_not_served(server: Server, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# secret\n\nTOP SECRET\n")
    note = next(p for p in sorted(server.kb.rglob("*.md")) if p.stat().st_size > 100)
    rel = note.relative_to(server.kb).as_posix()
    planted = note.with_name(note.name + ":2")
    planted.symlink_to(secret)
    try:
        code, body, _ = server.get("/get", path=f"{rel}:2")
        assert code == 200 and b"TOP SECRET" not in body
        assert json.loads(body)["path"] == str(note)
    finally:
        planted.unlink()


def test_slow_connections_past_the_cap_do_not_lock_out_a_client(server: Server) -> None:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    slow: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS + 200):  # each sends half a request head and waits
            conn = socket.create_connection((host, int(port)), timeout=HANG_GUARD_S)
            conn.sendall(b"GET /search?q=x HTTP/1.1\r\nHost: ")
            slow.append(conn)
        still_serving(server)
        # the oldest slow connections were closed to make room
        closed = 0
        for conn in slow[:100]:
            conn.settimeout(HANG_GUARD_S)
            try:
                closed += conn.recv(1) == b""
            except OSError:
                closed += 1
        assert closed == 100
    finally:
        for conn in slow:
            conn.close()
    still_serving(server)


def test_the_socket_path_is_never_a_file_it_did_not_create(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    note = tmp_path / "precious.md"
    note.write_text("# mine\n")
    refused = groove(env, "serve", str(kb), "--socket", str(note), timeout=120)
    assert refused.returncode == 1 and note.read_text() == "# mine\n"
    assert f"--socket {note} exists and is not a socket; groove leaves it alone" in refused.stderr
    sock_path = tmp_path / "g.sock"
    proc = subprocess.Popen([sys.executable, "-m", "groove_cli", "serve", str(kb), "--socket",
                             "g.sock"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        state_path = kb / ".groove.db.server.json"
        wait_until(lambda: state_path.exists() or proc.poll() is not None, what="the server")
        assert proc.poll() is None
        assert stat.S_IMODE(sock_path.stat().st_mode) == 0o600
        state = json.loads(state_path.read_text())
        assert state["address"] == f"unix:{sock_path}"  # absolute, whatever the cwd
        again = groove(env, "serve", str(kb), "--socket", str(sock_path), "--port", "0")
        assert again.returncode == 1 and sock_path.exists()
    finally:
        proc.terminate()
        proc.wait(timeout=HANG_GUARD_S)
    assert not sock_path.exists()


def test_a_blank_token_is_refused(kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    result = groove(env, "serve", str(kb), "--port", "0", "--token", " ")
    assert result.returncode == 2
    assert "--token must be printable ASCII characters without spaces" in result.stderr


@pytest.fixture
def user_config(tmp_path: Path, kb_env: tuple[Path, dict[str, str]]) -> Iterator[dict[str, str]]:
    _, env = kb_env
    yield dict(env, XDG_CONFIG_HOME=str(tmp_path / "config"))


def test_concurrent_kb_add_keeps_every_entry(user_config: dict[str, str], tmp_path: Path) -> None:
    folders = []
    for i in range(8):
        folder = tmp_path / f"kb{i}"
        folder.mkdir()
        folders.append(folder)
    procs = [subprocess.Popen([sys.executable, "-m", "groove_cli", "kb", "add", str(f)],
                              env=user_config, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for f in folders]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    listed = groove(user_config, "kb", "list", "--format", "json")
    assert sorted(c["name"] for c in json.loads(listed.stdout)["collections"]) == [f"kb{i}" for i in range(8)]


def test_all_searches_a_folder_named_twice_once(user_config: dict[str, str],
                                                kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, _ = kb_env
    config = Path(user_config["XDG_CONFIG_HOME"]) / "groove"
    config.mkdir(parents=True)
    (config / "collections.toml").write_text(
        f'[collections.one]\npath = "{kb}"\n\n[collections.two]\npath = "{kb}"\n')
    once = groove(user_config, "search", "retry budget", "--all", "--format", "json",
                  "--mode", "fts", "--no-server")
    assert once.returncode == 0, once.stderr
    hits = json.loads(once.stdout)["results"]
    assert len({(h["kb"], h["path"], h["line_start"]) for h in hits}) == len(hits)
    assert {h["kb"] for h in hits} == {"one"}


def test_deeply_nested_collections_file_is_a_config_error(user_config: dict[str, str],
                                                          tmp_path: Path) -> None:
    config = Path(user_config["XDG_CONFIG_HOME"]) / "groove"
    config.mkdir(parents=True)
    (config / "collections.toml").write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    result = groove(user_config, "kb", "list")
    assert result.returncode == 1 and "nested too deeply" in result.stderr
    assert "Traceback" not in result.stderr
    inside = tmp_path / "somewhere"
    inside.mkdir()
    found = groove(user_config, "status", cwd=inside)
    assert "Traceback" not in found.stderr and "RecursionError" not in found.stderr


def test_a_server_file_it_cannot_write_is_a_warning_not_a_traceback(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    """Issue 40 item 14: `serve` on a read-only KB or a full disk printed a raw traceback; a
    folder where the state file goes fails the same way, even for root."""
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    (kb / ".groove.db.server.json").mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "groove_cli", "serve", str(kb), "--port", "0"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        def warned() -> bool:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            lines.append(proc.stderr.readline())
            return any("groove: serving" in line for line in lines)
        wait_until(warned, what="the server announcing itself")
    finally:
        proc.terminate()
        proc.wait(timeout=HANG_GUARD_S)
    text = "".join(lines)
    assert "groove: warning: cannot write the server file" in text and "Traceback" not in text


def test_no_command_line_route_and_a_request_in_flight_holds_no_other(server: Server) -> None:
    """Issue 40 items 2 and 13: `POST /cli/run` ran the command line's `get` on any path, and
    relayed commands ran one at a time under one lock. The route is gone (even with the state
    file's token), and a request still sending its body does not hold a search back."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    token = server.state["token"]
    code, body = post(server, "/cli/run", json.dumps({"argv": ["get", "/etc/passwd"]}).encode(),
                      {"Authorization": f"Bearer {token}"})
    assert code == 404 and "root:" not in json.dumps(body)
    with socket.create_connection((host, int(port)), timeout=HANG_GUARD_S) as slow:
        slow.sendall(f"POST /search HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: "
                     "application/json\r\nContent-Length: 100\r\n\r\n{\"query\": ".encode())
        still_serving(server)  # answered while the other request waits for its body
