"""No wall-clock deadline in a test (issue 37), checked on the suite's source with `ast`.

A test that asserts how long something took passes on one machine and fails on a slower or
busier one: timings belong to the benchmarks (bench/). A test may bound work by counts, or wait
for an event with a generous timeout that only guards against a hang (tests/waiting.py).

The rule, for every tests/*.py:

- a *reading* is a call to `time.time`, `time.monotonic` or `time.perf_counter` (or their `_ns`
  forms, however `time` or they were imported), a name assigned from an expression holding a
  reading (transitively, loop and comprehension variables included), or a call to a function of
  the suite that returns one (a helper returning seconds);
- an `assert`, or a `self.assert…` comparison method, must not compare a reading with
  anything that is not one (a constant, a limit): that is a deadline. Comparing two readings
  (their order) is not;
- an `if` whose condition compares a reading and whose branch fails the test (`raise`,
  `pytest.fail`) is a deadline too, unless it sits in a `while` loop: that is a poll giving up
  on an event that never came, as `wait_until(predicate, timeout=…)` does;
- `wait_until(…, timeout=N)` with a literal N under MIN_HANG_GUARD_S is a deadline dressed as a
  hang guard.

Readings inside strings (a child process's script) are out of its reach: test_big_note.py and
test_get_cli.py keep theirs free of timings by hand.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CLOCKS = frozenset({"time", "monotonic", "perf_counter", "time_ns", "monotonic_ns",
                    "perf_counter_ns"})
ASSERT_METHODS = frozenset({"assertLess", "assertLessEqual", "assertGreater",
                            "assertGreaterEqual", "assertAlmostEqual", "assertEqual"})
MIN_HANG_GUARD_S = 30.0
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Deadline:
    path: str
    line: int
    code: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.code}"


@dataclass
class Clocks:
    """The names a module reaches the clock by: `time` (or its alias) and clocks imported."""

    modules: set[str]
    functions: set[str]
    timing: set[str]
    """Functions of the suite that return a reading."""

    @classmethod
    def of(cls, tree: ast.Module, timing: Iterable[str] = ()) -> Clocks:
        modules: set[str] = set()
        functions: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(a.asname or a.name for a in node.names if a.name == "time")
            elif isinstance(node, ast.ImportFrom) and node.module == "time":
                functions.update(a.asname or a.name for a in node.names if a.name in CLOCKS)
        return cls(modules, functions, set(timing))

    def is_reading_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Attribute):
            if (func.attr in CLOCKS and isinstance(func.value, ast.Name)
                    and func.value.id in self.modules):
                return True
            return func.attr in self.timing
        return isinstance(func, ast.Name) and (func.id in self.functions
                                               or func.id in self.timing)


def _own_nodes(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node under `body`; a nested function or class is yielded but not entered."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _holds_reading(expr: ast.AST, clocks: Clocks, tainted: set[str]) -> bool:
    return any(clocks.is_reading_call(n) or (isinstance(n, ast.Name) and n.id in tainted)
               for n in ast.walk(expr))


def _tainted(body: list[ast.stmt], clocks: Clocks, outer: set[str]) -> set[str]:
    """The names of a scope that hold readings (those of enclosing scopes included)."""
    tainted = set(outer)
    nodes = list(_own_nodes(body))
    changed = True
    while changed:
        changed = False
        for node in nodes:
            targets: list[ast.AST] = []
            value: ast.AST | None = None
            if isinstance(node, ast.Assign):
                targets, value = list(node.targets), node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                targets, value = [node.target], node.value
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                targets, value = [node.target], node.iter
            if value is None or not _holds_reading(value, clocks, tainted):
                continue
            new = set().union(*(_names(t) for t in targets)) - tainted
            if new:
                tainted |= new
                changed = True
    return tainted


Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


def _scopes(tree: ast.Module, clocks: Clocks) -> Iterator[tuple[Scope, set[str]]]:
    """The module and every function in it, each with the names holding readings there (a
    nested function sees its enclosing function's)."""
    def visit(scope: Scope, outer: set[str]) -> Iterator[tuple[Scope, set[str]]]:
        tainted = _tainted(scope.body, clocks, outer)
        yield scope, tainted
        pending = list(_own_nodes(scope.body))
        while pending:
            node = pending.pop()
            if isinstance(node, FUNCTIONS):
                yield from visit(node, tainted)
            elif isinstance(node, ast.ClassDef):
                pending.extend(_own_nodes(node.body))

    yield from visit(tree, set())


def timing_functions(tree: ast.Module, known: Iterable[str] = ()) -> set[str]:
    """The functions of `tree` that return a reading (to a fixed point: helpers of helpers)."""
    timing = set(known)
    while True:
        clocks = Clocks.of(tree, timing)
        found = {scope.name for scope, tainted in _scopes(tree, clocks)
                 if isinstance(scope, FUNCTIONS)
                 and any(isinstance(n, ast.Return) and n.value is not None
                         and _holds_reading(n.value, clocks, tainted)
                         for n in _own_nodes(scope.body))}
        if found <= timing:
            return timing
        timing |= found


def _compares_a_reading(expr: ast.AST, clocks: Clocks, tainted: set[str]) -> bool:
    """Whether `expr` compares a reading with something that is not one."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            readings = [_holds_reading(side, clocks, tainted) for side in sides]
            if any(readings) and not all(readings):
                return True
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ASSERT_METHODS and len(node.args) >= 2):
            readings = [_holds_reading(arg, clocks, tainted) for arg in node.args[:2]]
            if any(readings) and not all(readings):
                return True
    return False


def _fails(block: list[ast.stmt]) -> bool:
    """Whether `block` fails the test: a `raise` or a `….fail(…)` / `fail(…)` call."""
    for node in _own_nodes(block):
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "fail":
                return True
    return False


def _literal_seconds(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    return None


def deadlines(source: str, path: str = "<snippet>", timing: Iterable[str] = ()) -> list[Deadline]:
    """The wall-clock deadlines in a test module's source (see the module doc)."""
    tree = ast.parse(source)
    clocks = Clocks.of(tree, timing_functions(tree, timing))
    lines = source.splitlines()
    found: list[Deadline] = []

    def flag(node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        found.append(Deadline(path, line, lines[line - 1].strip() if line else ""))

    def check(body: list[ast.stmt], tainted: set[str], polling: bool) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assert):
                if _compares_a_reading(stmt.test, clocks, tainted):
                    flag(stmt)
            elif isinstance(stmt, ast.Expr) and _compares_a_reading(stmt.value, clocks, tainted):
                flag(stmt)  # self.assertLess(elapsed, 5)
            elif isinstance(stmt, ast.If):
                if (not polling and _compares_a_reading(stmt.test, clocks, tainted)
                        and (_fails(stmt.body) or _fails(stmt.orelse))):
                    flag(stmt)
                check(stmt.body, tainted, polling)
                check(stmt.orelse, tainted, polling)
            elif isinstance(stmt, ast.While):
                check(stmt.body, tainted, True)
                check(stmt.orelse, tainted, polling)
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
                check(stmt.body, tainted, polling)
                check(getattr(stmt, "orelse", []), tainted, polling)
            elif isinstance(stmt, ast.Try):
                for block in (stmt.body, stmt.orelse, stmt.finalbody,
                              *(h.body for h in stmt.handlers)):
                    check(block, tainted, polling)

    for scope, tainted in _scopes(tree, clocks):
        check(scope.body, tainted, False)
        for node in _own_nodes(scope.body):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "wait_until"):
                for keyword in node.keywords:
                    seconds = _literal_seconds(keyword.value)
                    if (keyword.arg == "timeout" and seconds is not None
                            and seconds < MIN_HANG_GUARD_S):
                        flag(node)
    return sorted(set(found), key=lambda d: d.line)


def suite_files() -> list[Path]:
    return sorted(TESTS.glob("*.py"))


def suite_timing_functions(files: list[Path]) -> set[str]:
    """Functions anywhere in the suite that return a reading (helpers are imported across)."""
    timing: set[str] = set()
    while True:
        found = set(timing)
        for path in files:
            found |= timing_functions(ast.parse(path.read_text(encoding="utf-8")), timing)
        if found == timing:
            return timing
        timing = found


def test_no_test_compares_the_wall_clock_with_a_limit() -> None:
    files = suite_files()
    assert len(files) > 50
    timing = suite_timing_functions(files)
    found = [d for path in files
             for d in deadlines(path.read_text(encoding="utf-8"), path.name, timing)]
    assert not found, ("wall-clock deadlines (bound the work by counts, or wait for the event "
                       "with tests/waiting.py):\n" + "\n".join(map(str, found)))


# ------------------------------------------------------------------------ the rule itself

DEADLINE = """
import time

def test_search_is_fast():
    start = time.perf_counter()
    search("retry budget")
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0
"""

HANG_GUARD = """
import time

import pytest

def wait_until(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("the event never happened")
        time.sleep(0.05)

def test_the_edit_is_searchable():
    edit()
    wait_until(lambda: found("zorblaxine"), timeout=120)
    assert found("zorblaxine")
"""


def test_the_rule_flags_a_deadline() -> None:
    assert [d.line for d in deadlines(DEADLINE)] == [8]


def test_the_rule_lets_a_hang_guard_pass() -> None:
    assert deadlines(HANG_GUARD) == []


@pytest.mark.parametrize(("source", "lines"), [
    # a helper that returns seconds, compared by the caller
    ("import time\n"
     "def seconds_until(check):\n"
     "    start = time.monotonic()\n"
     "    while not check():\n"
     "        time.sleep(0.05)\n"
     "    return time.monotonic() - start\n"
     "def test_x():\n"
     "    timings = {'add': seconds_until(lambda: True)}\n"
     "    assert all(t <= 2 for t in timings.values()), timings\n", [9]),
    # the clock imported by name, the reading inline
    ("from time import monotonic as now\n"
     "def test_x():\n"
     "    t0 = now()\n"
     "    work()\n"
     "    assert now() - t0 < 5\n", [5]),
    # a failing branch on the clock outside a polling loop
    ("import time, pytest\n"
     "def test_x():\n"
     "    t0 = time.time()\n"
     "    work()\n"
     "    if time.time() - t0 > 5:\n"
     "        pytest.fail('too slow')\n", [5]),
    # unittest style
    ("import time\n"
     "def test_x(self):\n"
     "    t0 = time.perf_counter_ns()\n"
     "    self.assertLess(time.perf_counter_ns() - t0, 10**9)\n", [4]),
    # a hang guard too short to be one
    ("def test_x():\n"
     "    wait_until(lambda: done(), timeout=2)\n", [2]),
    # two readings in order, and a count: no deadline
    ("import time\n"
     "def test_x():\n"
     "    first = time.monotonic()\n"
     "    second = time.monotonic()\n"
     "    assert first <= second\n"
     "    assert len(calls) == 3\n", []),
])
def test_the_rule_on_more_forms(source: str, lines: list[int]) -> None:
    assert [d.line for d in deadlines(source)] == lines
