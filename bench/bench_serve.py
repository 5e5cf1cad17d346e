#!/usr/bin/env python3
"""`groove serve` benchmark (issue 27): warm hybrid search over HTTP at 10k chunks, 8 concurrent
clients against the same searches as fresh CLI processes, RSS over 10,000 requests, a
forwarded `groove search` against an in-process one, and the cold full-text search that must
not load any serving code; and what an agent waits for (issue 41, serve_agents.py): `groove
mcp`'s `initialize` against `qmd mcp`'s, exit on stdin close, the first search after start,
and where a search's CPU goes. Writes bench/results/serve.json and serve.md in one run.

    python bench/bench_serve.py [--size 10000] [--soak 10000] [--seconds 60] [--qmd CMD]

`--qmd` names qmd's launcher (default: `qmd` on PATH; qmd needs Node 22 on PATH); without
one, the qmd column says so.

The index is bench_search's synthetic 10k-chunk index (real schema, real FTS rows; its stored
vectors are random unit vectors, which costs KNN exactly what real ones cost); queries are
embedded by the real default model. Every query text is used once (a counter makes it unique),
so the index's query cache never answers. The server binds 127.0.0.1 only; every loop is
bounded by a count or a duration.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    ROOT,
    clear_query_cache,
    empty_config,
    machine,
    machine_line,
    median,
    percentile,
    verdict,
    write_results,
)

GROOVE = Path(sys.executable).parent / "groove"
TARGETS = {"p50_ms": 30.0, "p95_ms": 80.0, "throughput_ratio": 4.0, "rss_growth": 0.10,
           "forwarded_s": 0.15, "cold_fts_s": 0.2, "initialize_vs_qmd": 0.5,
           "initialize_s": 1.0, "exit_s": 0.2, "first_ratio": 1.5}
CLIENTS = 8
SEQUENTIAL = 300
CLI_RUNS = 12
CLI_WORKERS = 2
FORWARD_RUNS = 15
COLD_RUNS = 15


def env() -> dict[str, str]:
    # data and cache folders of its own, away from this user's
    found = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1",
                 XDG_DATA_HOME=str(bench_work() / "serve-data"))
    for name in ("GROOVE_LOG", "GROOVE_DB_URL"):
        found.pop(name, None)
    return found


def bench_work() -> Path:
    import bench_search

    return Path(bench_search.SEARCH_WORK)


def queries() -> list[str]:
    import bench_search

    return [q for q in bench_search.queries_file().read_text(encoding="utf-8").splitlines() if q]


class Queries:
    """Unique query texts: the base queries with a counter, thread-safe."""

    def __init__(self, base: list[str]) -> None:
        self.base, self.n, self.lock = base, 0, threading.Lock()

    def next(self) -> str:
        with self.lock:
            self.n += 1
            n = self.n
        return f"{self.base[n % len(self.base)]} r{n}"


def cpu_s(pid: int) -> float:
    """User + system CPU seconds process `pid` has used (load-insensitive, unlike wall)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def start_server(kb: Path, db: Path, config: Path, log: Any
                 ) -> tuple[subprocess.Popen[bytes], str, str]:
    """`groove serve` on a free port: the process, HOST:PORT and the state file's token, as
    soon as the state file names it (what a client waits for)."""
    state = db.with_name(db.name + ".server.json")
    proc = subprocess.Popen([str(GROOVE), "--config", str(config), "--db", str(db), "serve",
                             str(kb), "--port", "0"], env=env(), stdout=subprocess.DEVNULL,
                            stderr=log)  # a file, not a pipe: a full pipe would block it
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        with suppress(OSError, ValueError):
            found = json.loads(state.read_text())
            if found.get("pid") == proc.pid:
                return proc, found["address"][len("http://"):], found["token"]
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    log.seek(0)
    raise RuntimeError(f"the server did not start: {log.read().decode()}")


@contextmanager
def server(kb: Path, db: Path, config: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    log = (bench_work() / "serve.log").open("w+b")
    proc, address, _ = start_server(kb, db, config, log)
    try:
        yield proc, address
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def search(conn: http.client.HTTPConnection, query: str, mode: str = "hybrid") -> float:
    """One /search on a kept-alive connection; its wall time in seconds (raises on an error)."""
    from urllib.parse import urlencode

    start = time.perf_counter()
    conn.request("GET", "/search?" + urlencode({"q": query, "mode": mode, "limit": 5}))
    response = conn.getresponse()
    body = response.read()
    wall = time.perf_counter() - start
    if response.status != 200 or not json.loads(body)["results"]:
        raise RuntimeError(f"status {response.status}: {body[:200]!r}")
    return wall


def sequential(address: str, gen: Queries, pid: int) -> dict[str, Any]:
    conn = http.client.HTTPConnection(address, timeout=60)
    for _ in range(5):  # warm-up: models loaded, readers opened
        search(conn, gen.next())
    cpu = cpu_s(pid)
    walls = [search(conn, gen.next()) * 1000 for _ in range(SEQUENTIAL)]
    cpu = cpu_s(pid) - cpu
    conn.close()
    return {"requests": len(walls), "p50_ms": percentile(walls, 50),
            "p95_ms": percentile(walls, 95), "max_ms": max(walls),
            "server_cpu_ms_per_request": cpu * 1000 / len(walls)}


def concurrent(address: str, gen: Queries, *, seconds: float | None, total: int | None,
               pid: int, rss_at: tuple[int, ...] = ()) -> dict[str, Any]:
    """CLIENTS threads searching until `seconds` pass or `total` requests are done; RSS is
    sampled when the count crosses each of `rss_at`."""
    done = [0]
    errors: list[str] = []
    rss: dict[int, int] = {}
    lock = threading.Lock()
    stop = threading.Event()
    end = time.monotonic() + seconds if seconds else None

    def client() -> None:
        conn = http.client.HTTPConnection(address, timeout=120)
        while not stop.is_set():
            try:
                search(conn, gen.next())
            except Exception as exc:
                with lock:
                    errors.append(repr(exc))
                conn.close()
                conn = http.client.HTTPConnection(address, timeout=120)
            with lock:
                done[0] += 1
                count = done[0]
                for mark in rss_at:
                    if count == mark:
                        rss[mark] = rss_kb(pid)
            if (end and time.monotonic() >= end) or (total and count >= total):
                stop.set()
        conn.close()

    start = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    return {"requests": done[0], "seconds": elapsed, "per_s": done[0] / elapsed,
            "errors": len(errors), "error_samples": errors[:3], "rss_kb": rss}


def in_process(kb: Path, db: Path, config: Path, gen: Queries) -> dict[str, Any]:
    """The same warm searches through the public API in this process: what the engine itself
    costs, so the server's own share of the HTTP latency shows."""
    import groove_cli

    with groove_cli.open(kb, db=db, config=config) as index:
        for _ in range(5):
            index.search(gen.next())
        walls, embeds = [], []
        for _ in range(SEQUENTIAL):
            start = time.perf_counter()
            results = index.search(gen.next())
            walls.append((time.perf_counter() - start) * 1000)
            embeds.append(results.timings_ms.get("embed") or 0.0)
    return {"requests": len(walls), "p50_ms": percentile(walls, 50),
            "p95_ms": percentile(walls, 95), "embed_p50_ms": percentile(embeds, 50)}


def cli_throughput(kb: Path, db: Path, config: Path, gen: Queries) -> dict[str, Any]:
    """The same searches as fresh `groove search` processes, CLI_WORKERS at a time."""
    runs = [gen.next() for _ in range(CLI_RUNS)]
    start = time.monotonic()
    walls: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def worker(mine: list[str]) -> None:
        for query in mine:
            t0 = time.perf_counter()
            proc = subprocess.run([str(GROOVE), "--config", str(config), "--db", str(db),
                                   "search", query, "--kb-path", str(kb), "--no-server"],
                                  env=env(), capture_output=True, text=True, check=False)
            with lock:
                if proc.returncode == 0:
                    walls.append(time.perf_counter() - t0)
                else:
                    failures.append(proc.stderr.strip()[-300:])

    threads = [threading.Thread(target=worker, args=(runs[i::CLI_WORKERS],))
               for i in range(CLI_WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    return {"runs": len(runs), "workers": CLI_WORKERS, "seconds": elapsed,
            "per_s": len(walls) / elapsed, "median_wall_s": median(walls),
            "failed": len(failures),
            "failure_samples": [f.replace(f"{ROOT}/", "") for f in failures[:3]]}


CPU: list[float] = []
"""The CPU seconds of each `timed_cli` child, in order."""


def timed_cli(args: list[str]) -> tuple[float, str]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([str(GROOVE), *args], env=env(), capture_output=True, text=True,
                          check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, proc.stdout


def forwarded(kb: Path, db: Path, config: Path, gen: Queries, pid: int) -> dict[str, Any]:
    """`groove search` (hybrid) through the server against the same search in-process."""
    base = ["--config", str(config), "--db", str(db), "search"]
    walls, cpus, same = [], [], 0
    for _ in range(FORWARD_RUNS):
        query = gen.next()
        server_cpu = cpu_s(pid)
        wall, out = timed_cli([*base, query, "--kb-path", str(kb), "--format", "text"])
        cpus.append(CPU[-1] + cpu_s(pid) - server_cpu)
        walls.append(wall)
        if _ < 3:  # the same search in-process prints the same bytes
            same += out == timed_cli([*base, query, "--kb-path", str(kb), "--format", "text",
                                      "--no-server"])[1]
    local = [timed_cli([*base, gen.next(), "--kb-path", str(kb), "--no-server"])[0]
             for _ in range(5)]
    local_cpu = CPU[-5:]
    return {"runs": FORWARD_RUNS, "median_s": median(walls), "p95_s": percentile(walls, 95),
            "median_cpu_s": median(cpus), "in_process_median_s": median(local),
            "in_process_median_cpu_s": median(local_cpu), "identical_outputs": f"{same}/3"}


def cold_fts(kb: Path, db: Path, config: Path, gen: Queries) -> dict[str, Any]:
    """Cold full-text searches with no server running: with --no-server, and without it (the
    entry point then looks for a server first), alternating."""
    walls: dict[str, list[float]] = {"no_server": [], "plain": []}
    cpus: dict[str, list[float]] = {"no_server": [], "plain": []}
    for _ in range(COLD_RUNS):
        for kind, extra in (("no_server", ["--no-server"]), ("plain", [])):
            walls[kind].append(timed_cli(["--config", str(config), "--db", str(db), "search",
                                          gen.next(), "--kb-path", str(kb), "--mode", "fts",
                                          *extra])[0])
            cpus[kind].append(CPU[-1])
    return {"runs": COLD_RUNS, "median_s": median(walls["no_server"]),
            "median_cpu_s": median(cpus["no_server"]),
            "without_flag_median_s": median(walls["plain"]),
            "without_flag_median_cpu_s": median(cpus["plain"])}


def agents(kb: Path, db: Path, config: Path, gen: Queries, qmd_given: str | None
           ) -> dict[str, Any]:
    """Issue 41's measures (serve_agents.py), qmd beside groove where it is installed."""
    import serve_agents as sa

    found: dict[str, Any] = {"sdk_import_s": sa.sdk_import_s(sys.executable, env())}
    qmd = sa.qmd_command(qmd_given)
    qmd_env = None
    if qmd is not None:
        qmd_env = sa.qmd_env(bench_work())
        sa.qmd_index(qmd, qmd_env, kb)
        found["qmd_version"] = sa.qmd_version(qmd, qmd_env)
        found["qmd_node"] = subprocess.run(["node", "--version"], env=qmd_env,
                                           capture_output=True, text=True,
                                           check=False).stdout.strip()
    found["mcp"] = sa.mcp_pairs([str(GROOVE), "--config", str(config), "--db", str(db), "mcp",
                                 str(kb)], env(), gen.next, qmd, qmd_env)
    log = (bench_work() / "serve-starts.log").open("w+b")
    try:
        found["first"] = sa.first_after_start(
            lambda: start_server(kb, db, config, log), search, gen.base,
            lambda address: http.client.HTTPConnection(address, timeout=60))
    finally:
        log.close()
    found["cpu"] = sa.cpu_breakdown_child(kb, db, config, gen.next, env())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--soak", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--qmd", help="qmd's launcher command (default: qmd on PATH)")
    args = parser.parse_args()
    import bench_search

    # bytecode as an installed package has it: a source tree run with PYTHONDONTWRITEBYTECODE
    # would compile groove_cli at every start and time that instead
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "groove_cli")],
                   check=True, capture_output=True, env=dict(os.environ,
                                                             PYTHONDONTWRITEBYTECODE=""))
    info = machine()
    kb, db, build = bench_search.ensure_index(args.size, rebuild=False)
    config = empty_config(bench_search.SEARCH_WORK / "serve-config")
    clear_query_cache(db)
    gen = Queries(queries())
    # the qmd launcher's name only: where it is installed is this machine's business
    shown = dict(vars(args), qmd=Path(args.qmd).name if args.qmd else None)
    data: dict[str, Any] = {"machine": info, "args": shown,
                            "chunks": build.get("chunks", args.size),
                            "targets": TARGETS, "clients": CLIENTS}
    data["agents"] = agents(kb, db, config, gen, args.qmd)
    data["cold_fts"] = cold_fts(kb, db, config, gen)
    data["cli"] = cli_throughput(kb, db, config, gen)
    data["in_process"] = in_process(kb, db, config, gen)
    with server(kb, db, config) as (proc, address):
        data["rss_start_kb"] = rss_kb(proc.pid)
        data["sequential"] = sequential(address, gen, proc.pid)
        data["forwarded"] = forwarded(kb, db, config, gen, proc.pid)
        data["concurrent"] = concurrent(address, gen, seconds=args.seconds, total=None,
                                        pid=proc.pid)
        data["soak"] = concurrent(address, gen, seconds=None, total=args.soak, pid=proc.pid,
                                  rss_at=(1000, args.soak))
    data["load_average_end"] = list(os.getloadavg())
    write_results("serve", data, markdown(data))
    print(markdown(data))


def serve_agents_intro(found: dict[str, Any]) -> list[str]:
    """What the issue 41 rows compare."""
    mcp = found["mcp"]
    where = (f"qmd: `qmd mcp` ({found.get('qmd_version', '?')}, Node "
             f"{found.get('qmd_node', '?')}), started by its launcher as an agent starts it, "
             "on the same KB with its full-text index only: its models download from a hub "
             "at run time, which this machine cannot reach, so no qmd hybrid search, vector "
             "warm-up or CPU figure is possible here." if "qmd" in mcp else
             "qmd is not installed here: the qmd figure is the issue's, from another machine.")
    return [f"Agents (issue 41): each MCP server spawned {mcp['groove']['runs']} times, "
            "JSON-RPC written on its pipes (initialize, initialized, tools/list, "
            "3 searches, stdin closed), groove and qmd alternating; groove_cli's bytecode "
            "compiled first, as an installed package has it. " + where, ""]


def markdown(d: dict[str, Any]) -> str:
    seq, conc, soak, cli, fwd = (d["sequential"], d["concurrent"], d["soak"], d["cli"],
                                 d["forwarded"])
    ratio = conc["per_s"] / cli["per_s"]
    rss = soak["rss_kb"]
    marks = sorted(rss, key=int)
    growth = (rss[marks[-1]] - rss[marks[0]]) / rss[marks[0]] if len(marks) == 2 else float("nan")
    t = d["targets"]
    rows = [
        ("warm hybrid /search p50 (sequential, uncached queries)", f"{seq['p50_ms']:.1f} ms",
         f"≤ {t['p50_ms']:.0f} ms", seq["p50_ms"] <= t["p50_ms"]),
        ("warm hybrid /search p95", f"{seq['p95_ms']:.1f} ms", f"≤ {t['p95_ms']:.0f} ms",
         seq["p95_ms"] <= t["p95_ms"]),
        ("(server CPU per warm hybrid search)", f"{seq['server_cpu_ms_per_request']:.1f} ms",
         "-", True),
        ("(the same searches in-process, `groove_cli.open(...).search`)",
         f"p50 {d['in_process']['p50_ms']:.1f} ms, p95 {d['in_process']['p95_ms']:.1f} ms "
         f"(query embedding p50 {d['in_process']['embed_p50_ms']:.1f} ms)", "-", True),
        (f"{d['clients']} clients × {conc['seconds']:.0f} s: errors", str(conc["errors"]), "0",
         conc["errors"] == 0),
        (f"throughput vs fresh CLI processes ({cli['workers']} at a time)",
         f"{conc['per_s']:.1f}/s vs {cli['per_s']:.2f}/s = {ratio:.1f}×",
         f"≥ {t['throughput_ratio']:.0f}×", ratio >= t["throughput_ratio"]),
        (f"RSS after {marks[-1] if marks else '?'} vs after {marks[0] if marks else '?'} "
         "requests", " → ".join(f"{rss[m] / 1024:.0f} MiB" for m in marks) +
         f" ({growth:+.1%})", f"within {t['rss_growth']:.0%}", abs(growth) <= t["rss_growth"]),
        ("forwarded `groove search` (hybrid), median wall",
         f"{fwd['median_s']:.3f} s (in-process {fwd['in_process_median_s']:.3f} s; "
         f"identical output {fwd['identical_outputs']})", f"≤ {t['forwarded_s']} s",
         fwd["median_s"] <= t["forwarded_s"]),
        ("(CPU of a forwarded search: client + server)",
         f"{fwd['median_cpu_s']:.3f} s (in-process {fwd['in_process_median_cpu_s']:.3f} s)",
         "-", True),
        ("cold `groove search --mode fts --no-server`, no server, median wall",
         f"{d['cold_fts']['median_s']:.3f} s (CPU {d['cold_fts']['median_cpu_s']:.3f} s)",
         f"≤ {t['cold_fts_s']} s",
         d["cold_fts"]["median_s"] <= t["cold_fts_s"]),
        ("(the same without `--no-server`: the entry point looks for a server first)",
         f"{d['cold_fts']['without_flag_median_s']:.3f} s "
         f"(CPU {d['cold_fts']['without_flag_median_cpu_s']:.3f} s)", "-", True),
    ]
    lines = ["# groove serve (issues 27, 41)", "",
             f"Command line: `python bench/bench_serve.py --size {d['args']['size']} --soak "
             f"{d['args']['soak']} --seconds {d['args']['seconds']:g}"
             + (" --qmd QMD" if d["args"].get("qmd") else "") + "` (`make bench-serve` "
             "runs the defaults, 10000 / 10000 / 60; `--qmd` names qmd's launcher, with Node 22 "
             "on PATH). It builds bench_search's synthetic index once, under "
             "bench/work/search/.", "",
             f"{machine_line(d['machine'])} Load average at the end: {d['load_average_end']}.",
             "", f"Index: bench_search's synthetic KB, {d['chunks']} chunks (random unit vectors, "
             "real FTS rows); queries embedded by the real default model, each text used once "
             "(never answered by the query cache). Server on 127.0.0.1, HTTP keep-alive. "
             "Wall times depend on the machine's load (see the load averages); the CPU rows "
             "show the work itself. A forwarded search sends its core call (serve.md §5) and "
             "renders the answer itself; bench/bench_forwarding.py measures forwarded searches "
             "side by side (bench/results/serve_forwarding.md).", "",
             *(serve_agents_intro(d["agents"]) if "agents" in d else []),
             "| measure | result | target | verdict |", "|---|---|---|---|"]
    if "agents" in d:
        import serve_agents

        rows = serve_agents.rows(d["agents"], t) + rows
    lines += [f"| {a} | {b} | {c} | {verdict(ok) if c != '-' else '-'} |"
              for a, b, c, ok in rows]
    lines += ["", f"Soak: {soak['requests']} requests in {soak['seconds']:.0f} s, "
              f"{soak['errors']} errors. Sequential: {seq['requests']} requests, max "
              f"{seq['max_ms']:.0f} ms. Fresh CLI searches: median wall "
              f"{cli['median_wall_s']:.2f} s each, {cli['failed']} of {cli['runs']} failed "
              "(counted as no throughput)" + (f": {cli['failure_samples'][0]}"
                                             if cli["failure_samples"] else "") + "."]
    if "agents" in d:
        lines += serve_agents.breakdown(d["agents"], seq["server_cpu_ms_per_request"])
    return "\n".join(lines)


if __name__ == "__main__":
    main()
