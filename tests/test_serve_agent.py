"""The MCP server beyond its search tools (serve/agent.py), driven by the SDK's own client over
stdio (`groove mcp`) and streamable HTTP (`groove serve`), on the sample KB with the real model:
the four prompts, the kb://topic/… resources and the kb://doc/{+path} template, and the tools
get_connection_graph, list_topics and rebuild_index (a second rebuild while one runs refused).
Also `groove graph` on golden/ from the command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import groove_cli
from tests.serve_helpers import Server, groove
from tests.test_serve_mcp import stdio

Connect = Callable[[], Any]
START = "operations/backups/database-backups.md"


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


def test_prompts_and_resources_are_listed(connect: Connect) -> None:
    async def body(client: Any) -> Any:
        prompts = (await client.list_prompts()).prompts
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        tools = (await client.list_tools()).tools
        recipe = await client.get_prompt("summarize_topic", {"topic": "backups"})
        gaps = await client.get_prompt("find_gaps", {"topic": "on-call"})
        return prompts, resources, templates, tools, recipe, gaps

    prompts, resources, templates, tools, recipe, gaps = run(connect, body)
    assert {p.name for p in prompts} == {"summarize_topic", "deep_dive", "whats_new", "find_gaps"}
    uris = {str(r.uri) for r in resources}
    assert {"kb://topic/operations", "kb://topic/operations/backups",
            "kb://topic/reliability", "kb://topic/team/meetings"} <= uris
    assert all(u.startswith("kb://topic/") for u in uris)
    assert {t.uri_template for t in templates} == {"kb://doc/{+path}", "kb://topic/{+prefix}"}
    text = recipe.messages[0].content.text
    assert text.startswith("Summarize what my notes say about: backups")
    for tool in ("list_topics", "search", "get", "Not covered by the notes"):
        assert tool in text
    assert "MISSING" in gaps.messages[0].content.text
    by_name = {t.name: t for t in tools}
    assert by_name["get_connection_graph"].input_schema["required"] == ["start"]
    assert by_name["rebuild_index"].annotations.read_only_hint is False
    assert by_name["list_topics"].annotations.read_only_hint is True


def test_the_instructions_name_the_agent_tools(connect: Connect) -> None:
    async def body(client: Any) -> Any:
        return client.instructions
    instructions = run(connect, body)
    assert "`list_topics` shows what the notes cover" in instructions
    assert "summarize_topic, deep_dive, whats_new, find_gaps" in instructions


def test_resources_read_notes_and_folders_inside_the_kb(
        connect: Connect, kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, _ = kb_env

    async def body(client: Any) -> dict[str, Any]:
        found: dict[str, Any] = {}
        found["doc"] = await client.read_resource("kb://doc/reliability/retry-budgets.md")
        found["topic"] = await client.read_resource("kb://topic/operations/backups")
        for name, uri in (("dotdot", "kb://doc/../../etc/passwd"),
                          ("index", "kb://doc/.groove.db"),
                          ("nothing", "kb://topic/nothing-here")):
            try:
                await client.read_resource(uri)
                found[name] = None
            except Exception as exc:
                found[name] = str(exc)
        return found

    found = run(connect, body)
    text = (kb / "reliability/retry-budgets.md").read_text(encoding="utf-8")
    assert found["doc"].contents[0].text == text.rstrip("\n")
    listing = json.loads(found["topic"].contents[0].text)
    assert listing["notes"] == sorted(p.relative_to(kb).as_posix()
                                      for p in (kb / "operations/backups").glob("*.md"))
    assert listing["count"] == 3
    assert found["dotdot"] is not None
    assert found["index"] is not None and "not a note of this KB" in found["index"]
    assert found["nothing"] is not None and "no notes under nothing-here/" in found["nothing"]


def test_graph_and_topics_tools(connect: Connect, kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, _ = kb_env

    async def body(client: Any) -> dict[str, Any]:
        return {
            "graph": await client.call_tool("get_connection_graph",
                                            {"start": START, "depth": 2, "max_nodes": 6}),
            "topics": await client.call_tool("list_topics", {}),
            "outside": await client.call_tool("get_connection_graph",
                                              {"start": "../../etc/passwd"}),
            "bound": await client.call_tool("get_connection_graph",
                                            {"start": START, "depth": 9}),
        }

    got = run(connect, body)
    with groove_cli.open(kb) as index:
        expected = index.graph(START, depth=2, max_nodes=6).to_json()
    graph = got["graph"].structured_content
    assert [n["id"] for n in graph["nodes"]] == [n["id"] for n in expected["nodes"]]
    assert graph["edges"] == expected["edges"]
    assert len(graph["nodes"]) <= 6 and graph["nodes"][0]["id"] == START
    topics = got["topics"].structured_content
    assert topics["notes"] == 27
    operations = next(c for c in topics["categories"] if c["category"] == "operations")
    assert operations["notes"] == 8
    assert {t["topic"] for t in operations["topics"]} == {"backups", "deploy", "oncall"}
    assert got["outside"].is_error
    assert "not a path inside the KB" in got["outside"].content[0].text
    assert got["bound"].is_error and "depth 9 must be from 1 to 5" in got["bound"].content[0].text


def test_one_rebuild_at_a_time(connect: Connect) -> None:
    async def body(client: Any) -> dict[str, Any]:
        first = await client.call_tool("rebuild_index", {})
        second = await client.call_tool("rebuild_index", {})

        async def accepted() -> Any:
            while True:  # the refusal lasts while the first runs; then a call is accepted
                answer = await client.call_tool("rebuild_index", {})
                if not answer.is_error:
                    return answer
                await anyio.sleep(0.2)

        with anyio.fail_after(120):  # a hang guard, not a deadline
            later = await accepted()
        return {"first": first, "second": second, "later": later}

    got = run(connect, body)
    assert not got["first"].is_error
    assert got["first"].structured_content["started"] is True
    refusal = got["second"].content[0].text
    assert got["second"].is_error
    assert refusal.startswith("groove: error: a rebuild of kb is already running (for ")
    assert "groove: hint: call rebuild_index again when it is done" in refusal
    assert got["later"].structured_content["previous"] == {"kb": "kb", "ok": True}


def test_cli_graph_on_golden(kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    done = groove(env, "graph", "--kb-path", str(kb), "--start", START, "--depth", "2",
                  "--format", "json", "--no-dedup-by-path", cwd=kb)
    chunks = json.loads(done.stdout)
    done = groove(env, "graph", "--kb-path", str(kb), "--start", START, "--depth", "2",
                  "--format", "json", cwd=kb)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    ids = [n["id"] for n in document["nodes"]]
    assert ids[0] == START and len(ids) == len(set(ids))  # one node per note
    assert 1 < len(ids) <= 1 + 5 + 25 and document["truncated"] is False
    assert all(e["similarity"] >= 0.5 for e in document["edges"])
    assert {"source", "target", "similarity"} == set(document["edges"][0])
    with groove_cli.open(kb) as index:
        assert document == index.graph(START, depth=2).to_json()
    assert len({n["path"] for n in chunks["nodes"]}) < len(chunks["nodes"])  # chunk nodes
