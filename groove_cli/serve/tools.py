"""The MCP tools, built with the official SDK (`mcp`): `search`, `get`, `multi_get`, `status`
and `fetch`, each read-only, each answering with structured content plus a short text form;
a failure is an MCP tool error whose text is the line the command line prints
(`groove: error: …` and its hint), never a crash of the server.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from groove_cli.serve.service import MULTI_GET_MAX_BYTES, Service

if TYPE_CHECKING:
    from groove_cli.results import Results

log = logging.getLogger("groove.serve")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
INSTRUCTIONS = (
    "groove searches the user's Markdown notes (hybrid full-text + vector). Use `search` "
    "first, then `get` with a hit's `path:line` to read the lines around it, `multi_get` for "
    "several notes, `status` for what the index holds.")
KB_HELP = "Which served KB (its folder name, as `status` lists it); default the first."


def error_text(exc: BaseException) -> str | None:
    """The command line's error lines for `exc`, or None when it is a bug."""
    from groove_cli.failures import translate

    error = translate(exc)
    if error is None:
        return None
    text = f"groove: error: {error.message}"
    return text + (f"\ngroove: hint: {error.hint}" if error.hint else "")


def guarded(call: Callable[[], tuple[dict[str, Any], str]]) -> CallToolResult:
    """Run a tool body: its structured content and text, or a tool error."""
    try:
        structured, text = call()
    except Exception as exc:
        message = error_text(exc)
        if message is None:
            log.exception("tool failed")
            message = f"groove: error: internal error ({exc.__class__.__name__}); see the server log"
        return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured)


def search_document(results: Results, kb: str) -> dict[str, Any]:
    """`search --format json`'s document plus the KB and the call's warnings and notes."""
    document = results.to_json()
    document["kb"] = kb
    for hit in document["results"]:  # what `fetch` takes back
        hit["id"] = f"{kb}:{hit['path']}:{hit['line_start']}"
    document["warnings"] = list(results.warnings)
    document["notes"] = list(results.notes)
    return document


def search_text(document: dict[str, Any]) -> str:
    """One line per hit: `path:line  § heading  (relevance)`, then the notes."""
    lines = []
    for hit in document["results"]:
        where = f"{hit['path']}:{hit['line_start']}"
        heading = f"  § {hit['heading']}" if hit.get("heading") else ""
        relevance = f"  ({hit['relevance']:.2f})" if hit.get("relevance") is not None else ""
        lines.append(f"{where}{heading}{relevance}")
    if not lines:
        lines.append("no results")
    if document.get("low_confidence"):
        lines.append("(low confidence)")
    lines += [f"warning: {w}" for w in document.get("warnings", [])]
    return "\n".join(lines)


def build_mcp(service: Service) -> MCPServer[Any]:
    """The MCP server whose tools call `service`."""
    from groove_cli._version import version

    server: MCPServer[Any] = MCPServer("groove", instructions=INSTRUCTIONS, version=version(),
                                       log_level="WARNING")
    kbs = ", ".join(service.kbs)

    @server.tool(annotations=READ_ONLY, description=(
        f"Search the notes (KBs: {kbs}). Returns hits with path, line_start, heading, "
        "relevance (0-1) and content; read more with `get` PATH:LINE."))
    def search(
        query: Annotated[str, Field(description='The query; "a phrase" matches exactly, '
                                                '-word excludes.')],
        limit: Annotated[int, Field(description="Number of hits, 1-100.")] = 5,
        mode: Annotated[str | None, Field(description="hybrid (default), fts or vector.")] = None,
        filters: Annotated[dict[str, Any] | None, Field(description=(
            "Optional: path_glob, tag_any, tag_all (lists), category, topic, date_from, "
            "date_to, min_quality, include_low_quality."))] = None,
        kb: Annotated[str | None, Field(description=KB_HELP)] = None,
    ) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            name = service.served(kb).name
            document = search_document(service.search(query, limit=limit, mode=mode,
                                                      filters=filters, kb=kb), name)
            return document, search_text(document)
        return guarded(run)

    @server.tool(annotations=READ_ONLY, description=(
        "Read a note, or part of it: PATH, PATH:LINE (the section a search hit starts at) or "
        "PATH:LINE:COUNT. PATH is relative to the KB, as search shows it."))
    def get(
        location: Annotated[str, Field(description="PATH[:LINE[:COUNT]]")],
        kb: Annotated[str | None, Field(description=KB_HELP)] = None,
    ) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            note = service.get(location, kb)
            return note, note["content"]
        return guarded(run)

    @server.tool(annotations=READ_ONLY, description=(
        "Read several notes: a glob relative to the KB (ops/*.md, **/retry*.md) or a list of "
        "paths; whole notes until max_bytes is spent, the rest listed as skipped."))
    def multi_get(
        paths: Annotated[str | list[str], Field(description="A glob or a list of note paths.")],
        max_bytes: Annotated[int, Field(description="Byte budget of the answer.")]
        = MULTI_GET_MAX_BYTES,
        kb: Annotated[str | None, Field(description=KB_HELP)] = None,
    ) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            found = service.multi_get(paths, kb, max_bytes)
            text = "\n\n".join(f"--- {n['rel_path']}\n{n['content']}" for n in found["notes"])
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
        "Fetch one note by the id of a search result (KB:PATH or PATH, optionally :LINE); "
        "returns id, title, text, url and metadata."))
    def fetch(id: Annotated[str, Field(description="The id of a search result.")]
              ) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            note = service.fetch(id)
            return note, json.dumps(note, ensure_ascii=False)
        return guarded(run)

    return server
