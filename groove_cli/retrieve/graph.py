"""`groove graph`: the semantic neighbourhood of a note (cli.md `graph`, serve.md
`get_connection_graph`).

A breadth-first search over vector similarity from a start note. A node is a note
(`dedup_by_path`, the default) or a chunk; a node's query vectors are its chunks' vectors
(`seed = all`, every piece included) or their normalised mean (`seed = centroid`). Its
neighbours are the nodes whose best cosine to any of those vectors is at least
`min_similarity`, the `fan_out` most similar first (ties by path); each becomes an edge
carrying that cosine, and a node not seen yet joins the next level, until `depth` levels or
`max_nodes` nodes (then `truncated` is set and `left_out` counts the nodes that did not fit).

Everything comes from the vector snapshot the Searcher already holds (vectors.py) and the
store's `filter_meta`/`chunks_by_id` reads: no model, no query embedding, no SQL here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from groove_cli.errors import GrooveError, UsageError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from groove_cli.messages import Message
    from groove_cli.types import FilterMeta, IndexedChunk
    from groove_cli.vectors import VectorSnapshot

SEEDS = ("all", "centroid")
MAX_DEPTH = 5
MAX_FAN_OUT = 50
MAX_NODES = 500
DEFAULT_DEPTH = 2
DEFAULT_FAN_OUT = 5
DEFAULT_MIN_SIMILARITY = 0.5
DEFAULT_MAX_NODES = 50
MAX_EXCLUDES = 64


class GraphReads(Protocol):
    """What the graph reads from an index besides the vectors (both stores have these)."""

    def filter_meta(self, ids: Sequence[int]) -> dict[int, FilterMeta]: ...

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, IndexedChunk]: ...


@dataclass(frozen=True, slots=True)
class GraphRequest:
    """A graph's start and bounds; `check` refuses anything out of range with one line."""

    start: str
    depth: int = DEFAULT_DEPTH
    fan_out: int = DEFAULT_FAN_OUT
    min_similarity: float = DEFAULT_MIN_SIMILARITY
    dedup_by_path: bool = True
    exclude_paths: tuple[str, ...] = ()
    seed: str = "all"
    max_nodes: int = DEFAULT_MAX_NODES

    def check(self) -> None:
        def whole(name: str, value: object, low: int, high: int) -> None:
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise UsageError(f"{name} {value!r} must be a whole number from {low} to {high}")

        if not isinstance(self.start, str) or not self.start.strip():
            raise UsageError("graph needs a start note",
                             hint="pass its KB-relative path as search shows it, e.g. "
                                  "ops/backup.md")
        whole("depth", self.depth, 1, MAX_DEPTH)
        whole("fan_out", self.fan_out, 1, MAX_FAN_OUT)
        whole("max_nodes", self.max_nodes, 1, MAX_NODES)
        similarity = self.min_similarity
        if isinstance(similarity, bool) or not isinstance(similarity, int | float) or not (
                -1.0 <= similarity <= 1.0):
            raise UsageError(f"min_similarity {similarity!r} must be a number from -1 to 1")
        if self.seed not in SEEDS:
            raise UsageError(f"unknown seed {str(self.seed)[:40]!r}",
                             hint=f"use one of: {', '.join(SEEDS)}")
        if not isinstance(self.dedup_by_path, bool):
            raise UsageError("dedup_by_path must be true or false")
        if len(self.exclude_paths) > MAX_EXCLUDES:
            raise UsageError(f"{len(self.exclude_paths)} exclude_paths; at most {MAX_EXCLUDES}")


@dataclass(frozen=True, slots=True)
class GraphNode:
    id: str
    """The note's KB-relative path, or `path:line` for a chunk node."""
    path: str
    depth: int
    title: str | None = None
    heading: str | None = None
    line_start: int | None = None


@dataclass(frozen=True, slots=True)
class GraphEdge:
    source: str
    target: str
    similarity: float
    """The best cosine between the two nodes' vectors (the source's seed vectors)."""


@dataclass(frozen=True, slots=True)
class Graph:
    request: GraphRequest
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    truncated: bool
    left_out: int
    """Nodes found above min_similarity that did not fit under max_nodes."""
    messages: tuple[Message, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        r = self.request
        return {
            "start": r.start, "seed": r.seed, "depth": r.depth, "fan_out": r.fan_out,
            "min_similarity": r.min_similarity, "dedup_by_path": r.dedup_by_path,
            "exclude_paths": list(r.exclude_paths), "max_nodes": r.max_nodes,
            "truncated": self.truncated, "left_out": self.left_out,
            "nodes": [{"id": n.id, "path": n.path, "depth": n.depth, "title": n.title,
                       "heading": n.heading, "line_start": n.line_start} for n in self.nodes],
            "edges": [{"source": e.source, "target": e.target,
                       "similarity": round(e.similarity, 4)} for e in self.edges],
        }

    def text(self) -> str:
        """Nodes by depth, each with the edge that reached it, then the other edges."""
        depth = {n.id: n.depth for n in self.nodes}
        reached: dict[str, GraphEdge] = {}
        for edge in self.edges:
            if depth[edge.target] == depth[edge.source] + 1:
                reached.setdefault(edge.target, edge)
        lines = []
        for node in self.nodes:
            if node.depth == 0:
                lines.append(f"{node.id}  (start)")
            else:
                via = reached.get(node.id)
                found = f"{via.similarity:.2f} from {via.source}" if via else ""
                lines.append(f"{'  ' * node.depth}{node.id}  ({found})")
        shown = set(map(id, reached.values()))
        lines += [f"also: {e.source} -- {e.target}  {e.similarity:.2f}" for e in self.edges
                  if id(e) not in shown]
        if self.truncated:
            lines.append(f"truncated: {self.left_out} more notes above "
                         f"{self.request.min_similarity} did not fit max_nodes "
                         f"{self.request.max_nodes}")
        return "\n".join(lines)

    def dot(self) -> str:
        """The graph in Graphviz's DOT language, every identifier and label quoted and escaped."""
        lines = ['graph "groove" {', "  graph [overlap=false, splines=true];",
                 '  node [shape=box, style="rounded,filled", fillcolor="#f5f5f5", '
                 'fontname="Helvetica", fontsize=10];', '  edge [fontname="Helvetica", '
                 "fontsize=9];"]
        for node in self.nodes:
            label = f"{node.title}\n{node.id}" if node.title else node.id
            extra = ', fillcolor="#cde4ff", penwidth=2' if node.depth == 0 else ""
            lines.append(f"  {dot_quote(node.id)} [label={dot_quote(label)}, "
                         f"tooltip={dot_quote(node.id)}{extra}];")
        for edge in self.edges:
            lines.append(f"  {dot_quote(edge.source)} -- {dot_quote(edge.target)} "
                         f'[label="{edge.similarity:.2f}", weight={max(1, round(edge.similarity * 10))}];')
        lines.append("}")
        return "\n".join(lines) + "\n"


def dot_quote(text: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, line breaks as DOT's `\\n`, other
    control characters dropped."""
    cleaned = "".join(ch for ch in text if ch == "\n" or (ch >= " " and ch != "\x7f"))
    escaped = cleaned.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def connection_graph(snapshot: VectorSnapshot, store: GraphReads, request: GraphRequest
                     ) -> Graph:
    """The neighbourhood of `request.start` (see the module doc)."""
    from groove_cli.retrieve.filters import glob_to_regex

    request.check()
    start = request.start.strip().removeprefix("./")
    chunk_ids = snapshot.chunk_ids
    meta = store.filter_meta([int(c) for c in chunk_ids])
    paths = [meta[int(c)].path if int(c) in meta else "" for c in chunk_ids]
    if start not in paths:
        raise GrooveError(f"{start[:120]!r} is not a note with vectors in this index",
                          hint="pass its KB-relative path as search shows it (e.g. "
                               "ops/backup.md); a new or changed note needs `groove index` first")
    excluded = [glob_to_regex(p.removeprefix("!")) for p in request.exclude_paths]

    # groups: one per note (dedup_by_path) or one per chunk
    if request.dedup_by_path:
        names = sorted(set(p for p in paths if p))
        number = {name: i for i, name in enumerate(names)}
        chunk_group = np.asarray([number.get(p, -1) for p in paths], dtype=np.int64)
    else:
        chunk_group = np.arange(len(paths), dtype=np.int64)
        chunk_group[[i for i, p in enumerate(paths) if not p]] = -1
    groups = int(chunk_group.max()) + 1 if chunk_group.size else 0
    row_chunk = np.repeat(np.arange(chunk_ids.shape[0], dtype=np.int64), snapshot.counts)
    row_group = chunk_group[row_chunk]
    valid_rows = row_group >= 0
    group_path = [""] * groups
    for i, g in enumerate(chunk_group):
        if g >= 0 and not group_path[g]:
            group_path[g] = paths[i]
    blocked = np.zeros(groups, dtype=bool)
    for g, path in enumerate(group_path):
        blocked[g] = path != start and any(m.fullmatch(path) for m in excluded)

    rows_of: dict[int, npt.NDArray[np.int64]] = {}

    def rows(g: int) -> npt.NDArray[np.int64]:
        if g not in rows_of:
            rows_of[g] = np.flatnonzero(row_group == g).astype(np.int64)
        return rows_of[g]

    def neighbours(g: int) -> list[tuple[int, float]]:
        seeds = np.asarray(snapshot.matrix[rows(g)], dtype=np.float32)
        if request.seed == "centroid":
            seeds = seeds.mean(axis=0, keepdims=True)
        best_row = 1.0 - snapshot.distances(seeds).min(axis=0)
        best = np.full(groups, -np.inf)
        np.maximum.at(best, row_group[valid_rows], best_row[valid_rows])
        best[g] = -np.inf
        best[blocked] = -np.inf
        found = np.flatnonzero(best >= request.min_similarity)
        ranked = sorted(found, key=lambda h: (-best[h], group_path[h], h))
        return [(int(h), float(best[h])) for h in ranked[: request.fan_out]]

    starts = sorted(set(int(g) for g, p in zip(chunk_group, paths, strict=True) if p == start))
    depth_of_group: dict[int, int] = {g: 0 for g in starts}
    edges: dict[tuple[int, int], tuple[int, int, float]] = {}
    left_out: set[int] = set()
    frontier = list(starts)
    for level in range(request.depth):
        following: list[int] = []
        for g in frontier:
            for h, similarity in neighbours(g):
                if h not in depth_of_group:
                    if len(depth_of_group) >= request.max_nodes:
                        left_out.add(h)
                        continue
                    depth_of_group[h] = level + 1
                    following.append(h)
                key = (min(g, h), max(g, h))
                edges.setdefault(key, (g, h, similarity))
        frontier = following
    left_out -= set(depth_of_group)

    first_chunk = {}
    for i, g in enumerate(chunk_group):
        if int(g) in depth_of_group and int(g) not in first_chunk:
            first_chunk[int(g)] = int(chunk_ids[i])
    rows_read = store.chunks_by_id(first_chunk.values())
    nodes: dict[int, GraphNode] = {}
    for g, level in depth_of_group.items():
        chunk = rows_read.get(first_chunk[g])
        path = group_path[g]
        line = chunk.line_start if chunk is not None else None
        node_id = path if request.dedup_by_path else f"{path}:{line if line is not None else 1}"
        nodes[g] = GraphNode(node_id, path, level, chunk.title if chunk else None,
                             None if request.dedup_by_path or chunk is None else chunk.heading,
                             None if request.dedup_by_path else line)
    gid = {node.id: g for g, node in nodes.items()}
    ordered = sorted(nodes.values(), key=lambda n: (n.depth, n.path, n.line_start or 0))
    edge_list = sorted((GraphEdge(nodes[a].id, nodes[b].id, s) for a, b, s in edges.values()),
                       key=lambda e: (max(nodes[a].depth for a in (gid[e.source], gid[e.target])),
                                      -e.similarity, e.source, e.target))
    return Graph(request, tuple(ordered), tuple(edge_list), bool(left_out), len(left_out))

