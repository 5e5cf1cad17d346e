"""The code layout's rules (docs/design/code.md "Layers"), checked on the source with `ast`.

- no import against the layer order: a module imports only its own layer or the layers below
  it. Every import counts: module-level, inside a function (a deferred import is still a
  dependency) and under `if TYPE_CHECKING:` (a lower layer that names an upper layer's type
  depends on it, even though nothing is imported at run time);
- no import cycle between modules, `bench/` included, whatever kind of import closes it:
  module level, deferred (inside a function) or under `if TYPE_CHECKING:` (two modules that
  name each other's types share a record that belongs in a module of its own);
- `bench/` imports only the public API (`groove_cli` itself and `groove_cli.engine`, the
  engine's stages for benchmarks).

"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Lowest first; a module belongs to the first layer with a matching prefix (a prefix ending in
# "." is a package, otherwise the exact module). Keep in step with docs/design/code.md.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("text", ("groove_cli.text",)),
    ("core", ("groove_cli.types", "groove_cli.errors", "groove_cli.config",
              "groove_cli.config_schema", "groove_cli.dburl", "groove_cli.messages",
              "groove_cli.npyfiles", "groove_cli.arrays", "groove_cli.signals",
              "groove_cli.dbfile", "groove_cli.failures", "groove_cli.scan", "groove_cli.chunk",
              "groove_cli.outfile", "groove_cli.statedir", "groove_cli.kbs",
              "groove_cli.exits", "groove_cli._version", "groove_cli.jsondoc",
              "groove_cli.validate", "groove_cli.osservice")),
    ("store", ("groove_cli.store", "groove_cli.vectors")),
    ("models", ("groove_cli.models", "groove_cli.runtime_model")),
    ("retrieve", ("groove_cli.retrieve",)),
    ("evaluate", ("groove_cli.evaluate",)),
    # the plots of eval and tune: the command line's --report and the server's history page
    ("pictures", ("groove_cli.pictures",)),
    ("operations", ("groove_cli.index", "groove_cli.index_lock", "groove_cli.index_batches",
                    "groove_cli.vector_fill",
                    "groove_cli.state_migration",
                    "groove_cli.integrity", "groove_cli.status",
                    "groove_cli.get")),
    ("api", ("groove_cli", "groove_cli.api", "groove_cli.results", "groove_cli.multi",
             "groove_cli.engine")),
    # the server sits on the library: it never imports the command line or its renderers
    ("serve", ("groove_cli.serve",)),
    ("front", ("groove_cli.cli", "groove_cli.cli_app", "groove_cli.cli_options", "groove_cli.cli_eval",
               "groove_cli.cli_commands", "groove_cli.cli_kb", "groove_cli.cli_serve",
               "groove_cli.cli_notes", "groove_cli.cli_service",
               "groove_cli.__main__", "groove_cli.render")),
)
PUBLIC_API = {"groove_cli", "groove_cli.engine"}
"""The public doors: the package's exports and the engine's stages for benchmarks (engine.py)."""
# (importer prefix, imported prefix, why): finer rules inside a layer.
FORBIDDEN = (
    ("groove_cli.evaluate.tune", "groove_cli.evaluate.runner",
     "tune takes the golden set and the k list from evaluate.golden, not eval's command"),
    ("groove_cli.evaluate.tune", "groove_cli.evaluate.ablate", "ablate is part of eval"),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> dict[str, Path]:
    files = sorted([*(REPO / "groove_cli").rglob("*.py"), *(REPO / "bench").rglob("*.py")])
    return {module_name(p): p for p in files}


MODULES = source_files()


def layer_of(module: str) -> int:
    """The index in LAYERS of a groove_cli module: the longest matching prefix decides."""
    best, best_len = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    if best < 0:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS and docs/design/code.md")
    return best


@dataclass(frozen=True)
class Import:
    target: str
    line: int
    kind: str  # "load" (runs when the module loads), "deferred" (in a function), "type"


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _import_nodes(body: list[ast.stmt], kind: str) -> Iterator[tuple[ast.stmt, str]]:
    """Every import statement in `body` with its kind (see Import)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, kind
        elif isinstance(node, ast.If):
            yield from _import_nodes(node.body, "type" if _is_type_checking(node) else kind)
            yield from _import_nodes(node.orelse, kind)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody,
                          *(h.body for h in node.handlers)):
                yield from _import_nodes(block, kind)
        elif isinstance(node, (ast.With, ast.For, ast.While, ast.ClassDef)):
            yield from _import_nodes(node.body, kind)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _import_nodes(node.body, "type" if kind == "type" else "deferred")


def _resolve(name: str) -> str | None:
    """The longest prefix of a dotted name that is a module of ours."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    in_bench = module.split(".")[0] == "bench"
    found: list[Import] = []
    for node, kind in _import_nodes(tree.body, "load"):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            assert isinstance(node, ast.ImportFrom)
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            if in_bench and not node.level and source.split(".")[0] not in {"groove_cli", "bench"}:
                source = f"bench.{source}"  # bench scripts import their siblings by bare name
            for alias in node.names:
                full = f"{source}.{alias.name}"
                targets.append(full if full in MODULES else source)
        if in_bench:
            targets = [t if t.split(".")[0] in {"groove_cli", "bench"} else f"bench.{t}"
                       for t in targets]
        for target in targets:
            resolved = _resolve(target)
            if resolved and resolved != module:
                found.append(Import(resolved, node.lineno, kind))
    return found


IMPORTS = {module: imports_of(module) for module in MODULES}


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        if module.startswith("groove_cli"):
            layer_of(module)


def test_no_import_against_the_layer_order() -> None:
    against = []
    for module, found in IMPORTS.items():
        if not module.startswith("groove_cli"):
            continue
        mine = layer_of(module)
        for imp in found:
            if imp.target.startswith("groove_cli") and layer_of(imp.target) > mine:
                against.append(f"{MODULES[module].relative_to(REPO)}:{imp.line} "
                               f"({LAYERS[mine][0]}) imports {imp.target} "
                               f"({LAYERS[layer_of(imp.target)][0]})")
    assert against == []


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_find_cycles_finds_a_cycle() -> None:
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    graph = {m: {i.target for i in found if i.kind == "load"} for m, found in IMPORTS.items()}
    assert find_cycles(graph) == []


def test_no_cycle_through_deferred_or_type_imports() -> None:
    graph = {m: {i.target for i in found} for m, found in IMPORTS.items()}
    assert find_cycles(graph) == []


def test_finer_rules_inside_a_layer() -> None:
    broken = [f"{MODULES[m].relative_to(REPO)}:{i.line} imports {i.target}: {why}"
              for m, found in IMPORTS.items() for i in found
              for importer, imported, why in FORBIDDEN
              if (m == importer or m.startswith(importer + "."))
              and (i.target == imported or i.target.startswith(imported + "."))]
    assert broken == []


COMMAND_LINE = ("groove_cli.cli", "groove_cli.cli_app", "groove_cli.cli_options",
                "groove_cli.cli_eval", "groove_cli.cli_commands", "groove_cli.cli_kb",
                "groove_cli.cli_serve", "groove_cli.cli_notes", "groove_cli.cli_service")
CORE_BEHIND_THE_API = ("groove_cli.evaluate", "groove_cli.models")


def test_the_command_line_runs_eval_tune_and_models_through_the_api() -> None:
    """eval, --ablate, eval compare, tune and models are `Index` / api calls: the command
    line names the core's report types (for annotations) but runs none of it directly."""
    reaching = [f"{MODULES[m].relative_to(REPO)}:{i.line} imports {i.target}"
                for m in COMMAND_LINE for i in IMPORTS[m]
                if i.kind != "type" and i.target.startswith(CORE_BEHIND_THE_API)]
    assert reaching == []


def test_bench_imports_only_the_public_api() -> None:
    private = sorted({f"{MODULES[m].relative_to(REPO)} imports {i.target}"
                      for m, found in IMPORTS.items() if m.startswith("bench")
                      for i in found
                      if i.target.startswith("groove_cli") and i.target not in PUBLIC_API})
    assert private == []
