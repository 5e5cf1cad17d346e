"""`groove serve` and the command line that forwards to it: identical output, a light client,
dead and foreign servers ignored, one server per KB, clean stop, `status` showing the server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serve_helpers import (
    Server,
    groove,
    heavy,
    loaded_modules,
    make_kb,
    serving,
    state_file,
)
from tests.waiting import HANG_GUARD_S

SEARCHES = [
    ("retry budget", "--format", "text"),
    ("retry budget", "--format", "json", "--limit", "3"),
    ("障害が起きたときの連絡手順", "--format", "files", "--mode", "fts"),
    ("database backup restore drill", "--explain", "--format", "text", "--rrf-k", "40"),
    ("rate limiting", "--path-glob", "reliability/**", "--format", "json"),
]


@pytest.mark.parametrize("args", SEARCHES, ids=lambda a: " ".join(a)[:30])
def test_a_forwarded_search_prints_what_the_in_process_search_prints(
        server: Server, kb_env: tuple[Path, dict[str, str]], args: tuple[str, ...],
        tmp_path: Path) -> None:
    kb, env = kb_env
    query, *flags = args
    forwarded, modules = loaded_modules(env, tmp_path / "mods.json", "search", query,
                                        "--kb-path", str(kb), *flags)
    local = groove(env, "search", query, "--kb-path", str(kb), *flags, "--no-server")
    assert (forwarded.returncode, forwarded.stdout) == (local.returncode, local.stdout), forwarded.stderr
    if "--explain" in flags:  # the stage timings differ run to run; the other lines do not
        strip = [line for line in local.stderr.splitlines() if "timings ms" not in line]
        assert [ln for ln in forwarded.stderr.splitlines() if "timings ms" not in ln] == strip
    else:
        assert forwarded.stderr == local.stderr
    assert forwarded.stdout.strip()
    # it was forwarded: the command line never opened the index nor loaded the engine
    assert "groove_cli.retrieve.searcher" not in modules
    assert heavy(modules) == []


def test_a_forwarded_error_is_the_in_process_error(server: Server,
                                                   kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    args = ("search", "retry", "--kb-path", str(kb), "--date-from", "last tuesday")
    forwarded, local = groove(env, *args), groove(env, *args, "--no-server")
    assert forwarded.returncode == local.returncode == 2
    assert forwarded.stderr == local.stderr
    assert forwarded.stderr.startswith("groove: error: ")


def test_status_shows_the_running_server(server: Server,
                                         kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    text = groove(env, "status", "--kb-path", str(kb))
    assert f"Server: pid {server.proc.pid} at {server.url}\n" in text.stdout
    doc = json.loads(groove(env, "status", "--kb-path", str(kb), "--format", "json").stdout)
    assert doc["server"] == {"pid": server.proc.pid, "address": server.url}
    assert doc["documents"] == 27
    plain = json.loads(groove(env, "status", "--kb-path", str(kb), "--format", "json",
                              "--no-server").stdout)
    assert "server" not in plain
    assert {k: v for k, v in doc.items() if k != "server"} == plain


def test_the_json_routes_answer_what_the_cli_prints(server: Server,
                                                    kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    code, body, _ = server.get("/search", q="retry budget", limit=3)
    local = groove(env, "search", "retry budget", "--kb-path", str(kb), "--limit", "3",
                   "--no-server")
    assert code == 200 and body.decode() == local.stdout
    code, body, _ = server.get("/status")
    local = groove(env, "status", "--kb-path", str(kb), "--format", "json", "--no-server")
    assert code == 200 and body.decode() == local.stdout
    code, body, _ = server.get("/get", path="reliability/retry-budgets.md:10:3")
    local = groove(env, "get", str(kb / "reliability/retry-budgets.md:10:3"), "--format", "json")
    assert code == 200 and body.decode() == local.stdout
    code, body, _ = server.get("/health")
    assert code == 200 and json.loads(body) == {"ok": True}  # nothing more without a token
    code, body, _ = server.get("/health", headers={
        "Authorization": f"Bearer {server.state['token']}"})
    assert code == 200 and json.loads(body)["kbs"] == ["kb"]


def test_bad_requests_get_errors_and_the_server_keeps_serving(server: Server) -> None:
    code, body, _ = server.get("/search", q="retry", limit="lots")
    assert code == 400 and "limit 'lots' must be a whole number" in body.decode()
    code, body, _ = server.get("/get", path="../../../etc/passwd")
    assert code == 400 and "not a path inside the KB" in body.decode()
    code, body, _ = server.get("/get", path="/etc/passwd")
    assert code == 400
    code, body, _ = server.get("/search", q="retry", kb="other")
    assert code == 400 and "unknown kb 'other'" in body.decode()
    assert server.get("/health")[0] == 200


def test_host_and_origin_are_checked(server: Server) -> None:
    port = server.url.rsplit(":", 1)[1]
    assert server.get("/health", headers={"Host": "evil.example:" + port})[0] == 421
    assert server.get("/search", q="x", headers={"Origin": "http://evil.example"})[0] == 403
    assert server.get("/health", headers={"Origin": f"http://127.0.0.1:{port}"})[0] == 200
    # the forwarding route needs the state file's token
    request_code = server.get("/cli/status")[0]
    assert request_code == 405  # GET is not even routed; POST without the token is refused:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(server.url + "/cli/status", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=10)
    assert refused.value.code == 401


def test_a_second_server_for_the_kb_refuses(server: Server,
                                            kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    second = groove(env, "serve", str(kb), "--port", "0", timeout=120)
    assert second.returncode == 1
    assert second.stderr.startswith(
        f"groove: error: kb is already served by pid {server.proc.pid} at {server.url}\n")


def test_a_non_loopback_bind_needs_a_token(kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    refused = groove(env, "serve", str(kb), "--host", "0.0.0.0")
    assert refused.returncode == 2
    assert refused.stderr.startswith("groove: error: --host 0.0.0.0 is not loopback")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_dead_foreign_or_silent_server_is_ignored(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    args = ("search", "retry budget", "--kb-path", str(kb), "--mode", "fts")
    expected = groove(env, *args, "--no-server").stdout
    index = str((kb / ".groove.db").resolve())
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts the connection, never answers
    cases = {
        "its process is gone": {"pid": dead_pid(), "address": "http://127.0.0.1:9",
                                "index": index},
        "it serves another index": {"pid": os.getpid(), "address": "http://127.0.0.1:9",
                                    "index": "/elsewhere/.groove.db"},
        "no answer within 1 s": {"pid": os.getpid(), "index": index,
                                 "address": f"http://127.0.0.1:{silent.getsockname()[1]}"},
    }
    try:
        for reason, state in cases.items():
            state_file(kb).write_text(json.dumps({**state, "token": "t"}))
            state_file(kb).chmod(0o600)  # as a server writes it (test_serve_trust.py)
            run = groove(env, *args)
            assert run.returncode == 0 and run.stdout == expected
            notes = run.stderr.splitlines()
            assert len(notes) == 1 and notes[0].startswith("groove: note: ignoring the groove "
                                                           "server of ")
            assert reason in notes[0]
            if reason.startswith("no answer"):  # a live, busy server keeps its file
                assert state_file(kb).exists()
                state_file(kb).unlink()
                continue
            assert not state_file(kb).exists()
            assert groove(env, *args).stderr == ""  # the stale file is gone: no second note
    finally:
        silent.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_signal_stops_the_server_and_removes_its_file(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path,
        sig: signal.Signals) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    with serving(kb, env) as running:
        # a search whose body is still arriving is in flight when the signal comes (the
        # warm-up made searches too quick to catch otherwise); a /health answered on another
        # connection afterwards means the server has read the first request's head
        host, port = running.url.removeprefix("http://").rsplit(":", 1)
        body = json.dumps({"query": "retry budget", "mode": "hybrid"}).encode()
        inflight = socket.create_connection((host, int(port)), timeout=HANG_GUARD_S)
        inflight.sendall(b"POST /search HTTP/1.1\r\nHost: 127.0.0.1:" + port.encode()
                         + b"\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body[:-1])
        assert running.get("/health")[0] == 200
        running.proc.send_signal(sig)
        inflight.sendall(body[-1:])
        answer = b""
        while chunk := inflight.recv(65536):
            answer += chunk
        inflight.close()
        assert answer.startswith(b"HTTP/1.1 200 ")  # finished, not cut off
        assert b'"results"' in answer
        assert running.proc.wait(timeout=30) == 0
        assert not state_file(kb).exists()


def test_a_cold_full_text_search_loads_no_serving_or_model_code(
        kb_env: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    kb, env = kb_env
    run, modules = loaded_modules(env, tmp_path / "mods.json", "search", "retry budget",
                                  "--kb-path", str(kb), "--mode", "fts", "--no-server")
    assert run.returncode == 0 and run.stdout.strip()
    assert heavy(modules) == []


def test_a_token_guards_every_route_but_health(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    with serving(kb, env, "--token", "s3cret") as running:
        assert running.get("/search", q="retry", mode="fts")[0] == 401
        assert running.get("/search", q="retry", mode="fts",
                           headers={"Authorization": "Bearer wrong"})[0] == 401
        assert running.get("/search", q="retry", mode="fts",
                           headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert running.get("/health")[0] == 200
        # the command line reads the token from the state file and forwards
        run = groove(env, "search", "retry", "--kb-path", str(kb), "--mode", "fts")
        assert run.returncode == 0 and run.stderr == ""
        assert run.stdout == groove(env, "search", "retry", "--kb-path", str(kb), "--mode",
                                    "fts", "--no-server").stdout


def test_a_db_that_names_no_file_is_reported_by_the_command_not_the_forwarding(
        tmp_path: Path) -> None:
    """`--db /` has no state file beside it: the forwarding check steps aside and the command
    gives its own one-line error (no traceback)."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# a\n", encoding="utf-8")
    for args in (["search", "cats"], ["status"]):
        proc = subprocess.run([sys.executable, "-m", "groove_cli", "--db", "/", *args,
                               "--kb-path", str(kb)], capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert "groove: error: --db / is a folder, not an index file" in proc.stderr.splitlines()
