"""What an MCP agent gets besides the search tools (serve.md §2.1): the prompts
(`summarize_topic`, `deep_dive`, `whats_new`, `find_gaps`: recipes naming the tools to chain
and what to report, what the notes do not cover included), the resources (`kb://topic/PREFIX`:
the notes under a folder, listed for every folder; the template `kb://doc/{+path}`: a note's
text) and the tools `get_connection_graph`, `list_topics` and `rebuild_index`.

Every call goes through the served KB's `Index` (the public API) and the Service's rules: a
note or folder is read only when `index` would select it (scan.Selection, as `get` reads), and
`rebuild_index` runs one re-index per server at a time, refusing another while it runs.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_types import CallToolResult  # module level: the SDK reads the tools' annotations

from groove_cli.errors import GrooveError, UsageError

if TYPE_CHECKING:
    from mcp_types import Resource as MCPResource

    from groove_cli.serve.service import Served, Service
    from groove_cli.serve.tools import GrooveMCP

PROMPTS = ("summarize_topic", "deep_dive", "whats_new", "find_gaps")
TOPIC_PREFIX = "kb://topic/"
DOC_TEMPLATE = "kb://doc/{+path}"
TOPIC_TEMPLATE = "kb://topic/{+prefix}"
MAX_LISTED = 1000
"""The most notes one `kb://topic/…` resource lists (the answer says how many more)."""
MAX_TOPIC_RESOURCES = 500


@dataclass
class Running:
    kb: str
    started: float
    wall: str


class Rebuilds:
    """One `rebuild_index` at a time per server: it runs on its own thread; another call
    while it runs is refused with how long it has run."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.running: Running | None = None
        self.last: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self.done = threading.Event()

    def start(self, kb: str | None) -> dict[str, Any]:
        from groove_cli.text.durations import human_duration

        served = self.service.served(kb)
        if served.kb is None:
            raise GrooveError("this KB has no folder to index", hint="serve it with its folder")
        with self._lock:
            running = self.running
            if running is not None:
                took = human_duration(time.monotonic() - running.started)
                raise GrooveError(f"a rebuild of {running.kb} is already running (for {took}, "
                                  f"since {running.wall})",
                                  hint="call rebuild_index again when it is done; status shows "
                                       "the index")
            self.running = Running(served.name, time.monotonic(),
                                   time.strftime("%H:%M:%S", time.localtime()))
            self.done.clear()
        thread = threading.Thread(target=self._run, args=(served,), daemon=True,
                                  name=f"groove-rebuild-{served.name}")
        thread.start()
        return {"kb": served.name, "started": True, "previous": self.last}

    def _run(self, served: Served) -> None:
        import logging

        from groove_cli.api import Index
        from groove_cli.serve.tools import error_text
        from groove_cli.serve.watch import reindex

        current = served.index
        writer = Index(current.settings, current.kb, current.location)
        try:
            reindex(served, writer)
            result: dict[str, Any] = {"kb": served.name, "ok": True}
        except Exception as exc:
            message = error_text(exc) or f"internal error ({exc.__class__.__name__})"
            logging.getLogger("groove.serve").warning("rebuild of %s failed: %s", served.name,
                                                      message)
            result = {"kb": served.name, "ok": False, "error": message}
        finally:
            writer.close()
        with self._lock:
            self.last = result
            self.running = None
            self.done.set()


def prompt_text(name: str, **args: str) -> str:
    """The recipe of a prompt (see `register`)."""
    cite = ("Cite every statement with the note's path:line (the hit's path and line_start); "
            "never present general knowledge as the notes' content.")
    gaps = ("End with a section **Not covered by the notes**: the questions a reader would "
            "expect answered here that no note answers (say plainly when the search found "
            "nothing relevant), and which note would be worth writing.")
    if name == "summarize_topic":
        topic = args["topic"]
        return "\n".join([
            f"Summarize what my notes say about: {topic}",
            "1. Call `list_topics` to see the folders and categories, and which are about it.",
            f'2. Call `search` with {{"query": "{topic}", "limit": 10}}; search again with '
            "synonyms, narrower terms and (for notes in several languages) a translation.",
            "3. Read the best hits with `get` (their `id` as location, `max_lines` 80), or a "
            "whole folder with `multi_get`.",
            "4. Write a structured summary: key points, decisions, open issues. " + cite,
            "5. " + gaps])
    if name == "deep_dive":
        note = args["note"]
        return "\n".join([
            f"Give me a deep dive into the note {note} and what it connects to.",
            f'1. Read it with `get` ({{"location": "{note}"}}).',
            f'2. Call `get_connection_graph` with {{"start": "{note}", "depth": 2}} to find '
            "the notes nearest to it in meaning; read the closest ones with `get`.",
            "3. Call `search` for the key terms and claims of the note, to find notes that "
            "agree, add detail or contradict it.",
            "4. Report: what the note says, how the related notes extend, repeat or contradict "
            "it (with the edges' similarities), and what is out of date. " + cite,
            "5. " + gaps])
    if name == "whats_new":
        since = args.get("since") or "the last 7 days (work out the date)"
        return "\n".join([
            f"What is new in my notes since {since}?",
            "1. Call `status` for when each KB was last indexed and what is pending.",
            f'2. Call `search` with {{"filters": {{"date_from": "<{since} as YYYY-MM-DD>"}}, '
            '"limit": 20}} and a few broad queries (decisions, incidents, meetings, plans) to '
            "collect the notes dated since then.",
            "3. Read the new notes with `get` or `multi_get`.",
            "4. Report the changes grouped by folder (`list_topics` names them): what was "
            "decided, what happened, what is planned. " + cite,
            "5. Say which notes carry no date (a date filter cannot find them) and " + gaps[0]
            .lower() + gaps[1:]])
    topic = args["topic"]
    return "\n".join([
        f"Find the gaps in my notes about: {topic}",
        "1. Call `list_topics` to see what the KB covers and how many notes each part has.",
        f"2. List the questions someone working on {topic} needs answered (setup, operation, "
        "failure modes, decisions and their reasons, owners, history).",
        "3. For each question call `search` (and `get` the best hit) to see whether a note "
        "answers it.",
        "4. Report a table: question, answered by (path:line) or MISSING, and how sure you "
        "are. " + cite,
        "5. " + gaps])


def topic_resources(service: Service) -> list[MCPResource]:
    """A `kb://topic/PREFIX` resource for each folder of notes (the first served KB's,
    each other KB's under its name)."""
    from mcp_types import Resource

    found: list[MCPResource] = []
    several = len(service.kbs) > 1
    for i, served in enumerate(service.kbs.values()):
        try:
            with served.lease() as index:
                folders = index.topics()["folders"]
        except Exception:  # an unreadable index lists nothing here; its tools say why
            continue
        for folder in folders:
            prefix = folder["prefix"] if i == 0 or not several else (
                f"{served.name}/{folder['prefix']}")
            found.append(Resource(uri=f"{TOPIC_PREFIX}{prefix}", name=prefix,
                                  description=f"{folder['notes']} notes under {prefix}/",
                                  mime_type="application/json"))
            if len(found) >= MAX_TOPIC_RESOURCES:
                return found
    return found


def _split_kb(service: Service, text: str) -> tuple[Served, str]:
    """A resource's KB and KB-relative part: `KBNAME/rest` names another served KB when
    several are served; else the first KB."""
    head, _, rest = text.partition("/")
    if len(service.kbs) > 1 and head in service.kbs and rest:
        return service.kbs[head], rest
    return service.served(None), text


def topic_listing(service: Service, prefix: str) -> dict[str, Any]:
    """The notes under folder `prefix` as `index` selects them."""
    from groove_cli.scan import walk

    served, rel = _split_kb(service, prefix.strip().strip("/"))
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts) or "\x00" in rel:
        raise UsageError(f"{prefix[:120]!r}: not a folder inside the KB",
                         hint="use a prefix list_topics shows, e.g. kb://topic/operations")
    notes = [f.rel for f in walk(service.selection(served)).files
             if f.rel.startswith(rel + "/")]
    if not notes:
        raise GrooveError(f"no notes under {rel}/ in {served.name}",
                          hint="list_topics shows the folders")
    return {"kb": served.name, "prefix": rel, "count": len(notes),
            "notes": notes[:MAX_LISTED], "more": max(0, len(notes) - MAX_LISTED)}


def graph_schema(kb: dict[str, Any]) -> dict[str, Any]:
    from groove_cli.retrieve import graph as g

    return {"type": "object", "additionalProperties": False, "required": ["start"],
            "properties": {
                "start": {"type": "string", "maxLength": 1000,
                          "description": "The note to start from: its KB-relative path as "
                                         "search shows it."},
                "depth": {"type": "integer", "minimum": 1, "maximum": g.MAX_DEPTH,
                          "default": g.DEFAULT_DEPTH, "description": "Levels of neighbours."},
                "fan_out": {"type": "integer", "minimum": 1, "maximum": g.MAX_FAN_OUT,
                            "default": g.DEFAULT_FAN_OUT,
                            "description": "Neighbours kept per node, most similar first."},
                "min_similarity": {"type": "number", "minimum": -1, "maximum": 1,
                                   "default": g.DEFAULT_MIN_SIMILARITY,
                                   "description": "Least cosine similarity of an edge."},
                "dedup_by_path": {"type": "boolean", "default": True,
                                  "description": "One node per note (else one per chunk)."},
                "exclude_paths": {"type": "array", "items": {"type": "string"},
                                  "maxItems": g.MAX_EXCLUDES,
                                  "description": "Globs of notes to leave out."},
                "seed": {"type": "string", "enum": list(g.SEEDS), "default": "all",
                         "description": "A node's query vectors: each chunk's, or their mean."},
                "max_nodes": {"type": "integer", "minimum": 1, "maximum": g.MAX_NODES,
                              "default": g.DEFAULT_MAX_NODES,
                              "description": "At most this many nodes (truncated says when "
                                             "more were found)."},
                "kb": kb}}


def build_mcp(service: Service) -> GrooveMCP:
    """The whole MCP server: tools.build_mcp's search tools and what `register` adds (the
    server's one builder: app.py and runner.py call it)."""
    from groove_cli.serve import tools

    server = tools.build_mcp(service)
    register(server, service)
    return server


def register(server: GrooveMCP, service: Service) -> Rebuilds:
    """Add the prompts, resources and tools of the module doc to `server`."""
    from mcp.server.mcpserver.exceptions import ResourceError
    from mcp_types import ToolAnnotations

    from groove_cli.serve.tools import READ_ONLY, error_text, guarded

    kb = {"type": "string", "enum": list(service.kbs),
          "description": f"Which served KB; default {next(iter(service.kbs))}."}
    server.schemas.update({
        "get_connection_graph": graph_schema(kb),
        "list_topics": {"type": "object", "properties": {"kb": kb}, "required": [],
                        "additionalProperties": False},
        "rebuild_index": {"type": "object", "properties": {"kb": kb}, "required": [],
                          "additionalProperties": False},
    })
    rebuilds = Rebuilds(service)
    server.resource_lists.append(lambda: topic_resources(service))

    @server.tool(annotations=READ_ONLY, description=(
        "The semantic neighbourhood of a note: the notes nearest to it in meaning, theirs, "
        "and so on (depth levels, fan_out per node, min_similarity), with each edge's cosine "
        "similarity; `truncated` says when max_nodes cut it."))
    def get_connection_graph(start: str, depth: int = 2, fan_out: int = 5,
                             min_similarity: float = 0.5, dedup_by_path: bool = True,
                             exclude_paths: list[str] | None = None, seed: str = "all",
                             max_nodes: int = 50, kb: str | None = None) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            served = service.served(kb)
            service.selection(served).note(start.strip())  # a note of this KB, or refused
            with served.lease() as index:
                graph = index.graph(start.strip(), depth=depth, fan_out=fan_out,
                                    min_similarity=min_similarity, dedup_by_path=dedup_by_path,
                                    exclude_paths=tuple(exclude_paths or ()), seed=seed,
                                    max_nodes=max_nodes)
            document = {"kb": served.name, **graph.to_json()}
            return document, graph.text()
        return guarded(run)

    @server.tool(annotations=READ_ONLY, description=(
        "What the KB covers: note counts per folder (the kb://topic/FOLDER resources) and per "
        "category and topic (category: a note's first folder; topic: its frontmatter topic "
        "or second folder)."))
    def list_topics(kb: str | None = None) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            served = service.served(kb)
            with served.lease() as index:
                found = {"kb": served.name, **index.topics()}
            lines = [f"{served.name}: {found['notes']} notes"]
            lines += [f"- {c['category']} ({c['notes']}): " + ", ".join(
                f"{t['topic']} ({t['notes']})" for t in c["topics"]) for c in found["categories"]]
            return found, "\n".join(lines)
        return guarded(run)

    @server.tool(annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True,
        open_world_hint=False), description=(
        "Bring the index up to date with the notes on disk (new, changed, renamed, deleted "
        "notes), in the background; searches keep answering meanwhile. One rebuild at a "
        "time: a call while one runs is refused, saying how long it has run."))
    def rebuild_index(kb: str | None = None) -> CallToolResult:
        def run() -> tuple[dict[str, Any], str]:
            started = rebuilds.start(kb)
            return started, (f"rebuilding {started['kb']} in the background; `status` shows "
                             "the index when it is done")
        return guarded(run)

    def resource_text(action: Any) -> str:
        """A resource body, or ResourceError with the command line's error line."""
        try:
            return str(action())
        except Exception as exc:
            raise ResourceError(error_text(exc) or "groove: error: internal error") from None

    @server.resource(DOC_TEMPLATE, name="doc", mime_type="text/markdown", description=(
        "A note of the KB by its KB-relative path (as search shows it)."))
    def doc(path: str) -> str:
        def read() -> str:
            served, rel = _split_kb(service, path)
            return str(service.get(rel, served.name)["content"])
        return resource_text(read)

    @server.resource(TOPIC_TEMPLATE, name="topic", mime_type="application/json", description=(
        "The notes under a folder of the KB (list_topics shows the folders)."))
    def topic(prefix: str) -> str:
        import json

        return resource_text(lambda: json.dumps(topic_listing(service, prefix),
                                                ensure_ascii=False, indent=2))

    @server.prompt(name="summarize_topic", description=(
        "Summarize what the notes say about a topic, with citations and what they do not "
        "cover."))
    def summarize_topic(topic: str) -> str:
        return prompt_text("summarize_topic", topic=topic)

    @server.prompt(name="deep_dive", description=(
        "Study one note and the notes connected to it (connection graph, search)."))
    def deep_dive(note: str) -> str:
        return prompt_text("deep_dive", note=note)

    @server.prompt(name="whats_new", description=(
        "What the notes dated since a day say (default: the last 7 days)."))
    def whats_new(since: str = "") -> str:
        return prompt_text("whats_new", since=since)

    @server.prompt(name="find_gaps", description=(
        "Which questions about a topic the notes answer and which they leave open."))
    def find_gaps(topic: str) -> str:
        return prompt_text("find_gaps", topic=topic)

    return rebuilds
