"""The MCP tools, built with the official SDK (`mcp`): `search`, `get`, `multi_get`, `status`
and `fetch` (agent.build_mcp adds the prompts, the resources and the graph, topics and
rebuild tools), each read-only, each answering with structured content plus a short text form;
a failure is an MCP tool error whose text is the line the command line prints
(`groove: error: …` and its hint), never a crash of the server.

Each tool publishes a JSON schema written here (`tool_schemas`: enums, bounds, the filters'
fields with their types and formats), and its arguments are checked against that schema
before the SDK sees them, so a wrong name or type gets one plain line naming what the tool
takes. This module loads the SDK (a large import); `groove mcp` answers `initialize` before
it loads (runner.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp_types import Resource as MCPResource
from mcp_types import Tool as MCPTool

from groove_cli._version import version
from groove_cli.serve.service import (
    MAX_LIMIT,
    MAX_LINES,
    MAX_QUERY_CHARS,
    MCP_NAME,
    MULTI_GET_HARD_MAX,
    MULTI_GET_MAX_BYTES,
    MULTI_GET_MAX_FILES,
    Service,
)

if TYPE_CHECKING:
    from mcp.server.mcpserver.context import Context

    from groove_cli.results import Results

log = logging.getLogger("groove.serve")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)


def error_text(exc: BaseException) -> str | None:
    """The command line's error lines for `exc`, or None when it is a bug."""
    from groove_cli.failures import translate

    error = translate(exc)
    if error is None:
        return None
    text = f"groove: error: {error.message}"
    return text + (f"\ngroove: hint: {error.hint}" if error.hint else "")


def tool_error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def guarded(call: Callable[[], tuple[dict[str, Any], str]]) -> CallToolResult:
    """Run a tool body: its structured content and text, or a tool error."""
    try:
        structured, text = call()
    except Exception as exc:
        message = error_text(exc)
        if message is None:
            log.exception("tool failed")
            message = f"groove: error: internal error ({exc.__class__.__name__}); see the server log"
        return tool_error(message)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured)


def search_document(results: Results, kb: str, service: Service) -> dict[str, Any]:
    """`search --format json`'s document plus the KB, the call's warnings and notes, and each
    hit's short id (which `get` and `fetch` take)."""
    document = results.to_json()
    document["kb"] = kb
    for hit in document["results"]:
        hit["id"] = service.remember_hit(kb, hit["path"], hit["line_start"], hit["line_end"])
    document["warnings"] = list(results.warnings)
    document["notes"] = list(results.notes)
    return document


def search_text(document: dict[str, Any]) -> str:
    """One line per hit: `ID  path:line  § heading  (relevance)`, then the notes."""
    lines = []
    for hit in document["results"]:
        where = f"{hit['id']}  {hit['path']}:{hit['line_start']}"
        heading = f"  § {hit['heading']}" if hit.get("heading") else ""
        relevance = f"  ({hit['relevance']:.2f})" if hit.get("relevance") is not None else ""
        stale = "  [stale: changed since indexed]" if hit.get("stale") else ""
        lines.append(f"{where}{heading}{relevance}{stale}")
    if not lines:
        lines.append("no results")
    if document.get("low_confidence"):
        lines.append("(weak match: no hit looks clearly relevant)")
    lines += [f"warning: {w}" for w in document.get("warnings", [])]
    return "\n".join(lines)


def note_text(note: Mapping[str, Any]) -> str:
    """A note's lines, and where the rest is when `max_lines` cut them."""
    if note.get("truncated"):
        return f"{note['content']}\n[cut at {note['line_end']}; the rest: {note['next']}]"
    return str(note["content"])


# ---------------------------------------------------------------------------- schemas

def filters_schema() -> dict[str, Any]:
    """`search`'s filters: the fields of `api.Filters`, each with its type and format."""
    texts = {"type": "array", "items": {"type": "string"}}
    day = {"type": "string", "format": "date"}
    return {"type": "object", "additionalProperties": False, "properties": {
        "path_glob": {**texts, "description": "Globs on the note's KB-relative path "
                      "(* ** ? [..] {a,b}); a leading ! excludes."},
        "tag_any": {**texts, "description": "Notes with any of these tags."},
        "tag_all": {**texts, "description": "Notes with all of these tags."},
        "category": {"type": "string", "description": "The note's category (front matter)."},
        "topic": {"type": "string", "description": "The note's topic (front matter)."},
        "date_from": {**day, "description": "Notes dated on or after this day, YYYY-MM-DD "
                      "(YYYY-MM or YYYY: its first day)."},
        "date_to": {**day, "description": "Notes dated on or before this day, YYYY-MM-DD "
                    "(YYYY-MM or YYYY: its last day)."},
        "min_quality": {"type": "number", "minimum": 0, "maximum": 1,
                        "description": "Leave out chunks whose quality score is lower."},
        "include_low_quality": {"type": "boolean", "default": False,
                                "description": "Keep chunks below the quality threshold."},
    }}


def tool_schemas(kbs: list[str]) -> dict[str, dict[str, Any]]:
    """The input schema of each tool (`kbs`: the served KB names, an enum)."""
    from groove_cli.config_schema import MODES

    kb = {"type": "string", "enum": kbs,
          "description": f"Which served KB; default {kbs[0]}."}
    lines = {
        "max_lines": {"type": "integer", "minimum": 1, "maximum": MAX_LINES,
                      "description": "Return at most this many lines of each note (the answer "
                                     "says where the rest is)."},
        "line_numbers": {"type": "boolean", "default": False,
                         "description": "Start each line with its number (`12: text`)."},
    }

    def tool(properties: dict[str, Any], *required: str) -> dict[str, Any]:
        return {"type": "object", "properties": properties, "required": list(required),
                "additionalProperties": False}

    return {
        "search": tool({
            "query": {"type": "string", "maxLength": MAX_QUERY_CHARS,
                      "description": 'The query; "a phrase" matches exactly, -word excludes.'},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 5,
                      "description": "How many hits."},
            "mode": {"type": "string", "enum": list(MODES),
                     "description": "hybrid (full text + vector, the usual default), fts "
                                    "(full text only) or vector."},
            "filters": {**filters_schema(), "description": "Only notes that pass all of "
                        "these."},
            "kb": kb}, "query"),
        "get": tool({
            "location": {"type": "string", "description": "A search hit's id, or PATH, "
                         "PATH:LINE (the section a hit starts at) or PATH:LINE:COUNT, PATH "
                         "relative to the KB as search shows it."},
            **lines, "kb": kb}, "location"),
        "multi_get": tool({
            "paths": {"anyOf": [
                {"type": "string", "description": "A glob relative to the KB (fnmatch: "
                                                  "ops/*.md, **/retry*.md)."},
                {"type": "array", "items": {"type": "string"}, "maxItems": MULTI_GET_MAX_FILES,
                 "description": "Note paths relative to the KB."}]},
            "max_bytes": {"type": "integer", "minimum": 1, "maximum": MULTI_GET_HARD_MAX,
                          "default": MULTI_GET_MAX_BYTES,
                          "description": "Byte budget of the answer; notes past it are listed "
                                         "as skipped."},
            **lines, "kb": kb}, "paths"),
        "status": tool({}),
        "fetch": tool({"id": {"type": "string", "description": "The id of a search hit "
                                                               "(or KB:PATH, PATH:LINE)."}},
                      "id"),
    }


KINDS = {"string": "text", "integer": "a whole number", "number": "a number",
         "boolean": "true or false", "object": "an object", "array": "a list"}


def is_kind(value: Any, kind: str) -> bool:
    """Whether `value` is of the JSON schema type `kind`."""
    return {"string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
            "boolean": isinstance(value, bool), "object": isinstance(value, dict),
            "array": isinstance(value, list)}[kind]


def value_problem(name: str, value: Any, spec: Mapping[str, Any]) -> str | None:
    """What is wrong with one argument against its schema (None: nothing)."""
    if "anyOf" in spec:  # the alternative of the value's type decides
        for alt in spec["anyOf"]:
            if is_kind(value, alt["type"]):
                return value_problem(name, value, alt)
        kinds = " or ".join(KINDS[alt["type"]] for alt in spec["anyOf"])
        return f"{name} must be {kinds}, not {json.dumps(value)[:40]}"
    kind = spec["type"]
    if not is_kind(value, kind):
        return f"{name} must be {KINDS[kind]}, not {json.dumps(value)[:40]}"
    if kind == "array":
        items = spec.get("items", {}).get("type")
        if items and not all(is_kind(v, items) for v in value):
            return f"{name} must be a list of {KINDS[items]}"
        if len(value) > spec.get("maxItems", len(value)):
            return f"{name} lists {len(value)} items; at most {spec['maxItems']}"
    if "enum" in spec and value not in spec["enum"]:
        return f"unknown {name} {str(value)[:64]!r}; use one of: {', '.join(spec['enum'])}"
    low, high = spec.get("minimum"), spec.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        return f"{name} {value} must be from {low} to {high}"
    if kind == "string" and len(value) > spec.get("maxLength", len(value)):
        return f"{name} is longer than {spec['maxLength']} characters"
    return None


def argument_problem(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]
                     ) -> str | None:
    """One line naming what is wrong with a call's arguments and what the tool takes."""
    properties: Mapping[str, Any] = schema["properties"]
    required = schema["required"]
    takes = ", ".join(f"{k} (required)" if k in required else k for k in properties)
    takes = f"{tool} takes {takes}" if takes else f"{tool} takes no arguments"
    for key in arguments:
        if key not in properties:
            return f"{tool} has no argument {str(key)[:40]!r}; {takes}"
    for key in required:
        if arguments.get(key) is None:
            return f"{tool} needs {key}; {takes}"
    for key, value in arguments.items():
        problem = value_problem(key, value, properties[key])
        if problem is not None:
            return problem
    return None


def parsed_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]
                     ) -> dict[str, Any]:
    """The arguments without JSON nulls (an argument left out), and an object or list sent as
    JSON text read as that object or list (some clients send them so)."""
    found: dict[str, Any] = {}
    for key, value in arguments.items():
        if value is None:
            continue
        spec = schema["properties"].get(key, {})
        kinds = {alt.get("type") for alt in spec.get("anyOf", [spec])}
        if isinstance(value, str) and kinds & {"object", "array"}:
            with contextlib.suppress(ValueError, RecursionError):
                decoded = json.loads(value)
                if isinstance(decoded, dict | list):
                    value = decoded
        found[key] = value
    return found


class GrooveMCP(MCPServer[Any]):
    """The SDK's server with groove's own tool schemas: `tools/list` shows them, and
    `call_tool` checks the arguments against them first."""

    def __init__(self, schemas: dict[str, dict[str, Any]], **settings: Any) -> None:
        super().__init__(MCP_NAME, **settings)
        self.schemas = schemas
        self.resource_lists: list[Callable[[], list[MCPResource]]] = []
        """Resources listed on each `resources/list` (agent.py: a folder's notes)."""

    async def list_resources(self) -> list[MCPResource]:
        import anyio.to_thread

        listed = await super().list_resources()
        for source in self.resource_lists:
            listed += await anyio.to_thread.run_sync(source)
        return listed

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        return [t.model_copy(update={"input_schema": self.schemas[t.name]})
                if t.name in self.schemas else t for t in tools]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        schema = self.schemas.get(name)
        if schema is not None:
            arguments = parsed_arguments(schema, arguments)
            problem = argument_problem(name, schema, arguments)
            if problem is not None:
                return tool_error(f"groove: error: {problem}")
        return await super().call_tool(name, arguments, context)

    async def serve_stdio(self, stdin: Any, stdout: Any) -> None:
        """MCP over the given line streams (`stdio_server`'s explicit stdin and stdout: an
        async iterable of lines, and an object with async `write` and `flush`)."""
        from mcp.server.stdio import stdio_server

        async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
            lowlevel = self._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())


def build_mcp(service: Service) -> GrooveMCP:
    """The MCP server whose tools call `service`."""
    server = GrooveMCP(tool_schemas(list(service.kbs)), instructions=service.instructions(),
                       version=version(), log_level="WARNING")

    @server.tool(annotations=READ_ONLY, description=(
        "Search the notes. Each hit has an id (pass it to `get` as location), path, "
        "line_start, line_end, heading, relevance (0-1) and content."))
    def search(query: str, limit: int = 5, mode: str | None = None,
               filters: dict[str, Any] | None = None, kb: str | None = None) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            name = service.served(kb).name
            document = search_document(service.search(query, limit=limit, mode=mode,
                                                      filters=filters, kb=kb), name, service)
            return document, search_text(document)
        return guarded(run)

    @server.tool(annotations=READ_ONLY, description=(
        "Read a search hit's lines by its id, or a note or part of it: PATH, PATH:LINE (the "
        "section a search hit starts at) or PATH:LINE:COUNT."))
    def get(location: str, max_lines: int | None = None, line_numbers: bool = False,
            kb: str | None = None) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            note = service.get(location, kb, max_lines=max_lines, line_numbers=line_numbers)
            return note, note_text(note)
        return guarded(run)

    @server.tool(annotations=READ_ONLY, description=(
        "Read several notes: a glob relative to the KB (ops/*.md, **/retry*.md) or a list of "
        "paths; whole notes until max_bytes is spent, the rest listed as skipped."))
    def multi_get(paths: str | list[str], max_bytes: int = MULTI_GET_MAX_BYTES,
                  max_lines: int | None = None, line_numbers: bool = False,
                  kb: str | None = None) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            found = service.multi_get(paths, kb, max_bytes, max_lines=max_lines,
                                      line_numbers=line_numbers)
            text = "\n\n".join(f"--- {n['rel_path']}\n{note_text(n)}" for n in found["notes"])
            skipped = "".join(f"\nskipped {s['path']}: {s['reason']}" for s in found["skipped"])
            return found, (text + skipped) or "no notes"
        return guarded(run)

    @server.tool(annotations=READ_ONLY, description=(
        "What each served index holds: documents, chunks, model, last indexed, pending changes."))
    def status() -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            reports = {name: service.status(name).to_json() for name in service.kbs}
            text = "\n".join(f"{name}: {r['documents']} documents, {r['chunks']} chunks, "
                             f"last indexed {r['last_indexed'] or 'never'}"
                             for name, r in reports.items())
            return {"kbs": reports}, text
        return guarded(run)

    @server.tool(annotations=READ_ONLY, description=(
        "Fetch a search hit's lines by its id (or a note by KB:PATH or PATH, optionally "
        ":LINE); returns id, title, text, url and metadata."))
    def fetch(id: str) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            note = service.fetch(id)
            return note, json.dumps(note, ensure_ascii=False)
        return guarded(run)

    return server
