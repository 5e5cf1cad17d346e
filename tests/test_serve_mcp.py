"""The MCP server driven by the SDK's own client, over stdio (`groove mcp`) and streamable HTTP
(`groove serve` at /mcp), on the real index with the real model: every tool, bad arguments,
the typed schemas and the instructions, short ids and line caps, a KB that disappears
mid-session, and `groove mcp`'s early `initialize` answer against the SDK's own."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import groove_cli
from tests.serve_helpers import Server, make_kb, maps_library
from tests.waiting import HANG_GUARD_S, wait_until

TOOLS = {"search", "get", "multi_get", "status", "fetch", "get_connection_graph", "list_topics",
         "rebuild_index"}
WRITES = {"rebuild_index"}
"""The one tool that changes something: the index, brought up to date (never the notes)."""
Connect = Callable[[], Any]


def stdio(kb: Path, env: dict[str, str]) -> Connect:
    params = StdioServerParameters(command=sys.executable, args=["-m", "groove_cli", "mcp",
                                                                 str(kb)], env=env)
    return lambda: Client(params, read_timeout_seconds=120)


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, kb_env: tuple[Path, dict[str, str]]) -> Connect:
    kb, env = kb_env
    if request.param == "stdio":
        return stdio(kb, env)
    server: Server = request.getfixturevalue("server")
    return lambda: Client(server.url + "/mcp", read_timeout_seconds=120)


def run(connect: Connect, body: Callable[[Any], Any]) -> Any:
    async def main() -> Any:
        async with connect() as client:
            return await body(client)
    return anyio.run(main)


def test_the_tools_are_listed_read_only(connect: Connect) -> None:
    async def body(client: Any) -> Any:
        return (await client.list_tools()).tools
    tools = run(connect, body)
    assert {t.name for t in tools} == TOOLS
    assert all(t.annotations.read_only_hint == (t.name not in WRITES)
               and not t.annotations.destructive_hint for t in tools)


def test_every_tool_answers(connect: Connect, kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, _ = kb_env

    async def body(client: Any) -> dict[str, Any]:
        answers = {}
        answers["search"] = await client.call_tool("search", {"query": "retry budget",
                                                              "limit": 3})
        answers["fts"] = await client.call_tool("search", {
            "query": "retry", "mode": "fts", "filters": {"path_glob": ["reliability/**"]}})
        answers["get"] = await client.call_tool("get", {"location":
                                                        "reliability/retry-budgets.md:10:3"})
        answers["multi"] = await client.call_tool("multi_get", {"paths": "reliability/*.md"})
        answers["tight"] = await client.call_tool("multi_get", {
            "paths": ["reliability/retry-budgets.md", "team/onboarding.md"], "max_bytes": 10})
        answers["status"] = await client.call_tool("status", {})
        hit_id = answers["search"].structured_content["results"][0]["id"]
        answers["fetch"] = await client.call_tool("fetch", {"id": hit_id})
        return answers

    got = run(connect, body)
    assert not any(r.is_error for r in got.values()), {k: r.content for k, r in got.items()}
    with groove_cli.open(kb) as index:  # the same engine in-process gives the same hits
        expected = index.search("retry budget", limit=3).to_json()
        top = expected["results"][0]
        chunk = index.get(str(kb / f"{top['path']}:{top['line_start']}"))
    search = got["search"].structured_content
    assert [h["path"] for h in search["results"]] == [h["path"] for h in expected["results"]]
    # score fusion (the default) ranks the two notes on retry budgets first
    assert {h["path"] for h in search["results"][:2]} == {
        "team/meetings/2025-03-18-retry-budget-follow-up.md", "reliability/retry-budgets.md"}
    assert "reliability/retry-budgets.md:" in got["search"].content[0].text
    assert all(h["path"].startswith("reliability/") for h in
               got["fts"].structured_content["results"])
    lines = (kb / "reliability/retry-budgets.md").read_text().split("\n")
    note = got["get"].structured_content
    assert (note["line_start"], note["line_end"], note["content"]) == (10, 12,
                                                                       "\n".join(lines[9:12]))
    multi = got["multi"].structured_content
    assert [n["rel_path"] for n in multi["notes"]] == sorted(
        p.relative_to(kb).as_posix() for p in (kb / "reliability").glob("*.md"))
    tight = got["tight"].structured_content
    assert tight["notes"] == [] and [s["path"] for s in tight["skipped"]] == [
        "reliability/retry-budgets.md", "team/onboarding.md"]
    assert got["status"].structured_content["kbs"]["kb"]["documents"] == 27
    fetched = got["fetch"].structured_content
    assert fetched["text"] == "\n".join(chunk.lines())
    assert fetched["metadata"]["path"] == top["path"]


def test_bad_arguments_are_tool_errors(connect: Connect, kb_env: tuple[Path, dict[str, str]],
                                       tmp_path: Path) -> None:
    kb, _ = kb_env
    outside = tmp_path / "secret.md"
    outside.write_text("# secret\n\nnot a note of the KB\n")
    link = kb / "team" / f"escape-{len(list(kb.glob('team/escape-*')))}.md"
    link.symlink_to(outside)

    async def body(client: Any) -> dict[str, Any]:
        calls = {
            "dotdot": ("get", {"location": "../../../etc/passwd"}),
            "absolute": ("get", {"location": "/etc/passwd"}),
            "symlink": ("get", {"location": f"team/{link.name}"}),
            "index": ("get", {"location": ".groove.db"}),
            "missing": ("get", {"location": "team/nothing-here.md"}),
            "limit": ("search", {"query": "retry", "limit": 0}),
            "mode": ("search", {"query": "retry", "mode": "psychic"}),
            "empty": ("search", {"query": "   "}),
            "filter": ("search", {"query": "retry", "filters": {"colour": "red"}}),
            "date": ("search", {"query": "retry", "filters": {"date_from": "yesterday"}}),
            "kb": ("search", {"query": "retry", "kb": "nope"}),
            "glob": ("multi_get", {"paths": "../*"}),
            "budget": ("multi_get", {"paths": "*.md", "max_bytes": -1}),
            "fetch": ("fetch", {"id": "kb:../../etc/passwd"}),
            "type": ("search", {"query": "retry", "limit": "many"}),
        }
        answers = {name: await client.call_tool(tool, args) for name, (tool, args) in
                   calls.items()}
        answers["after"] = await client.call_tool("status", {})
        return answers

    try:
        got = run(connect, body)
    finally:
        link.unlink()
    after = got.pop("after")
    assert not after.is_error  # the server survived every bad call
    for name, result in got.items():
        assert result.is_error, name
        text = result.content[0].text
        if name != "type":  # argument validation by the SDK, before groove runs
            assert text.startswith("groove: error: "), (name, text)
        assert "secret" not in text and "root:" not in text
    assert "refused symbolic link" in got["symlink"].content[0].text
    assert "not a path inside the KB" in got["dotdot"].content[0].text
    assert "not a path inside the KB" in got["absolute"].content[0].text
    assert "unknown kb 'nope'" in got["kb"].content[0].text
    assert "no such note: team/nothing-here.md" in got["missing"].content[0].text


def test_a_kb_that_disappears_mid_session(golden_index: tuple[Path, Path],
                                          real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)

    async def body(client: Any) -> dict[str, Any]:
        first = await client.call_tool("search", {"query": "retry budget", "mode": "fts"})
        shutil.rmtree(kb)
        answers = {"first": first}
        for name, (tool, args) in {
            "search": ("search", {"query": "retry budget"}),
            "get": ("get", {"location": "reliability/retry-budgets.md"}),
            "multi": ("multi_get", {"paths": "**/*.md"}),
            "status": ("status", {}),
        }.items():
            answers[name] = await client.call_tool(tool, args)
        return answers

    got = run(stdio(kb, env), body)
    assert not got["first"].is_error
    assert got["get"].is_error and got["get"].content[0].text.startswith("groove: error: ")
    for name in ("search", "multi", "status"):  # answered (from what is still open) or refused
        result = got[name]
        assert result.is_error is False or result.content[0].text.startswith("groove: error: ")


def test_the_stdio_server_exits_when_its_client_goes_away(
        kb_env: tuple[Path, dict[str, str]]) -> None:
    import subprocess

    kb, env = kb_env
    proc = subprocess.Popen([sys.executable, "-m", "groove_cli", "mcp", str(kb)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.close()  # the client is gone
    assert proc.wait(timeout=60) == 0


def test_typed_schemas_instructions_short_ids_and_line_caps(
        connect: Connect, kb_env: tuple[Path, dict[str, str]]) -> None:
    from groove_cli.api import Filters
    from groove_cli.config_schema import MODES

    kb, _ = kb_env

    async def body(client: Any) -> dict[str, Any]:
        got: dict[str, Any] = {"instructions": client.instructions}
        got["tools"] = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        got["search"] = await client.call_tool("search", {"query": "retry budget", "limit": 3})
        hit = got["search"].structured_content["results"][0]
        got["by_id"] = await client.call_tool("get", {"location": hit["id"]})
        got["capped"] = await client.call_tool("get", {"location": "#" + hit["id"],
                                                       "max_lines": 2, "line_numbers": True})
        got["fetch"] = await client.call_tool("fetch", {"id": hit["id"]})
        got["wrong"] = await client.call_tool("search", {"q": "retry"})
        got["missing"] = await client.call_tool("get", {"max_lines": 3})
        got["typed"] = await client.call_tool("get", {"location": "x.md", "max_lines": "many"})
        return got

    got = run(connect, body)
    tools = got["tools"]
    search = tools["search"]
    assert search["required"] == ["query"] and search["additionalProperties"] is False
    props = search["properties"]
    assert props["mode"]["enum"] == list(MODES)
    assert (props["limit"]["type"], props["limit"]["minimum"], props["limit"]["maximum"]) == (
        "integer", 1, 100)
    assert props["kb"]["enum"] == ["kb"]
    filters = props["filters"]
    assert filters["type"] == "object" and filters["additionalProperties"] is False
    assert set(filters["properties"]) == set(Filters.__dataclass_fields__)
    assert filters["properties"]["date_from"] == {**filters["properties"]["date_from"],
                                                  "type": "string", "format": "date"}
    assert filters["properties"]["tag_any"]["items"] == {"type": "string"}
    assert filters["properties"]["min_quality"]["type"] == "number"
    assert filters["properties"]["include_low_quality"]["type"] == "boolean"
    for name in ("get", "multi_get"):
        lines = tools[name]["properties"]
        assert (lines["max_lines"]["type"], lines["max_lines"]["minimum"]) == ("integer", 1)
        assert lines["line_numbers"]["type"] == "boolean"
    assert tools["multi_get"]["properties"]["max_bytes"]["maximum"] == 2_000_000

    instructions = got["instructions"]
    assert re.search(r"^- kb: 27 notes, \d+ chunks; English", instructions, re.M), instructions
    assert 'search {"query": ' in instructions and 'get {"location": ' in instructions

    hit = got["search"].structured_content["results"][0]
    assert re.fullmatch(r"[0-9a-f]{8}", hit["id"])
    assert got["search"].content[0].text.startswith(f"{hit['id']}  {hit['path']}:")
    lines = (kb / hit["path"]).read_text().split("\n")
    note = got["by_id"].structured_content
    assert not got["by_id"].is_error and "truncated" not in note
    assert (note["rel_path"], note["line_start"], note["line_end"]) == (
        hit["path"], hit["line_start"], hit["line_end"])
    assert note["content"] == "\n".join(lines[hit["line_start"] - 1:hit["line_end"]])
    capped = got["capped"].structured_content
    start = hit["line_start"]
    assert capped["content"] == f"{start}: {lines[start - 1]}\n{start + 1}: {lines[start]}"
    assert hit["line_end"] - start + 1 > 2  # the hit is longer than the cap
    assert capped["truncated"] is True and capped["next"] == (
        f"{hit['path']}:{start + 2}:{hit['line_end'] - start - 1}")
    assert capped["next"] in got["capped"].content[0].text
    assert got["fetch"].structured_content["text"] == note["content"]

    wrong = got["wrong"].content[0].text
    assert got["wrong"].is_error and "\n" not in wrong
    assert wrong == ("groove: error: search has no argument 'q'; search takes query (required), "
                     "limit, mode, filters, kb")
    assert got["missing"].content[0].text.startswith("groove: error: get needs location; ")
    assert got["typed"].content[0].text.startswith(
        "groove: error: max_lines must be a whole number")


class Collected:
    """Lines an MCP server writes (runner.Answers' interface)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def write(self, text: str) -> None:
        self.lines.append(text)

    async def flush(self) -> None:
        pass


def test_the_early_initialize_answer_is_the_sdks(kb_env: tuple[Path, dict[str, str]]) -> None:
    """What `groove mcp` answers before the SDK loads equals the SDK's own answer, for every
    version the SDK negotiates through `initialize` and for one it does not know."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from groove_cli.serve import runner
    from groove_cli.serve.service import Service
    from groove_cli.serve.tools import build_mcp

    assert runner.HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    kb, _ = kb_env
    service = Service([groove_cli.open(kb, db=kb / ".groove.db")])
    mcp = build_mcp(service)
    try:
        for version in (*HANDSHAKE_PROTOCOL_VERSIONS, "1999-01-01"):
            request = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}}
            sent = io.BytesIO()
            opening = runner.read_opening(io.BytesIO(json.dumps(request).encode() + b"\n"), sent,
                                          service)
            ours = json.loads(sent.getvalue())
            theirs = Collected()
            anyio.run(mcp.serve_stdio, runner.Replayed(opening.lines, io.BytesIO()), theirs)
            assert [json.loads(line) for line in theirs.lines] == [ours], version
            assert opening.answered == (7, ours["result"])
    finally:
        service.close()


def test_groove_mcp_answers_initialize_warms_up_and_leaves(
        kb_env: tuple[Path, dict[str, str]]) -> None:
    """Raw JSON-RPC over the pipes: the early answer, then the SDK (its duplicate answer
    dropped and found equal), the model loaded before any search, and exit 0 on EOF."""
    kb, env = kb_env
    proc = subprocess.Popen([sys.executable, "-m", "groove_cli", "mcp", str(kb)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 1 and "- kb: 27 notes" in answer["result"]["instructions"]
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = json.loads(proc.stdout.readline())  # the SDK's first line: no second answer
        assert listed["id"] == 2 and len(listed["result"]["tools"]) == len(TOOLS)
        wait_until(lambda: maps_library(proc.pid, "onnxruntime"), proc=proc,  # type: ignore[arg-type]
                   what="the warm-up loading the model")
        proc.stdin.close()
        assert proc.wait(timeout=HANG_GUARD_S) == 0
        assert "the SDK answers" not in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
