"""Shared by the serve tests: a KB folder with its index at the default place, the models in
the default cache, and `groove serve` started on it as a real process (loopback, port 0)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.waiting import HANG_GUARD_S, wait_until

REPO = Path(__file__).resolve().parent.parent
PROBE = ("import atexit, json, sys\n"
         "out = sys.argv.pop(1)\n"
         "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
         "sys.argv[0] = 'groove'\n"
         "from groove_cli.cli import main\n"
         "main()\n")
"""Runs the command line and writes the modules it loaded to the file named first."""
HEAVY = ("numpy", "onnxruntime", "mcp", "starlette", "uvicorn", "watchfiles", "anyio",
         "groove_cli.serve.service", "groove_cli.serve.app", "matplotlib", "PIL",
         "groove_cli.pictures", "groove_cli.render.pictures")
"""Modules a forwarded search or a cold full-text search must not load."""


def make_kb(golden_index: tuple[Path, Path], root: Path, real_models_dir: Path
            ) -> tuple[Path, dict[str, str]]:
    """A copy of the indexed sample KB at `root/kb` (index at `kb/.groove.db`) and the env that
    finds the real model in the default cache."""
    from groove_cli.store import Store

    kb_src, db = golden_index
    kb = root / "kb"
    shutil.copytree(kb_src, kb)
    for side in db.parent.glob(db.name + "*"):
        shutil.copy2(side, kb / side.name.replace(db.name, ".groove.db", 1))
    store = Store.open_for_index(kb / ".groove.db")
    with store.transaction():
        store.set_meta({"kb_path": str(kb.resolve())})
    store.close()
    cache = root / "cache"
    (cache / "groove").mkdir(parents=True)
    (cache / "groove" / "models").symlink_to(real_models_dir)
    # its own data and cache folders: nothing the tests start lands in the user's
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), XDG_DATA_HOME=str(root / "data"),
               PYTHONPATH=str(REPO), NO_COLOR="1")
    for name in ("GROOVE_LOG", "GROOVE_OFFLINE", "HF_HUB_OFFLINE", "GROOVE_DB_URL"):
        env.pop(name, None)
    return kb, env


@dataclass
class Server:
    proc: subprocess.Popen[str]
    state: dict[str, Any]
    kb: Path
    log: list[str] = field(default_factory=list)
    """The server's stderr lines so far (read as they come, so the pipe never fills)."""

    def logged(self, text: str) -> bool:
        return any(text in line for line in self.log)

    @property
    def url(self) -> str:
        return str(self.state["address"])

    def get(self, route: str, headers: dict[str, str] | None = None,
            **params: Any) -> tuple[int, bytes, Any]:
        query = urllib.parse.urlencode(params, doseq=True)
        request = urllib.request.Request(f"{self.url}{route}?{query}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read(), response.headers
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), exc.headers


def loaded_modules(env: dict[str, str], out: Path, *args: str
                   ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `groove ARGS` and return it with the modules it imported."""
    proc = subprocess.run([sys.executable, "-c", PROBE, str(out), *args], capture_output=True,
                          text=True, env=env, timeout=120)
    return proc, json.loads(out.read_text())


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def maps_library(pid: int, name: str) -> bool:
    """Whether process `pid` has a shared library whose path holds `name` mapped (Linux): how
    a test sees a server start loading a model (onnxruntime comes with the first one)."""
    try:
        return name in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def state_file(kb: Path) -> Path:
    return kb / ".groove.db.server.json"


def groove(env: dict[str, str], *args: str, cwd: Path | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groove_cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout)


def _drain(stream: IO[str], into: list[str]) -> threading.Thread:
    """Read `stream` line by line into `into` on a daemon thread, until it closes."""
    def read() -> None:
        for line in stream:
            into.append(line)
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@contextmanager
def serving(kb: Path, env: dict[str, str], *extra: str) -> Iterator[Server]:
    """`groove serve KB --port 0 …` until the block ends (SIGTERM, then wait). The server is
    announced when its state file names it: its registry entry is written before (runner.py)."""
    proc = subprocess.Popen([sys.executable, "-m", "groove_cli", "serve", str(kb), "--port", "0",
                             *extra], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    log: list[str] = []
    reader = _drain(proc.stderr, log)
    path = state_file(kb)

    seen: list[dict[str, Any]] = []

    def announced() -> bool:
        if proc.poll() is not None:
            reader.join(timeout=HANG_GUARD_S)
            raise AssertionError(f"serve exited {proc.returncode}: {''.join(log)}")
        state = read_json(path)
        if state is not None and state.get("pid") == proc.pid:
            seen.append(state)
        return bool(seen)

    try:
        wait_until(announced, what="the server's state file")
        yield Server(proc, seen[0], kb, log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=HANG_GUARD_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(timeout=HANG_GUARD_S)


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None while it is absent or not yet whole."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
