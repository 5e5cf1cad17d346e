"""Shared helpers of the benchmark scripts: paths, the groove subprocess, timing statistics,
machine notes and result files.

Every benchmark reports ratios against a reference measured in the same run, because the
machine (2 cores) is shared with other work: absolute times drift, ratios much less. Repeated
measurements are summarised by their median.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
WORK = BENCH / "work"
RESULTS = BENCH / "results"
DATASETS_ENV = "GROOVE_DATASETS"
"""Names the folder of the public collections kept outside the checkout (cisi/, jsquad/)."""
MIRRORS_ENV = "GROOVE_MIRRORS"
"""Names the folder of git snapshots (`<owner>+<name>/repo`) the suite's collections come from."""
GROOVE = Path(os.environ.get("GROOVE_BIN", str(ROOT / ".venv" / "bin" / "groove")))
"""The groove command the benchmarks run; GROOVE_BIN overrides it (e.g. a shared venv)."""
DEFAULT_MODEL = "multilingual-e5-small"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _folder_from(env: str, explicit: Path | str | None, what: str) -> Path:
    """`explicit` (a flag's value), else the environment variable `env`, as an existing
    folder; otherwise one line on stderr and exit 2 (no traceback)."""
    value = str(explicit) if explicit else os.environ.get(env, "")
    if not value:
        print(f"groove bench: set {env} to {what} (see bench/README.md)", file=sys.stderr)
        raise SystemExit(2)
    folder = Path(value).expanduser()
    if not folder.is_dir():
        print(f"groove bench: {env}={value} is not a folder; set it to {what} "
              "(see bench/README.md)", file=sys.stderr)
        raise SystemExit(2)
    return folder


def datasets_root(explicit: Path | str | None = None) -> Path:
    """The folder holding the public collections cisi/ and jsquad/ (each `docs/<id>.md` and
    its queries): `explicit` (a `--datasets` flag) or $GROOVE_DATASETS. Every benchmark that
    reads them resolves the folder here; unset, it stops with one line and exit code 2."""
    return _folder_from(DATASETS_ENV, explicit, "the folder holding cisi/ and jsquad/")


def mirrors_root(explicit: Path | str | None = None) -> Path:
    """The folder of repository snapshots (`<owner>+<name>/repo` git directories) the suite's
    collections are rebuilt from: `explicit` (a `--mirrors` flag) or $GROOVE_MIRRORS; unset,
    it stops with one line and exit code 2."""
    return _folder_from(MIRRORS_ENV, explicit,
                        "the folder of <owner>+<name>/repo git snapshots")


def built_collections() -> Path:
    """`.cache/collections/` where bench/suite_collections.py builds the suite's collections:
    this checkout's, or in a linked git worktree without a build, the main checkout's."""
    own = ROOT / ".cache" / "collections"
    if own.is_dir():
        return own
    proc = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    common = Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None
    main = common.parent / ".cache" / "collections" if common is not None else None
    return main if main is not None and main.is_dir() else own


@dataclass(frozen=True, slots=True)
class GrooveRun:
    """One finished `groove` subprocess: wall time, exit code and both streams."""

    args: tuple[str, ...]
    wall_s: float
    cpu_s: float
    """User + system CPU seconds of the child: far less sensitive to other load than wall."""
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as the one JSON document groove writes."""
        return json.loads(self.stdout)


def empty_config(folder: Path) -> Path:
    """An empty `groove.toml` in `folder`: passed as `--config`, it keeps every run on the
    built-in defaults whatever `groove.toml` another engineer leaves in the checkout."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "groove.toml"
    if not path.exists():
        path.write_text("# benchmark runs: built-in defaults only\n", encoding="utf-8")
    return path


def run_groove(args: Sequence[str], *, config: Path, db: Path | str | None = None,
               check: bool = True, env: dict[str, str] | None = None) -> GrooveRun:
    """Run `.venv/bin/groove --config CONFIG [--db DB] ARGS…` and time it (wall clock).

    Raises RuntimeError with stderr when `check` and the exit code is not 0.
    """
    full = [str(GROOVE), "--config", str(config)]
    if db is not None:
        full += ["--db", str(db)]
    full += list(args)
    child_env = dict(os.environ)
    child_env.update(env or {})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(full, capture_output=True, text=True, env=child_env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run = GrooveRun(tuple(full), wall, cpu, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(full)} exited {proc.returncode}:\n{proc.stderr}")
    return run


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation between closest ranks."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def load_average() -> list[float]:
    """1/5/15-minute load averages: how busy the shared machine was around a measurement."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def code_version() -> dict[str, Any]:
    """The commit measured, and whether `groove_cli/` had uncommitted changes (the package is
    being worked on while the benchmarks run)."""
    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False)
        return proc.stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"),
            "groove_cli_dirty": bool(git("status", "--porcelain", "--", "groove_cli"))}


# The packages groove's speed and results depend on; a release of any of them can move the
# numbers (typer 0.29 added pydantic to start-up), so every result file records their versions.
RECORDED_PACKAGES = ("apsw", "sqlite-vec", "numpy", "onnxruntime", "tokenizers", "typer",
                     "click", "rich")


def package_versions(names: Sequence[str] = RECORDED_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package of `names` (None when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def machine() -> dict[str, Any]:
    """What a reader needs to interpret the numbers, including the installed package versions."""
    return {
        "code": code_version(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": load_average(),
        "packages": package_versions(),
    }


def machine_line(info: dict[str, Any]) -> str:
    """One Markdown sentence: commit, cores and load at the start of the run."""
    code = info.get("code") or {}
    dirty = " with uncommitted changes in groove_cli/" if code.get("groove_cli_dirty") else ""
    return (f"Measured at commit `{code.get('commit', '?')}`{dirty} on {info['cpu_count']} cores "
            f"shared with other work (load average {info['load_average']} at the start).")


def write_results(name: str, data: dict[str, Any], markdown: str) -> tuple[Path, Path]:
    """Write `bench/results/{name}.json` (2-space indent, UTF-8) and `{name}.md`.

    The JSON always records the package versions (from `machine()` when the data carries it).
    """
    info = data.get("machine")
    if not (isinstance(info, dict) and "packages" in info):
        data = {**data, "packages": package_versions()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    json_path = RESULTS / f"{name}.json"
    md_path = RESULTS / f"{name}.md"
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(markdown.rstrip("\n") + "\n", encoding="utf-8")
    return json_path, md_path


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


@dataclass(frozen=True, slots=True)
class Collection:
    """A dataset under $GROOVE_DATASETS (`datasets_root`) and its benchmark work folder."""

    name: str

    @property
    def source(self) -> Path:
        return datasets_root() / self.name

    @property
    def docs(self) -> Path:
        return self.source / "docs"

    @property
    def work(self) -> Path:
        return WORK / self.name

    @property
    def kb(self) -> Path:
        """The work-dir KB: a symlink to the read-only docs folder (never copied)."""
        return self.work / "kb"

    @property
    def db(self) -> Path:
        return self.work / "index.db"

    @property
    def config(self) -> Path:
        return empty_config(self.work)

    def doc_count(self) -> int:
        return sum(1 for _ in self.docs.glob("*.md"))

    def prepare_kb(self) -> Path:
        """Create the KB symlink (groove records the resolved dataset path as kb_path)."""
        self.work.mkdir(parents=True, exist_ok=True)
        if not self.kb.is_symlink():
            if self.kb.exists():
                shutil.rmtree(self.kb)
            self.kb.symlink_to(self.docs, target_is_directory=True)
        return self.kb

    def remove_index(self) -> None:
        """Delete the index file and everything groove keeps beside it."""
        for path in self.work.glob("index.db*"):
            path.unlink()

    def status(self, db: Path | str | None = None) -> dict[str, Any]:
        """`groove status --format json` of the work index, or of `db` (a file or a database
        URL), with the KB, so pending is known."""
        run = run_groove(["status", "--kb-path", str(self.kb), "--format", "json"],
                         config=self.config, db=self.db if db is None else db)
        data: dict[str, Any] = run.json()
        return data

    def index_is_current(self, db: Path | str | None = None) -> bool:
        """True when the work index (or `db`) holds every document and nothing is pending
        (no changed file, no chunk waiting for its vector)."""
        if db is None and not self.db.is_file():
            return False
        try:
            data = self.status(db)
        except (RuntimeError, json.JSONDecodeError):
            return False
        pending = data.get("pending") or {}
        return (data.get("documents") == self.doc_count() and not data.get("pending_vectors")
                and not any(pending.get(key) for key in ("new", "changed", "deleted", "renamed")))

    def ensure_index(self, db: Path | str | None = None) -> GrooveRun | None:
        """Index the collection into the work index (or `db`) unless a complete index is
        already there; returns the run."""
        self.prepare_kb()
        if self.index_is_current(db):
            return None
        return run_groove(["index", "--kb-path", str(self.kb), "--quiet"], config=self.config,
                          db=self.db if db is None else db)


JSQUAD = Collection("jsquad")
CISI = Collection("cisi")


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("inf")


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def clear_query_cache(db: Path) -> None:
    """Empty an index's query-embedding cache, so the next eval embeds every query."""
    import apsw

    con = apsw.Connection(str(db))
    try:
        con.execute("DELETE FROM query_cache")
    finally:
        con.close()


def with_kept_part(name: str, marker: str, text: str) -> str:
    """`text` followed by the part of the current `bench/results/{name}.md` from `marker` on:
    what was written or measured by hand there, which a re-run of its script must not drop."""
    current = RESULTS / f"{name}.md"
    old = current.read_text(encoding="utf-8") if current.is_file() else ""
    kept = old[old.index(marker):] if marker in old else ""
    return text.rstrip("\n") + ("\n\n" + kept.rstrip("\n") if kept else "")
